//! Typed command metadata and its registration: flags, arity, key specs and
//! the argument tree that `COMMAND DOCS` shows, as data. Registration turns
//! a [`CommandDef`] into the server's structures in three steps: create the
//! command (flags and key positions), describe it (`SetCommandInfo`), and
//! set its ACL categories where the server allows it.

use std::ffi::{c_int, CStr, CString};

use redis_module::raw;

use super::api::{optional, Api, LoadCtx};

/// A command handler, as the server calls it.
pub type Handler =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// One command: everything the server needs to route, check and document it.
pub struct CommandDef {
    pub name: String,
    pub handler: Handler,
    /// Command flags, e.g. `write deny-oom fast`.
    pub flags: &'static str,
    /// ACL categories, set where the server lets modules set them (7.2+).
    pub acl: &'static str,
    /// Redis arity: positive is exact, negative is a minimum.
    pub arity: c_int,
    pub summary: &'static str,
    pub complexity: &'static str,
    /// The module version that introduced the command.
    pub since: &'static str,
    pub keys: Keys,
    /// The arguments after the command name, keys included.
    pub args: Vec<DocArg>,
}

/// Where a command's keys are, and what it does to them.
#[derive(Clone, Copy)]
pub enum Keys {
    /// One key at argument `pos`.
    One { pos: c_int, access: Access },
    /// `numkeys key [key ...]`: the count at argument `pos`, the keys right
    /// after it. Described by a key spec of the keynum kind; the handler
    /// answers key-position requests (`getkeys-api`), which Redis 7.0 needs
    /// to route such a command in a cluster.
    Counted { pos: c_int, access: Access },
    /// No key (RL.TOP): the node the client asks answers.
    None,
}

/// What a command does to a key: its key-spec flags.
#[derive(Clone, Copy)]
pub enum Access {
    /// Reads the value and may update it (a limiter call).
    ReadUpdate,
    /// Reads the value and never changes it.
    ReadOnly,
    /// Replaces the value without reading it (`RL.STATE`).
    Overwrite,
}

impl Access {
    fn flags(self) -> u64 {
        u64::from(match self {
            Access::ReadUpdate => {
                raw::REDISMODULE_CMD_KEY_RW
                    | raw::REDISMODULE_CMD_KEY_ACCESS
                    | raw::REDISMODULE_CMD_KEY_UPDATE
            }
            Access::ReadOnly => raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
            Access::Overwrite => raw::REDISMODULE_CMD_KEY_OW | raw::REDISMODULE_CMD_KEY_UPDATE,
        })
    }
}

/// One argument of `COMMAND DOCS`.
pub struct DocArg {
    pub name: &'static str,
    pub kind: ArgType,
    /// The keyword that introduces it (or that it is, for a pure token).
    pub token: Option<&'static str>,
    pub optional: bool,
    /// It may repeat.
    pub multiple: bool,
}

/// The kind of an argument.
pub enum ArgType {
    Key,
    Integer,
    String,
    /// A keyword alone, such as `MS`.
    PureToken,
    /// Arguments that come together.
    Block(Vec<DocArg>),
    /// One of several alternatives.
    OneOf(Vec<DocArg>),
}

impl DocArg {
    pub fn new(name: &'static str, kind: ArgType) -> DocArg {
        DocArg {
            name,
            kind,
            token: None,
            optional: false,
            multiple: false,
        }
    }

    pub fn integer(name: &'static str) -> DocArg {
        DocArg::new(name, ArgType::Integer)
    }

    /// A keyword alone, named after itself in lower case.
    pub fn flag(name: &'static str, token: &'static str) -> DocArg {
        DocArg {
            token: Some(token),
            ..DocArg::new(name, ArgType::PureToken)
        }
    }

    pub fn optional(self) -> DocArg {
        DocArg {
            optional: true,
            ..self
        }
    }

    pub fn multiple(self) -> DocArg {
        DocArg {
            multiple: true,
            ..self
        }
    }

    pub fn token(self, token: &'static str) -> DocArg {
        DocArg {
            token: Some(token),
            ..self
        }
    }
}

/// Registers one command. The error says what failed, for the log.
pub fn register(api: &Api, ctx: LoadCtx, spec: &CommandDef) -> Result<(), Refused> {
    let fail = |what: &str| Refused::Other(format!("{what} {}", spec.name));
    let name = CString::new(spec.name.as_str()).map_err(|_| fail("bad name"))?;
    let command = create(api, ctx.raw(), &name, spec).ok_or(Refused::Create)?;
    describe(api, command, spec).ok_or_else(|| fail("could not set the info of"))?;
    set_acl(command, spec).ok_or_else(|| fail("could not set the ACL categories of"))?;
    Ok(())
}

/// Why a command was not registered.
#[derive(Debug)]
pub enum Refused {
    /// The server refused to create it: its name is taken (a core command
    /// or another module's), the one reason a valid name and flags have.
    Create,
    /// A later step failed; the text says which.
    Other(String),
}

/// Creates the command with its flags and legacy key positions, and
/// returns the server's handle of it.
fn create(
    api: &Api,
    ctx: *mut raw::RedisModuleCtx,
    name: &CStr,
    spec: &CommandDef,
) -> Option<*mut raw::RedisModuleCommand> {
    let (first, last, step, extra_flag) = match spec.keys {
        Keys::One { pos, .. } => (pos, pos, 1, ""),
        Keys::Counted { .. } => (0, 0, 0, " getkeys-api"),
        Keys::None => (0, 0, 0, ""),
    };
    let flags = CString::new(format!("{}{extra_flag}", spec.flags)).ok()?;
    // SAFETY: called during OnLoad with the load context; the strings live
    // across the calls, which copy them.
    unsafe {
        let created = (api.create_command)(
            ctx,
            name.as_ptr(),
            Some(spec.handler),
            flags.as_ptr(),
            first,
            last,
            step,
        );
        if created != raw::REDISMODULE_OK as c_int {
            return None;
        }
        let command = (api.get_command)(ctx, name.as_ptr());
        (!command.is_null()).then_some(command)
    }
}

/// Sets arity, summary, key specs and the argument tree (`COMMAND DOCS`).
fn describe(api: &Api, command: *mut raw::RedisModuleCommand, spec: &CommandDef) -> Option<()> {
    let mut strings = Strings::default();
    let mut arena = Vec::new();
    let mut args = build_args(&spec.args, &mut strings, &mut arena)?;
    let mut key_specs = key_specs(spec.keys);
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    };
    let info = raw::RedisModuleCommandInfo {
        version: &version,
        summary: strings.add(spec.summary)?,
        complexity: strings.add(spec.complexity)?,
        since: strings.add(spec.since)?,
        history: std::ptr::null_mut(),
        tips: std::ptr::null(),
        arity: spec.arity,
        key_specs: key_specs.as_mut_ptr(),
        args: args.as_mut_ptr(),
    };
    // SAFETY: every pointer in `info` points into `strings`, `arena`,
    // `args` or `key_specs`, which live across the call; the server copies
    // what it keeps.
    let ok = unsafe { (api.set_command_info)(command, &info) } == raw::REDISMODULE_OK as c_int;
    ok.then_some(())
}

/// The key specs, terminated by a zeroed entry (only the terminator for
/// a command without keys).
fn key_specs(keys: Keys) -> [raw::RedisModuleCommandKeySpec; 2] {
    // SAFETY: an all-zero key spec is the terminator the API expects, and a
    // valid starting point for the one filled in below.
    let mut specs: [raw::RedisModuleCommandKeySpec; 2] = unsafe { std::mem::zeroed() };
    if let Keys::None = keys {
        return specs;
    }
    let spec = &mut specs[0];
    spec.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
    match keys {
        Keys::One { pos, access } => {
            spec.flags = access.flags();
            spec.bs.index.pos = pos;
            spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
            spec.fk.range.lastkey = 0;
            spec.fk.range.keystep = 1;
            spec.fk.range.limit = 0;
        }
        Keys::Counted { pos, access } => {
            spec.flags = access.flags();
            spec.bs.index.pos = pos;
            spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM;
            spec.fk.keynum.keynumidx = 0;
            spec.fk.keynum.firstkey = 1;
            spec.fk.keynum.keystep = 1;
        }
        Keys::None => {}
    }
    specs
}

/// C strings made at registration, alive until it ends.
#[derive(Default)]
struct Strings(Vec<CString>);

impl Strings {
    fn add(&mut self, text: &str) -> Option<*const std::ffi::c_char> {
        let s = CString::new(text).ok()?;
        let ptr = s.as_ptr();
        // Moving the CString into the Vec keeps its heap buffer in place.
        self.0.push(s);
        Some(ptr)
    }
}

/// The server's argument array for `specs`, terminated by a zeroed entry.
/// Sub-argument arrays go to `arena`, whose inner buffers never move.
fn build_args(
    specs: &[DocArg],
    strings: &mut Strings,
    arena: &mut Vec<Vec<raw::RedisModuleCommandArg>>,
) -> Option<Vec<raw::RedisModuleCommandArg>> {
    let mut out = Vec::with_capacity(specs.len() + 1);
    for spec in specs {
        // SAFETY: an all-zero argument is valid: null strings, no flags.
        let mut arg: raw::RedisModuleCommandArg = unsafe { std::mem::zeroed() };
        arg.name = strings.add(spec.name)?;
        arg.key_spec_index = -1;
        if let Some(token) = spec.token {
            arg.token = strings.add(token)?;
        }
        let children = match &spec.kind {
            ArgType::Key => {
                arg.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY;
                // Every key argument is described by the one key spec.
                arg.key_spec_index = 0;
                None
            }
            ArgType::Integer => {
                arg.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER;
                None
            }
            ArgType::String => {
                arg.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING;
                None
            }
            ArgType::PureToken => {
                arg.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN;
                None
            }
            ArgType::Block(children) => {
                arg.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK;
                Some(children)
            }
            ArgType::OneOf(children) => {
                arg.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF;
                Some(children)
            }
        };
        if let Some(children) = children {
            let mut sub = build_args(children, strings, arena)?;
            arg.subargs = sub.as_mut_ptr();
            arena.push(sub);
        }
        let mut flags = 0;
        if spec.optional {
            flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
        }
        if spec.multiple {
            flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
        }
        arg.flags = flags as c_int;
        out.push(arg);
    }
    // SAFETY: the zeroed terminator.
    out.push(unsafe { std::mem::zeroed() });
    Some(out)
}

/// ACL categories: Redis 7.0 has no API for them (then nothing is set);
/// 7.2+ and Valkey do.
fn set_acl(command: *mut raw::RedisModuleCommand, spec: &CommandDef) -> Option<()> {
    let Some(set) = optional::set_command_acl_categories() else {
        return Some(());
    };
    let acl = CString::new(spec.acl).ok()?;
    // SAFETY: a command of this module, during OnLoad.
    let ok = unsafe { set(command, acl.as_ptr()) } == raw::REDISMODULE_OK as c_int;
    ok.then_some(())
}
