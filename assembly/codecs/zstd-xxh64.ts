// XXH64 (seed 0 by default), used for the zstd Content_Checksum (its low 32 bits).
// Written from the published algorithm description (primes, rounds, avalanche).

const P1: u64 = 0x9E3779B185EBCA87
const P2: u64 = 0xC2B2AE3D27D4EB4F
const P3: u64 = 0x165667B19E3779F9
const P4: u64 = 0x85EBCA77C2B2AE63
const P5: u64 = 0x27D4EB2F165667C5

// @ts-ignore: decorator
@inline
function round(acc: u64, lane: u64): u64 {
  acc += lane * P2
  acc = rotl<u64>(acc, 31)
  return acc * P1
}

// @ts-ignore: decorator
@inline
function merge(acc: u64, v: u64): u64 {
  acc ^= round(0, v)
  return acc * P1 + P4
}

export function xxh64(p: usize, len: usize, seed: u64 = 0): u64 {
  const end = p + len
  let h: u64
  if (len >= 32) {
    let v1 = seed + P1 + P2
    let v2 = seed + P2
    let v3 = seed
    let v4 = seed - P1
    const limit = end - 32
    do {
      v1 = round(v1, load<u64>(p))
      v2 = round(v2, load<u64>(p, 8))
      v3 = round(v3, load<u64>(p, 16))
      v4 = round(v4, load<u64>(p, 24))
      p += 32
    } while (p <= limit)
    h = rotl<u64>(v1, 1) + rotl<u64>(v2, 7) + rotl<u64>(v3, 12) + rotl<u64>(v4, 18)
    h = merge(h, v1)
    h = merge(h, v2)
    h = merge(h, v3)
    h = merge(h, v4)
  } else {
    h = seed + P5
  }
  h += <u64>len
  while (p + 8 <= end) {
    h ^= round(0, load<u64>(p))
    h = rotl<u64>(h, 27) * P1 + P4
    p += 8
  }
  if (p + 4 <= end) {
    h ^= <u64>load<u32>(p) * P1
    h = rotl<u64>(h, 23) * P2 + P3
    p += 4
  }
  while (p < end) {
    h ^= <u64>load<u8>(p) * P5
    h = rotl<u64>(h, 11) * P1
    p++
  }
  h ^= h >> 33
  h *= P2
  h ^= h >> 29
  h *= P3
  h ^= h >> 32
  return h
}
