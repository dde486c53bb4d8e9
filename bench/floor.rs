//! The floor of any module limiter with RL.THROTTLE's interface: a module
//! command with the same arguments and the same five-integer reply that
//! opens its key and decides nothing. `make bench` loads it next to the
//! real module and reports every row's throughput against it; what
//! separates an RL command from this floor is the module's own work.
//!
//! Never part of the shipped module: built with
//! `cargo build --release --example floor` as `libfloor.so`.
//!
//! Four commands with RL.THROTTLE's arguments, flags and key positions,
//! and two with RL.ALLOW's, none deciding anything:
//!
//! - `FLOOR.THROTTLE key max_burst count period [quantity] [MS]` opens its
//!   key and replies: the least a module command with this interface costs.
//! - `FLOOR.KEEP key ...` also keeps state the way a limiter must: the key
//!   holds a value (created once), and on every call its expiry is read
//!   and moved out to an hour from now (`KEPT_MS`) when that is later (so
//!   about once per millisecond on a hot key), then WATCH is told the key
//!   changed. What a limiter costs beyond it is its own work: parsing,
//!   deciding, replying from a state.
//! - `FLOOR.PARSE key ...` is FLOOR.KEEP that also reads every argument
//!   after the key (`RedisModule_StringPtrLen`, one call each) and parses
//!   it as a decimal integer: the part of a limiter's parsing that no
//!   implementation avoids. Between FLOOR.KEEP and it is the cost of
//!   reading the arguments; what an RL command costs beyond it is its
//!   parser's own work, its decision, and the rest of its flow.
//! - `FLOOR.LIMIT key ...` is FLOOR.PARSE that also propagates its change
//!   (`RedisModule_ReplicateVerbatim`, which the server drops at once when
//!   no replica, backlog or AOF can replay it, as RL commands propagate
//!   then): everything a limiter with these arguments must do except
//!   deciding; and its key holds a 16-byte value of the floor's own module
//!   type (`floor-val`), read and written on every call, where FLOOR.KEEP
//!   keeps a string, as a limiter keeps its state. The benchmark runs it
//!   as a row of its own and counts its instructions with each RL
//!   command's own arguments, so that what a command costs beyond it is
//!   its decision and its glue.
//! - `FLOOR.LIMIT64 key ...` is FLOOR.LIMIT with a 64-byte value: the
//!   allocation RL.SLIDE's, RL.SLICE's and RL.QUOTA's states take. On a
//!   key out of the cache it costs one more line to fetch than
//!   FLOOR.LIMIT: a 16-byte value is allocated beside the server's own
//!   16-byte record of it (same size class, allocated one after the
//!   other), a larger one elsewhere. The bound for a command whose state
//!   is larger than 16 bytes.
//! - `FLOOR.ALLOWLIMIT numkeys key [key ...] ...` is FLOOR.ALLOW that also
//!   reads every argument after the keys and parses it as a decimal, keeps
//!   a `floor-val` value on each key, and propagates: the same for
//!   RL.ALLOW's interface.
//!
//! All: flags
//! `write deny-oom fast` and key positions 1, 1, 1, as RL.THROTTLE; the
//! reply of the single-key ones is the five integers RL.THROTTLE answers to the benchmark's calls
//! (1,000,000 per second, burst 999,999): `0 1000000 999999 -1 1`, so
//! that formatting the reply costs the same.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::{raw, redis_module, Context, RedisString, Status};

type Handler = unsafe extern "C" fn(
    *mut raw::RedisModuleCtx,
    *mut *mut raw::RedisModuleString,
    c_int,
) -> c_int;

/// How long a floor's key lives after its last call: longer than a whole
/// benchmark, so that, as a limiter's keys do, the keys made before the
/// first measurement stay until the last.
const KEPT_MS: i64 = 3_600_000;

/// The five integers RL.THROTTLE replies in the benchmark.
const FIVE: [i64; 5] = [0, 1_000_000, 999_999, -1, 1];

extern "C" fn floor_throttle(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the server's arguments to a command handler.
    let done = unsafe {
        if argc < 5 {
            return wrong_arity(ctx);
        }
        open_and_close(ctx, *argv.add(1)).and_then(|()| reply_five(ctx))
    };
    status(done)
}

extern "C" fn floor_keep(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the server's arguments to a command handler.
    unsafe { single(ctx, argv, argc, Floor::Keep) }
}

extern "C" fn floor_parse(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: as above.
    unsafe { single(ctx, argv, argc, Floor::Parse) }
}

/// FLOOR.LIMIT (`WORDS` 2: a 16-byte value) and FLOOR.LIMIT64 (8: 64
/// bytes).
extern "C" fn floor_limit<const WORDS: usize>(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: as above.
    unsafe { single(ctx, argv, argc, Floor::Limit(WORDS)) }
}

/// The single-key floors that keep state, by what each does.
#[derive(Clone, Copy)]
enum Floor {
    /// FLOOR.KEEP: a string value kept with an expiry.
    Keep,
    /// FLOOR.PARSE: FLOOR.KEEP that also reads and parses its arguments.
    Parse,
    /// FLOOR.LIMIT and FLOOR.LIMIT64: FLOOR.PARSE keeping a module value
    /// of this many 8-byte words, and propagating.
    Limit(usize),
}

/// FLOOR.KEEP, FLOOR.PARSE or FLOOR.LIMIT.
///
/// # Safety
/// The server's arguments to a command handler.
#[inline(always)]
unsafe fn single(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    floor: Floor,
) -> c_int {
    // FLOOR.LIMIT takes every kind's arguments (RL.SLIDE's are two).
    let least = match floor {
        Floor::Limit(_) => 3,
        Floor::Keep | Floor::Parse => 5,
    };
    unsafe {
        if argc < least {
            return wrong_arity(ctx);
        }
        let (name, at) = (*argv.add(1), libc_now_ms() + KEPT_MS);
        let kept = match floor {
            Floor::Keep => keep(ctx, name, at),
            Floor::Parse => {
                parse_all(argv, 2, argc);
                keep(ctx, name, at)
            }
            Floor::Limit(words) => {
                parse_all(argv, 2, argc);
                keep_typed(ctx, name, at, words).and_then(|()| replicate(ctx))
            }
        };
        status(kept.and_then(|()| reply_five(ctx)))
    }
}

/// `FLOOR.ALLOW numkeys key [key ...] <anything>`: FLOOR.KEEP on each of
/// the `numkeys` keys (1 to 9), then RL.ALLOW's seven-element reply (the
/// binding limit's five fields, its index, one five-field array per key):
/// the least RL.ALLOW's interface costs with state kept on every key.
extern "C" fn floor_allow(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the server's arguments to a command handler.
    status(unsafe { allow(ctx, argv, argc, false) })
}

/// `FLOOR.ALLOWLIMIT numkeys key [key ...] ...`: FLOOR.ALLOW that also
/// reads and parses every argument after the keys, and propagates.
extern "C" fn floor_allow_limit(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the server's arguments to a command handler.
    status(unsafe { allow(ctx, argv, argc, true) })
}

/// FLOOR.ALLOW, and with `limit` FLOOR.ALLOWLIMIT.
///
/// # Safety
/// The server's arguments to a command handler.
unsafe fn allow(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    limit: bool,
) -> Option<()> {
    unsafe {
        let count = if argc > 1 { numkeys(*argv.add(1)) } else { 0 };
        if count == 0 || argc < 2 + count as c_int {
            wrong_arity(ctx);
            return Some(());
        }
        if limit {
            parse_all(argv, 2 + count, argc);
        }
        let at = libc_now_ms() + KEPT_MS;
        for i in 0..count {
            match limit {
                true => keep_typed(ctx, *argv.add(2 + i), at, 2)?,
                false => keep(ctx, *argv.add(2 + i), at)?,
            }
        }
        if limit {
            replicate(ctx)?;
        }
        let (array, int) = (
            raw::RedisModule_ReplyWithArray?,
            raw::RedisModule_ReplyWithLongLong?,
        );
        array(ctx, 7);
        FIVE.iter().for_each(|&f| {
            int(ctx, f);
        });
        int(ctx, 1);
        array(ctx, count as std::ffi::c_long);
        for _ in 0..count {
            reply_five(ctx)?;
        }
        Some(())
    }
}

/// Reads arguments `from..argc` and parses each as a decimal, as every
/// limiter must read its parameters.
///
/// # Safety
/// `argv` holds the running command's `argc` arguments.
unsafe fn parse_all(argv: *mut *mut raw::RedisModuleString, from: usize, argc: c_int) {
    let mut sum = 0u64;
    for i in from..argc as usize {
        sum = sum.wrapping_add(unsafe { decimal(*argv.add(i)) });
    }
    std::hint::black_box(sum);
}

/// Propagates the running command as it was sent.
///
/// # Safety
/// `ctx` is the running command's context.
unsafe fn replicate(ctx: *mut raw::RedisModuleCtx) -> Option<()> {
    unsafe {
        raw::RedisModule_ReplicateVerbatim?(ctx);
    }
    Some(())
}

/// Opens the key for writing and closes it again.
///
/// # Safety
/// `ctx` and `name` belong to the running command.
unsafe fn open_and_close(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
) -> Option<()> {
    unsafe {
        let key = raw::RedisModule_OpenKey?(ctx, name, WRITE);
        raw::RedisModule_CloseKey?(key);
    }
    Some(())
}

/// What any limiter does to keep its state: the key holds a value
/// (created once), its expiry moves out to `at_ms` when that is later, and
/// WATCH hears of the change.
///
/// # Safety
/// `ctx` and `name` belong to the running command.
unsafe fn keep(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    at_ms: i64,
) -> Option<()> {
    unsafe {
        let key = raw::RedisModule_OpenKey?(ctx, name, WRITE);
        if raw::RedisModule_KeyType?(key) == raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
            raw::RedisModule_StringSet?(key, name);
        }
        if raw::RedisModule_GetAbsExpire?(key) < at_ms {
            raw::RedisModule_SetAbsExpire?(key, at_ms);
        }
        raw::RedisModule_SignalModifiedKey?(ctx, name);
        raw::RedisModule_CloseKey?(key);
    }
    Some(())
}

/// What FLOOR.LIMIT keeps in a key: a value of the floor's own module
/// type, `words` 8-byte words, the first holding `words` and the last
/// counting the calls: both are read, the last written, on every call.
/// FLOOR.LIMIT's is 16 bytes, as RL.THROTTLE's state; FLOOR.LIMIT64's 64
/// bytes, the allocation RL.SLIDE's, RL.SLICE's and RL.QUOTA's states take
/// (56 or 64 bytes, in jemalloc's 64-byte class).
struct Cell;

impl Cell {
    /// A new value of `words` words (2 to 8), as a raw pointer.
    fn make(words: usize) -> *mut u64 {
        let mut cell = vec![0u64; words.clamp(2, 8)];
        cell[0] = cell.len() as u64;
        Box::into_raw(cell.into_boxed_slice()).cast()
    }

    /// Frees a value made by `Cell::make`.
    ///
    /// # Safety
    /// `cell` came from `Cell::make` and is freed once.
    unsafe fn free(cell: *mut u64) {
        unsafe {
            let words = *cell as usize;
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                cell, words,
            )));
        }
    }

    /// The value's words.
    ///
    /// # Safety
    /// `cell` came from `Cell::make` and is alive.
    unsafe fn words<'a>(cell: *mut u64) -> &'a mut [u64] {
        unsafe { std::slice::from_raw_parts_mut(cell, *cell as usize) }
    }
}

/// The floor's module type (`floor-val`), created at load.
static CELL_TYPE: AtomicPtr<raw::RedisModuleType> = AtomicPtr::new(std::ptr::null_mut());

/// `keep`, with the key's value a `Cell` of `words` words of the floor's
/// module type instead of a string: as a limiter keeps its state (two more
/// look-ups, the type's and the value's, and the value's memory read and
/// written).
///
/// # Safety
/// `ctx` and `name` belong to the running command.
unsafe fn keep_typed(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    at_ms: i64,
    words: usize,
) -> Option<()> {
    let ty = CELL_TYPE.load(Ordering::Relaxed);
    unsafe {
        let key = raw::RedisModule_OpenKey?(ctx, name, WRITE);
        match raw::RedisModule_ModuleTypeGetType?(key) == ty {
            true => {
                let cell = Cell::words(raw::RedisModule_ModuleTypeGetValue?(key).cast());
                if let Some(calls) = cell.last_mut() {
                    *calls = calls.wrapping_add(1);
                }
            }
            false => {
                let cell = Cell::make(words);
                if raw::RedisModule_ModuleTypeSetValue?(key, ty, cell.cast())
                    != raw::REDISMODULE_OK as c_int
                {
                    Cell::free(cell);
                }
            }
        }
        if raw::RedisModule_GetAbsExpire?(key) < at_ms {
            raw::RedisModule_SetAbsExpire?(key, at_ms);
        }
        raw::RedisModule_SignalModifiedKey?(ctx, name);
        raw::RedisModule_CloseKey?(key);
    }
    Some(())
}

// The type's callbacks. The floor's keys live for an hour in a
// benchmark's server: RDB saves and loads them, an AOF rewrite leaves
// them out.

extern "C" fn cell_rdb_save(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: `value` is a `Cell` this module stored.
    unsafe {
        if let (false, Some(save)) = (value.is_null(), raw::RedisModule_SaveUnsigned) {
            // The length first (the first word holds it too).
            let words = Cell::words(value.cast());
            save(rdb, words.len() as u64);
            words.iter().for_each(|&w| save(rdb, w));
        }
    }
}

extern "C" fn cell_rdb_load(rdb: *mut raw::RedisModuleIO, _encver: c_int) -> *mut c_void {
    // SAFETY: the server's loading context.
    unsafe {
        let Some(load) = raw::RedisModule_LoadUnsigned else {
            return std::ptr::null_mut();
        };
        let saved = load(rdb);
        let cell = Cell::make(usize::try_from(saved).unwrap_or(8));
        let words = Cell::words(cell);
        let len = words.len() as u64;
        for w in words.iter_mut().take(saved.min(len) as usize) {
            *w = load(rdb);
        }
        // Past the words kept, if the saved length was out of range.
        for _ in len..saved.min(u64::from(u8::MAX)) {
            load(rdb);
        }
        words[0] = len;
        cell.cast()
    }
}

extern "C" fn cell_aof_rewrite(
    _aof: *mut raw::RedisModuleIO,
    _key: *mut raw::RedisModuleString,
    _value: *mut c_void,
) {
}

extern "C" fn cell_mem_usage(value: *const c_void) -> usize {
    // SAFETY: a `Cell` this module stored.
    unsafe { Cell::words(value.cast_mut().cast()).len() * 8 }
}

extern "C" fn cell_free(value: *mut c_void) {
    if !value.is_null() {
        // SAFETY: a `Cell` this module made, freed once by the server.
        unsafe { Cell::free(value.cast()) };
    }
}

/// Replies RL.THROTTLE's five integers.
///
/// # Safety
/// `ctx` is the running command's context.
unsafe fn reply_five(ctx: *mut raw::RedisModuleCtx) -> Option<()> {
    unsafe {
        raw::RedisModule_ReplyWithArray?(ctx, 5);
        let int = raw::RedisModule_ReplyWithLongLong?;
        FIVE.iter().for_each(|&f| {
            int(ctx, f);
        });
    }
    Some(())
}

/// `numkeys` as one digit, 1 to 9 (0 for anything else).
///
/// # Safety
/// `arg` is an argument of the running command.
unsafe fn numkeys(arg: *mut raw::RedisModuleString) -> usize {
    let mut len = 0usize;
    unsafe {
        let Some(ptr_len) = raw::RedisModule_StringPtrLen else {
            return 0;
        };
        let p = ptr_len(arg, &mut len);
        if len == 1 && !p.is_null() {
            usize::from((*p as u8).wrapping_sub(b'0')).min(10) % 10
        } else {
            0
        }
    }
}

/// An argument's bytes read as a decimal integer (digits up to the first
/// other byte; wrapping on overflow).
///
/// # Safety
/// `arg` is an argument of the running command.
unsafe fn decimal(arg: *mut raw::RedisModuleString) -> u64 {
    let mut len = 0usize;
    unsafe {
        let Some(ptr_len) = raw::RedisModule_StringPtrLen else {
            return 0;
        };
        let p = ptr_len(arg, &mut len);
        if p.is_null() {
            return 0;
        }
        let bytes = std::slice::from_raw_parts(p.cast::<u8>(), len);
        let mut n = 0u64;
        for &b in bytes {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 {
                break;
            }
            n = n.wrapping_mul(10).wrapping_add(u64::from(digit));
        }
        n
    }
}

/// # Safety
/// `ctx` is the running command's context.
unsafe fn wrong_arity(ctx: *mut raw::RedisModuleCtx) -> c_int {
    unsafe { raw::RedisModule_WrongArity.map_or(raw::REDISMODULE_ERR as c_int, |f| f(ctx)) }
}

fn status(done: Option<()>) -> c_int {
    match done {
        Some(()) => raw::REDISMODULE_OK as c_int,
        None => raw::REDISMODULE_ERR as c_int,
    }
}

const WRITE: c_int = (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int;

/// Wall-clock milliseconds, read the way the module reads its clock.
fn libc_now_ms() -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
}

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    // SAFETY: called once during OnLoad with the load context.
    unsafe {
        let Some(create) = raw::RedisModule_CreateCommand else {
            return Status::Err;
        };
        let Some(create_type) = raw::RedisModule_CreateDataType else {
            return Status::Err;
        };
        let mut methods = raw::RedisModuleTypeMethods {
            version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
            rdb_load: Some(cell_rdb_load),
            rdb_save: Some(cell_rdb_save),
            aof_rewrite: Some(cell_aof_rewrite),
            mem_usage: Some(cell_mem_usage),
            digest: None,
            free: Some(cell_free),
            aux_load: None,
            aux_save: None,
            aux_save_triggers: 0,
            free_effort: None,
            unlink: None,
            copy: None,
            defrag: None,
            mem_usage2: None,
            free_effort2: None,
            unlink2: None,
            copy2: None,
            aux_save2: None,
        };
        let ty = create_type(ctx.get_raw(), c"floor-val".as_ptr(), 0, &mut methods);
        if ty.is_null() {
            return Status::Err;
        }
        CELL_TYPE.store(ty, Ordering::Relaxed);
        for (name, handler) in [
            (c"FLOOR.THROTTLE", Some(floor_throttle as Handler)),
            (c"FLOOR.KEEP", Some(floor_keep as Handler)),
            (c"FLOOR.PARSE", Some(floor_parse as Handler)),
            (c"FLOOR.LIMIT", Some(floor_limit::<2> as Handler)),
            (c"FLOOR.LIMIT64", Some(floor_limit::<8> as Handler)),
            (c"FLOOR.ALLOW", Some(floor_allow as Handler)),
            (c"FLOOR.ALLOWLIMIT", Some(floor_allow_limit as Handler)),
        ] {
            let ok = create(
                ctx.get_raw(),
                name.as_ptr(),
                handler,
                c"write deny-oom fast".as_ptr(),
                1,
                1,
                1,
            );
            if ok != raw::REDISMODULE_OK as c_int {
                return Status::Err;
            }
        }
        Status::Ok
    }
}

redis_module! {
    name: "floor",
    version: 1,
    allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
    data_types: [],
    init: init,
}
