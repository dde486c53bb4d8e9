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
//! learns it is last from the walk it makes for `reset_after`). Measured on the state alone (`lease_costs` in the
//! tests, release build), a renewal, a release and an acquire of random
//! leases took 73, 43 and 81 ns with 10 leases held, 130, 126 and 85 ns
//! with 10,000. In the server, with the benchmark's pairs (acquire then
//! release a fresh id), RL.LEASE and RL.RELEASE cost about 1.05 and 1.03
//! times as much server CPU with 10,000 leases held as with 10.
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
//! `now + ttl`, as SPEC says of every renewal.
//!
//! ## Invariants
//!
//! Every grant keeps `others + quantity <= limit <= MAX_LIMIT` after the
//! leases expired at its `now` are dropped, and a release only removes: so
//! the weights of all the leases kept (expired or not) never sum above
//! [`MAX_LIMIT`], and there are never more than `MAX_LIMIT` of them. The
//! 24-bit weights, 32-bit sums and 20-bit record indexes rely on it, and
//! `decode` refuses any payload that breaks it.

// Until the glue wires RL.LEASE in, nothing outside the tests calls this.

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
    millis, Decision, DecodeError, Detail, Limiter, Param, ParamError, ParamKind, Retry, Value,
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
pub struct Leases {
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

/// The leases whose id has one length: records and ids in step.
#[derive(Clone, Debug)]
struct Class {
    /// The length of every id here, 1 to `MAX_ID_LEN`.
    len: usize,
    nodes: Vec<Node>,
    /// The ids end to end: `nodes[i]`'s is `ids[i * len..(i + 1) * len]`.
    ids: Vec<u8>,
}

/// One lease, and its place in the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Node {
    expiry: Nanos,
    /// The weight (low 24 bits) and the height of the subtree rooted here
    /// (high 8 bits; a leaf is 1).
    weight_height: u32,
    /// The sum of the weights of the subtree rooted here.
    sum: u32,
    left: Handle,
    right: Handle,
}

const WEIGHT_BITS: u32 = 24;
const WEIGHT_MASK: u32 = (1 << WEIGHT_BITS) - 1;

impl Node {
    fn weight(&self) -> u32 {
        self.weight_height & WEIGHT_MASK
    }

    fn height(&self) -> u32 {
        self.weight_height >> WEIGHT_BITS
    }
}

/// What `Leases::node` answers for `Handle::NIL`: an empty subtree.
static NIL_NODE: Node = Node {
    expiry: Nanos::ZERO,
    weight_height: 0,
    sum: 0,
    left: Handle::NIL,
    right: Handle::NIL,
};

/// Names a lease inside the state: its id's length (which names its
/// class) and its index in the class, `(len - 1) << 20 | index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Handle(u32);

/// Bits of a handle's index: 2^20 is more than `MAX_LIMIT` leases.
const INDEX_BITS: u32 = 20;
const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;

impl Handle {
    /// No lease: an empty subtree. Its length, 4096, has no class.
    const NIL: Handle = Handle(u32::MAX);

    fn new(len: usize, index: usize) -> Option<Handle> {
        let len = u32::try_from(len)
            .ok()
            .filter(|&l| l >= 1 && l as usize <= MAX_ID_LEN)?;
        // The last index is NIL's: no record has it.
        let index = u32::try_from(index).ok().filter(|&i| i < INDEX_MASK)?;
        Some(Handle((len - 1) << INDEX_BITS | index))
    }

    fn len(self) -> usize {
        (self.0 >> INDEX_BITS) as usize + 1
    }

    fn index(self) -> usize {
        (self.0 & INDEX_MASK) as usize
    }
}

impl Default for Handle {
    fn default() -> Handle {
        Handle::NIL
    }
}

/// Where the class of ids of `len` bytes is in `classes`: usually the
/// only one.
fn class_at(classes: &[Class], len: usize) -> Option<usize> {
    match classes {
        [only] => (only.len == len).then_some(0),
        _ => classes.binary_search_by_key(&len, |c| c.len).ok(),
    }
}

/// The id of `h` in `classes` (empty for a handle of no lease).
fn id_in(classes: &[Class], h: Handle) -> &[u8] {
    let len = h.len();
    class_at(classes, len)
        .and_then(|at| classes.get(at))
        .and_then(|c| c.ids.get(h.index() * len..(h.index() + 1) * len))
        .unwrap_or(&[])
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

/// Appends a record and its id to their class (made when missing),
/// outside the tree and the index. `None` when the class is full
/// (never: see the invariants).
fn push(classes: &mut Vec<Class>, id: &[u8], expiry: Nanos, weight: u32) -> Option<Handle> {
    let len = id.len();
    let at = match classes.binary_search_by_key(&len, |c| c.len) {
        Ok(at) => at,
        Err(at) => {
            classes.reserve_exact(1);
            classes.insert(
                at,
                Class {
                    len,
                    nodes: Vec::new(),
                    ids: Vec::new(),
                },
            );
            at
        }
    };
    let class = classes.get_mut(at)?;
    let h = Handle::new(len, class.nodes.len())?;
    let n = class.nodes.len();
    if n == class.nodes.capacity() {
        // Double while small, then an eighth more.
        let more = if n < 16 { n.max(1) } else { n / 8 };
        class.nodes.reserve_exact(more);
        class.ids.reserve_exact(more * len);
    }
    class.nodes.push(Node {
        expiry,
        weight_height: weight & WEIGHT_MASK,
        sum: weight,
        left: Handle::NIL,
        right: Handle::NIL,
    });
    class.ids.extend_from_slice(id);
    Some(h)
}

/// The index's hash of an id: SipHash-1-3 of the id's bytes alone, under
/// random keys drawn once per process (as the server's own dictionaries
/// are keyed), so that the hash `decide` computed is good for `apply`
/// whatever state it is applied to.
fn hash_of(id: &[u8]) -> u64 {
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    let mut state = KEYS.get_or_init(RandomState::new).build_hasher();
    state.write(id);
    state.finish()
}

impl Leases {
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
            let Leases { classes, index, .. } = self;
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
        let Leases { classes, index, .. } = self;
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

    /// Canonical encoding: the same leases (ids, weights, expiries) give
    /// the same bytes whatever the history. Varints
    /// (`codec::Writer::varint`), then the ids:
    ///
    /// ```text
    /// n                          the number of leases kept, expired or not
    /// n times, by expiry then id (bytewise):
    ///   expiry - previous        ns; the first since the epoch
    ///   weight                   1 to MAX_LIMIT
    ///   id length                1 to MAX_ID_LEN
    /// the n ids, end to end, in the same order
    /// ```
    ///
    /// An empty state is the single byte 0.
    pub fn encode(&self) -> Vec<u8> {
        let count = self.count();
        let id_bytes: usize = self.classes.iter().map(|c| c.ids.len()).sum();
        let mut writer = Writer::with_capacity(1 + 12 * count + id_bytes);
        writer.varint(count as u64);
        let mut previous = Nanos::ZERO;
        for h in self.in_order(None) {
            let node = self.node(h);
            writer
                .varint(node.expiry.saturating_sub(previous).get())
                .varint(u64::from(node.weight()))
                .varint(h.len() as u64);
            previous = node.expiry;
        }
        let mut bytes = writer.into_bytes();
        for h in self.in_order(None) {
            bytes.extend_from_slice(self.id(h));
        }
        bytes
    }

    /// Reads what `encode` wrote, validating everything; refused:
    ///
    /// - a payload that ends early or has bytes after the last id;
    /// - more leases than `MAX_LIMIT`, or than the payload can hold (each
    ///   takes at least four bytes): checked before anything is allocated;
    /// - a weight of 0, or weights summing above `MAX_LIMIT`;
    /// - an id of 0 or more than `MAX_ID_LEN` bytes;
    /// - leases out of order (two at one expiry with ids not increasing),
    ///   which also refuses a repeated `(expiry, id)`, and the same id at
    ///   two expiries;
    /// - an expiry outside 1 ns ..= `Nanos::MAX`. Those are the only
    ///   bounds: a lease granted at `now` with a `ttl` of at least 1 ns
    ///   expires at 1 ns at the earliest, and the saturating `now + ttl`
    ///   reaches `Nanos::MAX` at the latest. A tighter bound, such as the
    ///   spread of the expiries being at most `MAX_DURATION`, would refuse
    ///   states that a clock stepping back by more than that reaches.
    pub fn decode(bytes: &[u8]) -> Result<Leases, DecodeError> {
        let mut reader = Reader::new(bytes);
        let count = reader.varint()?;
        if count > MAX_LIMIT {
            return Err(DecodeError::Invalid("more leases than the largest limit"));
        }
        let count = usize::try_from(count).map_err(|_| DecodeError::Length)?;
        if count > reader.remaining() / 4 {
            return Err(DecodeError::Length);
        }
        // (expiry, weight, id length), in the payload's order.
        let mut records: Vec<(Nanos, u32, usize)> = Vec::with_capacity(count);
        let mut expiry = 0u64;
        let mut total = 0u64;
        let mut id_bytes = 0usize;
        let mut lengths = [0usize; MAX_ID_LEN + 1];
        for _ in 0..count {
            let delta = reader.varint()?;
            expiry = expiry
                .checked_add(delta)
                .ok_or(DecodeError::Invalid("an expiry after the latest instant"))?;
            if expiry == 0 {
                return Err(DecodeError::Invalid("an expiry at the epoch"));
            }
            let weight = reader.varint()?;
            if weight == 0 {
                return Err(DecodeError::Invalid("a lease of weight 0"));
            }
            total = total.saturating_add(weight);
            if total > MAX_LIMIT {
                return Err(DecodeError::Invalid("weights above the largest limit"));
            }
            let len = reader.varint()?;
            if len == 0 {
                return Err(DecodeError::Invalid("an empty lease id"));
            }
            let len = usize::try_from(len)
                .ok()
                .filter(|&l| l <= MAX_ID_LEN)
                .ok_or(DecodeError::Invalid("a lease id over 128 bytes"))?;
            id_bytes += len;
            if let Some(n) = lengths.get_mut(len) {
                *n += 1;
            }
            // The weight is at most MAX_LIMIT.
            records.push((Nanos::new(expiry), weight as u32, len));
        }
        let ids = bytes
            .get(bytes.len() - reader.remaining()..)
            .ok_or(DecodeError::Length)?;
        if ids.len() != id_bytes {
            return Err(DecodeError::Length);
        }

        let mut leases = Leases {
            classes: Vec::with_capacity(lengths.iter().filter(|&&n| n > 0).count()),
            index: HashTable::with_capacity(count),
            ..Leases::default()
        };
        for (len, &n) in lengths.iter().enumerate().filter(|(_, &n)| n > 0) {
            leases.classes.push(Class {
                len,
                nodes: Vec::with_capacity(n),
                ids: Vec::with_capacity(n * len),
            });
        }
        let mut sorted = Vec::with_capacity(count);
        let mut previous: Option<(Nanos, &[u8])> = None;
        let mut rest = ids;
        for (expiry, weight, len) in records {
            let (id, tail) = rest.split_at_checked(len).ok_or(DecodeError::Length)?;
            rest = tail;
            if previous.is_some_and(|p| p >= (expiry, id)) {
                return Err(DecodeError::Invalid("leases out of order"));
            }
            previous = Some((expiry, id));
            let h = push(&mut leases.classes, id, expiry, weight)
                .ok_or(DecodeError::Invalid("too many leases"))?;
            if !leases.index_new(id, h) {
                return Err(DecodeError::Invalid("a lease id given twice"));
            }
            sorted.push(h);
        }
        leases.root = on_records!(leases.classes, r => r.build(&sorted));
        if let (Some(&first), Some(&last)) = (sorted.first(), sorted.last()) {
            leases.earliest = leases.node(first).expiry;
            leases.latest = leases.node(last).expiry;
        }
        Ok(leases)
    }

    /// Bytes this state occupies, computed from what it allocated: the
    /// struct, the classes' buffers (their capacities) and the index's
    /// table.
    pub fn mem_usage(&self) -> usize {
        let buffers: usize = self
            .classes
            .iter()
            .map(|c| c.nodes.capacity() * mem::size_of::<Node>() + c.ids.capacity())
            .sum();
        mem::size_of::<Leases>()
            + self.classes.capacity() * mem::size_of::<Class>()
            + buffers
            + self.index.allocation_size()
    }

    // The decisions' questions, each O(log n).

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

    fn class(&self, len: usize) -> Option<&Class> {
        self.classes.get(class_at(&self.classes, len)?)
    }

    /// The record of `h`; for NIL, an empty subtree.
    fn node(&self, h: Handle) -> &Node {
        self.class(h.len())
            .and_then(|c| c.nodes.get(h.index()))
            .unwrap_or(&NIL_NODE)
    }

    fn node_mut(&mut self, h: Handle) -> Option<&mut Node> {
        let at = class_at(&self.classes, h.len())?;
        self.classes.get_mut(at)?.nodes.get_mut(h.index())
    }

    fn id(&self, h: Handle) -> &[u8] {
        id_in(&self.classes, h)
    }

    /// How many leases are kept, expired or not.
    fn count(&self) -> usize {
        self.classes.iter().map(|c| c.nodes.len()).sum()
    }

    /// Orders two leases by expiry, then id.
    fn cmp(&self, a: Handle, b: Handle) -> Ordering {
        let (x, y) = (self.node(a), self.node(b));
        x.expiry
            .cmp(&y.expiry)
            .then_with(|| self.id(a).cmp(self.id(b)))
    }

    /// Adds `h`, of id `id`, to the index; false when the id is there
    /// already.
    fn index_new(&mut self, id: &[u8], h: Handle) -> bool {
        let Leases { classes, index, .. } = self;
        let hash = hash_of(id);
        if index.find(hash, |&e| id_in(classes, e) == id).is_some() {
            return false;
        }
        index.insert_unique(hash, h, |&e| hash_of(id_in(classes, e)));
        true
    }

    /// Links `h` into the tree, and notes its expiry in the bounds.
    fn link(&mut self, h: Handle) {
        let expiry = self.node(h).expiry;
        if self.root == Handle::NIL {
            (self.earliest, self.latest) = (expiry, expiry);
        } else {
            self.earliest = self.earliest.min(expiry);
            self.latest = self.latest.max(expiry);
        }
        let root = self.root;
        self.root = on_records!(self.classes, r => r.insert(root, h));
    }

    /// Takes `h` out of the tree (its record stays), and out of the
    /// bounds: when it was the first or the last in order, the lease that
    /// takes that rank gives the new bound (a tree left empty gives zero).
    fn cut(&mut self, h: Handle) {
        let (root, earliest, latest) = (self.root, self.earliest, self.latest);
        (self.root, self.earliest, self.latest) = on_records!(self.classes, r => {
            let (root, first, last) = r.unlink(root, h);
            let earliest = first.map_or(earliest, |first| r.get(first).expiry);
            let latest = last.map_or(latest, |last| r.get(last).expiry);
            (root, earliest, latest)
        });
    }

    /// Removes a lease: tree, index and record.
    fn remove(&mut self, h: Handle) {
        let Leases { classes, index, .. } = self;
        if let Ok(entry) = index.find_entry(hash_of(id_in(classes, h)), |&e| e == h) {
            entry.remove();
        }
        self.remove_unindexed(h);
    }

    /// Removes a lease already out of the index: tree and record.
    fn remove_unindexed(&mut self, h: Handle) {
        self.cut(h);
        self.free(h);
        let (len, capacity) = (self.index.len(), self.index.capacity());
        if self.classes.is_empty() {
            // Nothing kept: nothing allocated.
            self.classes = Vec::new();
            self.index = HashTable::new();
        } else if capacity > 16 && len * 4 < capacity {
            // Less than a quarter full: shrink the index.
            let Leases { classes, index, .. } = self;
            index.shrink_to(len + len / 4, |&e| hash_of(id_in(classes, e)));
        }
    }

    /// Frees the record of `h`, already out of the tree and the index: the
    /// class's last record and id move into its place, and the links to
    /// them follow.
    fn free(&mut self, h: Handle) {
        let len = h.len();
        let Ok(at) = self.classes.binary_search_by_key(&len, |c| c.len) else {
            return;
        };
        let Some(class) = self.classes.get_mut(at) else {
            return;
        };
        let (i, n) = (h.index(), class.nodes.len());
        if i >= n || class.ids.len() != n * len {
            return;
        }
        let last = n - 1;
        class.nodes.swap_remove(i);
        class.ids.copy_within(last * len.., i * len);
        class.ids.truncate(last * len);
        if class.nodes.is_empty() {
            self.classes.remove(at);
            if self.classes.capacity() > self.classes.len() + 2 {
                self.classes.shrink_to_fit();
            }
        } else if class.nodes.capacity() > 2 * last + 8 {
            let keep = last + last / 8;
            class.nodes.shrink_to(keep);
            class.ids.shrink_to(keep * len);
        }
        if i == last {
            return;
        }
        let Some(moved) = Handle::new(len, last) else {
            return;
        };
        self.relink(moved, h);
        let Leases { classes, index, .. } = self;
        if let Some(entry) = index.find_mut(hash_of(id_in(classes, h)), |&e| e == moved) {
            *entry = h;
        }
    }

    /// Makes the link to `from` point at `to`, which holds the same record
    /// now: a walk from the root by its key.
    fn relink(&mut self, from: Handle, to: Handle) {
        let root = self.root;
        if root == from {
            self.root = to;
            return;
        }
        on_records!(self.classes, r => r.relink(root, from, to));
    }

    /// Drops the leases expired at `now`, soonest first. Inlined for the
    /// usual call, which finds none.
    #[inline]
    fn drop_expired(&mut self, now: Nanos) {
        if !self.none_expired(now) {
            self.drop_some_expired(now);
        }
    }

    fn drop_some_expired(&mut self, now: Nanos) {
        // Each turn removes one lease: at most as many turns as leases.
        for _ in 0..self.count() {
            if self.none_expired(now) {
                return;
            }
            self.remove(self.leftmost(self.root));
        }
    }

    fn rightmost(&self, mut h: Handle) -> Handle {
        while self.node(h).right != Handle::NIL {
            h = self.node(h).right;
        }
        h
    }

    fn leftmost(&self, mut h: Handle) -> Handle {
        while self.node(h).left != Handle::NIL {
            h = self.node(h).left;
        }
        h
    }

    /// The leases in order; with `after`, only those expiring after it.
    fn in_order(&self, after: Option<Nanos>) -> InOrder<'_> {
        let mut path = Vec::new();
        let mut at = self.root;
        while at != Handle::NIL {
            let node = self.node(at);
            if after.is_none_or(|t| node.expiry > t) {
                path.push(at);
                at = node.left;
            } else {
                at = node.right;
            }
        }
        InOrder { leases: self, path }
    }
}

/// Walks the tree in order: `path` holds the nodes still to visit whose
/// left subtrees are done, the next on top.
struct InOrder<'a> {
    leases: &'a Leases,
    path: Vec<Handle>,
}

impl Iterator for InOrder<'_> {
    type Item = Handle;

    fn next(&mut self) -> Option<Handle> {
        let h = self.path.pop()?;
        let mut at = self.leases.node(h).right;
        while at != Handle::NIL {
            self.path.push(at);
            at = self.leases.node(at).left;
        }
        Some(h)
    }
}

/// The most nodes a way down the tree passes that `Path` holds: an AVL
/// tree of height h has at least F(h + 2) - 1 nodes (F the Fibonacci
/// numbers), so one of at most 2^20 records is at most 28 deep.
const MAX_DEPTH: usize = 32;

/// A way down the tree: the nodes passed, and whether it went on to the
/// left of each.
type Path = ArrayVec<(Handle, bool), MAX_DEPTH>;

/// Records a node passed on `path`; false when the path is full (never: see
/// `MAX_DEPTH`), and then the caller rebuilds the tree instead of
/// retracing its steps.
fn step(path: &mut Path, limit: usize, h: Handle, left: bool) -> bool {
    path.len() < limit && path.try_push((h, left)).is_ok()
}

#[cfg(not(test))]
fn path_limit() -> usize {
    MAX_DEPTH
}

#[cfg(test)]
fn path_limit() -> usize {
    PATH_LIMIT.with(|limit| limit.get())
}

#[cfg(test)]
thread_local! {
    /// What `step` takes as full, lowered by a test to reach the rebuild.
    pub(crate) static PATH_LIMIT: std::cell::Cell<usize> = const { std::cell::Cell::new(MAX_DEPTH) };
}

/// The records, as the tree's algorithms read and write them.
///
/// An insertion or a removal takes the tree's root and returns the new
/// one. It adjusts the sums on its way down (the weight inserted or
/// removed is known there), recording the way (`Path`), so that on the way
/// back up (`retrace`) only heights and balance are left, and that walk
/// stops at the first subtree whose height did not change.
trait Records {
    /// The record of `h`; for NIL (or a handle of no record), an empty
    /// subtree.
    fn get(&self, h: Handle) -> &Node;
    fn get_mut(&mut self, h: Handle) -> Option<&mut Node>;
    fn id(&self, h: Handle) -> &[u8];

    /// Whether the lease `h`, of `expiry`, comes before `at`, of
    /// `at_expiry`, in the tree's order (by expiry, then id).
    fn before(&self, h: Handle, expiry: Nanos, at: Handle, at_expiry: Nanos) -> bool {
        match expiry.cmp(&at_expiry) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => self.id(h) < self.id(at),
        }
    }

    fn set_left(&mut self, h: Handle, child: Handle) {
        if let Some(node) = self.get_mut(h) {
            node.left = child;
        }
    }

    fn set_right(&mut self, h: Handle, child: Handle) {
        if let Some(node) = self.get_mut(h) {
            node.right = child;
        }
    }

    /// Recomputes the height and the sum of `h` from its children.
    fn fix(&mut self, h: Handle) {
        let node = *self.get(h);
        let (left, right) = (self.get(node.left), self.get(node.right));
        let height = 1 + left.height().max(right.height());
        let sum = node
            .weight()
            .saturating_add(left.sum)
            .saturating_add(right.sum);
        if let Some(node) = self.get_mut(h) {
            node.weight_height = node.weight() | height << WEIGHT_BITS;
            node.sum = sum;
        }
    }

    fn rotate_right(&mut self, h: Handle) -> Handle {
        let left = self.get(h).left;
        self.set_left(h, self.get(left).right);
        self.set_right(left, h);
        self.fix(h);
        self.fix(left);
        left
    }

    fn rotate_left(&mut self, h: Handle) -> Handle {
        let right = self.get(h).right;
        self.set_right(h, self.get(right).left);
        self.set_left(right, h);
        self.fix(h);
        self.fix(right);
        right
    }

    /// Restores the AVL balance at `h` (children heights differ by at most
    /// one), whose subtrees are balanced, hold their true sums and differ
    /// by at most two, and whose own sum is already right; the new root
    /// and whether the subtree's height changed.
    fn rebalance(&mut self, h: Handle) -> (Handle, bool) {
        let node = *self.get(h);
        let (left, right) = (*self.get(node.left), *self.get(node.right));
        let root = if left.height() > right.height() + 1 {
            if self.get(left.left).height() < self.get(left.right).height() {
                let rotated = self.rotate_left(node.left);
                self.set_left(h, rotated);
            }
            self.rotate_right(h)
        } else if right.height() > left.height() + 1 {
            if self.get(right.right).height() < self.get(right.left).height() {
                let rotated = self.rotate_right(node.right);
                self.set_right(h, rotated);
            }
            self.rotate_left(h)
        } else {
            let height = 1 + left.height().max(right.height());
            if height == node.height() {
                return (h, false);
            }
            if let Some(node) = self.get_mut(h) {
                node.weight_height = node.weight() | height << WEIGHT_BITS;
            }
            return (h, true);
        };
        (root, self.get(root).height() != node.height())
    }

    fn set_child(&mut self, h: Handle, left: bool, child: Handle) {
        if let Some(node) = self.get_mut(h) {
            match left {
                true => node.left = child,
                false => node.right = child,
            }
        }
    }

    /// Inserts `h` (its links ignored) into the tree at `root`; the new
    /// root. The way down adds `h`'s weight to the sums it passes.
    fn insert(&mut self, root: Handle, h: Handle) -> Handle {
        let Some(node) = self.get_mut(h) else {
            return root;
        };
        let (expiry, weight) = (node.expiry, node.weight());
        (node.left, node.right) = (Handle::NIL, Handle::NIL);
        node.weight_height = weight | 1 << WEIGHT_BITS;
        node.sum = weight;
        let (mut path, limit) = (Path::new(), path_limit());
        let mut whole = true;
        let mut parent = None;
        let mut at = root;
        while let Some(node) = self.get_mut(at) {
            node.sum = node.sum.saturating_add(weight);
            let (at_expiry, left, right) = (node.expiry, node.left, node.right);
            let go_left = self.before(h, expiry, at, at_expiry);
            whole &= step(&mut path, limit, at, go_left);
            parent = Some((at, go_left));
            at = if go_left { left } else { right };
        }
        let Some((parent, left)) = parent else {
            return h;
        };
        if !whole {
            self.set_child(parent, left, h);
            return self.rebuild(root);
        }
        self.retrace(root, &mut path, h)
    }

    /// Takes `h`, which is in the tree at `root`, out of it (its record
    /// stays): the new root, and when `h` was the first (the last) lease in
    /// order, the one that is now (NIL when none is left). The way down
    /// takes `h`'s weight out of the sums it passes; when `h` has two
    /// children, the next lease in order takes its place.
    fn unlink(&mut self, root: Handle, h: Handle) -> (Handle, Option<Handle>, Option<Handle>) {
        let node = *self.get(h);
        let (expiry, weight) = (node.expiry, node.weight());
        let (mut path, limit) = (Path::new(), path_limit());
        let mut whole = true;
        let mut parent = None;
        let (mut all_left, mut all_right) = (true, true);
        let mut at = root;
        while at != h {
            let Some(passed) = self.get_mut(at) else {
                // Not found (never: `h` is in the tree).
                return (root, None, None);
            };
            passed.sum = passed.sum.saturating_sub(weight);
            let (at_expiry, left, right) = (passed.expiry, passed.left, passed.right);
            let go_left = self.before(h, expiry, at, at_expiry);
            whole &= step(&mut path, limit, at, go_left);
            parent = Some((at, go_left));
            (all_left, all_right) = (all_left && go_left, all_right && !go_left);
            at = if go_left { left } else { right };
        }
        // `h` is the first when the way went left all along and nothing is
        // on its left: the next in order follows it, the least of its
        // right subtree or else its parent. The last likewise.
        let above = parent.map_or(Handle::NIL, |(parent, _)| parent);
        let first = (all_left && node.left == Handle::NIL).then(|| match node.right {
            Handle::NIL => above,
            right => self.leftmost(right),
        });
        let last = (all_right && node.right == Handle::NIL).then(|| match node.left {
            Handle::NIL => above,
            left => self.rightmost(left),
        });
        let (place, below) = if node.left == Handle::NIL || node.right == Handle::NIL {
            // At most one child, which takes `h`'s place.
            let child = match node.left {
                Handle::NIL => node.right,
                left => left,
            };
            (child, child)
        } else {
            // The next lease in order takes `h`'s place; the way down to it
            // takes its weight out of the sums.
            let next = self.leftmost(node.right);
            let moved = *self.get(next);
            whole &= step(&mut path, limit, next, false);
            let mut above = None;
            let mut at = node.right;
            while at != next {
                let Some(passed) = self.get_mut(at) else {
                    break;
                };
                passed.sum = passed.sum.saturating_sub(moved.weight());
                let left = passed.left;
                whole &= step(&mut path, limit, at, true);
                above = Some(at);
                at = left;
            }
            if let Some(above) = above {
                self.set_left(above, moved.right);
            }
            if let Some(next) = self.get_mut(next) {
                next.left = node.left;
                if above.is_some() {
                    next.right = node.right;
                }
                next.weight_height = moved.weight() | node.height() << WEIGHT_BITS;
                next.sum = node.sum.saturating_sub(weight);
            }
            (next, moved.right)
        };
        let root = match parent {
            Some((parent, left)) => {
                self.set_child(parent, left, place);
                root
            }
            None => place,
        };
        let root = match whole {
            true if path.is_empty() => root,
            true => self.retrace(root, &mut path, below),
            false => self.rebuild(root),
        };
        (root, first, last)
    }

    /// After the subtree below the last node of `path` (on the side the
    /// path took) became `sub`: links it, then rebalances the nodes of the
    /// path up from there, as long as their subtrees' heights change; the
    /// new root.
    fn retrace(&mut self, root: Handle, path: &mut Path, mut sub: Handle) -> Handle {
        let mut changed = true;
        while let Some((parent, left)) = path.pop() {
            self.set_child(parent, left, sub);
            if !changed {
                return root;
            }
            let (rebalanced, height_changed) = self.rebalance(parent);
            if rebalanced == parent && !height_changed {
                return root;
            }
            (sub, changed) = (rebalanced, height_changed);
        }
        sub
    }

    /// The tree at `root` (its order and weights right, its balance or
    /// heights not), rebuilt balanced: for a way down longer than `Path`
    /// holds, which an AVL tree of at most `MAX_LIMIT` records never has.
    fn rebuild(&mut self, root: Handle) -> Handle {
        let mut sorted = Vec::new();
        let mut stack = Vec::new();
        let mut at = root;
        loop {
            while at != Handle::NIL {
                stack.push(at);
                at = self.get(at).left;
            }
            let Some(h) = stack.pop() else {
                break;
            };
            sorted.push(h);
            at = self.get(h).right;
        }
        self.build(&sorted)
    }

    /// A balanced tree of `sorted`, in that order.
    fn build(&mut self, sorted: &[Handle]) -> Handle {
        let (left, rest) = sorted.split_at(sorted.len() / 2);
        let Some((&h, right)) = rest.split_first() else {
            return Handle::NIL;
        };
        let (left, right) = (self.build(left), self.build(right));
        self.set_left(h, left);
        self.set_right(h, right);
        self.fix(h);
        h
    }

    fn rightmost(&self, mut h: Handle) -> Handle {
        loop {
            let right = self.get(h).right;
            if right == Handle::NIL {
                return h;
            }
            h = right;
        }
    }

    fn leftmost(&self, mut h: Handle) -> Handle {
        loop {
            let left = self.get(h).left;
            if left == Handle::NIL {
                return h;
            }
            h = left;
        }
    }

    /// Makes the link to `from` in the tree at `root` (not `from`) point at
    /// `to`, which holds the same record now: a walk by its key.
    fn relink(&mut self, root: Handle, from: Handle, to: Handle) {
        let expiry = self.get(to).expiry;
        let mut at = root;
        while at != Handle::NIL {
            let node = *self.get(at);
            let go_left = self.before(to, expiry, at, node.expiry);
            let next = if go_left { node.left } else { node.right };
            if next == from {
                match go_left {
                    true => self.set_left(at, to),
                    false => self.set_right(at, to),
                }
                return;
            }
            at = next;
        }
    }
}

/// The records of a state whose ids all have one length: `Handle::index`
/// names a record of `nodes` and an id of `ids` at once.
struct OneClass<'a> {
    nodes: &'a mut [Node],
    ids: &'a [u8],
    len: usize,
}

impl Records for OneClass<'_> {
    #[inline]
    fn get(&self, h: Handle) -> &Node {
        // NIL's index is past every class (`Handle::new`).
        self.nodes.get(h.index()).unwrap_or(&NIL_NODE)
    }

    #[inline]
    fn get_mut(&mut self, h: Handle) -> Option<&mut Node> {
        self.nodes.get_mut(h.index())
    }

    #[inline]
    fn id(&self, h: Handle) -> &[u8] {
        let at = h.index() * self.len;
        self.ids.get(at..at + self.len).unwrap_or(&[])
    }
}

/// The records of a state with ids of several lengths (or none).
struct AllClasses<'a>(&'a mut [Class]);

impl Records for AllClasses<'_> {
    fn get(&self, h: Handle) -> &Node {
        class_at(self.0, h.len())
            .and_then(|at| self.0.get(at))
            .and_then(|c| c.nodes.get(h.index()))
            .unwrap_or(&NIL_NODE)
    }

    fn get_mut(&mut self, h: Handle) -> Option<&mut Node> {
        let at = class_at(self.0, h.len())?;
        self.0.get_mut(at)?.nodes.get_mut(h.index())
    }

    fn id(&self, h: Handle) -> &[u8] {
        id_in(self.0, h)
    }
}

impl PartialEq for Leases {
    fn eq(&self, other: &Leases) -> bool {
        self.count() == other.count() && self.iter().eq(other.iter())
    }
}

impl Eq for Leases {}

impl fmt::Debug for Leases {
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
impl Leases {
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
        fn walk(leases: &Leases, h: Handle) -> (u32, u64) {
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

impl Limiter for Leases {
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
        Leases::decide(self, now, params, b"", quantity)
    }

    fn decide_as(
        &self,
        now: Nanos,
        params: &LeaseParams,
        quantity: u64,
        id: &[u8],
    ) -> (Decision, Option<LeaseUpdate>) {
        Leases::decide(self, now, params, id, quantity)
    }

    fn apply(&mut self, update: LeaseUpdate) {
        Leases::apply(self, update)
    }

    /// Never called: a lease is given back by RL.RELEASE, and RL.REFUND
    /// refuses a LEASE spec (`REFUNDS` is false). Gives nothing back.
    fn refund(&mut self, _now: Nanos, _params: &LeaseParams, _quantity: u64) {}

    fn inspect(&self, now: Nanos) -> Vec<(&'static str, Detail)> {
        Leases::inspect(self, now)
    }

    fn encode(&self) -> Vec<u8> {
        Leases::encode(self)
    }

    fn decode(bytes: &[u8]) -> Result<Leases, DecodeError> {
        Leases::decode(bytes)
    }

    fn mem_usage(&self) -> usize {
        Leases::mem_usage(self)
    }
}
