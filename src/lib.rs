//! redis-ratelimit: rate limiting inside Redis, on compact custom types.
//!
//! - `core`: the kinds of limit, one `Kind` each, pure and unit-tested
//!   without a server (no `unsafe`: forbidden there);
//! - `kinds`: the one table of kinds, from which everything else derives;
//! - `args`: arguments to validated parameters, and the error table;
//! - `commands`: the commands, the one flow every limiter runs, INFO;
//! - `server`: everything that talks to the server's C API, and the only
//!   place with `unsafe` code (denied everywhere else);
//! - `clock`: the one clock; `replication`, `stats`, `config`.
#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod args;
mod clock;
mod commands;
mod config;
mod core;
// The fuzz targets' entry points: for the unit tests' replay and for the
// fuzz crate (`--cfg fuzzing`, fuzz/), never in the shipped module.
#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub mod fuzzing;
mod kinds;
mod replication;
mod server;
mod stats;

use kinds::{Listed, VisitKind, KINDS};
use server::LoadCtx;

// Redis's allocator inside the server, so that INFO memory and MEMORY
// USAGE see what the module allocates; the system allocator in unit tests
// and in the fuzz targets (`--cfg fuzzing`), which run without a server.
#[cfg(not(any(test, fuzzing)))]
#[global_allocator]
static ALLOCATOR: redis_module::alloc::RedisAlloc = redis_module::alloc::RedisAlloc;

/// What the module does when it loads, once the server knows it and its
/// configuration is read (`server::load`): resolve the server's API, create
/// the data types, register the commands, watch the replication stream,
/// add the INFO section. The error is the line to log.
fn init(ctx: LoadCtx) -> Result<(), String> {
    let api = server::resolve_api().map_err(|name| {
        format!("this server lacks {name}; Redis 7.0 or newer (or Valkey 8 or newer) is required")
    })?;
    ctx.set_module_options(api);
    for kind in KINDS {
        kind.visit(CreateType { ctx })?;
    }
    commands::register(api, ctx)?;
    replication::init(api, ctx);
    server::register_info::<commands::Info>(api, ctx)
        .map_err(|message| message.to_string_lossy().into_owned())
}

/// A setting of RL.TOP's summary changed (`CONFIG SET`, or the load
/// arguments and configuration file as the server applies them): the
/// summary follows. Called by the server's configuration callback, which
/// must not unwind.
fn top_settings_changed() {
    let _ = std::panic::catch_unwind(commands::top_settings_changed);
}

/// Creates a kind's data type in the server.
struct CreateType<'a> {
    ctx: LoadCtx<'a>,
}

impl VisitKind for CreateType<'_> {
    type Out = Result<(), String>;

    fn visit<L: Listed>(self) -> Result<(), String> {
        L::module_type().create(self.ctx)
    }
}
