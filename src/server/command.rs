//! The running command's context ([`Ctx`]) and arguments ([`Argv`]),
//! created once per command by [`with_command`] with a lifetime that ends
//! when the command returns, so borrowed argument bytes cannot outlive it.
//! Nothing here allocates or copies an argument: the hot path costs what
//! the server itself costs.

use std::ffi::{c_int, c_long, c_longlong, CStr};
use std::marker::PhantomData;

use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};

use super::api::{api, Api};

/// The running command's context, valid for `'a`: the command's duration.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub(super) raw: *mut RedisModuleCtx,
    pub(super) api: &'static Api,
    _command: PhantomData<&'a ()>,
}

/// The running command's arguments, valid for `'a`.
#[derive(Clone, Copy)]
pub struct Argv<'a> {
    argv: &'a [*mut RedisModuleString],
    api: &'static Api,
}

/// A command's handler, as a type: [`handler`] gives the server its entry.
pub trait Command {
    /// Runs the command with its typed context and arguments.
    fn run(ctx: Ctx<'_>, argv: Argv<'_>);
}

/// The server's entry of command `C`: the typed context and arguments,
/// made once, for `C::run`.
pub extern "C" fn handler<C: Command>(
    raw: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    // Commands are registered only after the API table resolved.
    let Some(api) = api() else {
        return raw::REDISMODULE_ERR as c_int;
    };
    // SAFETY: the server's arguments to a command handler.
    unsafe { with_command(raw, argv, argc, api, C::run) };
    raw::REDISMODULE_OK as c_int
}

/// Runs `f` with the context and arguments of one command. The
/// higher-ranked lifetime keeps everything borrowed from them inside `f`.
///
/// # Safety
/// `raw` is the running command's context and `argv` its `argc` arguments,
/// as the server passes them to a command handler.
unsafe fn with_command<R>(
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
    pub(super) fn raw(&self, i: usize) -> Option<*mut RedisModuleString> {
        self.argv.get(i).copied()
    }
}

/// The bytes of a server string that lives at least as long as `'a`.
pub(super) fn string_bytes<'a>(api: &Api, s: *mut RedisModuleString) -> &'a [u8] {
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
