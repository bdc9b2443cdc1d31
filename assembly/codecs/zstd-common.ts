// zstd (RFC 8878) shared pieces: constants, code tables, FSE table construction and the FSE
// table description (NCount) reader/writer. Written from the format document only.
// Imported only by the zstd modules, so a wasm without zstd contains none of it.

export const ZSTD_MAGIC: u32 = 0xFD2FB528
export const BLOCK_SIZE_MAX: i32 = 131072

// Result codes (same values as assembly/codecs/common.ts).
export const Z_DST_TOO_SMALL: i32 = -1
export const Z_TRUNCATED: i32 = -3
export const Z_CORRUPT: i32 = -4
export const Z_CHECKSUM: i32 = -5
export const Z_UNSUPPORTED: i32 = -6

export const LL_MAX_SYMBOL: i32 = 35
export const ML_MAX_SYMBOL: i32 = 52
export const OF_MAX_SYMBOL: i32 = 31
export const LL_MAX_LOG: i32 = 9
export const ML_MAX_LOG: i32 = 9
export const OF_MAX_LOG: i32 = 8

// Literals length codes: baseline and number of extra bits.
export const LL_BASE: usize = memory.data<u32>([
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
  16, 18, 20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024, 2048, 4096,
  8192, 16384, 32768, 65536,
])
export const LL_BITS: usize = memory.data<u8>([
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12,
  13, 14, 15, 16,
])
// Match length codes: baseline (the match length itself) and number of extra bits.
export const ML_BASE: usize = memory.data<u32>([
  3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
  19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34,
  35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 131, 259, 515, 1027, 2051,
  4099, 8195, 16387, 32771, 65539,
])
export const ML_BITS: usize = memory.data<u8>([
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11,
  12, 13, 14, 15, 16,
])

// Default (predefined) distributions.
export const LL_DEFAULT_NORM: usize = memory.data<i16>([
  4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1,
  2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1,
  -1, -1, -1, -1,
])
export const LL_DEFAULT_LOG: i32 = 6
export const ML_DEFAULT_NORM: usize = memory.data<i16>([
  1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1,
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1,
  -1, -1, -1, -1, -1,
])
export const ML_DEFAULT_LOG: i32 = 6
export const OF_DEFAULT_NORM: usize = memory.data<i16>([
  1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1,
  1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1,
])
export const OF_DEFAULT_LOG: i32 = 5

/** Index of the highest set bit (v > 0). */
// @ts-ignore: decorator
@inline
export function highbit(v: u32): i32 {
  return 31 - <i32>clz<u32>(v)
}

// Scratch for table construction: symbol of each cell, and per-symbol running counters.
const SPREAD: usize = memory.data(512)
const NEXT: usize = memory.data(256 * 4)

/**
 * Spreads the normalized distribution norm[0..maxSym] (i16, -1 = "less than 1") over 1 << log
 * cells (result in SPREAD). Returns false when the distribution does not fill the table exactly.
 */
export function fseSpread(norm: usize, maxSym: i32, log: i32): bool {
  const size = 1 << log
  const mask = size - 1
  let high = size - 1
  let total = 0
  for (let s = 0; s <= maxSym; s++) {
    const n = <i32>load<i16>(norm + (<usize>s << 1))
    if (n == -1) {
      if (high < 0) return false
      store<u8>(SPREAD + <usize>high, <u8>s)
      high--
      total++
    } else if (n < 0) {
      return false
    } else {
      total += n
    }
  }
  if (total != size) return false
  const step = (size >> 1) + (size >> 3) + 3
  let pos = 0
  for (let s = 0; s <= maxSym; s++) {
    const n = <i32>load<i16>(norm + (<usize>s << 1))
    for (let i = 0; i < n; i++) {
      store<u8>(SPREAD + <usize>pos, <u8>s)
      do {
        pos = (pos + step) & mask
      } while (pos > high)
    }
  }
  return pos == 0
}

/**
 * Builds an FSE decoding table: one u32 per cell, symbol | nbBits << 8 | baseline << 16.
 * Returns false for an invalid distribution.
 */
export function fseBuildDTable(norm: usize, maxSym: i32, log: i32, dt: usize): bool {
  if (!fseSpread(norm, maxSym, log)) return false
  for (let s = 0; s <= maxSym; s++) {
    const n = <i32>load<i16>(norm + (<usize>s << 1))
    store<u32>(NEXT + (<usize>s << 2), n == -1 ? 1 : <u32>n)
  }
  const size = 1 << log
  for (let u = 0; u < size; u++) {
    const s = <usize>load<u8>(SPREAD + <usize>u)
    const x = load<u32>(NEXT + (s << 2))
    store<u32>(NEXT + (s << 2), x + 1)
    const nb = log - highbit(x)
    const base = (x << nb) - <u32>size
    store<u32>(dt + (<usize>u << 2), <u32>s | (<u32>nb << 8) | (base << 16))
  }
  return true
}

/** Decoding table with a single symbol and no state bits (RLE mode). */
export function fseBuildDTableRle(sym: i32, dt: usize): void {
  store<u32>(dt, <u32>sym)
}

// ---- FSE encoding tables ------------------------------------------------------------------
// A compression table ("ctable") occupies CTABLE_SIZE bytes:
//   +0    i32 log
//   +4    u16 next[512]   size + cell, for the cells of each symbol (grouped by symbol, increasing)
//   +1032 u64 tt[64]      per symbol: deltaNbBits (low i32) | deltaFindState (high i32)
//   +1544 i32 p[64]       normalized count (a -1 counts as 1), for cost estimates
// Encoding symbol s from state T (size <= T < 2 * size) writes the low nb = (T + deltaNbBits) >> 16
// bits of T and moves to next[(T >> nb) + deltaFindState]. The two constants fold in what the
// format spells out per symbol: nb is log - highbit(p), one less where T < p << that, and the cell
// is the symbol's (T >> nb) - p'th, so one add and one shift replace a compare and three loads.
export const CTABLE_SIZE: usize = 1800
export const CT_NEXT: usize = 4
export const CT_TT: usize = 1032
export const CT_P: usize = 1544

/** Builds a compression table for norm[0..maxSym] (maxSym < 64). False if invalid. */
export function fseBuildCTable(norm: usize, maxSym: i32, log: i32, ct: usize): bool {
  if (!fseSpread(norm, maxSym, log)) return false
  store<i32>(ct, log)
  const size = 1 << log
  let start = 0
  for (let s = 0; s < 64; s++) {
    let p = 0
    let tt: u64 = 0
    if (s <= maxSym) {
      p = <i32>load<i16>(norm + (<usize>s << 1))
      if (p == -1) p = 1
      if (p > 0) {
        const maxNb = p == 1 ? log : log - highbit(<u32>(p - 1))
        tt = <u64><u32>((maxNb << 16) - (p << maxNb)) | (<u64><u32>(start - p) << 32)
      }
    }
    store<u64>(ct + CT_TT + (<usize>s << 3), tt)
    store<i32>(ct + CT_P + (<usize>s << 2), p)
    store<i32>(NEXT + (<usize>s << 2), start)
    start += p
  }
  for (let u = 0; u < size; u++) {
    const s = <usize>load<u8>(SPREAD + <usize>u)
    const k = load<i32>(NEXT + (s << 2))
    store<i32>(NEXT + (s << 2), k + 1)
    store<u16>(ct + CT_NEXT + (<usize>k << 1), <u16>(size + u))
  }
  return true
}

/** Compression table of a single symbol (RLE mode): log 0, state 0, no bits. */
export function fseBuildCTableRle(sym: i32, ct: usize): void {
  store<i32>(ct, 0)
  for (let s = 0; s < 64; s++) {
    store<u64>(ct + CT_TT + (<usize>s << 3), 0)
    store<i32>(ct + CT_P + (<usize>s << 2), s == sym ? 1 : 0)
  }
  store<u32>(ct + CT_NEXT, 0)
}

/**
 * Starting state for symbol s: its lowest cell (which always has nbBits >= 1 unless p == size).
 * Any of its cells would do; this one keeps the output what it was before the tt tables.
 */
// @ts-ignore: decorator
@inline
export function fseInitState(ct: usize, s: i32): u32 {
  const so = <usize>s
  const start = <i32>(load<u64>(ct + CT_TT + (so << 3)) >> 32) + load<i32>(ct + CT_P + (so << 2))
  return <u32>load<u16>(ct + CT_NEXT + (<usize>start << 1))
}

/** Cost of symbol s in 1/256 bits under table ct (approximation). */
export function fseSymbolCost256(ct: usize, s: i32): i32 {
  const p = load<i32>(ct + CT_P + (<usize>s << 2))
  if (p <= 0) return 1 << 20
  return (load<i32>(ct) << 8) - log2fix(<u32>p)
}

/** log2(v) in 1/256 units, piecewise linear (v >= 1). */
export function log2fix(v: u32): i32 {
  const hb = highbit(v)
  const frac = hb >= 8 ? <i32>((v >> <u32>(hb - 8)) & 0xFF) : <i32>((v << <u32>(8 - hb)) & 0xFF)
  return (hb << 8) + frac
}

// ---- normalization and the table description --------------------------------------------

const NORM_V: usize = memory.data(256 * 4)
const NORM_S: usize = memory.data(256 * 4)

/**
 * Normalizes counts[0..maxSym] (u32, total > 0) to sum 1 << log, every present symbol >= 1.
 * Output i16 in normOut. Returns false when there are more present symbols than cells.
 */
export function fseNormalize(counts: usize, maxSym: i32, total: u32, log: i32, normOut: usize): bool {
  const size = 1 << log
  let sum = 0
  let present = 0
  for (let s = 0; s <= maxSym; s++) {
    const c = load<u32>(counts + (<usize>s << 2))
    if (c == 0) {
      store<i16>(normOut + (<usize>s << 1), 0)
      store<i32>(NORM_V + (<usize>s << 2), 0)
      continue
    }
    present++
    const v = <i32>((<u64>c * (<u64>size << 8)) / <u64>total)
    let n = (v + 128) >> 8
    if (n < 1) n = 1
    store<i32>(NORM_V + (<usize>s << 2), v)
    store<i16>(normOut + (<usize>s << 1), <i16>n)
    sum += n
  }
  if (present > size || present == 0) return false
  if (sum == size) return true
  // Each step moves one count of the symbol with the best score; only that symbol's score changes,
  // so the scores are kept (absent symbols, and when removing those at 1, score i32.MIN_VALUE).
  const grow = sum < size
  for (let s = 0; s <= maxSym; s++) {
    const v = load<i32>(NORM_V + (<usize>s << 2))
    const n = <i32>load<i16>(normOut + (<usize>s << 1))
    store<i32>(NORM_S + (<usize>s << 2), v == 0 ? i32.MIN_VALUE : normScore(grow, v, n))
  }
  while (sum != size) {
    let best = -1
    let bestScore = i32.MIN_VALUE
    for (let s = 0; s <= maxSym; s++) {
      const score = load<i32>(NORM_S + (<usize>s << 2))
      if (score > bestScore) { bestScore = score; best = s }
    }
    if (best < 0) return false
    const bo = <usize>best << 1
    const n = <i32>load<i16>(normOut + bo) + (grow ? 1 : -1)
    store<i16>(normOut + bo, <i16>n)
    sum += grow ? 1 : -1
    store<i32>(NORM_S + (<usize>best << 2), normScore(grow, load<i32>(NORM_V + (<usize>best << 2)), n))
  }
  return true
}

/**
 * Growing: relative under-allocation (the symbol whose share grows the most). Shrinking: relative
 * over-allocation, and never below 1.
 */
// @ts-ignore: decorator
@inline
function normScore(grow: bool, v: i32, n: i32): i32 {
  if (grow) return <i32>(((<i64>(v - (n << 8))) << 8) / <i64>(n + 1))
  if (n <= 1) return i32.MIN_VALUE
  return <i32>(((<i64>((n << 8) - v)) << 8) / <i64>n)
}

/**
 * Writes the FSE table description of norm[0..maxSym] (maxSym = last nonzero symbol) at dst.
 * Returns bytes written, or -1 when it does not fit in dstCap.
 */
export function fseWriteNCount(norm: usize, maxSym: i32, log: i32, dst: usize, dstCap: i32): i32 {
  let acc: u64 = <u64>(log - 5)
  let nbits = 4
  let out = 0
  const size = 1 << log
  let allocated = 0
  let s = 0
  while (allocated < size) {
    if (s > maxSym) return -1
    const p = <i32>load<i16>(norm + (<usize>s << 1))
    const maxVal = size - allocated + 1
    const nb = highbit(<u32>maxVal) + 1
    const lowCount = (1 << nb) - 1 - maxVal
    const threshold = 1 << (nb - 1)
    const val = p + 1
    if (val < lowCount) {
      acc |= <u64>val << <u64>nbits
      nbits += nb - 1
    } else if (val < threshold) {
      acc |= <u64>val << <u64>nbits
      nbits += nb
    } else {
      acc |= <u64>(val + lowCount) << <u64>nbits
      nbits += nb
    }
    allocated += p == -1 ? 1 : p
    s++
    if (p == 0) {
      let z = 0
      while (s + z <= maxSym && load<i16>(norm + (<usize>(s + z) << 1)) == 0) z++
      s += z
      for (;;) {
        const r = z >= 3 ? 3 : z
        acc |= <u64>r << <u64>nbits
        nbits += 2
        z -= r
        if (nbits >= 32) {
          if (out + 4 > dstCap) return -1
          store<u32>(dst + <usize>out, <u32>acc)
          out += 4
          acc >>= 32
          nbits -= 32
        }
        if (r < 3) break
      }
    }
    if (nbits >= 32) {
      if (out + 4 > dstCap) return -1
      store<u32>(dst + <usize>out, <u32>acc)
      out += 4
      acc >>= 32
      nbits -= 32
    }
  }
  while (nbits > 0) {
    if (out + 1 > dstCap) return -1
    store<u8>(dst + <usize>out, <u8>acc)
    out++
    acc >>= 8
    nbits -= 8
  }
  return out
}

// Results of fseReadNCount besides its return value.
export let ncountLog: i32 = 0
export let ncountMaxSym: i32 = 0

// @ts-ignore: decorator
@inline
function peekFwd(src: usize, len: i32, bitPos: i32): u32 {
  // 32 bits starting at bitPos, zero beyond len bytes.
  const byte = bitPos >> 3
  let v: u64 = 0
  if (byte + 8 <= len) {
    v = load<u64>(src + <usize>byte)
  } else {
    for (let i = 7; i >= 0; i--) {
      v <<= 8
      if (byte + i < len) v |= <u64>load<u8>(src + <usize>(byte + i))
    }
  }
  return <u32>(v >> <u64>(bitPos & 7))
}

/**
 * Reads an FSE table description from src[0..len) into normOut (i16). Returns bytes consumed or
 * a negative error. Sets ncountLog and ncountMaxSym.
 */
export function fseReadNCount(src: usize, len: i32, maxSym: i32, maxLog: i32, normOut: usize): i32 {
  if (len < 1) return Z_CORRUPT
  let bitPos = 0
  const log = <i32>(peekFwd(src, len, 0) & 15) + 5
  bitPos = 4
  if (log > maxLog) return Z_CORRUPT
  const size = 1 << log
  let allocated = 0
  let s = 0
  while (allocated < size) {
    if (s > maxSym) return Z_CORRUPT
    const maxVal = size - allocated + 1
    const nb = highbit(<u32>maxVal) + 1
    const lowCount = (1 << nb) - 1 - maxVal
    const threshold = 1 << (nb - 1)
    const v = <i32>(peekFwd(src, len, bitPos) & <u32>((1 << nb) - 1))
    const low = v & (threshold - 1)
    let val: i32
    if (low < lowCount) {
      val = low
      bitPos += nb - 1
    } else if (v < threshold) {
      val = v
      bitPos += nb
    } else {
      val = v - lowCount
      bitPos += nb
    }
    const p = val - 1
    store<i16>(normOut + (<usize>s << 1), <i16>p)
    s++
    allocated += p == -1 ? 1 : p
    if (p == 0) {
      for (;;) {
        const r = <i32>(peekFwd(src, len, bitPos) & 3)
        bitPos += 2
        if (s + r > maxSym + 1) return Z_CORRUPT
        for (let i = 0; i < r; i++) {
          store<i16>(normOut + (<usize>s << 1), 0)
          s++
        }
        if (r != 3) break
        if (bitPos > len * 8) return Z_CORRUPT
      }
    }
    if (bitPos > len * 8) return Z_CORRUPT
  }
  if (allocated != size) return Z_CORRUPT
  ncountLog = log
  ncountMaxSym = s - 1
  return (bitPos + 7) >> 3
}
