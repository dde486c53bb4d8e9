//! RL.LEASE: a concurrency limit made of named leases that expire by
//! themselves.
//!
//! A rate limit bounds how often; this bounds how many at once. Its domain
//! words:
//!
//! - **lease**: a slot that a holder takes on a key, with a weight and an
//!   expiry, named by its lease id. A key holds at most one lease per id.
//! - **lease id**: 1 to [`MAX_ID_LEN`] arbitrary bytes that the caller
//!   chooses (a job id, a connection id). It is what makes a retried
//!   acquire a renewal instead of a second slot, and a second release a
//!   no-op.
//! - **weight**: the units a lease holds, the quantity of the request that
//!   granted it (1 to the limit).
//! - **expiry**: `now + ttl` when the lease was granted or last renewed. A
//!   lease granted at `t` **counts** during `[t, t + ttl)`; at its expiry it
//!   has **expired** and counts for nothing.
//! - **held** at `t`: the sum of the weights of the leases that have not
//!   expired at `t`.
//! - **others**: held, less the requester's own unexpired lease (the lease
//!   of its id, if any).
//! - A request for `quantity` units by lease id `id` is **granted** when
//!   `others + quantity <= limit`. A new id gets a new lease; an id that
//!   holds an unexpired lease **renews** it: its weight becomes `quantity`
//!   and its expiry `now + ttl`. A refused request changes nothing (a
//!   refused renewal leaves the old lease as it was). `quantity = 0` is a
//!   **peek**: it answers and changes nothing.
//! - **release**: the holder gives its lease back before it expires.
//!
//! Expired leases are dropped lazily, when a grant or a release changes
//! the state; until then they are kept but never counted.
//!
//! ## Worked example
//!
//! `limit` 3, `ttl` 10 s.
//!
//! - At 0 s, `a` takes 2: held 0, granted until 10 s. Remaining 1, reset
//!   after 10 s.
//! - At 4 s, `b` takes 2: held 2, and 2 + 2 > 3: limited. One unit must
//!   free up; `a`'s two do at 10 s: retry after 6 s.
//! - At 5 s, `a` renews with 1: others 0, granted until 15 s. Remaining 2,
//!   reset after 10 s.
//! - At 6 s, `b` takes 2: held 1, granted until 16 s. Remaining 0.
//! - At 7 s, `a` releases: true. Releasing again: false.
//!
//! ## The data structure, and why
//!
//! Every call must cost O(log n) in the n leases held, whatever their
//! number (a key holding 10,000 leases may cost at most 1.3 times one that
//! holds 10), and a lease must take less memory than a sorted-set entry
//! (about 100 bytes). A decision needs: the lease of an id; held at `now`,
//! which is all the weight less that of the leases expired at `now`; the
//! latest expiry (`reset_after`), and after a grant the latest but the
//! renewed lease's; and, when limited, the soonest instant at which enough
//! of the others have expired. A grant or a release must insert or remove
//! an arbitrary lease. So the leases are:
//!
//! - **records** in a slab, each `(expiry, weight, height, subtree sum,
//!   left, right)`: 24 bytes. They form an **AVL tree** ordered by
//!   `(expiry, id)`, each node keeping the sum of the weights of its
//!   subtree. The weight expired at `now` is then a walk from the root (the
//!   sum of the left subtrees passed on the way), the instant `retry_after`
//!   names is the node where the running sum of weights in expiry order
//!   reaches what must free up (a second walk when the requester's own
//!   lease lies before it), and the latest expiry is the rightmost node:
//!   O(log n) each, for refused requests and peeks too, however many
//!   expired leases wait to be dropped. The soonest and the latest expiry
//!   are also kept beside the tree, so that the usual call, with nothing
//!   expired, reads held (the root's sum) and `reset_after` without a
//!   walk. A binary heap with positions would give the soonest expiry but
//!   neither the latest nor a prefix of the weights without walking the
//!   expired leases; AVL rather than red-black or a treap for its strict
//!   depth bound (1.44 log2 n, 29 at the largest limit) and its one byte
//!   of balance information, which shares a word with the weight. The
//!   tree's algorithms work on a view of the records (`Records`): with a
//!   single id length, the usual key, a handle indexes one slice. An
//!   insertion or a removal walks down once, adjusting the sums it passes
//!   and recording its way, then walks back up it only while subtree
//!   heights change (O(1) amortized for an insertion).
//! - **ids** stored at their exact length: records are grouped in
//!   **classes** by the length of their id, and a class keeps its ids end
//!   to end in one buffer, the i-th id belonging to the i-th record. A
//!   lease is named inside the state by a **handle**, its id's length and
//!   its index in the class. Removing a lease moves the class's last record
//!   and id into the hole (no O(n) shift); the moved lease's parent link is
//!   found by a walk from the root and its index entry by its hash. Most
//!   keys use one id length (then its class is found at once), a few
//!   several (then by a binary search on the length).
//! - an **index** by id: a `hashbrown::HashTable` of 4-byte handles, hashed
//!   with the standard library's SipHash-1-3 under random keys drawn once
//!   per process (`RandomState`, as the server keys its own dictionaries),
//!   so that clients choosing ids cannot aim collisions. Keys common to
//!   every state let the hash `decide` computed serve `apply` (a call
//!   hashes its id once), whichever state the update is applied to. The
//!   index's order never reaches anything observable: the encoding,
//!   equality, RL.INSPECT and every decision follow the tree.
//!
//! The classes' buffers double up to 16 leases, then grow by an eighth
//! (rounded down) and shrink back to an eighth more than needed when less
//! than half is used; the index doubles as hashbrown does, at 7/8 load.
//! With 16-byte ids that is 24 + 16 bytes a lease plus up to an eighth
//! more for the buffers' slack, and 5 to 11.4 bytes for the index: at
//! most 56.4 bytes a lease, 52 at 10,000 leases (a unit test holds it to
//! 64).
//!
//! ## Costs
//!
//! A decision: one hash look-up; then, with nothing expired, no walk (one
//! when the requester's own lease is the latest); with leases expired
//! and not yet dropped, one walk for held; a refused request one or two
//! more for `retry_after`. A grant, a renewal or a release first drops
//! the leases expired at `now` (each dropped once: O(log n) amortized per
//! lease); then a new lease is one insertion in the tree (and one into the
//! index, with the hash `decide` computed), a release one hash and one
//! removal (and, when the class's last record moves into its place, a
//! walk to re-link that record and a hash to re-index it), and a renewal
//! a removal and an insertion of its own record (which `apply` finds
//! through `decide`'s handle; the id does not move), except when the
//! lease is the last in order and keeps its weight (a lone holder's
//! heartbeat): it stays last, so its expiry changes in place (`decide`
//! learns it is last from the walk it makes for `reset_after`). Measured costs: docs/DESIGN.md#lease.
//!
//! RL.INSPECT walks the expired leases still kept to count them, then at
//! most 100 holders. Encoding and decoding are O(n) (decoding builds the
//! tree balanced from the sorted payload): a call's effect is for
//! replicating as the call with the master's clock, not as the state.
//!
//! ## Clock going backwards
//!
//! Everything is decided at the `now` given. A lease counts until its
//! expiry whenever it was granted, so an earlier `now` counts at least the
//! leases a later one would: a clock that goes back never lets more
//! through. A lease renewed at an earlier `now` takes the earlier expiry
//! `now + ttl`, as every renewal does (docs/DESIGN.md#lease).
//!
//! ## Invariants
//!
//! Every grant keeps `others + quantity <= limit <= MAX_LIMIT` after the
//! leases expired at its `now` are dropped, and a release only removes: so
//! the weights of all the leases kept (expired or not) never sum above
//! [`MAX_LIMIT`], and there are never more than `MAX_LIMIT` of them. The
//! 24-bit weights, 32-bit sums and 20-bit record indexes rely on it, and
//! `decode` refuses any payload that breaks it.

use std::cmp::Ordering;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::mem;
use std::sync::OnceLock;

use arrayvec::ArrayVec;
use hashbrown::hash_table::Entry;
use hashbrown::HashTable;

use super::codec::{Reader, Writer};
use super::time::Nanos;
use super::{
    millis, ChargeError, Decision, DecodeError, Detail, Kind, Param, ParamError, ParamKind, Retry,
    Value,
};

/// The largest `limit`; a key never holds more weight than this.
pub const MAX_LIMIT: u64 = 1_000_000;
/// The longest lease id, in bytes.
pub const MAX_ID_LEN: usize = 128;
/// The most holders RL.INSPECT lists.
pub const MAX_HOLDERS: usize = 100;

/// The parameters of one call: at most `limit` units held at once, each
/// lease granted for `ttl`.
///
/// The glue validates them (`limit` in `1..=MAX_LIMIT`, `ttl` from 1 ns
/// to `core::MAX_DURATION`, as [`LeaseParams::new`] does); `decide` never
/// panics on others: it takes a `limit` above `MAX_LIMIT` as `MAX_LIMIT`
/// and a `ttl` of 0 as 1 ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseParams {
    pub limit: u64,
    pub ttl: Nanos,
}

impl LeaseParams {
    /// `None` unless `1 <= limit <= MAX_LIMIT` and `1 ns <= ttl <= MAX_DURATION`.
    pub fn new(limit: u64, ttl: Nanos) -> Option<LeaseParams> {
        let limit_ok = (1..=MAX_LIMIT).contains(&limit);
        let ttl_ok = Nanos::new(1) <= ttl && ttl <= super::MAX_DURATION;
        (limit_ok && ttl_ok).then_some(LeaseParams { limit, ttl })
    }
}

/// What a granted request changes: the lease `id` gets `weight` until
/// `expiry`, after the leases expired at `now` are dropped. It owns a copy
/// of the id (no heap allocation), so the arguments it came from may go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseUpdate {
    now: Nanos,
    expiry: Nanos,
    weight: u32,
    /// The lease `decide` found for the id (NIL: none), which `apply`
    /// takes when it still holds that id, saving a hash.
    hint: Handle,
    /// The lease `decide` found was the last in order (the latest to
    /// expire). Dropping expired leases, which come before it, leaves it
    /// last.
    last: bool,
    /// `hash_of(id)`.
    hash: u64,
    id: ArrayVec<u8, MAX_ID_LEN>,
}

/// The leases of one key. The `Default` state holds none: a missing key.
///
/// Equality is by content (the same leases, weights and expiries),
/// whatever the history or the index's hash keys.
#[derive(Clone, Default)]
pub struct LeaseState {
    /// The records and ids, by id length, shortest first; no class is
    /// empty.
    classes: Vec<Class>,
    /// The handles of all the leases kept, by the hash of their id
    /// (`hash_of`).
    index: HashTable<Handle>,
    /// The root of the tree of all the leases kept, by `(expiry, id)`.
    root: Handle,
    /// The soonest and the latest expiry of the leases kept (both
    /// `Nanos::ZERO` when none), so that the usual call, with nothing
    /// expired, knows it without a walk.
    earliest: Nanos,
    latest: Nanos,
}

/// Runs `$body` with `$r` naming the records as the tree works on them
/// (`Records`): one class's slices when the ids have one length (the
/// usual key, where a record is an index into a slice), else all the
/// classes. The body is compiled for both.
macro_rules! on_records {
    ($classes:expr, $r:ident => $body:expr) => {
        match $classes.as_mut_slice() {
            [one] => {
                let $r = &mut OneClass {
                    nodes: one.nodes.as_mut_slice(),
                    ids: one.ids.as_slice(),
                    len: one.len,
                };
                $body
            }
            classes => {
                let $r = &mut AllClasses(classes);
                $body
            }
        }
    };
}

mod format;
mod records;
mod tree;

use records::{class_at, hash_of, id_in, push, Class, Handle, Node, NIL_NODE, WEIGHT_BITS};
#[cfg(test)]
pub(crate) use tree::PATH_LIMIT;
use tree::{AllClasses, OneClass, Records};

impl LeaseState {
    /// Decides a request for `quantity` units (0 = peek) by lease `id` at
    /// `now`. An empty `id` is an anonymous new lease (RL.PEEK without
    /// ID): it renews nothing. Returns the update only when the request is
    /// allowed, takes units, and names a lease that can be recorded (an
    /// id of 1 to `MAX_ID_LEN` bytes; a longer one is decided as a new
    /// lease and never recorded).
    pub fn decide(
        &self,
        now: Nanos,
        params: &LeaseParams,
        id: &[u8],
        quantity: u64,
    ) -> (Decision, Option<LeaseUpdate>) {
        let limit = params.limit.min(MAX_LIMIT);
        let named = (1..=MAX_ID_LEN).contains(&id.len());
        let hash = if named { hash_of(id) } else { 0 };
        let own = if named {
            self.find_hashed(hash, id)
                .filter(|&h| self.node(h).expiry > now)
        } else {
            None
        };
        let own_weight = own.map_or(0, |h| u64::from(self.node(h).weight()));
        let held = self.held_at(now);
        let others = held.saturating_sub(own_weight);
        let mut decision = Decision {
            limited: true,
            limit,
            remaining: limit.saturating_sub(held),
            retry: Retry::Never,
            reset_at: self.latest(now, None),
        };
        if quantity > limit {
            return (decision, None);
        }
        // Both at most MAX_LIMIT: no overflow.
        if others + quantity > limit {
            let need = others + quantity - limit;
            decision.retry = Retry::At(self.retry_at(now, own, own_weight, need));
            return (decision, None);
        }
        decision.limited = false;
        decision.retry = Retry::NotLimited;
        if quantity == 0 {
            return (decision, None);
        }
        let expiry = now.saturating_add(params.ttl.max(Nanos::new(1)));
        decision.remaining = limit - (others + quantity);
        let (latest_others, own_last) = self.latest_but(now, own);
        decision.reset_at = expiry.max(latest_others);
        let update = match (ArrayVec::try_from(id), u32::try_from(quantity)) {
            (Ok(id), Ok(weight)) if named => Some(LeaseUpdate {
                now,
                expiry,
                weight,
                hint: own.unwrap_or(Handle::NIL),
                last: own_last,
                hash,
                id,
            }),
            _ => None,
        };
        (decision, update)
    }

    /// Records an update that `decide` produced on this same state: drops
    /// the leases expired at the decision's `now`, then grants or renews
    /// the lease. (An update that would break the state's invariants, which
    /// `decide` never produces, is not recorded.)
    pub fn apply(&mut self, update: LeaseUpdate) {
        self.drop_expired(update.now);
        let id = update.id.as_slice();
        let weight = u64::from(update.weight);
        if !(1..=MAX_LIMIT).contains(&weight) || id.is_empty() {
            return;
        }
        let held = u64::from(self.node(self.root).sum);
        // The lease decide found, if it is still there (dropping expired
        // leases may have moved records); else the index says, in the
        // probe that finds the new lease's slot.
        let own = if update.hint != Handle::NIL && self.id(update.hint) == id {
            update.hint
        } else {
            let LeaseState { classes, index, .. } = self;
            let same = |&e: &Handle| id_in(classes, e) == id;
            match index.entry(update.hash, same, |&e| hash_of(id_in(classes, e))) {
                Entry::Occupied(entry) => *entry.get(),
                Entry::Vacant(entry) => {
                    if held + weight > MAX_LIMIT {
                        return;
                    }
                    if let Some(h) = push(classes, id, update.expiry, update.weight) {
                        entry.insert(h);
                        self.link(h);
                    }
                    return;
                }
            }
        };
        // Both at most MAX_LIMIT: no overflow.
        let own_weight = u64::from(self.node(own).weight());
        if held.saturating_sub(own_weight) + weight > MAX_LIMIT {
            return;
        }
        let node = self.node(own);
        if update.last && node.weight() == update.weight && update.expiry >= node.expiry {
            // The last lease in order renewed with its weight, as a lone
            // holder's heartbeat is: it stays the last (its new expiry is
            // no earlier), and no sum or height changes, so it is renewed
            // in place, without leaving the tree.
            if let Some(node) = self.node_mut(own) {
                node.expiry = update.expiry;
            }
            self.latest = update.expiry;
            if self.count() == 1 {
                self.earliest = update.expiry;
            }
            return;
        }
        self.cut(own);
        if let Some(node) = self.node_mut(own) {
            node.expiry = update.expiry;
            node.weight_height = update.weight;
        }
        self.link(own);
    }

    /// Releases the lease `id` at `now`, dropping the leases expired at
    /// `now`. True when an unexpired lease with that id was removed; false
    /// when there was none (released already, expired, never granted),
    /// and then the state is left as it was: a release that releases
    /// nothing changes nothing.
    pub fn release(&mut self, now: Nanos, id: &[u8]) -> bool {
        // One hash for both probes: dropping expired leases changes the
        // index, not the hash of an id.
        let hash = hash_of(id);
        let live = self
            .find_hashed(hash, id)
            .is_some_and(|h| self.node(h).expiry > now);
        if !live {
            return false;
        }
        self.drop_expired(now);
        let LeaseState { classes, index, .. } = self;
        let found = index.find_entry(hash, |&h| id_in(classes, h) == id);
        let Ok(entry) = found else {
            return false;
        };
        let (h, _) = entry.remove();
        self.remove_unindexed(h);
        true
    }

    /// Nothing unexpired is held at `now`: the state is equivalent to a
    /// missing key, which may be deleted.
    pub fn is_empty_at(&self, now: Nanos) -> bool {
        self.latest <= now
    }

    /// What the key holds at `now`, for RL.INSPECT: `held` (units),
    /// `leases` (how many unexpired) and `holders`, the unexpired leases
    /// soonest-to-expire first (at most `MAX_HOLDERS`), each as `[lease
    /// id, weight, ms left]`, the time rounded up.
    pub fn inspect(&self, now: Nanos) -> Vec<(&'static str, Detail)> {
        let int = |n: u64| Detail::Integer(i64::try_from(n).unwrap_or(i64::MAX));
        let expired = self
            .in_order(None)
            .take_while(|&h| self.node(h).expiry <= now)
            .count();
        let holders = self
            .in_order(Some(now))
            .take(MAX_HOLDERS)
            .map(|h| {
                let node = self.node(h);
                Detail::List(vec![
                    Detail::Bytes(self.id(h).to_vec()),
                    int(u64::from(node.weight())),
                    Detail::Integer(millis(node.expiry.saturating_sub(now))),
                ])
            })
            .collect();
        vec![
            ("held", int(self.held_at(now))),
            ("leases", int((self.count() - expired) as u64)),
            ("holders", Detail::List(holders)),
        ]
    }

    /// The leases kept, expired or not, in the canonical order (by expiry,
    /// then id): `(id, weight, expiry)`.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64, Nanos)> + '_ {
        self.in_order(None).map(|h| {
            let node = self.node(h);
            (self.id(h), u64::from(node.weight()), node.expiry)
        })
    }
}

impl LeaseState {
    /// The lease kept under `id`, expired or not.
    #[cfg(test)]
    fn find(&self, id: &[u8]) -> Option<Handle> {
        self.find_hashed(hash_of(id), id)
    }

    /// The lease kept under `id`, whose hash is `hash`.
    fn find_hashed(&self, hash: u64, id: &[u8]) -> Option<Handle> {
        self.index
            .find(hash, |&h| h.len() == id.len() && self.id(h) == id)
            .copied()
    }

    /// Held at `now`: all the weight less what expired at or before `now`.
    fn held_at(&self, now: Nanos) -> u64 {
        let total = u64::from(self.node(self.root).sum);
        total.saturating_sub(self.expired_weight(now))
    }

    /// Nothing kept has expired at `now` (or nothing is kept).
    fn none_expired(&self, now: Nanos) -> bool {
        now < self.earliest || self.root == Handle::NIL
    }

    /// The weight of the leases expired at `now` (expiry at or before it):
    /// a prefix of the tree's order.
    fn expired_weight(&self, now: Nanos) -> u64 {
        if self.none_expired(now) {
            return 0;
        }
        let mut weight = 0u64;
        let mut at = self.root;
        while at != Handle::NIL {
            let node = self.node(at);
            if node.expiry <= now {
                weight += u64::from(self.node(node.left).sum) + u64::from(node.weight());
                at = node.right;
            } else {
                at = node.left;
            }
        }
        weight
    }

    /// The latest expiry of the leases unexpired at `now`, but `except`'s;
    /// `now` when there is none.
    fn latest(&self, now: Nanos, except: Option<Handle>) -> Nanos {
        self.latest_but(now, except).0
    }

    /// `latest`, and whether `except` is the last lease in order.
    fn latest_but(&self, now: Nanos, except: Option<Handle>) -> (Nanos, bool) {
        if except.is_none_or(|h| self.node(h).expiry < self.latest) {
            return (self.latest.max(now), false);
        }
        // `except` may be the rightmost node: that, and the one before it
        // in order.
        let mut parent = Handle::NIL;
        let mut last = self.root;
        while self.node(last).right != Handle::NIL {
            parent = last;
            last = self.node(last).right;
        }
        let is_last = except == Some(last);
        if is_last {
            let left = self.node(last).left;
            last = if left == Handle::NIL {
                parent
            } else {
                self.rightmost(left)
            };
        }
        let latest = match last {
            Handle::NIL => now,
            _ => self.node(last).expiry.max(now),
        };
        (latest, is_last)
    }

    /// When enough of the leases other than `own` (unexpired, of weight
    /// `own_weight`) expire to free `need` units: the expiry of the first
    /// lease, in order, at which the others' unexpired weight passed on the
    /// way reaches `need`.
    fn retry_at(&self, now: Nanos, own: Option<Handle>, own_weight: u64, need: u64) -> Nanos {
        let target = self.expired_weight(now) + need;
        let mut at = self.first_reaching(target);
        if own.is_some_and(|o| self.cmp(o, at) != Ordering::Greater) {
            // The own lease comes first and frees nothing for itself.
            at = self.first_reaching(target + own_weight);
        }
        match at {
            // Not reached (impossible: the others hold at least `need`).
            Handle::NIL => self.latest(now, None),
            _ => self.node(at).expiry,
        }
    }

    /// The first lease, in order, at which the running sum of weights
    /// reaches `target` (at least 1); NIL when the total is less.
    fn first_reaching(&self, target: u64) -> Handle {
        let mut passed = 0u64;
        let mut at = self.root;
        while at != Handle::NIL {
            let node = self.node(at);
            let left = passed + u64::from(self.node(node.left).sum);
            if left >= target {
                at = node.left;
            } else if left + u64::from(node.weight()) >= target {
                return at;
            } else {
                passed = left + u64::from(node.weight());
                at = node.right;
            }
        }
        Handle::NIL
    }

    // Records and ids.
}

impl PartialEq for LeaseState {
    fn eq(&self, other: &LeaseState) -> bool {
        self.count() == other.count() && self.iter().eq(other.iter())
    }
}

impl Eq for LeaseState {}

impl fmt::Debug for LeaseState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(
                self.iter()
                    .map(|(id, weight, expiry)| (id.escape_ascii().to_string(), weight, expiry)),
            )
            .finish()
    }
}

#[cfg(test)]
impl LeaseState {
    /// Checks every invariant of the structure, panicking on the first
    /// broken one: classes sorted, non-empty and in step with their ids;
    /// the tree holding every record once, in order, balanced, with true
    /// heights and sums; the index holding every id once; the weights
    /// within `MAX_LIMIT`.
    pub(crate) fn check(&self) {
        for pair in self.classes.windows(2) {
            assert!(pair[0].len < pair[1].len, "classes sorted by length");
        }
        for class in &self.classes {
            assert!(!class.nodes.is_empty(), "no empty class");
            assert_eq!(class.ids.len(), class.nodes.len() * class.len);
        }
        let count = self.count();
        let order: Vec<Handle> = self.in_order(None).collect();
        assert_eq!(order.len(), count, "every record in the tree once");
        for pair in order.windows(2) {
            assert_eq!(self.cmp(pair[0], pair[1]), Ordering::Less, "in order");
        }
        fn walk(leases: &LeaseState, h: Handle) -> (u32, u64) {
            if h == Handle::NIL {
                return (0, 0);
            }
            let node = leases.node(h);
            let (lh, ls) = walk(leases, node.left);
            let (rh, rs) = walk(leases, node.right);
            assert!(lh.abs_diff(rh) <= 1, "balanced");
            assert_eq!(node.height(), 1 + lh.max(rh), "height");
            let sum = ls + rs + u64::from(node.weight());
            assert_eq!(u64::from(node.sum), sum, "sum");
            (node.height(), sum)
        }
        let (_, total) = walk(self, self.root);
        let expiries = order.iter().map(|&h| self.node(h).expiry);
        assert_eq!(expiries.clone().min().unwrap_or_default(), self.earliest);
        assert_eq!(expiries.max().unwrap_or_default(), self.latest);
        assert!(total <= MAX_LIMIT);
        assert_eq!(self.index.len(), count);
        for &h in &order {
            assert!(self.node(h).weight() >= 1);
            assert_eq!(self.find(self.id(h)), Some(h), "indexed");
        }
    }

    /// The height of the tree.
    pub(crate) fn height(&self) -> u32 {
        self.node(self.root).height()
    }
}

impl Kind for LeaseState {
    type Params = LeaseParams;
    type Update = LeaseUpdate;

    const NAME: &'static str = "LEASE";
    const TYPE_NAME: &'static str = "rl-lease-";
    const TAG: u8 = b'E';
    const PARAMS: &'static [Param] = &[
        Param::integer("limit", 1, MAX_LIMIT),
        Param::of("ttl", ParamKind::Duration),
    ];
    const TAKES_ID: bool = true;
    const REFUNDS: bool = false;
    const SUMMARY: &'static str = "Concurrency limit: grants or renews the named lease, which expires by itself. Replies limited, limit, remaining, retry_after, reset_after.";
    const COMPLEXITY: &'static str = "O(log N) in the N leases held";
    const SINCE: &'static str = "0.3.0";

    fn params(values: &[Value<'_>]) -> Result<LeaseParams, ParamError> {
        let [limit, ttl] = Value::numbers(values)?;
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ParamError::Param(0));
        }
        LeaseParams::new(limit, Nanos::new(ttl)).ok_or(ParamError::Param(1))
    }

    /// A request that names no lease: the question whether a new one would
    /// be granted (RL.PEEK without `ID`).
    fn decide(
        &self,
        now: Nanos,
        params: &LeaseParams,
        quantity: u64,
    ) -> (Decision, Option<LeaseUpdate>) {
        LeaseState::decide(self, now, params, b"", quantity)
    }

    fn decide_as(
        &self,
        now: Nanos,
        params: &LeaseParams,
        quantity: u64,
        id: &[u8],
    ) -> (Decision, Option<LeaseUpdate>) {
        LeaseState::decide(self, now, params, id, quantity)
    }

    fn apply(&mut self, update: LeaseUpdate) {
        LeaseState::apply(self, update)
    }

    /// Never called: a lease is given back by RL.RELEASE, and RL.REFUND
    /// refuses a LEASE spec (`REFUNDS` is false). Gives nothing back.
    fn refund(&mut self, _now: Nanos, _params: &LeaseParams, _quantity: u64) {}

    /// Never called: RL.CHARGE refuses a LEASE spec (`REFUNDS` is false).
    /// Records nothing.
    fn charge(
        &mut self,
        _now: Nanos,
        _params: &LeaseParams,
        _quantity: u64,
    ) -> Result<(), ChargeError> {
        Ok(())
    }

    fn inspect(&self, now: Nanos) -> Vec<(&'static str, Detail)> {
        LeaseState::inspect(self, now)
    }

    fn encode(&self) -> Vec<u8> {
        LeaseState::encode(self)
    }

    fn decode(bytes: &[u8]) -> Result<LeaseState, DecodeError> {
        LeaseState::decode(bytes)
    }

    fn mem_usage(&self) -> usize {
        LeaseState::mem_usage(self)
    }
}
