//! The server's module API, resolved once at load: every server function
//! the module calls, checked when the module loads (a server lacking one
//! refuses the module with a log line naming it); after that each call is
//! a direct call, never re-checked.

use std::ffi::{c_char, c_int, c_long, c_longlong, c_ulonglong, c_void};
use std::sync::OnceLock;

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

/// The context of `OnLoad`, valid while the module loads: what the load
/// steps (types, commands, INFO, events) are registered with.
#[derive(Clone, Copy)]
pub struct LoadCtx<'a> {
    raw: *mut RedisModuleCtx,
    _load: std::marker::PhantomData<&'a ()>,
}

impl<'a> LoadCtx<'a> {
    /// The load context `raw`, valid while `_context`, the crate's view of
    /// it, is borrowed.
    pub(super) fn new(raw: *mut RedisModuleCtx, _context: &'a redis_module::Context) -> Self {
        LoadCtx {
            raw,
            _load: std::marker::PhantomData,
        }
    }

    pub(super) fn raw(self) -> *mut RedisModuleCtx {
        self.raw
    }

    /// Sets the module's options: I/O errors are handled (a payload that
    /// does not decode is refused, not a crash), and a key is signalled
    /// modified only where the module says so.
    pub fn set_module_options(self, api: &Api) {
        // SAFETY: called once during OnLoad with the load context.
        unsafe {
            (api.set_module_options)(
                self.raw,
                (raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS
                    | raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED) as c_int,
            );
        }
    }
}
