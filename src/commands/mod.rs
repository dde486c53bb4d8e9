//! The commands: their table and their registration.
//!
//! - `flow`: the entry every command goes through, the errors, and what a
//!   change of a key entails (expiry, WATCH, propagation);
//! - `single`: `<prefix>.<NAME>`, one per kind, all running the one flow
//!   of `single::limit`: parse, open the key, read the clock once, decide,
//!   store, expire, propagate, reply;
//! - `several`: RL.ALLOW and RL.PEEK;
//! - `keys`: RL.INSPECT, RL.REFUND, RL.CHARGE, RL.RELEASE and the internal
//!   RL.STATE;
//! - `info`: the INFO section.
//!
//! Every name starts with the module's prefix, `RL` unless the module was
//! loaded with `PREFIX` (docs/DESIGN.md#loading).

mod flow;
mod info;
mod keys;
mod several;
mod single;

pub use info::Info;

use crate::config;
use crate::kinds::{Listed, VisitKind, KINDS};
use crate::server::{self, Api, CommandDef, LoadCtx, Refused};

/// The module's commands: one per kind, then the several-limit ones, then
/// those about one key.
pub fn commands() -> Vec<CommandDef> {
    let mut commands: Vec<CommandDef> = KINDS.iter().map(|k| k.visit(SingleCommand)).collect();
    commands.push(several::allow_command());
    commands.push(several::peek_command());
    commands.push(keys::inspect_command());
    commands.push(keys::refund_command());
    commands.push(keys::charge_command());
    commands.push(keys::release_command());
    commands.push(keys::state_command());
    commands
}

/// A kind's command.
struct SingleCommand;

impl VisitKind for SingleCommand {
    type Out = CommandDef;

    fn visit<L: Listed>(self) -> CommandDef {
        single::single_command::<L>()
    }
}

/// Registers every command; with `cell-alias`, RL.THROTTLE again under
/// redis-cell's name. A name the server has already stops the load, with
/// the line to log naming it and the `PREFIX` option.
pub fn register(api: &Api, ctx: LoadCtx) -> Result<(), String> {
    for spec in commands() {
        server::register(api, ctx, &spec).map_err(|e| match e {
            Refused::Create => taken(&spec.name),
            Refused::Other(message) => message,
        })?;
    }
    if config::cell_alias() {
        server::register(api, ctx, &single::cell_alias()).map_err(|_| {
            "CL.THROTTLE already exists (is redis-cell loaded too?): unload it, or load ratelimit without cell-alias".to_string()
        })?;
    }
    Ok(())
}

/// The log line for a command name the server refused, taken by a core
/// command or another module's.
fn taken(name: &str) -> String {
    match config::prefix() == config::DEFAULT_PREFIX {
        true => format!(
            "the command {name} already exists on this server (a core command or another module's): load ratelimit with PREFIX <word> to name its commands <word>.THROTTLE, <word>.ALLOW and so on"
        ),
        false => format!(
            "the command {name} already exists on this server (a core command or another module's): load ratelimit with another PREFIX word"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::slice::SliceState;
    use crate::core::slide::SlideState;
    use crate::core::throttle::ThrottleState;

    #[test]
    fn every_kind_has_its_command_first() {
        let names: Vec<String> = commands().into_iter().map(|c| c.name).collect();
        let mut expected: Vec<String> = KINDS.iter().map(|k| format!("RL.{}", k.name)).collect();
        expected.extend(
            [
                "RL.ALLOW",
                "RL.PEEK",
                "RL.INSPECT",
                "RL.REFUND",
                "RL.CHARGE",
                "RL.RELEASE",
                "RL.STATE",
            ]
            .map(String::from),
        );
        assert_eq!(names, expected);
    }

    #[test]
    fn every_limiter_row_describes_its_parameters() {
        let throttle = single::single_command::<ThrottleState>();
        assert_eq!(throttle.name, "RL.THROTTLE");
        assert_eq!(throttle.arity, -5);
        let names: Vec<&str> = throttle.args.iter().map(|a| a.name).collect();
        assert_eq!(
            names,
            [
                "key",
                "max_burst",
                "count",
                "period",
                "quantity",
                "ms",
                "maxwait",
                "BLOCK"
            ]
        );
        let slide = single::single_command::<SlideState>();
        assert!(slide.args.iter().all(|a| a.name != "maxwait"));
        assert_eq!(single::single_command::<SliceState>().arity, -5);
        assert_eq!(single::single_command::<SlideState>().arity, -4);
    }
}
