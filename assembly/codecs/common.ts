// Shared helpers for the codec modules (gzip, snappy, lz4). No codec imports another codec:
// each one imports only this file, so a wasm built from an entry that uses one codec contains
// only that codec.

/** dst is too small for the result. */
export const E_DST_TOO_SMALL: i32 = -1
/** The codec is not compiled into this module. */
export const E_NOT_BUILT: i32 = -2
/** The compressed input ends early. */
export const E_TRUNCATED: i32 = -3
/** The compressed input is malformed. */
export const E_CORRUPT: i32 = -4
/** A checksum in the compressed input does not match (CRC-32, xxh32, header checksum). */
export const E_CHECKSUM: i32 = -5
/** The input uses a feature this decoder does not implement (e.g. an LZ4 dictionary id). */
export const E_UNSUPPORTED: i32 = -6

/**
 * Length of the common prefix of a[0..) and b[0..), at most `limit` bytes; reads never go
 * past a + limit or b + limit. Eight bytes at a time while they fit.
 */
// @ts-ignore: decorator
@inline
export function commonPrefix(a: usize, b: usize, limit: usize): usize {
  let n: usize = 0
  while (n + 8 <= limit) {
    const x = load<u64>(a + n) ^ load<u64>(b + n)
    if (x != 0) return n + (<usize>ctz<u64>(x) >> 3)
    n += 8
  }
  while (n < limit && load<u8>(a + n) == load<u8>(b + n)) n++
  return n
}

/** Big-endian u32 store / load (xerial framing). */
// @ts-ignore: decorator
@inline
export function storeU32BE(p: usize, v: u32): void {
  store<u32>(p, bswap<u32>(v))
}
// @ts-ignore: decorator
@inline
export function loadU32BE(p: usize): u32 {
  return bswap<u32>(load<u32>(p))
}

/**
 * Copies `len` bytes from src to dst, eight at a time when `wild`: the last store may write up to
 * seven bytes past dst + len and read as far past src + len, so callers pass `wild` only where they
 * checked that room (the few bytes land where the next element is written anyway).
 */
// @ts-ignore: decorator
@inline
export function copyLiteral(dst: usize, src: usize, len: usize, wild: bool): void {
  if (wild) {
    let n: usize = 0
    do {
      store<u64>(dst + n, load<u64>(src + n))
      n += 8
    } while (n < len)
  } else {
    memory.copy(dst, src, len)
  }
}

/**
 * LZ77 match copy of `len` bytes from `dist` bytes back. Overlap is the point (dist < len repeats a
 * pattern), so memory.copy's memmove semantics would be wrong; eight bytes at a time is exact when
 * dist >= 8, and `wild` again means the caller checked room for the overshoot.
 */
// @ts-ignore: decorator
@inline
export function copyMatch(op: usize, dist: usize, len: usize, wild: bool): void {
  const m = op - dist
  if (wild && dist >= 8) {
    let n: usize = 0
    do {
      store<u64>(op + n, load<u64>(m + n))
      n += 8
    } while (n < len)
  } else {
    for (let n: usize = 0; n < len; n++) store<u8>(op + n, load<u8>(m + n))
  }
}
