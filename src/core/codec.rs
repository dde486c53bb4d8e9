//! The byte encoding of persisted states: little-endian fixed-width integers.
//! One encoding serves RDB (saved as one string buffer) and AOF rewrite (the
//! argument of the state-carrying command), so one decoder validates both.

use super::DecodeError;

/// Appends fixed-width little-endian integers to a buffer.
#[derive(Default)]
pub struct Writer {
    bytes: Vec<u8>,
}

impl Writer {
    pub fn with_capacity(capacity: usize) -> Writer {
        Writer {
            bytes: Vec::with_capacity(capacity),
        }
    }

    pub fn u64(&mut self, value: u64) -> &mut Writer {
        self.bytes.extend_from_slice(&value.to_le_bytes());
        self
    }

    pub fn u32(&mut self, value: u32) -> &mut Writer {
        self.bytes.extend_from_slice(&value.to_le_bytes());
        self
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// Reads what `Writer` wrote; every read is checked against the length.
pub struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes }
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let (head, rest) = self
            .bytes
            .split_first_chunk::<N>()
            .ok_or(DecodeError::Length)?;
        self.bytes = rest;
        Ok(*head)
    }

    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        self.take::<8>().map(u64::from_le_bytes)
    }

    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        self.take::<4>().map(u32::from_le_bytes)
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len()
    }

    /// Succeeds only when every byte was read.
    pub fn finish(self) -> Result<(), DecodeError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::Length)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_length_checks() {
        let mut w = Writer::default();
        w.u64(0x0102_0304_0506_0708).u32(9);
        let bytes = w.into_bytes();
        assert_eq!(bytes.len(), 12);

        let mut r = Reader::new(&bytes);
        assert_eq!(r.u64(), Ok(0x0102_0304_0506_0708));
        assert_eq!(r.remaining(), 4);
        assert_eq!(r.u32(), Ok(9));
        assert_eq!(r.u32(), Err(DecodeError::Length));
        assert_eq!(r.finish(), Ok(()));

        let mut short = Reader::new(&bytes[..7]);
        assert_eq!(short.u64(), Err(DecodeError::Length));
        assert_eq!(Reader::new(&bytes).finish(), Err(DecodeError::Length));
    }
}
