//! redis-ratelimit: rate limiting inside Redis, on compact custom types.
//!
//! - `core`: the algorithms, one `Limiter` each, pure and unit-tested
//!   without a server;
//! - `args`: arguments to validated parameters, and the error table;
//! - `commands`: the command table and the one flow every limiter runs;
//! - `registration`: typed command metadata (flags, key specs, COMMAND DOCS);
//! - `types`: the table of custom data types and their callbacks;
//! - `server`: the server API, resolved at load, behind typed handles;
//! - `clock`: the one clock; `replication`, `stats`, `config`.

mod args;
mod clock;
mod commands;
mod config;
mod core;
mod registration;
mod replication;
mod server;
mod stats;
mod types;

use redis_module::configuration::ConfigurationFlags;
use redis_module::{redis_module, Context, RedisString, Status};

use types::{GCRA_TYPE, SLICE_TYPE, SLIDE_TYPE};

// Redis's allocator inside the server, so that INFO memory and MEMORY
// USAGE see what the module allocates; the system allocator in unit tests,
// which run without a server.
#[cfg(not(test))]
type Allocator = redis_module::alloc::RedisAlloc;
#[cfg(not(test))]
const ALLOCATOR: Allocator = redis_module::alloc::RedisAlloc;
#[cfg(test)]
type Allocator = std::alloc::System;
#[cfg(test)]
const ALLOCATOR: Allocator = std::alloc::System;

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
    version: 1,
    allocator: (Allocator, ALLOCATOR),
    data_types: [GCRA_TYPE, SLIDE_TYPE, SLICE_TYPE],
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
