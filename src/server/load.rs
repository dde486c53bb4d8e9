//! `RedisModule_OnLoad`, the module's entry: it registers the module with
//! the server, takes the `PREFIX` option out of the load arguments, makes
//! the configuration from the rest (docs/DESIGN.md#loading), and runs
//! the module's own `init`. Written out rather than through the
//! `redis-module` crate's `redis_module!` macro, whose entry reads every
//! load argument as a configuration name or value.

use std::ffi::{c_char, c_int, CStr};

use redis_module::configuration::{
    get_bool_default_config_value, get_i64_default_config_value, register_bool_configuration,
    register_i64_configuration, ConfigurationFlags,
};
use redis_module::{raw, Context, RedisString};

use super::api::LoadCtx;
use crate::config;

/// The module's name, as `MODULE LIST` shows it and INFO names its section.
const NAME: &CStr = c"ratelimit";

/// The module's version as `MODULE LIST` shows it, from Cargo.toml's:
/// major × 10000 + minor × 100 + patch.
const VERSION: c_int = {
    let major = parse_version_part(env!("CARGO_PKG_VERSION_MAJOR"));
    let minor = parse_version_part(env!("CARGO_PKG_VERSION_MINOR"));
    let patch = parse_version_part(env!("CARGO_PKG_VERSION_PATCH"));
    major * 10_000 + minor * 100 + patch
};

/// A decimal number of Cargo's version, at compile time.
const fn parse_version_part(text: &str) -> c_int {
    let bytes = text.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while i < bytes.len() {
        n = n * 10 + (bytes[i] - b'0') as c_int;
        i += 1;
    }
    n
}

/// Called by the server when it loads the module, with the load arguments.
///
/// # Safety
/// Called by the server only, once, with its load context and arguments.
#[no_mangle]
pub unsafe extern "C" fn RedisModule_OnLoad(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the server's load context; the name is a C string.
    let init = unsafe {
        raw::Export_RedisModule_Init(
            ctx,
            NAME.as_ptr().cast::<c_char>(),
            VERSION,
            raw::REDISMODULE_APIVER_1 as c_int,
        )
    };
    if init == raw::Status::Err as c_int {
        return raw::Status::Err as c_int;
    }
    let context = Context::new(ctx);
    // The crate's own logging without a context goes through this one.
    let _ = redis_module::MODULE_CONTEXT.set_context(&context);
    let args = redis_module::decode_args(ctx, argv, argc);
    let loaded = take_prefix(args).and_then(|(prefix, args)| {
        configure(&context, &args)?;
        if let Some(prefix) = prefix {
            config::set_prefix(&prefix);
        }
        crate::init(LoadCtx::new(ctx, &context))
    });
    match loaded {
        Ok(()) => raw::Status::Ok as c_int,
        Err(message) => {
            context.log_warning(&format!("ratelimit: {message}"));
            raw::Status::Err as c_int
        }
    }
}

/// Takes `PREFIX <word>` (the keyword in any case) out of the load
/// arguments: the word, if given and valid, and the other arguments.
fn take_prefix(args: Vec<RedisString>) -> Result<(Option<String>, Vec<RedisString>), String> {
    let mut prefix = None;
    let mut rest = Vec::with_capacity(args.len());
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if !arg.as_slice().eq_ignore_ascii_case(b"PREFIX") {
            rest.push(arg);
            continue;
        }
        if prefix.is_some() {
            return Err("PREFIX is given more than once".to_string());
        }
        let Some(word) = args.next() else {
            return Err("PREFIX needs a word: loadmodule <path> PREFIX <word>".to_string());
        };
        let word = word.as_slice();
        if !config::valid_prefix(word) {
            return Err(format!(
                "PREFIX must be 1 to {} ASCII letters, digits or underscores (got '{}')",
                config::MAX_PREFIX,
                String::from_utf8_lossy(&word[..word.len().min(64)])
            ));
        }
        prefix = Some(String::from_utf8_lossy(word).into_owned());
    }
    Ok((prefix, rest))
}

/// Registers the configuration (`CONFIG GET/SET ratelimit.<name>`), its
/// values taken from the load arguments (`name value` pairs) where given,
/// then from the configuration file.
fn configure(context: &Context, args: &[RedisString]) -> Result<(), String> {
    let int = |name, default| {
        get_i64_default_config_value(args, name, default).map_err(|e| e.to_string())
    };
    let max_slide_limit = int("max-slide-limit", config::DEFAULT_MAX_SLIDE_LIMIT)?;
    register_i64_configuration(
        context,
        "max-slide-limit",
        &config::MAX_SLIDE_LIMIT,
        max_slide_limit,
        1,
        config::HARD_MAX_SLIDE_LIMIT,
        ConfigurationFlags::DEFAULT,
        None,
    );
    let max_slices = int("max-slices", config::DEFAULT_MAX_SLICES)?;
    register_i64_configuration(
        context,
        "max-slices",
        &config::MAX_SLICES,
        max_slices,
        1,
        config::HARD_MAX_SLICES,
        ConfigurationFlags::DEFAULT,
        None,
    );
    // RL.TOP's summary follows a change at once (crate::top_settings_changed).
    let top_size = int("top-size", config::DEFAULT_TOP_SIZE)?;
    register_i64_configuration(
        context,
        "top-size",
        &config::TOP_SIZE,
        top_size,
        0,
        config::MAX_TOP_SIZE,
        ConfigurationFlags::DEFAULT,
        Some(Box::new(|_, _, _| crate::top_settings_changed())),
    );
    let top_half_life = int("top-half-life", config::DEFAULT_TOP_HALF_LIFE)?;
    register_i64_configuration(
        context,
        "top-half-life",
        &config::TOP_HALF_LIFE,
        top_half_life,
        1,
        config::MAX_TOP_HALF_LIFE,
        ConfigurationFlags::DEFAULT,
        Some(Box::new(|_, _, _| crate::top_settings_changed())),
    );
    let cell_alias =
        get_bool_default_config_value(args, "cell-alias", false).map_err(|e| e.to_string())?;
    register_bool_configuration(
        context,
        "cell-alias",
        &config::CELL_ALIAS,
        cell_alias,
        ConfigurationFlags::IMMUTABLE,
        None,
    );
    // SAFETY: a server function, present from Redis 7.0 on; the load
    // context.
    if let Some(load_configs) = unsafe { raw::RedisModule_LoadConfigs } {
        // SAFETY: the load context, after every configuration registered.
        unsafe { load_configs(context.ctx) };
    }
    Ok(())
}
