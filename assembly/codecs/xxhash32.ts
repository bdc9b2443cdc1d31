// xxHash32 (used by the LZ4 frame format: header checksum, optional block / content checksums).

const P1: u32 = 2654435761
const P2: u32 = 2246822519
const P3: u32 = 3266489917
const P4: u32 = 668265263
const P5: u32 = 374761393

// @ts-ignore: decorator
@inline
function round(acc: u32, lane: u32): u32 {
  return rotl<u32>(acc + lane * P2, 13) * P1
}

/** xxh32 of p[0..len) with the given seed. */
export function xxh32(p: usize, len: usize, seed: u32): u32 {
  const end = p + len
  let h: u32
  if (len >= 16) {
    let v1: u32 = seed + P1 + P2
    let v2: u32 = seed + P2
    let v3: u32 = seed
    let v4: u32 = seed - P1
    const limit = end - 16
    do {
      v1 = round(v1, load<u32>(p))
      v2 = round(v2, load<u32>(p, 4))
      v3 = round(v3, load<u32>(p, 8))
      v4 = round(v4, load<u32>(p, 12))
      p += 16
    } while (p <= limit)
    h = rotl<u32>(v1, 1) + rotl<u32>(v2, 7) + rotl<u32>(v3, 12) + rotl<u32>(v4, 18)
  } else {
    h = seed + P5
  }
  h += <u32>len
  while (p + 4 <= end) {
    h += load<u32>(p) * P3
    h = rotl<u32>(h, 17) * P4
    p += 4
  }
  while (p < end) {
    h += <u32>load<u8>(p) * P5
    h = rotl<u32>(h, 11) * P1
    p++
  }
  h ^= h >> 15
  h *= P2
  h ^= h >> 13
  h *= P3
  h ^= h >> 16
  return h
}
