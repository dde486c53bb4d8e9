//! redis-ratelimit: rate limiting inside Redis, on compact custom types.
//!
//! - `core`: the kinds of limit, one `Limiter` each, pure and unit-tested
//!   without a server;
//! - `kinds`: the one table of kinds, from which everything else derives;
//! - `args`: arguments to validated parameters, and the error table;
//! - `commands`: the commands and the one flow every limiter runs;
//! - `registration`: typed command metadata (flags, key specs, COMMAND DOCS);
//! - `types`: the custom data types' callbacks;
//! - `server`: the server API, resolved at load, behind typed handles;
//! - `clock`: the one clock; `replication`, `stats`, `config`.

mod args;
mod clock;
mod commands;
mod config;
mod core;
#[doc(hidden)]
pub mod fuzzing;
mod kinds;
mod registration;
mod replication;
mod server;
mod stats;
mod types;

use redis_module::configuration::ConfigurationFlags;
use redis_module::{redis_module, Context, RedisString, Status};

// Redis's allocator inside the server, so that INFO memory and MEMORY
// USAGE see what the module allocates; the system allocator in unit tests
// and in the fuzz targets (`--cfg fuzzing`), which run without a server.
#[cfg(not(any(test, fuzzing)))]
type Allocator = redis_module::alloc::RedisAlloc;
#[cfg(not(any(test, fuzzing)))]
const ALLOCATOR: Allocator = redis_module::alloc::RedisAlloc;
#[cfg(any(test, fuzzing))]
type Allocator = std::alloc::System;
#[cfg(any(test, fuzzing))]
const ALLOCATOR: Allocator = std::alloc::System;

/// The module's version as `MODULE LIST` shows it, from Cargo.toml's:
/// major × 10000 + minor × 100 + patch.
const VERSION: i32 = {
    let major = parse_version_part(env!("CARGO_PKG_VERSION_MAJOR"));
    let minor = parse_version_part(env!("CARGO_PKG_VERSION_MINOR"));
    let patch = parse_version_part(env!("CARGO_PKG_VERSION_PATCH"));
    major * 10_000 + minor * 100 + patch
};

/// A decimal number of Cargo's version, at compile time.
const fn parse_version_part(text: &str) -> i32 {
    let bytes = text.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while i < bytes.len() {
        n = n * 10 + (bytes[i] - b'0') as i32;
        i += 1;
    }
    n
}

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    let api = match server::resolve_api() {
        Ok(api) => api,
        Err(name) => {
            ctx.log_warning(&format!(
                "ratelimit: this server lacks {name}; Redis 7.0 or newer (or Valkey 8 or newer) is required"
            ));
            return Status::Err;
        }
    };
    let raw_ctx = ctx.get_raw();
    // SAFETY: called once during OnLoad with the load context.
    unsafe {
        (api.set_module_options)(
            raw_ctx,
            (redis_module::raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS
                | redis_module::raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED)
                as i32,
        );
    }
    for kind in kinds::KINDS {
        if let Err(message) = (kind.create_type)(raw_ctx) {
            ctx.log_warning(&format!("ratelimit: {message}"));
            return Status::Err;
        }
    }
    if let Err(message) = commands::register(api, raw_ctx) {
        ctx.log_warning(&format!("ratelimit: {message}"));
        return Status::Err;
    }
    replication::init(api, raw_ctx);
    if let Err(message) = stats::register(api, raw_ctx) {
        ctx.log_warning(&format!("ratelimit: {}", message.to_string_lossy()));
        return Status::Err;
    }
    Status::Ok
}

redis_module! {
    name: "ratelimit",
    version: VERSION,
    allocator: (Allocator, ALLOCATOR),
    data_types: [],
    init: init,
    configurations: [
        i64: [
            ["max-slide-limit", &config::MAX_SLIDE_LIMIT, config::DEFAULT_MAX_SLIDE_LIMIT, 1, config::HARD_MAX_SLIDE_LIMIT, ConfigurationFlags::DEFAULT, None],
            ["max-slices", &config::MAX_SLICES, config::DEFAULT_MAX_SLICES, 1, config::HARD_MAX_SLICES, ConfigurationFlags::DEFAULT, None],
        ],
        string: [],
        bool: [
            ["cell-alias", &config::CELL_ALIAS, false, ConfigurationFlags::IMMUTABLE, None],
        ],
        enum: [],
        module_args_as_configuration: true,
    ]
}
