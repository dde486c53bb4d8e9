//! RL.LEASE's saved format: the canonical encoding, its validating
//! decoder, and the memory a state takes.

use super::*;

impl LeaseState {
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
    pub fn decode(bytes: &[u8]) -> Result<LeaseState, DecodeError> {
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

        let mut leases = LeaseState {
            classes: Vec::with_capacity(lengths.iter().filter(|&&n| n > 0).count()),
            index: HashTable::with_capacity(count),
            ..LeaseState::default()
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
        mem::size_of::<LeaseState>()
            + self.classes.capacity() * mem::size_of::<Class>()
            + buffers
            + self.index.allocation_size()
    }
}
