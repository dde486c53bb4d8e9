//! Waiting for a turn (MAXWAIT) across several limits, pure: which instant
//! a call goes at, and at which instant each of its limits books it
//! (docs/DESIGN.md#maxwait).
//!
//! Each limit answers its own turn (`Kind::turn`: the instant from which
//! the request fits, `None` when it never does). The call goes at the
//! latest turn of its enforced limits, and only when every one of them is
//! within the wait allowed. Every limit then books the request as one
//! arriving at that instant (`Kind::book`), so that each limit's turns
//! stay within its own rate and burst.

use super::time::Nanos;

/// The instant a call goes at: the latest of its enforced limits' turns
/// (`turns`, each with whether it is enforced), when each is at most
/// `max_wait` after `now`; `None` when one is not (or never fits), and
/// the call is refused.
pub fn call_turn(
    turns: impl IntoIterator<Item = (Option<Nanos>, bool)>,
    now: Nanos,
    max_wait: Nanos,
) -> Option<Nanos> {
    let latest = now.saturating_add(max_wait);
    turns
        .into_iter()
        .filter(|&(_, enforced)| enforced)
        .try_fold(now, |at, (turn, _)| {
            turn.filter(|&t| t <= latest).map(|t| at.max(t))
        })
}

/// The instant one limit books the request at, `None` for a plain
/// decision (limited, or allowed at once without MAXWAIT). `call`: the
/// call's turn (`call_turn`); `own`: the limit's own turn. A granted call
/// books every limit that fits by its turn at that turn (an enforced one
/// always does; a SHADOW one that needs longer is decided plainly, and so
/// refuses). A refused call shows each limit that fits within the wait
/// booked at its own turn (nothing is recorded).
pub fn booking(
    call: Option<Nanos>,
    own: Option<Nanos>,
    now: Nanos,
    max_wait: Nanos,
) -> Option<Nanos> {
    let own = own.filter(|&t| t <= now.saturating_add(max_wait))?;
    match call {
        Some(at) => (own <= at).then_some(at),
        None => Some(own),
    }
}
