//! The three custom data types and their callbacks: RDB save and load, AOF
//! rewrite, digest, memory usage, copy and free.
//!
//! Every type persists through one byte encoding that its core module
//! defines and validates (`encode`/`decode`): RDB saves it as one string
//! buffer, AOF rewrite emits it as `RL.STATE key <tag><encoding>`, DEBUG
//! DIGEST hashes it. A payload that does not decode is refused: `rdb_load`
//! returns null, which the server reports (with the module option
//! HANDLE_IO_ERRORS) as "Bad data format" instead of crashing.

use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::native_types::RedisType;
use redis_module::raw;

use crate::core::gcra::Tat;
use crate::core::slice::SliceWindow;
use crate::core::slide::SlideLog;
use crate::core::DecodeError;
use crate::server::Key;
use crate::stats;

/// The encoding version of all three types. `rdb_load` refuses others.
pub const ENCODING_VERSION: i32 = 1;

/// A state the server stores for this module.
pub trait Stored: Sized + Clone {
    /// First byte of the `RL.STATE` payload, naming the type.
    const TAG: u8;
    fn encode(&self) -> Vec<u8>;
    fn decode(bytes: &[u8]) -> Result<Self, DecodeError>;
    fn mem_usage(&self) -> usize;
    fn redis_type() -> &'static RedisType;
    /// This type's entry in `stats::KEYS`.
    const STAT: usize;

    /// The server's handle of the type, set when the module loaded.
    fn raw_type() -> *mut raw::RedisModuleType {
        *Self::redis_type().raw_type.borrow()
    }
}

impl Stored for Tat {
    const TAG: u8 = b'G';
    fn encode(&self) -> Vec<u8> {
        Tat::encode(self)
    }
    fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        Tat::decode(bytes)
    }
    fn mem_usage(&self) -> usize {
        Tat::mem_usage(self)
    }
    fn redis_type() -> &'static RedisType {
        &GCRA_TYPE
    }
    const STAT: usize = stats::Command::Throttle as usize;
}

impl Stored for SlideLog {
    const TAG: u8 = b'L';
    fn encode(&self) -> Vec<u8> {
        SlideLog::encode(self)
    }
    fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        SlideLog::decode(bytes)
    }
    fn mem_usage(&self) -> usize {
        SlideLog::mem_usage(self)
    }
    fn redis_type() -> &'static RedisType {
        &SLIDE_TYPE
    }
    const STAT: usize = stats::Command::Slide as usize;
}

impl Stored for SliceWindow {
    const TAG: u8 = b'S';
    fn encode(&self) -> Vec<u8> {
        SliceWindow::encode(self)
    }
    fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        SliceWindow::decode(bytes)
    }
    fn mem_usage(&self) -> usize {
        SliceWindow::mem_usage(self)
    }
    fn redis_type() -> &'static RedisType {
        &SLICE_TYPE
    }
    const STAT: usize = stats::Command::Slice as usize;
}

// Type names are exactly nine characters; `TYPE key` shows them.
pub static GCRA_TYPE: RedisType = RedisType::new("rl-gcra--", ENCODING_VERSION, methods::<Tat>());
pub static SLIDE_TYPE: RedisType =
    RedisType::new("rl-slide-", ENCODING_VERSION, methods::<SlideLog>());
pub static SLICE_TYPE: RedisType =
    RedisType::new("rl-slice-", ENCODING_VERSION, methods::<SliceWindow>());

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

/// Hands a new value to the server as `key`'s value, counting it as a key
/// of its type. False if the server refused.
pub fn store<T: Stored>(key: &Key, value: T) -> bool {
    let stored = key.set(T::raw_type(), Box::new(value));
    if stored {
        counted::<T>(1);
    }
    stored
}

/// A value handed to the server, as the pointer it keeps.
fn handed_over<T: Stored>(value: T) -> *mut c_void {
    counted::<T>(1);
    Box::into_raw(Box::new(value)).cast::<c_void>()
}

fn counted<T: Stored>(delta: i64) {
    stats::KEYS[T::STAT].fetch_add(delta, std::sync::atomic::Ordering::Relaxed);
}

/// The payload of `RL.STATE`: the type's tag, then its encoding.
pub fn tagged<T: Stored>(value: &T) -> Vec<u8> {
    let body = value.encode();
    let mut out = Vec::with_capacity(body.len() + 1);
    out.push(T::TAG);
    out.extend_from_slice(&body);
    out
}

/// Runs a callback, turning a panic (a bug; none is reachable by design)
/// into `fallback` instead of aborting the server.
fn guarded<R>(fallback: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// # Safety
/// `value` is a pointer this module stored as a `Box<T>` of this type.
unsafe fn value_ref<'a, T>(value: *const c_void) -> Option<&'a T> {
    unsafe { value.cast::<T>().as_ref() }
}

extern "C" fn rdb_load<T: Stored>(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    guarded(std::ptr::null_mut(), || {
        if encver != ENCODING_VERSION {
            return std::ptr::null_mut();
        }
        let Some(load) = crate::api!(RedisModule_LoadStringBuffer) else {
            return std::ptr::null_mut();
        };
        let mut len = 0usize;
        // SAFETY: `rdb` is the server's loading stream.
        let buf = unsafe { load(rdb, &mut len) };
        if buf.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: the server returned `len` bytes at `buf`, ours to free.
        let decoded = T::decode(unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) });
        unsafe {
            if let Some(free) = crate::api!(RedisModule_Free) {
                free(buf.cast::<c_void>());
            }
        }
        match decoded {
            Ok(state) => handed_over(state),
            Err(_) => std::ptr::null_mut(),
        }
    })
}

extern "C" fn rdb_save<T: Stored>(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    guarded((), || {
        // SAFETY: the server passes a value of this type.
        let Some(state) = (unsafe { value_ref::<T>(value) }) else {
            return;
        };
        let bytes = state.encode();
        unsafe {
            if let Some(save) = crate::api!(RedisModule_SaveStringBuffer) {
                save(rdb, bytes.as_ptr().cast(), bytes.len());
            }
        }
    })
}

extern "C" fn aof_rewrite<T: Stored>(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    guarded((), || {
        // SAFETY: the server passes a value of this type.
        let Some(state) = (unsafe { value_ref::<T>(value) }) else {
            return;
        };
        let payload = tagged(state);
        // SAFETY: 's' is a server string, 'b' a pointer and a length.
        unsafe {
            if let Some(emit) = crate::api!(RedisModule_EmitAOF) {
                emit(
                    aof,
                    c"RL.STATE".as_ptr(),
                    c"sb".as_ptr(),
                    key,
                    payload.as_ptr(),
                    payload.len(),
                );
            }
        }
    })
}

extern "C" fn mem_usage<T: Stored>(value: *const c_void) -> usize {
    guarded(0, || {
        // SAFETY: the server passes a value of this type.
        unsafe { value_ref::<T>(value) }.map_or(0, T::mem_usage)
    })
}

extern "C" fn digest<T: Stored>(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    guarded((), || {
        // SAFETY: the server passes a value of this type.
        let Some(state) = (unsafe { value_ref::<T>(value) }) else {
            return;
        };
        let payload = tagged(state);
        unsafe {
            if let (Some(add), Some(end)) = (
                crate::api!(RedisModule_DigestAddStringBuffer),
                crate::api!(RedisModule_DigestEndSequence),
            ) {
                add(md, payload.as_ptr().cast(), payload.len());
                end(md);
            }
        }
    })
}

extern "C" fn free<T: Stored>(value: *mut c_void) {
    guarded((), || {
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
    guarded(std::ptr::null_mut(), || {
        // SAFETY: the server passes a value of this type.
        match unsafe { value_ref::<T>(value) } {
            Some(state) => handed_over(state.clone()),
            None => std::ptr::null_mut(),
        }
    })
}
