//! DUMP payloads built by hand, for the tests that pin a saved format
//! (tests/formats.rs) and those that feed the server hostile ones
//! (tests/persistence.rs, tests/lease.rs).
//!
//! A DUMP payload of a module value is a body and a trailer. The body: the
//! module type opcode (7), the type's module id as a 64-bit RDB length
//! (0x81, then big-endian), the value saved as one string (opcode 5, an RDB
//! length, the bytes) and the end opcode (0). The trailer: the RDB version
//! (two bytes, little-endian) and the CRC-64 of everything before it
//! (little-endian).

/// CRC-64 as DUMP payloads carry it.
pub fn crc64(bytes: &[u8]) -> u64 {
    crc::Crc::<u64>::new(&crc::CRC_64_REDIS).checksum(bytes)
}

/// A DUMP payload with a new body and a valid trailer (RDB version and CRC).
pub fn reseal(body: &[u8], version: [u8; 2]) -> Vec<u8> {
    let mut out = body.to_vec();
    out.extend_from_slice(&version);
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The RDB version of a DUMP payload the server wrote: the first two bytes
/// of its trailer.
pub fn rdb_version(payload: &[u8]) -> [u8; 2] {
    let n = payload.len();
    assert!(
        n >= 10,
        "a DUMP payload has a ten-byte trailer: {payload:?}"
    );
    [payload[n - 10], payload[n - 9]]
}

/// The body of a DUMP payload the server wrote: all but its trailer.
pub fn body_of(payload: &[u8]) -> &[u8] {
    &payload[..payload.len() - 10]
}

/// Unsigned LEB128: seven bits a byte, least significant first.
pub fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value & 0x7f) as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// A module type's id as RDB and DUMP carry it: the nine characters of its
/// name, six bits each, then the encoding version in ten bits.
pub fn module_id(name: &str, encoding_version: u64) -> u64 {
    const CHARSET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    assert_eq!(name.len(), 9);
    let mut id = 0u64;
    for c in name.bytes() {
        let pos = CHARSET.iter().position(|&x| x == c).expect("charset");
        id = (id << 6) | pos as u64;
    }
    (id << 10) | encoding_version
}

/// An RDB length: one byte below 64, two below 16,384 (big-endian, 0x40
/// set), else 0x80 and four bytes big-endian.
fn rdb_length(out: &mut Vec<u8>, len: usize) {
    if len < 64 {
        out.push(len as u8);
    } else if len < 16_384 {
        out.push(0x40 | (len >> 8) as u8);
        out.push(len as u8);
    } else {
        out.push(0x80);
        out.extend_from_slice(&u32::try_from(len).expect("a 32-bit length").to_be_bytes());
    }
}

/// The body of a DUMP payload of a module value, as a server with
/// `rdbcompression no` writes it: the module type opcode (7), the id as a
/// 64-bit RDB length (0x81, then big-endian), the value saved as one string
/// (opcode 5, its RDB length, the bytes) and the end opcode (0). The
/// trailer (RDB version and CRC) is the server's, and is not part of it.
pub fn dump_body(id: u64, encoding: &[u8]) -> Vec<u8> {
    let mut out = vec![7, 0x81];
    out.extend_from_slice(&id.to_be_bytes());
    out.push(5);
    rdb_length(&mut out, encoding.len());
    out.extend_from_slice(encoding);
    out.push(0);
    out
}
