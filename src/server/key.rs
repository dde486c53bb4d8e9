//! Keys and their values: [`ModuleType`], a custom type's server handle
//! tied to its Rust state type, so a key's value can only be read or
//! written as the type it is; [`Key`], an open key, closed on drop.

use std::ffi::{c_char, c_int, c_longlong, c_void, CStr};

use redis_module::raw::{self, RedisModuleKey, RedisModuleString};

use super::command::{Argv, Ctx};
use super::types::ModuleType;

/// What an open key holds, seen from one module type.
pub enum Held<'k, T> {
    Nothing,
    Ours(&'k mut T),
    Other,
}

/// An open key, closed on drop.
pub struct Key<'a> {
    pub(super) ctx: Ctx<'a>,
    pub(super) name: *mut RedisModuleString,
    pub(super) ptr: *mut RedisModuleKey,
    /// The value `value` found and its type, which `value` of that type
    /// then returns without asking the server again; null when none, and
    /// once the key's value is replaced or deleted.
    pub(super) known: (*mut raw::RedisModuleType, *mut c_void),
}

impl<'a> Key<'a> {
    fn kind(&self) -> c_int {
        if self.ptr.is_null() {
            return raw::REDISMODULE_KEYTYPE_EMPTY as c_int;
        }
        // SAFETY: an open key.
        unsafe { (self.ctx.api.key_type)(self.ptr) }
    }

    /// The value, if the key holds one of type `ty`. The borrow of the key
    /// keeps the value from being replaced while it is in use. The value
    /// found is remembered, so that asking again (after `prefetch`) does
    /// not ask the server again.
    pub fn value<T>(&mut self, ty: &ModuleType<T>) -> Held<'_, T> {
        if self.ptr.is_null() {
            return Held::Nothing;
        }
        let api = self.ctx.api;
        // SAFETY: an open key. The type is null unless the key holds a
        // module value; a value of type `ty` was stored by `set` as a
        // `Box<T>`: `ModuleType<T>` ties the two. A remembered value is
        // one of type `ty` that this key still holds (`set` and `delete`
        // forget it).
        unsafe {
            if self.known.0 != ty.raw() || self.known.1.is_null() {
                let found = (api.module_type_get_type)(self.ptr);
                if found.is_null() {
                    return match self.kind() == raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
                        true => Held::Nothing,
                        false => Held::Other,
                    };
                }
                if found != ty.raw() {
                    return Held::Other;
                }
                self.known = (found, (api.module_type_get_value)(self.ptr));
            }
            match self.known.1.cast::<T>().as_mut() {
                Some(value) => Held::Ours(value),
                None => Held::Other,
            }
        }
    }

    /// Asks the processor to start loading the memory of the key's value,
    /// if it holds one of type `ty`, so that work done before `value`
    /// overlaps the wait on a value that is not in the cache. Changes
    /// nothing.
    pub fn prefetch<T>(&mut self, ty: &ModuleType<T>) {
        if let Held::Ours(value) = self.value(ty) {
            prefetch_lines(
                std::ptr::from_mut(value).cast::<u8>(),
                std::mem::size_of::<T>(),
            );
        }
    }

    /// Stores `value` as the key's value of type `ty`, replacing whatever
    /// the key held. False if the server refused (it then drops `value`).
    pub fn set<T>(&mut self, ty: &ModuleType<T>, value: T) -> bool {
        if self.ptr.is_null() {
            return false;
        }
        self.known = (std::ptr::null_mut(), std::ptr::null_mut());
        let raw_value = Box::into_raw(Box::new(value));
        // SAFETY: an open key; on success the server owns the value and
        // frees it through the type's `free` callback.
        let ok = unsafe {
            (self.ctx.api.module_type_set_value)(self.ptr, ty.raw(), raw_value.cast::<c_void>())
                == raw::REDISMODULE_OK as c_int
        };
        if ok {
            ty.count(1);
        } else {
            // SAFETY: the server did not take it: it is still ours.
            drop(unsafe { Box::from_raw(raw_value) });
        }
        ok
    }

    /// The key's name, borrowed for the command's duration.
    pub fn name(&self) -> &'a [u8] {
        if self.name.is_null() {
            return &[];
        }
        super::command::string_bytes(self.ctx.api, self.name)
    }

    /// True when the key holds nothing.
    pub fn is_empty(&self) -> bool {
        self.kind() == raw::REDISMODULE_KEYTYPE_EMPTY as c_int
    }

    /// Deletes the key (open for writing). False if the server refused.
    pub fn delete(&mut self) -> bool {
        if self.ptr.is_null() {
            return false;
        }
        self.known = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: an open key; its value is freed through the type's `free`.
        unsafe { (self.ctx.api.delete_key)(self.ptr) == raw::REDISMODULE_OK as c_int }
    }

    /// Sets the expiry to an absolute Unix time in milliseconds.
    pub fn expire_at_ms(&self, unix_ms: i64) {
        if !self.ptr.is_null() {
            // SAFETY: an open key; the server ignores it on an empty key.
            unsafe { (self.ctx.api.set_abs_expire)(self.ptr, unix_ms) };
        }
    }

    /// The expiry as an absolute Unix time in milliseconds, if any.
    pub fn expire_ms(&self) -> Option<i64> {
        if self.ptr.is_null() {
            return None;
        }
        // SAFETY: an open key.
        let ms = unsafe { (self.ctx.api.get_abs_expire)(self.ptr) };
        (ms != raw::REDISMODULE_NO_EXPIRE as i64).then_some(ms)
    }

    /// Tells WATCH and client-side caching that the key changed.
    pub fn signal_modified(&self) {
        if !self.name.is_null() {
            // SAFETY: ctx and name belong to the running command.
            unsafe { (self.ctx.api.signal_modified_key)(self.ctx.raw, self.name) };
        }
    }

    /// The bytes of a string value, if the key holds a string.
    pub fn string(&self) -> Option<&[u8]> {
        if self.kind() != raw::REDISMODULE_KEYTYPE_STRING as c_int {
            return None;
        }
        let mut len = 0usize;
        // SAFETY: an open key holding a string; DMA in read mode borrows
        // its buffer, which lives while the key is open and unmodified (the
        // borrow of `self` ends before any write).
        unsafe {
            let ptr = (self.ctx.api.string_dma)(self.ptr, &mut len, raw::REDISMODULE_READ as c_int);
            (!ptr.is_null()).then(|| std::slice::from_raw_parts(ptr.cast::<u8>(), len))
        }
    }

    /// Publishes a keyspace event of the module class (`d` in
    /// notify-keyspace-events); the server drops it unless configured.
    pub fn notify(&self, event: &CStr) {
        if !self.name.is_null() {
            // SAFETY: ctx and name belong to the running command.
            unsafe {
                (self.ctx.api.notify_keyspace_event)(
                    self.ctx.raw,
                    raw::REDISMODULE_NOTIFY_MODULE as c_int,
                    event.as_ptr(),
                    self.name,
                )
            };
        }
    }
}

impl Drop for Key<'_> {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: opened by `open_key`, closed once.
            unsafe { (self.ctx.api.close_key)(self.ptr) };
        }
    }
}

/// Starts loading the cache lines of `len` bytes at `at` (at most two
/// lines: the states are one or two). A prefetch never faults, whatever
/// the address; elsewhere than x86-64 it does nothing.
#[inline]
fn prefetch_lines(at: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: prefetching is a hint: it reads nothing and cannot fault.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(at.cast::<i8>());
            if len > 64 {
                _mm_prefetch::<_MM_HINT_T0>(at.wrapping_add(64).cast::<i8>());
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (at, len);
}

impl<'a> Ctx<'a> {
    /// Opens the key named by argument `i`, for reading, or for writing too.
    pub fn open_key(&self, args: Argv<'a>, i: usize, write: bool) -> Key<'a> {
        let mode = if write {
            raw::REDISMODULE_READ | raw::REDISMODULE_WRITE
        } else {
            raw::REDISMODULE_READ
        };
        let name = args.raw(i).unwrap_or(std::ptr::null_mut());
        let ptr = if name.is_null() {
            std::ptr::null_mut()
        } else {
            // SAFETY: `name` is an argument of the running command.
            unsafe { (self.api.open_key)(self.raw, name, mode as c_int) }
        };
        Key {
            ctx: *self,
            name,
            ptr,
            known: (std::ptr::null_mut(), std::ptr::null_mut()),
        }
    }
}

impl<'a> Ctx<'a> {
    /// Sends `<prefix>.STATE <key> <payload> [PXAT <ms>]` to the replicas and
    /// the AOF: a key's resulting state and its expiry, for a kind that
    /// replicates its state.
    pub fn replicate_state(&self, key: &Key<'a>, payload: &[u8], pxat: Option<i64>) {
        if key.name.is_null() {
            return;
        }
        let Some(pxat) = pxat else {
            // SAFETY: as below, without the last two arguments.
            unsafe {
                (self.api.replicate)(
                    self.raw,
                    crate::config::state_command().as_ptr(),
                    c"sb".as_ptr(),
                    key.name,
                    payload.as_ptr().cast::<c_char>(),
                    payload.len(),
                );
            }
            return;
        };
        // SAFETY: each variadic argument has the C type its format letter
        // names: 's' a server string (the key's name, an argument of the
        // running command), 'b' a buffer and its length, 'c' a C string,
        // 'l' a long long.
        unsafe {
            (self.api.replicate)(
                self.raw,
                crate::config::state_command().as_ptr(),
                c"sbcl".as_ptr(),
                key.name,
                payload.as_ptr().cast::<c_char>(),
                payload.len(),
                c"PXAT".as_ptr(),
                pxat as c_longlong,
            );
        }
    }

    /// Sends `DEL <key>` to the replicas and the AOF.
    pub fn replicate_delete(&self, key: &Key<'a>) {
        if key.name.is_null() {
            return;
        }
        // SAFETY: as in `replicate_state`: 's' a server string.
        unsafe {
            (self.api.replicate)(self.raw, c"DEL".as_ptr(), c"s".as_ptr(), key.name);
        }
    }
}
