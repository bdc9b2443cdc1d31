/**
 * XXH64 (seed 0), the hash the Collector's resource-attribute keys are made of (pdata xhash). BigInt
 * arithmetic: it hashes a resource's attributes once per record, a few hundred bytes.
 */
const P1 = 11400714785074694791n
const P2 = 14029467366897019727n
const P3 = 1609587929392839161n
const P4 = 9650029242287828579n
const P5 = 2870177450012600261n
const M = (1n << 64n) - 1n

const rotl = (x: bigint, r: bigint) => ((x << r) | (x >> (64n - r))) & M
const round = (acc: bigint, lane: bigint) => (rotl((acc + lane * P2) & M, 31n) * P1) & M
const merge = (acc: bigint, v: bigint) => ((((acc ^ round(0n, v)) * P1) & M) + P4) & M

export function xxhash64(b: Uint8Array): bigint {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength)
  const len = b.length
  let p = 0
  let h: bigint
  if (len >= 32) {
    let v1 = (P1 + P2) & M
    let v2 = P2
    let v3 = 0n
    let v4 = (M + 1n - P1) & M
    for (; p + 32 <= len; p += 32) {
      v1 = round(v1, view.getBigUint64(p, true))
      v2 = round(v2, view.getBigUint64(p + 8, true))
      v3 = round(v3, view.getBigUint64(p + 16, true))
      v4 = round(v4, view.getBigUint64(p + 24, true))
    }
    h = (rotl(v1, 1n) + rotl(v2, 7n) + rotl(v3, 12n) + rotl(v4, 18n)) & M
    h = merge(merge(merge(merge(h, v1), v2), v3), v4)
  } else h = P5
  h = (h + BigInt(len)) & M
  for (; p + 8 <= len; p += 8) h = ((rotl(h ^ round(0n, view.getBigUint64(p, true)), 27n) * P1) & M) + P4 & M
  if (p + 4 <= len) {
    h = ((rotl(h ^ ((BigInt(view.getUint32(p, true)) * P1) & M), 23n) * P2) & M) + P3 & M
    p += 4
  }
  for (; p < len; p++) h = (rotl(h ^ ((BigInt(b[p]!) * P5) & M), 11n) * P1) & M
  h = ((h ^ (h >> 33n)) * P2) & M
  h = ((h ^ (h >> 29n)) * P3) & M
  return h ^ (h >> 32n)
}
