//! The AVL tree of the records, ordered by `(expiry, id)`, with subtree
//! sums of the weights: the state's insertions and removals (which keep
//! the index in step), its walks, and the tree's algorithms on a view of
//! the records (`Records`).

use super::*;

impl LeaseState {
    /// Adds `h`, of id `id`, to the index; false when the id is there
    /// already.
    /// already.
    pub(super) fn index_new(&mut self, id: &[u8], h: Handle) -> bool {
        let LeaseState { classes, index, .. } = self;
        let hash = hash_of(id);
        if index.find(hash, |&e| id_in(classes, e) == id).is_some() {
            return false;
        }
        index.insert_unique(hash, h, |&e| hash_of(id_in(classes, e)));
        true
    }

    /// Links `h` into the tree, and notes its expiry in the bounds.
    pub(super) fn link(&mut self, h: Handle) {
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
    pub(super) fn cut(&mut self, h: Handle) {
        let (root, earliest, latest) = (self.root, self.earliest, self.latest);
        (self.root, self.earliest, self.latest) = on_records!(self.classes, r => {
            let (root, first, last) = r.unlink(root, h);
            let earliest = first.map_or(earliest, |first| r.get(first).expiry);
            let latest = last.map_or(latest, |last| r.get(last).expiry);
            (root, earliest, latest)
        });
    }

    /// Removes a lease: tree, index and record.
    pub(super) fn remove(&mut self, h: Handle) {
        let LeaseState { classes, index, .. } = self;
        if let Ok(entry) = index.find_entry(hash_of(id_in(classes, h)), |&e| e == h) {
            entry.remove();
        }
        self.remove_unindexed(h);
    }

    /// Removes a lease already out of the index: tree and record.
    pub(super) fn remove_unindexed(&mut self, h: Handle) {
        self.cut(h);
        self.free(h);
        let (len, capacity) = (self.index.len(), self.index.capacity());
        if self.classes.is_empty() {
            // Nothing kept: nothing allocated.
            self.classes = Vec::new();
            self.index = HashTable::new();
        } else if capacity > 16 && len * 4 < capacity {
            // Less than a quarter full: shrink the index.
            let LeaseState { classes, index, .. } = self;
            index.shrink_to(len + len / 4, |&e| hash_of(id_in(classes, e)));
        }
    }

    /// Frees the record of `h`, already out of the tree and the index: the
    /// class's last record and id move into its place, and the links to
    /// them follow.
    pub(super) fn free(&mut self, h: Handle) {
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
        let LeaseState { classes, index, .. } = self;
        if let Some(entry) = index.find_mut(hash_of(id_in(classes, h)), |&e| e == moved) {
            *entry = h;
        }
    }

    /// Makes the link to `from` point at `to`, which holds the same record
    /// now: a walk from the root by its key.
    pub(super) fn relink(&mut self, from: Handle, to: Handle) {
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
    pub(super) fn drop_expired(&mut self, now: Nanos) {
        if !self.none_expired(now) {
            self.drop_some_expired(now);
        }
    }

    pub(super) fn drop_some_expired(&mut self, now: Nanos) {
        // Each turn removes one lease: at most as many turns as leases.
        for _ in 0..self.count() {
            if self.none_expired(now) {
                return;
            }
            self.remove(self.leftmost(self.root));
        }
    }

    pub(super) fn rightmost(&self, mut h: Handle) -> Handle {
        while self.node(h).right != Handle::NIL {
            h = self.node(h).right;
        }
        h
    }

    pub(super) fn leftmost(&self, mut h: Handle) -> Handle {
        while self.node(h).left != Handle::NIL {
            h = self.node(h).left;
        }
        h
    }

    /// The leases in order; with `after`, only those expiring after it.
    pub(super) fn in_order(&self, after: Option<Nanos>) -> InOrder<'_> {
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
pub(super) struct InOrder<'a> {
    pub(super) leases: &'a LeaseState,
    pub(super) path: Vec<Handle>,
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
pub(super) const MAX_DEPTH: usize = 32;

/// A way down the tree: the nodes passed, and whether it went on to the
/// left of each.
pub(super) type Path = ArrayVec<(Handle, bool), MAX_DEPTH>;

/// Records a node passed on `path`; false when the path is full (never: see
/// `MAX_DEPTH`), and then the caller rebuilds the tree instead of
/// retracing its steps.
pub(super) fn step(path: &mut Path, limit: usize, h: Handle, left: bool) -> bool {
    path.len() < limit && path.try_push((h, left)).is_ok()
}

#[cfg(not(test))]
pub(super) fn path_limit() -> usize {
    MAX_DEPTH
}

#[cfg(test)]
pub(super) fn path_limit() -> usize {
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
pub(super) trait Records {
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
pub(super) struct OneClass<'a> {
    pub(super) nodes: &'a mut [Node],
    pub(super) ids: &'a [u8],
    pub(super) len: usize,
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
pub(super) struct AllClasses<'a>(pub(super) &'a mut [Class]);

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
