//! The server's module API, resolved once at load, and the typed handles
//! that every other file uses instead of raw pointers.
//!
//! - [`Api`]: every server function the module calls, checked when the
//!   module loads (a server lacking one refuses the module with a log line
//!   naming it); after that each call is a direct call, never re-checked.
//! - [`Ctx`] and [`Argv`]: the running command's context and arguments,
//!   created once per command by `commands::entry` with a lifetime that ends
//!   when the command returns, so borrowed argument bytes cannot outlive it.
//! - [`ModuleType`]: a custom type's server handle tied to its Rust state
//!   type, so a key's value can only be read or written as the type it is.
//! - [`Key`]: an open key, closed on drop.
//!
//! Nothing here allocates or copies an argument: the hot path costs what
//! the server itself costs.

use std::ffi::{c_char, c_int, c_long, c_longlong, c_ulonglong, c_void, CStr};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

use redis_module::native_types::RedisType;
use redis_module::raw::{
    self, mstime_t, RedisModuleCmdFunc, RedisModuleCommand, RedisModuleCommandFilterCtx,
    RedisModuleCommandFilterFunc, RedisModuleCommandInfo, RedisModuleCtx, RedisModuleDigest,
    RedisModuleEvent, RedisModuleEventCallback, RedisModuleIO, RedisModuleInfoCtx,
    RedisModuleInfoFunc, RedisModuleKey, RedisModuleServerInfoData, RedisModuleString,
    RedisModuleType,
};

/// Declares [`Api`] with one field per server function and its resolver.
macro_rules! api_table {
    ($($field:ident = $name:ident: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The server functions the module calls, resolved at load.
        pub struct Api {
            $(pub $field: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
            pub replicate: unsafe extern "C" fn(
                *mut RedisModuleCtx, *const c_char, *const c_char, ...
            ) -> c_int,
            pub emit_aof: unsafe extern "C" fn(
                *mut RedisModuleIO, *const c_char, *const c_char, ...
            ),
            pub call: unsafe extern "C" fn(
                *mut RedisModuleCtx, *const c_char, *const c_char, ...
            ) -> *mut raw::RedisModuleCallReply,
            /// The server's time of the running command, in µs since the
            /// epoch (`clock::now`); absent before Redis 7.2.
            pub cached_microseconds: Option<unsafe extern "C" fn() -> raw::ustime_t>,
        }

        impl Api {
            /// Reads every function from the table the server filled in,
            /// or names the first one this server lacks.
            fn resolve() -> Result<Api, &'static str> {
                // SAFETY: the server wrote these statics once, during
                // `RedisModule_Init`, before any module code ran.
                unsafe {
                    Ok(Api {
                        $($field: raw::$name.ok_or(stringify!($name))?,)*
                        replicate: raw::RedisModule_Replicate.ok_or("RedisModule_Replicate")?,
                        emit_aof: raw::RedisModule_EmitAOF.ok_or("RedisModule_EmitAOF")?,
                        call: raw::RedisModule_Call.ok_or("RedisModule_Call")?,
                        cached_microseconds: raw::RedisModule_CachedMicroseconds,
                    })
                }
            }
        }
    };
}

api_table! {
    string_ptr_len = RedisModule_StringPtrLen: fn(*const RedisModuleString, *mut usize) -> *const c_char;
    open_key = RedisModule_OpenKey: fn(*mut RedisModuleCtx, *mut RedisModuleString, c_int) -> *mut RedisModuleKey;
    close_key = RedisModule_CloseKey: fn(*mut RedisModuleKey);
    key_type = RedisModule_KeyType: fn(*mut RedisModuleKey) -> c_int;
    module_type_get_type = RedisModule_ModuleTypeGetType: fn(*mut RedisModuleKey) -> *mut RedisModuleType;
    module_type_get_value = RedisModule_ModuleTypeGetValue: fn(*mut RedisModuleKey) -> *mut c_void;
    module_type_set_value = RedisModule_ModuleTypeSetValue: fn(*mut RedisModuleKey, *mut RedisModuleType, *mut c_void) -> c_int;
    set_abs_expire = RedisModule_SetAbsExpire: fn(*mut RedisModuleKey, mstime_t) -> c_int;
    get_abs_expire = RedisModule_GetAbsExpire: fn(*mut RedisModuleKey) -> mstime_t;
    string_dma = RedisModule_StringDMA: fn(*mut RedisModuleKey, *mut usize, c_int) -> *mut c_char;
    signal_modified_key = RedisModule_SignalModifiedKey: fn(*mut RedisModuleCtx, *mut RedisModuleString) -> c_int;
    notify_keyspace_event = RedisModule_NotifyKeyspaceEvent: fn(*mut RedisModuleCtx, c_int, *const c_char, *mut RedisModuleString) -> c_int;
    get_context_flags = RedisModule_GetContextFlags: fn(*mut RedisModuleCtx) -> c_int;
    reply_with_array = RedisModule_ReplyWithArray: fn(*mut RedisModuleCtx, c_long) -> c_int;
    reply_with_map = RedisModule_ReplyWithMap: fn(*mut RedisModuleCtx, c_long) -> c_int;
    reply_with_null = RedisModule_ReplyWithNull: fn(*mut RedisModuleCtx) -> c_int;
    reply_with_long_long = RedisModule_ReplyWithLongLong: fn(*mut RedisModuleCtx, c_longlong) -> c_int;
    reply_with_error = RedisModule_ReplyWithError: fn(*mut RedisModuleCtx, *const c_char) -> c_int;
    reply_with_simple_string = RedisModule_ReplyWithSimpleString: fn(*mut RedisModuleCtx, *const c_char) -> c_int;
    reply_with_string_buffer = RedisModule_ReplyWithStringBuffer: fn(*mut RedisModuleCtx, *const c_char, usize) -> c_int;
    wrong_arity = RedisModule_WrongArity: fn(*mut RedisModuleCtx) -> c_int;
    is_keys_position_request = RedisModule_IsKeysPositionRequest: fn(*mut RedisModuleCtx) -> c_int;
    key_at_pos = RedisModule_KeyAtPos: fn(*mut RedisModuleCtx, c_int);
    delete_key = RedisModule_DeleteKey: fn(*mut RedisModuleKey) -> c_int;
    call_reply_type = RedisModule_CallReplyType: fn(*mut raw::RedisModuleCallReply) -> c_int;
    call_reply_integer = RedisModule_CallReplyInteger: fn(*mut raw::RedisModuleCallReply) -> c_longlong;
    free_call_reply = RedisModule_FreeCallReply: fn(*mut raw::RedisModuleCallReply);
    replicate_verbatim = RedisModule_ReplicateVerbatim: fn(*mut RedisModuleCtx) -> c_int;
    save_string_buffer = RedisModule_SaveStringBuffer: fn(*mut RedisModuleIO, *const c_char, usize);
    load_string_buffer = RedisModule_LoadStringBuffer: fn(*mut RedisModuleIO, *mut usize) -> *mut c_char;
    digest_add_string_buffer = RedisModule_DigestAddStringBuffer: fn(*mut RedisModuleDigest, *const c_char, usize);
    digest_end_sequence = RedisModule_DigestEndSequence: fn(*mut RedisModuleDigest);
    free = RedisModule_Free: fn(*mut c_void);
    set_module_options = RedisModule_SetModuleOptions: fn(*mut RedisModuleCtx, c_int);
    create_command = RedisModule_CreateCommand: fn(*mut RedisModuleCtx, *const c_char, RedisModuleCmdFunc, *const c_char, c_int, c_int, c_int) -> c_int;
    get_command = RedisModule_GetCommand: fn(*mut RedisModuleCtx, *const c_char) -> *mut RedisModuleCommand;
    set_command_info = RedisModule_SetCommandInfo: fn(*mut RedisModuleCommand, *const RedisModuleCommandInfo) -> c_int;
    register_info_func = RedisModule_RegisterInfoFunc: fn(*mut RedisModuleCtx, RedisModuleInfoFunc) -> c_int;
    info_add_section = RedisModule_InfoAddSection: fn(*mut RedisModuleInfoCtx, *const c_char) -> c_int;
    info_add_field_ulonglong = RedisModule_InfoAddFieldULongLong: fn(*mut RedisModuleInfoCtx, *const c_char, c_ulonglong) -> c_int;
    info_add_field_cstring = RedisModule_InfoAddFieldCString: fn(*mut RedisModuleInfoCtx, *const c_char, *const c_char) -> c_int;
    register_command_filter = RedisModule_RegisterCommandFilter: fn(*mut RedisModuleCtx, RedisModuleCommandFilterFunc, c_int) -> *mut raw::RedisModuleCommandFilter;
    command_filter_args_count = RedisModule_CommandFilterArgsCount: fn(*mut RedisModuleCommandFilterCtx) -> c_int;
    command_filter_arg_get = RedisModule_CommandFilterArgGet: fn(*mut RedisModuleCommandFilterCtx, c_int) -> *mut RedisModuleString;
    subscribe_to_server_event = RedisModule_SubscribeToServerEvent: fn(*mut RedisModuleCtx, RedisModuleEvent, RedisModuleEventCallback) -> c_int;
    get_server_info = RedisModule_GetServerInfo: fn(*mut RedisModuleCtx, *const c_char) -> *mut RedisModuleServerInfoData;
    server_info_get_field_c = RedisModule_ServerInfoGetFieldC: fn(*mut RedisModuleServerInfoData, *const c_char) -> *const c_char;
    server_info_get_field_signed = RedisModule_ServerInfoGetFieldSigned: fn(*mut RedisModuleServerInfoData, *const c_char, *mut c_int) -> c_longlong;
    free_server_info = RedisModule_FreeServerInfo: fn(*mut RedisModuleCtx, *mut RedisModuleServerInfoData);
}

static API: OnceLock<Api> = OnceLock::new();

/// Resolves the API table; called once, first thing in `OnLoad`. The error
/// names the missing function.
pub fn resolve_api() -> Result<&'static Api, &'static str> {
    if let Some(api) = API.get() {
        return Ok(api);
    }
    let api = Api::resolve()?;
    Ok(API.get_or_init(|| api))
}

/// The resolved table. `None` only before `resolve_api` succeeded, and no
/// command, type callback or event of the module runs before that.
pub fn api() -> Option<&'static Api> {
    API.get()
}

/// Optional functions, absent on some supported servers: looked up where
/// they are used, which is only at load.
pub mod optional {
    use redis_module::raw;

    /// `SetCommandACLCategories` (Redis 7.2+, Valkey).
    pub fn set_command_acl_categories(
    ) -> Option<unsafe extern "C" fn(*mut raw::RedisModuleCommand, *const std::ffi::c_char) -> i32>
    {
        // SAFETY: written once by the server before any module code runs.
        unsafe { raw::RedisModule_SetCommandACLCategories }
    }
}

/// The running command's context, valid for `'a`: the command's duration.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    raw: *mut RedisModuleCtx,
    api: &'static Api,
    _command: PhantomData<&'a ()>,
}

/// The running command's arguments, valid for `'a`.
#[derive(Clone, Copy)]
pub struct Argv<'a> {
    argv: &'a [*mut RedisModuleString],
    api: &'static Api,
}

/// Runs `f` with the context and arguments of one command. The
/// higher-ranked lifetime keeps everything borrowed from them inside `f`.
///
/// # Safety
/// `raw` is the running command's context and `argv` its `argc` arguments,
/// as the server passes them to a command handler.
pub unsafe fn with_command<R>(
    raw: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
    api: &'static Api,
    f: impl for<'a> FnOnce(Ctx<'a>, Argv<'a>) -> R,
) -> R {
    let argv: &[*mut RedisModuleString] = match usize::try_from(argc) {
        // SAFETY: the server passes `argc` valid arguments at `argv`.
        Ok(n) if !argv.is_null() => unsafe { std::slice::from_raw_parts(argv, n) },
        _ => &[],
    };
    let ctx = Ctx {
        raw,
        api,
        _command: PhantomData,
    };
    f(ctx, Argv { argv, api })
}

impl<'a> Argv<'a> {
    pub fn len(&self) -> usize {
        self.argv.len()
    }

    /// The bytes of argument `i` (empty past the end), borrowed for the
    /// command's duration.
    pub fn bytes(&self, i: usize) -> &'a [u8] {
        self.argv.get(i).map_or(&[], |&s| string_bytes(self.api, s))
    }

    /// The bytes of each argument from `i` on, borrowed for the command's
    /// duration.
    pub fn bytes_from(&self, i: usize) -> impl Iterator<Item = &'a [u8]> {
        let api = self.api;
        let argv: &'a [*mut RedisModuleString] = self.argv;
        argv.get(i..)
            .unwrap_or_default()
            .iter()
            .map(move |&s| string_bytes(api, s))
    }

    /// The arguments from `i` on.
    pub fn skip(&self, i: usize) -> Argv<'a> {
        Argv {
            argv: self.argv.get(i..).unwrap_or_default(),
            api: self.api,
        }
    }

    /// Argument `i` as the server's string, to open a key or replicate.
    fn raw(&self, i: usize) -> Option<*mut RedisModuleString> {
        self.argv.get(i).copied()
    }
}

/// The bytes of a server string that lives at least as long as `'a`.
fn string_bytes<'a>(api: &Api, s: *mut RedisModuleString) -> &'a [u8] {
    let mut len = 0usize;
    // SAFETY: `s` is a live server string (a command argument or a filter
    // argument) whose buffer the server keeps for `'a`.
    unsafe {
        let ptr = (api.string_ptr_len)(s, &mut len);
        if ptr.is_null() {
            &[]
        } else {
            std::slice::from_raw_parts(ptr.cast::<u8>(), len)
        }
    }
}

impl<'a> Ctx<'a> {
    /// The context flags (`REDISMODULE_CTX_FLAGS_*`).
    pub fn flags(&self) -> c_int {
        // SAFETY: the running command's context.
        unsafe { (self.api.get_context_flags)(self.raw) }
    }

    /// Whether the command came from the master or the AOF, which alone may
    /// send the time- and state-carrying forms.
    pub fn is_from_master_or_aof(&self) -> bool {
        let mask =
            (raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING) as c_int;
        self.flags() & mask != 0
    }

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

    /// Replies with integers in an array.
    pub fn reply_integers(&self, fields: &[i64]) {
        self.reply_array(fields.len());
        for &field in fields {
            self.reply_integer(field);
        }
    }

    /// Starts an array reply of `len` elements, which the next replies fill.
    pub fn reply_array(&self, len: usize) {
        // SAFETY: the running command's context.
        unsafe { (self.api.reply_with_array)(self.raw, len as c_long) };
    }

    /// Starts a map reply of `len` pairs (a flat array of `2 × len` under
    /// RESP2), which the next replies fill, key then value.
    pub fn reply_map(&self, len: usize) {
        // SAFETY: the running command's context.
        unsafe { (self.api.reply_with_map)(self.raw, len as c_long) };
    }

    pub fn reply_integer(&self, value: i64) {
        // SAFETY: the running command's context.
        unsafe { (self.api.reply_with_long_long)(self.raw, value as c_longlong) };
    }

    /// A simple string: module text only, never user bytes.
    pub fn reply_simple(&self, text: &CStr) {
        // SAFETY: the running command's context.
        unsafe { (self.api.reply_with_simple_string)(self.raw, text.as_ptr()) };
    }

    /// A bulk string of any bytes (user bytes go here, never in a simple
    /// string).
    pub fn reply_bytes(&self, bytes: &[u8]) {
        // SAFETY: the running command's context; the server copies the
        // buffer, which is valid for its length.
        unsafe {
            (self.api.reply_with_string_buffer)(self.raw, bytes.as_ptr().cast(), bytes.len())
        };
    }

    pub fn reply_null(&self) {
        // SAFETY: the running command's context.
        unsafe { (self.api.reply_with_null)(self.raw) };
    }

    /// `MEMORY USAGE key` for the key named by argument `i`, as the
    /// server computes it; `None` if it answers anything but an integer.
    pub fn memory_usage(&self, args: Argv<'a>, i: usize) -> Option<i64> {
        let name = args.raw(i)?;
        // SAFETY: 's' is a server string, an argument of the running
        // command; the reply is freed below.
        unsafe {
            let reply = (self.api.call)(
                self.raw,
                c"MEMORY".as_ptr(),
                c"cs".as_ptr(),
                c"USAGE".as_ptr(),
                name,
            );
            if reply.is_null() {
                return None;
            }
            let integer = ((self.api.call_reply_type)(reply)
                == raw::REDISMODULE_REPLY_INTEGER as c_int)
                .then(|| (self.api.call_reply_integer)(reply));
            (self.api.free_call_reply)(reply);
            integer
        }
    }

    /// True when the server only asks where the keys are (a command
    /// flagged `getkeys-api`, for cluster routing and COMMAND GETKEYS): the
    /// handler then names them with `key_at` and does nothing else.
    pub fn is_keys_position_request(&self) -> bool {
        // SAFETY: the running command's context.
        unsafe { (self.api.is_keys_position_request)(self.raw) != 0 }
    }

    /// Names argument `pos` as a key, answering a key-position request.
    pub fn key_at(&self, pos: usize) {
        if let Ok(pos) = c_int::try_from(pos) {
            // SAFETY: the running command's context, in a key-position request.
            unsafe { (self.api.key_at_pos)(self.raw, pos) };
        }
    }

    /// Replies with an error. `message` starts with its error code (`ERR`,
    /// `WRONGTYPE`) and contains no NUL byte, which `CStr` guarantees.
    pub fn reply_error(&self, message: &CStr) {
        // SAFETY: the running command's context.
        unsafe { (self.api.reply_with_error)(self.raw, message.as_ptr()) };
    }

    pub fn reply_ok(&self) {
        // SAFETY: the running command's context.
        unsafe { (self.api.reply_with_simple_string)(self.raw, c"OK".as_ptr()) };
    }

    /// Replies with the server's standard wrong-number-of-arguments error.
    pub fn reply_wrong_arity(&self) {
        // SAFETY: the running command's context.
        unsafe { (self.api.wrong_arity)(self.raw) };
    }

    /// Propagates the running command as the client sent it. Cheap: the
    /// server reuses its own argument vector, and drops it when nothing
    /// replays the stream (see `replication`).
    pub fn replicate_verbatim(&self) {
        // SAFETY: the running command's context.
        unsafe { (self.api.replicate_verbatim)(self.raw) };
    }

    /// Sends `command <args> AT <at>` to the replicas and the AOF. The
    /// argument strings are passed by reference, not copied.
    pub fn replicate_with_time(&self, command: &CStr, args: Argv<'a>, at: i64) {
        // SAFETY: each variadic argument has the C type its format letter
        // names: 'v' an array of server strings and its length, 'c' a C
        // string, 'l' a long long. The strings are the running command's
        // arguments.
        unsafe {
            (self.api.replicate)(
                self.raw,
                command.as_ptr(),
                c"vcl".as_ptr(),
                args.argv.as_ptr(),
                args.argv.len(),
                c"AT".as_ptr(),
                at as c_longlong,
            );
        }
    }
}

impl<'a> Ctx<'a> {
    /// Sends `RL.STATE <key> <payload> [PXAT <ms>]` to the replicas and
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
                    c"RL.STATE".as_ptr(),
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
                c"RL.STATE".as_ptr(),
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

/// A custom data type's server handle, tied to the Rust type of its values:
/// a key's value can only be read or stored as the state type it is.
pub struct ModuleType<T> {
    inner: RedisType,
    /// The server's handle, copied from `inner` once it is created: read
    /// on every call, where `inner`'s own copy sits behind a `RefCell`
    /// whose borrow costs a check and two writes.
    handle: AtomicPtr<RedisModuleType>,
    _state: PhantomData<fn() -> T>,
}

impl<T> ModuleType<T> {
    pub const fn new(
        name: &'static str,
        version: i32,
        methods: raw::RedisModuleTypeMethods,
    ) -> ModuleType<T> {
        ModuleType {
            inner: RedisType::new(name, version, methods),
            handle: AtomicPtr::new(std::ptr::null_mut()),
            _state: PhantomData,
        }
    }

    /// The server's handle, set when the module loaded (null before).
    fn raw(&self) -> *mut RedisModuleType {
        self.handle.load(Ordering::Relaxed)
    }
}

impl<T> ModuleType<T> {
    /// Creates the type in the server; called once, at load.
    pub fn create(&self, ctx: *mut RedisModuleCtx) -> Result<(), String> {
        self.inner
            .create_data_type(ctx)
            .map_err(|e| e.to_string())?;
        self.handle
            .store(*self.inner.raw_type.borrow(), Ordering::Relaxed);
        Ok(())
    }
}

/// What an open key holds, seen from one module type.
pub enum Held<'k, T> {
    Nothing,
    Ours(&'k mut T),
    Other,
}

/// An open key, closed on drop.
pub struct Key<'a> {
    ctx: Ctx<'a>,
    name: *mut RedisModuleString,
    ptr: *mut RedisModuleKey,
    /// The value `value` found and its type, which `value` of that type
    /// then returns without asking the server again; null when none, and
    /// once the key's value is replaced or deleted.
    known: (*mut raw::RedisModuleType, *mut c_void),
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
        if !ok {
            // SAFETY: the server did not take it: it is still ours.
            drop(unsafe { Box::from_raw(raw_value) });
        }
        ok
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

/// Whether a command filter's argument at `pos` is `word`, in any case.
/// The argument's bytes are only borrowed for the comparison.
pub fn filter_arg_is(
    api: &Api,
    fctx: *mut RedisModuleCommandFilterCtx,
    pos: c_int,
    word: &[u8],
) -> bool {
    // SAFETY: `fctx` is the server's filter context, valid while the filter
    // runs; the server answers null past the last argument.
    let s = unsafe { (api.command_filter_arg_get)(fctx, pos) };
    !s.is_null() && string_bytes(api, s).eq_ignore_ascii_case(word)
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
