//! The byte encoding of persisted states: little-endian fixed-width integers,
//! and variable-length ones (unsigned LEB128) where small values dominate.
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

    /// `value` in unsigned LEB128: seven bits a byte, least significant
    /// first, the high bit set on every byte but the last; 1 to 10 bytes.
    pub fn varint(&mut self, mut value: u64) -> &mut Writer {
        while value >= 0x80 {
            self.bytes.push((value & 0x7f) as u8 | 0x80);
            value >>= 7;
        }
        self.bytes.push(value as u8);
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

    /// A value as `Writer::varint` writes it. Only that encoding is
    /// accepted: a value padded with a last byte of 0 (the same value in
    /// more bytes) or one above `u64::MAX` is invalid.
    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let [byte] = self.take::<1>()?;
            // The tenth byte holds bit 63 only, and must be the last.
            if shift == 63 && byte > 1 {
                return Err(DecodeError::Invalid("varint above 64 bits"));
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                if byte == 0 && shift > 0 {
                    return Err(DecodeError::Invalid("varint not in its shortest form"));
                }
                return Ok(value);
            }
        }
        Err(DecodeError::Invalid("varint above 64 bits"))
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

    #[test]
    fn varints() {
        // value, its bytes
        #[rustfmt::skip]
        let table: &[(u64, &[u8])] = &[
            (0,              &[0x00]),
            (1,              &[0x01]),
            (127,            &[0x7f]),
            (128,            &[0x80, 0x01]),
            (300,            &[0xac, 0x02]),
            (16_383,         &[0xff, 0x7f]),
            (16_384,         &[0x80, 0x80, 0x01]),
            (u64::from(u32::MAX), &[0xff, 0xff, 0xff, 0xff, 0x0f]),
            (u64::MAX,       &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
        ];
        for &(value, bytes) in table {
            let mut w = Writer::default();
            w.varint(value);
            assert_eq!(w.into_bytes(), bytes, "{value}");
            let mut r = Reader::new(bytes);
            assert_eq!(r.varint(), Ok(value), "{value}");
            assert_eq!(r.finish(), Ok(()));
            // Every cut is too short.
            for cut in 0..bytes.len() {
                assert_eq!(
                    Reader::new(&bytes[..cut]).varint(),
                    Err(DecodeError::Length)
                );
            }
        }
        let invalid =
            |bytes: &[u8]| matches!(Reader::new(bytes).varint(), Err(DecodeError::Invalid(_)));
        // Padded: the same values in more bytes.
        assert!(invalid(&[0x80, 0x00]));
        assert!(invalid(&[0x81, 0x80, 0x00]));
        // Above 64 bits: a tenth byte above 1, or an eleventh byte.
        assert!(invalid(&[
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02
        ]));
        assert!(invalid(&[
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00
        ]));
    }
}
