//! The `ratelimit` section of INFO: per command, calls, allowed, limited
//! (not for RL.INSPECT and RL.RELEASE, which decide nothing) and errors;
//! per kind, the keys that hold one (all databases); the version of the
//! time-zone rules RL.QUOTA carries (`tzdb_version`). The
//! counters count client calls (not commands replayed from the master or
//! the AOF) and are reset by `CONFIG RESETSTAT`, which a command filter
//! watches for.

use std::ffi::{c_int, CStr};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use redis_module::raw;

use crate::kinds::KINDS;
use crate::server;

/// A row of the section: one per kind (its index in `kinds::KINDS`), then
/// the commands that are not a kind's.
#[derive(Clone, Copy)]
pub struct Stat(pub usize);

impl Stat {
    pub const ALLOW: Stat = Stat(KINDS.len());
    pub const PEEK: Stat = Stat(KINDS.len() + 1);
    pub const INSPECT: Stat = Stat(KINDS.len() + 2);
    pub const REFUND: Stat = Stat(KINDS.len() + 3);
    pub const RELEASE: Stat = Stat(KINDS.len() + 4);
}

/// The rows after the kinds', named as INFO shows them.
const OTHER_ROWS: [&str; 5] = ["allow", "peek", "inspect", "refund", "release"];
const ROWS: usize = KINDS.len() + OTHER_ROWS.len();

/// The name of row `i`: the kind's name in lower case, or the command's.
fn row_name(i: usize) -> String {
    match KINDS.get(i) {
        Some(kind) => kind.name.to_ascii_lowercase(),
        None => OTHER_ROWS
            .get(i - KINDS.len())
            .copied()
            .unwrap_or_default()
            .to_string(),
    }
}

struct Counters {
    calls: AtomicU64,
    allowed: AtomicU64,
    limited: AtomicU64,
    errors: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: Counters = Counters {
    calls: AtomicU64::new(0),
    allowed: AtomicU64::new(0),
    limited: AtomicU64::new(0),
    errors: AtomicU64::new(0),
};

static COUNTERS: [Counters; ROWS] = [ZERO; ROWS];

/// Keys per type: a value is counted when the module creates it (command,
/// RDB load, copy, RL.STATE) and uncounted when the server frees it.
#[allow(clippy::declare_interior_mutable_const)]
const NO_KEYS: AtomicI64 = AtomicI64::new(0);

static KEYS: [AtomicI64; KINDS.len()] = [NO_KEYS; KINDS.len()];

/// Counts keys of a type in (`delta` > 0) or out.
pub fn count_keys(kind: usize, delta: i64) {
    if let Some(keys) = KEYS.get(kind) {
        keys.fetch_add(delta, Ordering::Relaxed);
    }
}

/// How a client call ended.
#[derive(Clone, Copy)]
pub enum Call {
    Allowed,
    Limited,
    /// Answered without an allowed/limited outcome (RL.INSPECT).
    Answered,
    Error,
}

/// Counts one call and its outcome. Commands run on the server's main
/// thread only, which is also where INFO and CONFIG RESETSTAT read and
/// reset the counters: a plain load and store suffice, without the locked
/// read-modify-write of `fetch_add`.
pub fn record(row: Stat, call: Call) {
    let Some(c) = COUNTERS.get(row.0) else {
        return;
    };
    bump(&c.calls);
    match call {
        Call::Allowed => bump(&c.allowed),
        Call::Limited => bump(&c.limited),
        Call::Error => bump(&c.errors),
        Call::Answered => {}
    }
}

fn bump(counter: &AtomicU64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(1),
        Ordering::Relaxed,
    );
}

fn reset() {
    for c in &COUNTERS {
        for field in [&c.calls, &c.allowed, &c.limited, &c.errors] {
            field.store(0, Ordering::Relaxed);
        }
    }
}

/// The INFO callback.
pub extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    let _ = std::panic::catch_unwind(|| {
        let Some(api) = server::api() else {
            return;
        };
        let (section, field) = (api.info_add_section, api.info_add_field_ulonglong);
        // SAFETY: `ctx` is the server's INFO context; names are C strings.
        unsafe {
            section(ctx, c"".as_ptr());
            for (i, c) in COUNTERS.iter().enumerate() {
                let name = row_name(i);
                // RL.INSPECT and RL.RELEASE decide nothing: no outcomes.
                let decides = i != Stat::INSPECT.0 && i != Stat::RELEASE.0;
                let outcomes = [("allowed", &c.allowed), ("limited", &c.limited)];
                let fields = [("calls", &c.calls)]
                    .into_iter()
                    .chain(outcomes.into_iter().filter(|_| decides))
                    .chain([("errors", &c.errors)]);
                for (what, value) in fields {
                    let label =
                        std::ffi::CString::new(format!("{name}_{what}")).unwrap_or_default();
                    field(ctx, label.as_ptr(), value.load(Ordering::Relaxed));
                }
            }
            for (i, keys) in KEYS.iter().enumerate() {
                let name = row_name(i);
                let label = std::ffi::CString::new(format!("{name}_keys")).unwrap_or_default();
                field(
                    ctx,
                    label.as_ptr(),
                    u64::try_from(keys.load(Ordering::Relaxed)).unwrap_or(0),
                );
            }
            // The version of the time-zone rules RL.QUOTA carries.
            let version =
                std::ffi::CString::new(crate::core::quota::tzdb_version()).unwrap_or_default();
            (api.info_add_field_cstring)(ctx, c"tzdb_version".as_ptr(), version.as_ptr());
        }
    });
}

/// A command filter that resets the counters on `CONFIG RESETSTAT`. It runs
/// for every command, so it looks at the arguments only when there are two.
pub extern "C" fn watch_resetstat(fctx: *mut raw::RedisModuleCommandFilterCtx) {
    let _ = std::panic::catch_unwind(|| {
        let Some(api) = server::api() else {
            return;
        };
        // SAFETY: `fctx` is the server's filter context for this command.
        if unsafe { (api.command_filter_args_count)(fctx) } != 2 {
            return;
        }
        if server::filter_arg_is(api, fctx, 0, b"CONFIG")
            && server::filter_arg_is(api, fctx, 1, b"RESETSTAT")
        {
            reset();
        }
    });
}

/// Registers the INFO section and the filter.
pub fn register(api: &server::Api, ctx: *mut raw::RedisModuleCtx) -> Result<(), &'static CStr> {
    // SAFETY: called during OnLoad with the load context.
    unsafe {
        if (api.register_info_func)(ctx, Some(info)) != raw::REDISMODULE_OK as c_int {
            return Err(c"could not register the INFO section");
        }
        if (api.register_command_filter)(ctx, Some(watch_resetstat), 0).is_null() {
            return Err(c"could not register the CONFIG RESETSTAT filter");
        }
    }
    Ok(())
}
