//! Everything that talks to the server's C API, and the only place with
//! `unsafe` code: the rest of the crate uses these typed handles instead
//! of raw pointers (docs/DESIGN.md#the-ffi).
//!
//! - `api`: every server function the module calls, resolved at load;
//!   the load context;
//! - `load`: `RedisModule_OnLoad`, the load arguments and `PREFIX`;
//! - `command`: the running command's context and arguments;
//! - `key`: open keys, and custom types tied to their Rust state;
//! - `types`: the custom data types' callbacks (RDB, AOF, digest, ...);
//! - `registration`: commands as typed metadata, registered;
//! - `info`: the INFO section and the `CONFIG RESETSTAT` filter;
//! - `events`: whether anything may replay the write stream;
//! - `clock`: the server's time and the system's.
#![allow(unsafe_code)]

mod api;
mod clock;
mod command;
mod events;
mod info;
mod key;
mod load;
mod registration;
mod types;

pub use api::{resolve_api, Api, LoadCtx};
pub use clock::{cached_microseconds, system_time};
pub use command::{handler, Argv, Command, Ctx};
pub use events::{stream_may_be_replayed, subscribe, Watch};
pub use info::{register as register_info, Fields, Section};
pub use key::{Held, Key};
pub use registration::{register, Access, ArgType, CommandDef, DocArg, Handler, Keys, Refused};
pub use types::{ModuleType, Stored};
