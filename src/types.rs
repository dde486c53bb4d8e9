//! The custom data types: the table of types, and their callbacks (RDB save
//! and load, AOF rewrite, digest, memory usage, copy and free), generic over
//! `core::Limiter`.
//!
//! Every type persists through the one byte encoding its core file defines
//! and validates (`encode`/`decode`): RDB saves it as one string buffer under
//! the type's encoding version, AOF rewrite emits it as `RL.STATE key
//! <tag><encoding>`, DEBUG DIGEST hashes it. A payload that does not decode
//! is refused: `rdb_load` returns null, which the server reports (with the
//! module option HANDLE_IO_ERRORS) as "Bad data format" instead of crashing.
//!
//! Saved files must keep loading: when a type's encoding changes, its
//! version goes up, and the older versions it still reads are listed with
//! the tag naming the same format in `RL.STATE` (`Limiter::LEGACY_TAGS`),
//! whose decoder (`Limiter::decode_legacy`) reads both.
//!
//! | type | version | `RL.STATE` tag | format |
//! |---|---|---|---|
//! | `rl-gcra--` | 1 | `G` | TAT: u64 ns, u32 fraction, u32 denominator |
//! | `rl-slide-` | 2 | `M` | entries (µs) and the clock (ns), varints; with PRECISION, the newest entry's first unit after them (`SlideLog::encode`) |
//! | `rl-slide-` | 1 (read only) | `L` | u64 count, one u64 ns per unit |
//! | `rl-slice-` | 1 | `S` | window, slices, head, counters |

use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use crate::core::gcra::Tat;
use crate::core::slice::SliceWindow;
use crate::core::slide::{self, SlideLog};
use crate::core::{DecodeError, Limiter, Nanos};
use crate::server::{self, Key, ModuleType};
use crate::{config, stats};

// The table of types: one line each. `TYPE key` shows the core's
// `TYPE_NAME`.
pub static GCRA_TYPE: ModuleType<Tat> = module_type::<Tat>();
pub static SLIDE_TYPE: ModuleType<SlideLog> = module_type::<SlideLog>();
pub static SLICE_TYPE: ModuleType<SliceWindow> = module_type::<SliceWindow>();

/// A state the server stores for this module: a `Limiter` and its type.
pub trait Stored: Limiter + 'static {
    fn module_type() -> &'static ModuleType<Self>;
    /// Its row in the INFO section (`stats`).
    const STAT: stats::Row;
    /// The RDB encoding version of `Limiter::encode`'s format: what
    /// `rdb_save` writes under and `rdb_load` reads with `Limiter::decode`.
    const ENCODING_VERSION: i32 = 1;
    /// Older encoding versions `rdb_load` still reads, each with the
    /// `Limiter::LEGACY_TAGS` tag of the same format, which names its
    /// decoder; by default none. Any other version is refused.
    const LEGACY_VERSIONS: &'static [(i32, u8)] = &[];
    /// A state read from a key of another type that this type's command
    /// takes over; by default none (the command answers WRONGTYPE).
    fn adopt(_key: &Key) -> Option<Self> {
        None
    }
}

impl Stored for Tat {
    fn module_type() -> &'static ModuleType<Tat> {
        &GCRA_TYPE
    }
    const STAT: stats::Row = stats::Row::Throttle;
    /// With the `cell-alias` option, a string holding redis-cell's state (the
    /// TAT in nanoseconds since the epoch) is taken over, so that switching
    /// from redis-cell keeps every limit.
    fn adopt(key: &Key) -> Option<Tat> {
        if !config::cell_alias() {
            return None;
        }
        let text = std::str::from_utf8(key.string()?).ok()?;
        Some(Tat::from_nanos(Nanos::new(text.parse::<u64>().ok()?)))
    }
}

impl Stored for SlideLog {
    fn module_type() -> &'static ModuleType<SlideLog> {
        &SLIDE_TYPE
    }
    const STAT: stats::Row = stats::Row::Slide;
    /// 2: entries of microseconds as varints; 1: one u64 of ns per unit.
    const ENCODING_VERSION: i32 = 2;
    const LEGACY_VERSIONS: &'static [(i32, u8)] = &[(1, slide::V1_TAG)];
}

impl Stored for SliceWindow {
    fn module_type() -> &'static ModuleType<SliceWindow> {
        &SLICE_TYPE
    }
    const STAT: stats::Row = stats::Row::Slice;
}

const fn module_type<T: Stored>() -> ModuleType<T> {
    ModuleType::new(T::TYPE_NAME, T::ENCODING_VERSION, methods::<T>())
}

const fn methods<T: Stored>() -> raw::RedisModuleTypeMethods {
    raw::RedisModuleTypeMethods {
        version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
        rdb_load: Some(rdb_load::<T>),
        rdb_save: Some(rdb_save::<T>),
        aof_rewrite: Some(aof_rewrite::<T>),
        mem_usage: Some(mem_usage::<T>),
        digest: Some(digest::<T>),
        free: Some(free::<T>),
        aux_load: None,
        aux_save: None,
        aux_save_triggers: 0,
        free_effort: None,
        unlink: None,
        copy: Some(copy::<T>),
        defrag: None,
        mem_usage2: None,
        free_effort2: None,
        unlink2: None,
        copy2: None,
        aux_save2: None,
    }
}

/// Stores a new value as `key`'s value, counting it as a key of its type.
/// False if the server refused.
pub fn store<T: Stored>(key: &mut Key, value: T) -> bool {
    let stored = key.set(T::module_type(), value);
    if stored {
        counted::<T>(1);
    }
    stored
}

/// A value handed to the server by a callback, as the pointer it keeps.
fn handed_over<T: Stored>(value: T) -> *mut c_void {
    counted::<T>(1);
    Box::into_raw(Box::new(value)).cast::<c_void>()
}

/// Counts a key of type `T` in or out.
fn counted<T: Stored>(delta: i64) {
    stats::count_keys(T::STAT, delta);
}

/// The payload of `RL.STATE`: the type's tag, then its encoding.
pub fn tagged<T: Limiter>(value: &T) -> Vec<u8> {
    let body = value.encode();
    let mut out = Vec::with_capacity(body.len() + 1);
    out.push(T::TAG);
    out.extend_from_slice(&body);
    out
}

/// Runs a callback, turning a panic (a bug; none is reachable by design)
/// into `fallback` instead of aborting the server.
fn guarded<R>(fallback: R, f: impl FnOnce(&'static server::Api) -> R) -> R {
    let Some(api) = server::api() else {
        return fallback;
    };
    catch_unwind(AssertUnwindSafe(|| f(api))).unwrap_or(fallback)
}

/// # Safety
/// `value` is null or a pointer this module stored as a `Box<T>` of this
/// type, which the server passes back to the type's own callbacks.
unsafe fn value_ref<'a, T>(value: *const c_void) -> Option<&'a T> {
    unsafe { value.cast::<T>().as_ref() }
}

/// How to read a value saved under `encver`: today's decoder, the legacy
/// one of the format it names, or none (an unknown version is refused).
fn decoder_of<T: Stored>(encver: c_int) -> Option<impl Fn(&[u8]) -> Result<T, DecodeError>> {
    let legacy = if encver == T::ENCODING_VERSION {
        None
    } else {
        let &(_, tag) = T::LEGACY_VERSIONS.iter().find(|&&(v, _)| v == encver)?;
        Some(tag)
    };
    Some(move |bytes: &[u8]| match legacy {
        None => T::decode(bytes),
        Some(tag) => T::decode_legacy(tag, bytes),
    })
}

extern "C" fn rdb_load<T: Stored>(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    guarded(std::ptr::null_mut(), |api| {
        let Some(decode) = decoder_of::<T>(encver) else {
            return std::ptr::null_mut();
        };
        let mut len = 0usize;
        // SAFETY: `rdb` is the server's loading stream.
        let buf = unsafe { (api.load_string_buffer)(rdb, &mut len) };
        if buf.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: the server returned `len` bytes at `buf`, ours to free.
        let decoded = decode(unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) });
        unsafe { (api.free)(buf.cast::<c_void>()) };
        match decoded {
            Ok(state) => handed_over(state),
            Err(_) => std::ptr::null_mut(),
        }
    })
}

extern "C" fn rdb_save<T: Stored>(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    guarded((), |api| {
        // SAFETY: the server passes a value of this type.
        if let Some(state) = unsafe { value_ref::<T>(value) } {
            let bytes = state.encode();
            // SAFETY: `rdb` is the server's saving stream.
            unsafe { (api.save_string_buffer)(rdb, bytes.as_ptr().cast(), bytes.len()) };
        }
    })
}

extern "C" fn aof_rewrite<T: Stored>(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    guarded((), |api| {
        // SAFETY: the server passes a value of this type.
        if let Some(state) = unsafe { value_ref::<T>(value) } {
            let payload = tagged(state);
            // SAFETY: 's' is a server string, 'b' a pointer and a length.
            unsafe {
                (api.emit_aof)(
                    aof,
                    c"RL.STATE".as_ptr(),
                    c"sb".as_ptr(),
                    key,
                    payload.as_ptr(),
                    payload.len(),
                )
            };
        }
    })
}

extern "C" fn mem_usage<T: Stored>(value: *const c_void) -> usize {
    guarded(0, |_| {
        // SAFETY: the server passes a value of this type.
        unsafe { value_ref::<T>(value) }.map_or(0, T::mem_usage)
    })
}

extern "C" fn digest<T: Stored>(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    guarded((), |api| {
        // SAFETY: the server passes a value of this type.
        if let Some(state) = unsafe { value_ref::<T>(value) } {
            let payload = tagged(state);
            // SAFETY: `md` is the server's digest context.
            unsafe {
                (api.digest_add_string_buffer)(md, payload.as_ptr().cast(), payload.len());
                (api.digest_end_sequence)(md);
            }
        }
    })
}

extern "C" fn free<T: Stored>(value: *mut c_void) {
    guarded((), |_| {
        if !value.is_null() {
            // SAFETY: stored by this module as a `Box<T>`, freed once.
            drop(unsafe { Box::from_raw(value.cast::<T>()) });
            counted::<T>(-1);
        }
    })
}

extern "C" fn copy<T: Stored>(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    guarded(std::ptr::null_mut(), |_| {
        // SAFETY: the server passes a value of this type.
        match unsafe { value_ref::<T>(value) } {
            Some(state) => handed_over(state.clone()),
            None => std::ptr::null_mut(),
        }
    })
}
