//! The module's INFO section and the command filter that watches for
//! `CONFIG RESETSTAT`: the server's side. What the section holds comes
//! from above, through [`Section`].

use std::ffi::{c_int, CStr, CString};
use std::marker::PhantomData;

use redis_module::raw::{self, RedisModuleCommandFilterCtx, RedisModuleInfoCtx};

use super::api::{api, Api, LoadCtx};
use super::command::string_bytes;

/// What the module's INFO section holds.
pub trait Section {
    /// Writes the section's fields, in order.
    fn write(fields: &mut Fields<'_>);
    /// `CONFIG RESETSTAT` ran.
    fn reset();
}

/// The fields of the INFO section being written.
pub struct Fields<'a> {
    ctx: *mut RedisModuleInfoCtx,
    api: &'static Api,
    _info: PhantomData<&'a ()>,
}

impl Fields<'_> {
    /// A numeric field.
    pub fn number(&mut self, name: &str, value: u64) {
        let name = CString::new(name).unwrap_or_default();
        // SAFETY: `ctx` is the server's INFO context, live while the
        // section is written; the name is a C string the server copies.
        unsafe { (self.api.info_add_field_ulonglong)(self.ctx, name.as_ptr(), value) };
    }

    /// A text field.
    pub fn text(&mut self, name: &CStr, value: &str) {
        let value = CString::new(value).unwrap_or_default();
        // SAFETY: as in `number`; both are C strings the server copies.
        unsafe { (self.api.info_add_field_cstring)(self.ctx, name.as_ptr(), value.as_ptr()) };
    }
}

/// The INFO callback: the module's one section, unnamed.
extern "C" fn info<S: Section>(ctx: *mut RedisModuleInfoCtx, _for_crash_report: c_int) {
    let _ = std::panic::catch_unwind(|| {
        let Some(api) = api() else {
            return;
        };
        // SAFETY: `ctx` is the server's INFO context; the name is a C string.
        unsafe { (api.info_add_section)(ctx, c"".as_ptr()) };
        S::write(&mut Fields {
            ctx,
            api,
            _info: PhantomData,
        });
    });
}

/// A command filter that reports `CONFIG RESETSTAT`. It runs for every
/// command, so it looks at the arguments only when there are two.
extern "C" fn watch_resetstat<S: Section>(fctx: *mut RedisModuleCommandFilterCtx) {
    let _ = std::panic::catch_unwind(|| {
        let Some(api) = api() else {
            return;
        };
        // SAFETY: `fctx` is the server's filter context for this command.
        if unsafe { (api.command_filter_args_count)(fctx) } != 2 {
            return;
        }
        if filter_arg_is(api, fctx, 0, b"CONFIG") && filter_arg_is(api, fctx, 1, b"RESETSTAT") {
            S::reset();
        }
    });
}

/// Whether a command filter's argument at `pos` is `word`, in any case.
/// The argument's bytes are only borrowed for the comparison.
fn filter_arg_is(
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

/// Registers the INFO section and the filter.
pub fn register<S: Section>(api: &Api, ctx: LoadCtx) -> Result<(), &'static CStr> {
    let ctx = ctx.raw();
    // SAFETY: called during OnLoad with the load context.
    unsafe {
        if (api.register_info_func)(ctx, Some(info::<S>)) != raw::REDISMODULE_OK as c_int {
            return Err(c"could not register the INFO section");
        }
        if (api.register_command_filter)(ctx, Some(watch_resetstat::<S>), 0).is_null() {
            return Err(c"could not register the CONFIG RESETSTAT filter");
        }
    }
    Ok(())
}
