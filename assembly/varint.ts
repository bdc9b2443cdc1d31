// Kafka's record fields use zigzag varints (protobuf style): small magnitudes of either sign are short.

@inline export function zigzag32(n: i32): u32 {
  return <u32>((n << 1) ^ (n >> 31))
}

@inline export function zigzag64(n: i64): u64 {
  return <u64>((n << 1) ^ (n >> 63))
}

@inline export function uvarintSize(v: u32): i32 {
  // 1 + floor((bit length - 1) / 7), with v == 0 taking one byte.
  return 1 + (31 - <i32>clz<u32>(v | 1)) / 7
}

@inline export function uvarlongSize(v: u64): i32 {
  return 1 + (63 - <i32>clz<u64>(v | 1)) / 7
}

/** Writes v at p and returns the position after it. */
@inline export function writeUvarint(p: usize, v: u32): usize {
  while (v >= 0x80) {
    store<u8>(p++, <u8>(v | 0x80))
    v >>>= 7
  }
  store<u8>(p++, <u8>v)
  return p
}

@inline export function writeUvarlong(p: usize, v: u64): usize {
  while (v >= 0x80) {
    store<u8>(p++, <u8>(v | 0x80))
    v >>>= 7
  }
  store<u8>(p++, <u8>v)
  return p
}
