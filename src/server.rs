//! The few server calls the commands and types make, as safe functions over
//! the raw module API. Each one is a direct call: no allocation, no copy of
//! an argument, so the hot path costs what the server itself costs.
//!
//! Every API function used here is checked by `missing_api` when the module
//! loads, so that a server lacking one refuses the module with a clear log
//! line instead of failing later.

use std::ffi::{c_int, c_longlong, c_void, CStr};
use std::ptr::NonNull;

use redis_module::raw;

/// A server API function, read by value from the table the server filled
/// in at load: `None` when this server lacks it.
#[macro_export]
macro_rules! api {
    ($name:ident) => {{
        // SAFETY: written once by the server before any module code runs.
        #[allow(unused_unsafe)]
        let f = unsafe { redis_module::raw::$name };
        f
    }};
}

pub type Ctx = *mut raw::RedisModuleCtx;
pub type RString = *mut raw::RedisModuleString;

/// The API functions the module calls, by name, for the load-time check.
pub fn missing_api() -> Option<&'static str> {
    {
        let table: &[(&str, bool)] = &[
            ("StringPtrLen", api!(RedisModule_StringPtrLen).is_some()),
            ("OpenKey", api!(RedisModule_OpenKey).is_some()),
            ("CloseKey", api!(RedisModule_CloseKey).is_some()),
            ("KeyType", api!(RedisModule_KeyType).is_some()),
            (
                "ModuleTypeGetType",
                api!(RedisModule_ModuleTypeGetType).is_some(),
            ),
            (
                "ModuleTypeGetValue",
                api!(RedisModule_ModuleTypeGetValue).is_some(),
            ),
            (
                "ModuleTypeSetValue",
                api!(RedisModule_ModuleTypeSetValue).is_some(),
            ),
            ("SetAbsExpire", api!(RedisModule_SetAbsExpire).is_some()),
            ("Replicate", api!(RedisModule_Replicate).is_some()),
            ("ReplyWithArray", api!(RedisModule_ReplyWithArray).is_some()),
            (
                "ReplyWithLongLong",
                api!(RedisModule_ReplyWithLongLong).is_some(),
            ),
            ("ReplyWithError", api!(RedisModule_ReplyWithError).is_some()),
            (
                "ReplyWithSimpleString",
                api!(RedisModule_ReplyWithSimpleString).is_some(),
            ),
            (
                "GetContextFlags",
                api!(RedisModule_GetContextFlags).is_some(),
            ),
            ("WrongArity", api!(RedisModule_WrongArity).is_some()),
            (
                "SignalModifiedKey",
                api!(RedisModule_SignalModifiedKey).is_some(),
            ),
            (
                "SetModuleOptions",
                api!(RedisModule_SetModuleOptions).is_some(),
            ),
            (
                "SaveStringBuffer",
                api!(RedisModule_SaveStringBuffer).is_some(),
            ),
            (
                "LoadStringBuffer",
                api!(RedisModule_LoadStringBuffer).is_some(),
            ),
            ("EmitAOF", api!(RedisModule_EmitAOF).is_some()),
            (
                "DigestAddStringBuffer",
                api!(RedisModule_DigestAddStringBuffer).is_some(),
            ),
            (
                "DigestEndSequence",
                api!(RedisModule_DigestEndSequence).is_some(),
            ),
            ("CreateCommand", api!(RedisModule_CreateCommand).is_some()),
            ("GetCommand", api!(RedisModule_GetCommand).is_some()),
            ("SetCommandInfo", api!(RedisModule_SetCommandInfo).is_some()),
            ("Free", api!(RedisModule_Free).is_some()),
            (
                "ReplicateVerbatim",
                api!(RedisModule_ReplicateVerbatim).is_some(),
            ),
            ("StringDMA", api!(RedisModule_StringDMA).is_some()),
            (
                "NotifyKeyspaceEvent",
                api!(RedisModule_NotifyKeyspaceEvent).is_some(),
            ),
            (
                "RegisterInfoFunc",
                api!(RedisModule_RegisterInfoFunc).is_some(),
            ),
            ("InfoAddSection", api!(RedisModule_InfoAddSection).is_some()),
            (
                "InfoAddFieldULongLong",
                api!(RedisModule_InfoAddFieldULongLong).is_some(),
            ),
            (
                "RegisterCommandFilter",
                api!(RedisModule_RegisterCommandFilter).is_some(),
            ),
            (
                "CommandFilterArgsCount",
                api!(RedisModule_CommandFilterArgsCount).is_some(),
            ),
            (
                "CommandFilterArgGet",
                api!(RedisModule_CommandFilterArgGet).is_some(),
            ),
        ];
        table
            .iter()
            .find(|(_, present)| !present)
            .map(|(name, _)| *name)
    }
}

/// The bytes of a server string, borrowed for as long as the command runs.
pub fn bytes<'a>(s: RString) -> &'a [u8] {
    let mut len = 0usize;
    // SAFETY: `s` is a live argument of the running command; the server owns
    // the buffer until the command returns.
    unsafe {
        match api!(RedisModule_StringPtrLen) {
            Some(f) => {
                let ptr = f(s, &mut len);
                if ptr.is_null() {
                    &[]
                } else {
                    std::slice::from_raw_parts(ptr.cast::<u8>(), len)
                }
            }
            None => &[],
        }
    }
}

/// The running command's context flags (`REDISMODULE_CTX_FLAGS_*`).
pub fn context_flags(ctx: Ctx) -> c_int {
    // SAFETY: `ctx` is the running command's context.
    unsafe { api!(RedisModule_GetContextFlags).map_or(0, |f| f(ctx)) }
}

/// Whether the command came from the master or the AOF, which alone may
/// send the time- and state-carrying forms.
pub fn from_master_or_aof(context_flags: c_int) -> bool {
    let mask =
        (raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING) as c_int;
    context_flags & mask != 0
}

/// What an open key holds, seen from one module type.
pub enum Held<T> {
    Nothing,
    Ours(NonNull<T>),
    Other,
}

/// An open key, closed on drop.
pub struct Key {
    ctx: Ctx,
    name: RString,
    ptr: *mut raw::RedisModuleKey,
}

impl Key {
    /// Opens `name` for reading, or for writing too.
    pub fn open(ctx: Ctx, name: RString, write: bool) -> Key {
        let mode = if write {
            raw::REDISMODULE_READ | raw::REDISMODULE_WRITE
        } else {
            raw::REDISMODULE_READ
        };
        // SAFETY: `ctx` and `name` belong to the running command.
        let ptr = unsafe {
            api!(RedisModule_OpenKey).map_or(std::ptr::null_mut(), |f| f(ctx, name, mode as c_int))
        };
        Key { ctx, name, ptr }
    }

    /// The value, if the key holds one of module type `ty`.
    pub fn held<T>(&self, ty: *mut raw::RedisModuleType) -> Held<T> {
        if self.ptr.is_null() {
            return Held::Nothing;
        }
        // SAFETY: `self.ptr` is an open key; a value of type `ty` was stored
        // by this module as a `Box<T>` (see `set`).
        unsafe {
            let kind = api!(RedisModule_KeyType).map_or(-1, |f| f(self.ptr));
            if kind == raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
                return Held::Nothing;
            }
            if kind != raw::REDISMODULE_KEYTYPE_MODULE as c_int
                || api!(RedisModule_ModuleTypeGetType).map_or(std::ptr::null_mut(), |f| f(self.ptr))
                    != ty
            {
                return Held::Other;
            }
            let value =
                api!(RedisModule_ModuleTypeGetValue).map_or(std::ptr::null_mut(), |f| f(self.ptr));
            NonNull::new(value.cast::<T>()).map_or(Held::Other, Held::Ours)
        }
    }

    /// Stores `value` as the key's value of module type `ty`, replacing
    /// whatever the key held. Returns false if the server refused.
    pub fn set<T>(&self, ty: *mut raw::RedisModuleType, value: Box<T>) -> bool {
        let raw_value = Box::into_raw(value);
        // SAFETY: the key is open for writing; on success the server owns
        // the value and frees it through the type's `free` callback.
        let ok = unsafe {
            api!(RedisModule_ModuleTypeSetValue).is_some_and(|f| {
                f(self.ptr, ty, raw_value.cast::<c_void>()) == raw::REDISMODULE_OK as c_int
            })
        };
        if !ok {
            // SAFETY: the server did not take it: it is still ours.
            drop(unsafe { Box::from_raw(raw_value) });
        }
        ok
    }

    /// Sets the expiry to an absolute Unix time in milliseconds.
    pub fn expire_at_ms(&self, unix_ms: i64) {
        // SAFETY: the key is open for writing and holds a value.
        unsafe {
            if let Some(f) = api!(RedisModule_SetAbsExpire) {
                f(self.ptr, unix_ms);
            }
        }
    }

    /// The expiry as an absolute Unix time in milliseconds, if the key has one.
    pub fn expire_ms(&self) -> Option<i64> {
        // SAFETY: the key is open.
        let ms = unsafe { api!(RedisModule_GetAbsExpire).map_or(-1, |f| f(self.ptr)) };
        (ms != raw::REDISMODULE_NO_EXPIRE as i64).then_some(ms)
    }

    /// Tells WATCH and client-side caching that the key changed.
    pub fn signal_modified(&self) {
        // SAFETY: ctx and name belong to the running command.
        unsafe {
            if let Some(f) = api!(RedisModule_SignalModifiedKey) {
                f(self.ctx, self.name);
            }
        }
    }

    /// The bytes of a string value, if the key holds a string.
    pub fn string(&self) -> Option<&[u8]> {
        if self.ptr.is_null() {
            return None;
        }
        let mut len = 0usize;
        // SAFETY: the key is open; DMA in read mode borrows the string's
        // buffer, which lives while the key is open and unmodified.
        unsafe {
            let kind = api!(RedisModule_KeyType).map_or(-1, |f| f(self.ptr));
            if kind != raw::REDISMODULE_KEYTYPE_STRING as c_int {
                return None;
            }
            let ptr =
                api!(RedisModule_StringDMA)?(self.ptr, &mut len, raw::REDISMODULE_READ as c_int);
            (!ptr.is_null()).then(|| std::slice::from_raw_parts(ptr.cast::<u8>(), len))
        }
    }

    /// Publishes a keyspace event of the module class (`d` in
    /// notify-keyspace-events); the server drops it unless configured.
    pub fn notify(&self, event: &CStr) {
        // SAFETY: ctx and name belong to the running command.
        unsafe {
            if let Some(f) = api!(RedisModule_NotifyKeyspaceEvent) {
                f(
                    self.ctx,
                    raw::REDISMODULE_NOTIFY_MODULE,
                    event.as_ptr(),
                    self.name,
                );
            }
        }
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: opened by `open`, closed once.
            unsafe {
                if let Some(f) = api!(RedisModule_CloseKey) {
                    f(self.ptr);
                }
            }
        }
    }
}

/// Replies with the five integers every command answers.
pub fn reply_five(ctx: Ctx, fields: [i64; 5]) {
    // SAFETY: `ctx` is the running command's context.
    unsafe {
        if let (Some(array), Some(int)) = (
            api!(RedisModule_ReplyWithArray),
            api!(RedisModule_ReplyWithLongLong),
        ) {
            array(ctx, 5);
            for field in fields {
                int(ctx, field as c_longlong);
            }
        }
    }
}

/// Replies with an error. `message` starts with its error code (`ERR`,
/// `WRONGTYPE`) and contains no NUL byte, which `CStr` guarantees.
pub fn reply_error(ctx: Ctx, message: &CStr) {
    // SAFETY: `ctx` is the running command's context.
    unsafe {
        if let Some(f) = api!(RedisModule_ReplyWithError) {
            f(ctx, message.as_ptr());
        }
    }
}

pub fn reply_ok(ctx: Ctx) {
    // SAFETY: `ctx` is the running command's context.
    unsafe {
        if let Some(f) = api!(RedisModule_ReplyWithSimpleString) {
            f(ctx, c"OK".as_ptr());
        }
    }
}

/// Replies with the server's standard wrong-number-of-arguments error.
pub fn reply_wrong_arity(ctx: Ctx) {
    // SAFETY: `ctx` is the running command's context.
    unsafe {
        if let Some(f) = api!(RedisModule_WrongArity) {
            f(ctx);
        }
    }
}

/// Propagates the running command as the client sent it. Cheap: the
/// server reuses its own argument vector, and drops it when nothing
/// listens (see `replication`).
pub fn replicate_verbatim(ctx: Ctx) {
    // SAFETY: `ctx` is the running command's context.
    unsafe {
        if let Some(f) = api!(RedisModule_ReplicateVerbatim) {
            f(ctx);
        }
    }
}

/// Sends the running command to the replicas and the AOF with the master's
/// clock appended: `command <args as the client sent them> AT <ns>`. The
/// client's argument strings are passed by reference, not copied.
pub fn replicate_with_time(ctx: Ctx, command: &CStr, args: &[RString], at: i64) {
    let Some(f) = api!(RedisModule_Replicate) else {
        return;
    };
    let (cmd, argv, argc) = (command.as_ptr(), args.as_ptr(), args.len());
    // SAFETY: each variadic argument has the C type its format letter names:
    // 'v' an array of server strings and its length, 'c' a C string, 'l' a
    // long long. The strings are the running command's arguments.
    unsafe {
        f(
            ctx,
            cmd,
            c"vcl".as_ptr(),
            argv,
            argc,
            c"AT".as_ptr(),
            at as c_longlong,
        );
    }
}
