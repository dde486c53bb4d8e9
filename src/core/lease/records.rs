//! The records of the leases: one per lease (`Node`), grouped in classes
//! by the length of their id (`Class`) and named by handles (`Handle`),
//! and the hash of an id that the index is keyed by
//! (docs/DESIGN.md#lease).

use super::*;

/// The leases whose id has one length: records and ids in step.
#[derive(Clone, Debug)]
pub(super) struct Class {
    /// The length of every id here, 1 to `MAX_ID_LEN`.
    pub(super) len: usize,
    pub(super) nodes: Vec<Node>,
    /// The ids end to end: `nodes[i]`'s is `ids[i * len..(i + 1) * len]`.
    pub(super) ids: Vec<u8>,
}

/// One lease, and its place in the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Node {
    pub(super) expiry: Nanos,
    /// The weight (low 24 bits) and the height of the subtree rooted here
    /// (high 8 bits; a leaf is 1).
    pub(super) weight_height: u32,
    /// The sum of the weights of the subtree rooted here.
    pub(super) sum: u32,
    pub(super) left: Handle,
    pub(super) right: Handle,
}

pub(super) const WEIGHT_BITS: u32 = 24;
pub(super) const WEIGHT_MASK: u32 = (1 << WEIGHT_BITS) - 1;

impl Node {
    pub(super) fn weight(&self) -> u32 {
        self.weight_height & WEIGHT_MASK
    }

    pub(super) fn height(&self) -> u32 {
        self.weight_height >> WEIGHT_BITS
    }
}

/// What `LeaseState::node` answers for `Handle::NIL`: an empty subtree.
pub(super) static NIL_NODE: Node = Node {
    expiry: Nanos::ZERO,
    weight_height: 0,
    sum: 0,
    left: Handle::NIL,
    right: Handle::NIL,
};

/// Names a lease inside the state: its id's length (which names its
/// class) and its index in the class, `(len - 1) << 20 | index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Handle(u32);

/// Bits of a handle's index: 2^20 is more than `MAX_LIMIT` leases.
pub(super) const INDEX_BITS: u32 = 20;
pub(super) const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;

impl Handle {
    /// No lease: an empty subtree. Its length, 4096, has no class.
    pub(super) const NIL: Handle = Handle(u32::MAX);

    pub(super) fn new(len: usize, index: usize) -> Option<Handle> {
        let len = u32::try_from(len)
            .ok()
            .filter(|&l| l >= 1 && l as usize <= MAX_ID_LEN)?;
        // The last index is NIL's: no record has it.
        let index = u32::try_from(index).ok().filter(|&i| i < INDEX_MASK)?;
        Some(Handle((len - 1) << INDEX_BITS | index))
    }

    pub(super) fn len(self) -> usize {
        (self.0 >> INDEX_BITS) as usize + 1
    }

    pub(super) fn index(self) -> usize {
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
pub(super) fn class_at(classes: &[Class], len: usize) -> Option<usize> {
    match classes {
        [only] => (only.len == len).then_some(0),
        _ => classes.binary_search_by_key(&len, |c| c.len).ok(),
    }
}

/// The id of `h` in `classes` (empty for a handle of no lease).
pub(super) fn id_in(classes: &[Class], h: Handle) -> &[u8] {
    let len = h.len();
    class_at(classes, len)
        .and_then(|at| classes.get(at))
        .and_then(|c| c.ids.get(h.index() * len..(h.index() + 1) * len))
        .unwrap_or(&[])
}

/// Appends a record and its id to their class (made when missing),
/// outside the tree and the index. `None` when the class is full
/// (never: see the invariants).
pub(super) fn push(
    classes: &mut Vec<Class>,
    id: &[u8],
    expiry: Nanos,
    weight: u32,
) -> Option<Handle> {
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
pub(super) fn hash_of(id: &[u8]) -> u64 {
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    let mut state = KEYS.get_or_init(RandomState::new).build_hasher();
    state.write(id);
    state.finish()
}

impl LeaseState {
    pub(super) fn class(&self, len: usize) -> Option<&Class> {
        self.classes.get(class_at(&self.classes, len)?)
    }

    /// The record of `h`; for NIL, an empty subtree.
    pub(super) fn node(&self, h: Handle) -> &Node {
        self.class(h.len())
            .and_then(|c| c.nodes.get(h.index()))
            .unwrap_or(&NIL_NODE)
    }

    pub(super) fn node_mut(&mut self, h: Handle) -> Option<&mut Node> {
        let at = class_at(&self.classes, h.len())?;
        self.classes.get_mut(at)?.nodes.get_mut(h.index())
    }

    pub(super) fn id(&self, h: Handle) -> &[u8] {
        id_in(&self.classes, h)
    }

    /// How many leases are kept, expired or not.
    pub(super) fn count(&self) -> usize {
        self.classes.iter().map(|c| c.nodes.len()).sum()
    }

    /// Orders two leases by expiry, then id.
    pub(super) fn cmp(&self, a: Handle, b: Handle) -> Ordering {
        let (x, y) = (self.node(a), self.node(b));
        x.expiry
            .cmp(&y.expiry)
            .then_with(|| self.id(a).cmp(self.id(b)))
    }
}
