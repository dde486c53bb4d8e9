//! The custom data types' callbacks (RDB save and load, AOF rewrite,
//! digest, memory usage, copy and free), generic over [`Stored`]: each
//! kind's type is made from its `Kind` (docs/DESIGN.md#persistence).
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
//! the tag naming the same format in `RL.STATE` (`Kind::LEGACY`),
//! whose decoder (`Kind::decode_legacy`) reads both.
//!
//! | type | version | `RL.STATE` tag | format |
//! |---|---|---|---|
//! | `rl-gcra--` | 1 | `G` | TAT: u64 ns, u32 fraction, u32 denominator |
//! | `rl-slide-` | 2 | `M` | entries (µs) and the clock (ns), varints; with PRECISION, the newest entry's first unit after them (`SlideState::encode`) |
//! | `rl-slide-` | 1 (read only) | `L` | u64 count, one u64 ns per unit |
//! | `rl-slice-` | 1 | `S` | window, slices, head, counters |
//!
//! A key blocked when it is saved (BLOCK) is saved as its format followed
//! by the block trailer (`core::block`), under the same version and tag;
//! a key holding no running block is saved as before, byte for byte.

use std::ffi::{c_int, c_void};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicI64, AtomicPtr, Ordering};

use redis_module::native_types::RedisType;
use redis_module::raw::{self, RedisModuleType};

use super::api::{api, Api, LoadCtx};
use crate::core::{DecodeError, Kind, Nanos};

/// A state stored in keys as a custom data type: its `Kind` and the
/// one static that holds its type (made by the table of kinds).
pub trait Stored: Kind {
    /// Its custom data type.
    fn module_type() -> &'static ModuleType<Self>;
    /// The clock's reading when a callback saves a value: whether a block
    /// is still running decides what is written (`Kind::persist`).
    fn now() -> Nanos;
}

/// A custom data type's server handle, tied to the Rust type of its values:
/// a key's value can only be read or stored as the state type it is. It
/// also counts the keys that hold one (INFO's `<name>_keys`).
pub struct ModuleType<T> {
    inner: RedisType,
    /// The server's handle, copied from `inner` once it is created: read
    /// on every call, where `inner`'s own copy sits behind a `RefCell`
    /// whose borrow costs a check and two writes.
    handle: AtomicPtr<RedisModuleType>,
    /// Keys holding a value of this type, in all databases: a value is
    /// counted when the module creates it (command, RDB load, copy,
    /// RL.STATE) and uncounted when the server frees it.
    keys: AtomicI64,
    _state: PhantomData<fn() -> T>,
}

impl<T: Stored> ModuleType<T> {
    /// `T`'s type: its name, encoding version and callbacks.
    pub const fn new() -> ModuleType<T> {
        ModuleType {
            inner: RedisType::new(T::TYPE_NAME, T::ENCODING_VERSION, methods::<T>()),
            handle: AtomicPtr::new(std::ptr::null_mut()),
            keys: AtomicI64::new(0),
            _state: PhantomData,
        }
    }

    /// Creates the type in the server; called once, at load.
    pub fn create(&self, ctx: LoadCtx) -> Result<(), String> {
        self.inner
            .create_data_type(ctx.raw())
            .map_err(|e| format!("could not create the type {}: {e}", T::TYPE_NAME))?;
        self.handle
            .store(*self.inner.raw_type.borrow(), Ordering::Relaxed);
        Ok(())
    }
}

impl<T> ModuleType<T> {
    /// The server's handle, set when the module loaded (null before).
    pub(super) fn raw(&self) -> *mut RedisModuleType {
        self.handle.load(Ordering::Relaxed)
    }

    /// Counts keys of this type in (`delta` > 0) or out.
    pub(super) fn count(&self, delta: i64) {
        self.keys.fetch_add(delta, Ordering::Relaxed);
    }

    /// The keys holding a value of this type, in all databases.
    pub fn keys(&self) -> u64 {
        u64::try_from(self.keys.load(Ordering::Relaxed)).unwrap_or(0)
    }
}

/// The callbacks of `T`'s type.
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

/// A value handed to the server by a callback, as the pointer it keeps.
fn handed_over<T: Stored>(value: T) -> *mut c_void {
    T::module_type().count(1);
    Box::into_raw(Box::new(value)).cast::<c_void>()
}

/// Runs a callback, turning a panic (a bug; none is reachable by design)
/// into `fallback` instead of aborting the server.
fn guarded<R>(fallback: R, f: impl FnOnce(&'static Api) -> R) -> R {
    let Some(api) = api() else {
        return fallback;
    };
    catch_unwind(AssertUnwindSafe(|| f(api))).unwrap_or(fallback)
}

/// # Safety
/// `value` is null or a pointer this module stored as a `Box<T>` of this
/// type, which the server passes back to the type's own callbacks.
unsafe fn value_ref<'a, T>(value: *const c_void) -> Option<&'a T> {
    // SAFETY: per this function's contract, null or a live `Box<T>`.
    unsafe { value.cast::<T>().as_ref() }
}

/// How to read a value saved under `encver`: today's decoder, the legacy
/// one of the format it names, or none (an unknown version is refused).
fn decoder_of<T: Stored>(encver: c_int) -> Option<impl Fn(&[u8]) -> Result<T, DecodeError>> {
    let legacy = if encver == T::ENCODING_VERSION {
        None
    } else {
        let &(_, tag) = T::LEGACY.iter().find(|&&(v, _)| v == encver)?;
        Some(tag)
    };
    Some(move |bytes: &[u8]| match legacy {
        None => T::restore(bytes),
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
        // SAFETY: `buf` came from the server's allocator, freed once.
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
            let bytes = state.persist(T::now());
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
            let payload = state.tagged(T::now());
            // SAFETY: 's' is a server string, 'b' a pointer and a length.
            unsafe {
                (api.emit_aof)(
                    aof,
                    crate::config::state_command().as_ptr(),
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
            let payload = state.tagged(T::now());
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
            T::module_type().count(-1);
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
