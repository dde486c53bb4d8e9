// Redis Cluster hash slots, computed here: the clients do not know where a
// module command's keys are.

// CRC16 as Redis Cluster computes it (XMODEM: polynomial 0x1021, initial value 0).
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc;
}

/**
 * The hash slot of a key: CRC16 of the key, or of its hash tag (between the
 * first `{` and the first `}` after it, when not empty), modulo 16384.
 */
export function keyslot(key: string | Uint8Array): number {
  let bytes = typeof key === 'string' ? Buffer.from(key) : Buffer.from(key.buffer, key.byteOffset, key.byteLength);
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  }
  return crc16(bytes) % 16384;
}

/** The indices of `keys` grouped by hash slot, groups in the order of their first key. */
export function slotGroups(keys: readonly string[]): number[][] {
  const groups = new Map<number, number[]>();
  keys.forEach((key, i) => {
    const slot = keyslot(key);
    let group = groups.get(slot);
    if (!group) groups.set(slot, (group = []));
    group.push(i);
  });
  return [...groups.values()];
}
