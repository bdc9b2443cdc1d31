// DEFLATE (RFC 1951): encoder and decoder, raw (no wrapper). gzip.ts adds the gzip framing.
//
// Encoder: the whole input is in linear memory, so LZ77 runs over it in one pass with a
// 32 KiB window: hash chains on 3-byte prefixes (head / prev tables of "keys" = epoch +
// position, so nothing is cleared between calls), greedy matching for levels 1-3 and lazy
// matching for 4-9 with zlib's per-level (good, lazy, nice, chain) limits. Symbols are buffered
// (16 K per block); each block is written as dynamic Huffman (length-limited codes: 15 bits,
// 7 for the code-length code), fixed Huffman or stored, whichever is smallest.
// Decoder: full inflate (stored, fixed, dynamic) with a 10-bit lookup table and a canonical
// slow path for longer codes; every read and write is bounds checked.

import { E_DST_TOO_SMALL, E_TRUNCATED, E_CORRUPT, commonPrefix, copyMatch } from './common'

// ---------------------------------------------------------------- shared constants
const LEN_BASE: usize = memory.data<u16>([
  3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115,
  131, 163, 195, 227, 258, 0, 0, 0,
])
const LEN_EXTRA: usize = memory.data<u8>([
  0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0, 0, 0, 0,
])
const DIST_BASE: usize = memory.data<u16>([
  1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
  2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577, 0, 0,
])
const DIST_EXTRA: usize = memory.data<u8>([
  0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 0, 0,
])
const CL_ORDER: usize = memory.data<u8>([16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15])

// @ts-ignore: decorator
@inline
function reverseBits(code: u32, len: u32): u32 {
  let v = code
  v = ((v >> 1) & 0x55555555) | ((v & 0x55555555) << 1)
  v = ((v >> 2) & 0x33333333) | ((v & 0x33333333) << 2)
  v = ((v >> 4) & 0x0f0f0f0f) | ((v & 0x0f0f0f0f) << 4)
  v = ((v >> 8) & 0x00ff00ff) | ((v & 0x00ff00ff) << 8)
  return ((v >> 16) | (v << 16)) >> (32 - len)
}

// ================================================================ encoder
const WSIZE: u32 = 32768
const WMASK: u32 = WSIZE - 1
const HASH_BITS: u32 = 15
const SYM_MAX: u32 = 16384
const MAX_MATCH: usize = 258
const TOO_FAR: usize = 4096

const HEAD: usize = memory.data(4 << HASH_BITS, 16) // u32 keys
const PREV: usize = memory.data(4 * WSIZE, 16) // u32 keys by key & WMASK
const SYMS: usize = memory.data(4 * SYM_MAX, 16) // u32: literal byte, or (dist << 8) | (len - 3)
const LFREQ: usize = memory.data(4 * 288, 16)
const DFREQ: usize = memory.data(4 * 32, 16)
const CLFREQ: usize = memory.data(4 * 19, 16)
const LLEN: usize = memory.data(288, 16)
const DLEN: usize = memory.data(32, 16)
const CLLEN: usize = memory.data(19, 16)
const LCODE: usize = memory.data(2 * 288, 16)
const DCODE: usize = memory.data(2 * 32, 16)
const CLCODE: usize = memory.data(2 * 19, 16)
const FIXED_LLEN: usize = memory.data(288, 16)
const FIXED_LCODE: usize = memory.data(2 * 288, 16)
const FIXED_DCODE: usize = memory.data(2 * 32, 16)
const RLE: usize = memory.data(2 * 320, 16) // u16: sym | extra << 5
const CLSEQ: usize = memory.data(320, 16)
// Huffman construction scratch
const HKEYS: usize = memory.data(4 * 288, 16)
const HA: usize = memory.data(4 * 288, 16)
const BLC: usize = memory.data(4 * 16, 16)
const NEXTCODE: usize = memory.data(4 * 16, 16)

let encInit = false
let dEpoch: u32 = 1

// bit writer
let bb: u64 = 0
let bc: u32 = 0
let out: usize = 0

// per-call LZ77 state
let symCount: u32 = 0
let blockStart: usize = 0
let covered: usize = 0

// @ts-ignore: decorator
@inline
function putBits(v: u32, n: u32): void {
  bb |= <u64>v << bc
  bc += n
  if (bc >= 32) {
    store<u32>(out, <u32>bb)
    out += 4
    bb >>= 32
    bc -= 32
  }
}

function flushBitsToByte(): void {
  while (bc > 0) {
    store<u8>(out++, <u8>bb)
    bb >>= 8
    bc = bc > 8 ? bc - 8 : 0
  }
  bb = 0
}

// @ts-ignore: decorator
@inline
function lenCode(l: u32): u32 {
  // l = length - 3 (0..255) -> code index 0..28 (symbol 257 + index)
  if (l < 8) return l
  if (l == 255) return 28
  const nb = 31 - clz<u32>(l)
  return ((nb - 1) << 2) + ((l >> (nb - 2)) & 3)
}

// @ts-ignore: decorator
@inline
function distCode(d: u32): u32 {
  // d = distance - 1 (0..32767) -> code 0..29
  if (d < 4) return d
  const nb = 31 - clz<u32>(d)
  return (nb << 1) + ((d >> (nb - 1)) & 1)
}

function initEncoder(): void {
  for (let i: u32 = 0; i < 288; i++) {
    const l: u8 = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8
    store<u8>(FIXED_LLEN + i, l)
  }
  canonicalCodes(FIXED_LLEN, 288, FIXED_LCODE)
  for (let i: u32 = 0; i < 32; i++) store<u16>(FIXED_DCODE + (i << 1), <u16>reverseBits(i, 5))
  encInit = true
}

/** Canonical, bit-reversed codes for the lengths lens[0..n). */
function canonicalCodes(lens: usize, n: u32, codes: usize): void {
  memory.fill(BLC, 0, 64)
  for (let s: u32 = 0; s < n; s++) {
    const p = BLC + (<usize>load<u8>(lens + s) << 2)
    store<u32>(p, load<u32>(p) + 1)
  }
  store<u32>(BLC, 0)
  let code: u32 = 0
  for (let b: u32 = 1; b < 16; b++) {
    code = (code + load<u32>(BLC + ((b - 1) << 2))) << 1
    store<u32>(NEXTCODE + (b << 2), code)
  }
  for (let s: u32 = 0; s < n; s++) {
    const l = <u32>load<u8>(lens + s)
    if (l != 0) {
      const p = NEXTCODE + (l << 2)
      const c = load<u32>(p)
      store<u32>(p, c + 1)
      store<u16>(codes + (s << 1), <u16>reverseBits(c, l))
    }
  }
}

/**
 * Length-limited Huffman code lengths for freq[0..n) (u32) into lens[0..n) (u8).
 * In-place minimum-redundancy lengths (Moffat-Katajainen), then the usual overflow repair
 * (move leaves down until the Kraft sum fits `limit` bits), then lengths handed out by frequency.
 */
function buildLengths(freq: usize, n: u32, lens: usize, limit: u32): void {
  memory.fill(lens, 0, n)
  let m: u32 = 0
  for (let s: u32 = 0; s < n; s++) {
    const f = load<u32>(freq + (s << 2))
    if (f != 0) {
      store<u32>(HKEYS + (m << 2), (f << 9) | s)
      m++
    }
  }
  if (m == 0) {
    store<u8>(lens, 1)
    store<u8>(lens + 1, 1)
    return
  }
  if (m == 1) {
    const s = load<u32>(HKEYS) & 511
    store<u8>(lens + s, 1)
    store<u8>(lens + (s == 0 ? 1 : 0), 1)
    return
  }
  // shell sort keys ascending (frequency, then symbol)
  let gap: u32 = 1
  while (gap < m / 3) gap = gap * 3 + 1
  while (gap >= 1) {
    for (let i = gap; i < m; i++) {
      const k = load<u32>(HKEYS + (i << 2))
      let j = i
      while (j >= gap) {
        const o = load<u32>(HKEYS + ((j - gap) << 2))
        if (o <= k) break
        store<u32>(HKEYS + (j << 2), o)
        j -= gap
      }
      store<u32>(HKEYS + (j << 2), k)
    }
    gap /= 3
  }
  // Moffat-Katajainen in place on A[] (i32)
  for (let i: u32 = 0; i < m; i++) store<i32>(HA + (i << 2), <i32>(load<u32>(HKEYS + (i << 2)) >> 9))
  const A = HA
  const nn = <i32>m
  store<i32>(A, load<i32>(A) + load<i32>(A, 4))
  let root: i32 = 0
  let leaf: i32 = 2
  for (let next: i32 = 1; next < nn - 1; next++) {
    if (leaf >= nn || load<i32>(A + (<usize>root << 2)) < load<i32>(A + (<usize>leaf << 2))) {
      store<i32>(A + (<usize>next << 2), load<i32>(A + (<usize>root << 2)))
      store<i32>(A + (<usize>root << 2), next)
      root++
    } else {
      store<i32>(A + (<usize>next << 2), load<i32>(A + (<usize>leaf << 2)))
      leaf++
    }
    if (leaf >= nn || (root < next && load<i32>(A + (<usize>root << 2)) < load<i32>(A + (<usize>leaf << 2)))) {
      store<i32>(A + (<usize>next << 2), load<i32>(A + (<usize>next << 2)) + load<i32>(A + (<usize>root << 2)))
      store<i32>(A + (<usize>root << 2), next)
      root++
    } else {
      store<i32>(A + (<usize>next << 2), load<i32>(A + (<usize>next << 2)) + load<i32>(A + (<usize>leaf << 2)))
      leaf++
    }
  }
  store<i32>(A + (<usize>(nn - 2) << 2), 0)
  for (let next = nn - 3; next >= 0; next--) {
    store<i32>(A + (<usize>next << 2), load<i32>(A + (<usize>load<i32>(A + (<usize>next << 2)) << 2)) + 1)
  }
  let avbl: i32 = 1
  let used: i32 = 0
  let dpth: i32 = 0
  root = nn - 2
  let nx: i32 = nn - 1
  while (avbl > 0) {
    while (root >= 0 && load<i32>(A + (<usize>root << 2)) == dpth) {
      used++
      root--
    }
    while (avbl > used) {
      store<i32>(A + (<usize>nx << 2), dpth)
      nx--
      avbl--
    }
    avbl = 2 * used
    dpth++
    used = 0
  }
  // count lengths, clamping to the limit, then repair the Kraft sum
  memory.fill(BLC, 0, 64)
  for (let i: u32 = 0; i < m; i++) {
    let d = <u32>load<i32>(A + (i << 2))
    if (d > limit) d = limit
    const p = BLC + (d << 2)
    store<u32>(p, load<u32>(p) + 1)
  }
  let total: u32 = 0
  for (let l: u32 = 1; l <= limit; l++) total += load<u32>(BLC + (l << 2)) << (limit - l)
  const full: u32 = 1 << limit
  while (total > full) {
    let l = limit - 1
    while (l > 0 && load<u32>(BLC + (l << 2)) == 0) l--
    if (l == 0 || load<u32>(BLC + (limit << 2)) == 0) break
    store<u32>(BLC + (l << 2), load<u32>(BLC + (l << 2)) - 1)
    store<u32>(BLC + ((l + 1) << 2), load<u32>(BLC + ((l + 1) << 2)) + 2)
    store<u32>(BLC + (limit << 2), load<u32>(BLC + (limit << 2)) - 1)
    total--
  }
  // least frequent symbols get the longest codes
  let idx: u32 = 0
  for (let l = limit; l >= 1; l--) {
    let c = load<u32>(BLC + (l << 2))
    while (c-- > 0) {
      store<u8>(lens + (load<u32>(HKEYS + (idx << 2)) & 511), <u8>l)
      idx++
    }
  }
}

// @ts-ignore: decorator
@inline
function bump(table: usize, i: u32): void {
  const p = table + (i << 2)
  store<u32>(p, load<u32>(p) + 1)
}

/** RLE of the code lengths (litlen ++ dist) into RLE[], counting CLFREQ. Returns items. */
function rleLengths(hlit: u32, hdist: u32): u32 {
  memory.copy(CLSEQ, LLEN, hlit)
  memory.copy(CLSEQ + hlit, DLEN, hdist)
  memory.fill(CLFREQ, 0, 4 * 19)
  const total = hlit + hdist
  let items: u32 = 0
  let i: u32 = 0
  while (i < total) {
    const v = <u32>load<u8>(CLSEQ + i)
    let run: u32 = 1
    while (i + run < total && <u32>load<u8>(CLSEQ + i + run) == v) run++
    i += run
    if (v == 0) {
      while (run >= 11) {
        const r = min<u32>(run, 138)
        store<u16>(RLE + (items++ << 1), <u16>(18 | ((r - 11) << 5)))
        bump(CLFREQ, 18)
        run -= r
      }
      if (run >= 3) {
        store<u16>(RLE + (items++ << 1), <u16>(17 | ((run - 3) << 5)))
        bump(CLFREQ, 17)
        run = 0
      }
    } else {
      store<u16>(RLE + (items++ << 1), <u16>v)
      bump(CLFREQ, v)
      run--
      while (run >= 3) {
        const r = min<u32>(run, 6)
        store<u16>(RLE + (items++ << 1), <u16>(16 | ((r - 3) << 5)))
        bump(CLFREQ, 16)
        run -= r
      }
    }
    while (run > 0) {
      store<u16>(RLE + (items++ << 1), <u16>v)
      bump(CLFREQ, v)
      run--
    }
  }
  return items
}

/** Writes the buffered symbols with the given (bit-reversed) codes and lengths. */
function writeSymbols(lcodes: usize, llens: usize, dcodes: usize, dlens: usize): void {
  for (let i: u32 = 0; i < symCount; i++) {
    const s = load<u32>(SYMS + (i << 2))
    if (s < 256) {
      putBits(<u32>load<u16>(lcodes + (s << 1)), <u32>load<u8>(llens + s))
    } else {
      const l = s & 255
      const d = (s >> 8) - 1
      const lc = lenCode(l)
      const sym = 257 + lc
      putBits(<u32>load<u16>(lcodes + (sym << 1)), <u32>load<u8>(llens + sym))
      const le = <u32>load<u8>(LEN_EXTRA + lc)
      if (le != 0) putBits(l + 3 - <u32>load<u16>(LEN_BASE + (lc << 1)), le)
      const dc = distCode(d)
      putBits(<u32>load<u16>(dcodes + (dc << 1)), <u32>load<u8>(dlens + dc))
      const de = <u32>load<u8>(DIST_EXTRA + dc)
      if (de != 0) putBits(d + 1 - <u32>load<u16>(DIST_BASE + (dc << 1)), de)
    }
  }
  putBits(<u32>load<u16>(lcodes + (256 << 1)), <u32>load<u8>(llens + 256))
}

function writeStored(start: usize, len: usize, last: bool): void {
  // at least one (possibly empty) stored block
  do {
    const n = min<usize>(len, 65535)
    len -= n
    putBits(last && len == 0 ? 1 : 0, 3)
    flushBitsToByte()
    store<u16>(out, <u16>n)
    store<u16>(out, <u16>~n, 2)
    memory.copy(out + 4, start, n)
    out += 4 + n
    start += n
  } while (len > 0)
}

/** Emits the buffered symbols as one block (or stored blocks). false = no room in dst. */
function flushBlock(last: bool, oend: usize): bool {
  store<u32>(LFREQ + (256 << 2), 1)
  buildLengths(LFREQ, 286, LLEN, 15)
  buildLengths(DFREQ, 30, DLEN, 15)
  let hlit: u32 = 286
  while (hlit > 257 && load<u8>(LLEN + hlit - 1) == 0) hlit--
  let hdist: u32 = 30
  while (hdist > 1 && load<u8>(DLEN + hdist - 1) == 0) hdist--
  const items = rleLengths(hlit, hdist)
  buildLengths(CLFREQ, 19, CLLEN, 7)
  let hclen: u32 = 19
  while (hclen > 4 && load<u8>(CLLEN + <usize>load<u8>(CL_ORDER + hclen - 1)) == 0) hclen--

  // costs in bits
  let extra: u64 = 0
  let dyn: u64 = 3 + 14 + 3 * <u64>hclen
  let fix: u64 = 3
  for (let s: u32 = 0; s < 286; s++) {
    const f = <u64>load<u32>(LFREQ + (s << 2))
    if (f == 0) continue
    dyn += f * <u64>load<u8>(LLEN + s)
    fix += f * <u64>load<u8>(FIXED_LLEN + s)
    if (s > 256) extra += f * <u64>load<u8>(LEN_EXTRA + s - 257)
  }
  for (let s: u32 = 0; s < 30; s++) {
    const f = <u64>load<u32>(DFREQ + (s << 2))
    if (f == 0) continue
    dyn += f * <u64>load<u8>(DLEN + s)
    fix += f * 5
    extra += f * <u64>load<u8>(DIST_EXTRA + s)
  }
  for (let s: u32 = 0; s < 19; s++) dyn += <u64>load<u32>(CLFREQ + (s << 2)) * <u64>load<u8>(CLLEN + s)
  dyn += <u64>load<u32>(CLFREQ + (16 << 2)) * 2 + <u64>load<u32>(CLFREQ + (17 << 2)) * 3 + <u64>load<u32>(CLFREQ + (18 << 2)) * 7
  dyn += extra
  fix += extra
  const storedLen = covered - blockStart
  const stored: u64 = (<u64>storedLen + 5 * (<u64>storedLen / 65535 + 1)) * 8 + 8

  let best = dyn
  let kind = 2
  if (fix <= best) {
    best = fix
    kind = 1
  }
  if (stored < best) {
    best = stored
    kind = 0
  }
  if (<u64>out + ((<u64>bc + best + 7) >> 3) + 8 > <u64>oend) return false

  if (kind == 0) {
    writeStored(blockStart, storedLen, last)
  } else if (kind == 1) {
    putBits(last ? 3 : 2, 3) // BFINAL, BTYPE=01
    writeSymbols(FIXED_LCODE, FIXED_LLEN, FIXED_DCODE, FIXED_5)
  } else {
    canonicalCodes(LLEN, hlit, LCODE)
    canonicalCodes(DLEN, hdist, DCODE)
    canonicalCodes(CLLEN, 19, CLCODE)
    putBits(last ? 5 : 4, 3) // BFINAL, BTYPE=10
    putBits(hlit - 257, 5)
    putBits(hdist - 1, 5)
    putBits(hclen - 4, 4)
    for (let i: u32 = 0; i < hclen; i++) putBits(<u32>load<u8>(CLLEN + <usize>load<u8>(CL_ORDER + i)), 3)
    for (let i: u32 = 0; i < items; i++) {
      const it = <u32>load<u16>(RLE + (i << 1))
      const sym = it & 31
      putBits(<u32>load<u16>(CLCODE + (sym << 1)), <u32>load<u8>(CLLEN + sym))
      if (sym == 16) putBits(it >> 5, 2)
      else if (sym == 17) putBits(it >> 5, 3)
      else if (sym == 18) putBits(it >> 5, 7)
    }
    writeSymbols(LCODE, LLEN, DCODE, DLEN)
  }
  // reset block state
  symCount = 0
  blockStart = covered
  memory.fill(LFREQ, 0, 4 * 288)
  memory.fill(DFREQ, 0, 4 * 32)
  return true
}

const FIXED_5: usize = memory.data<u8>([
  5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
])

// @ts-ignore: decorator
@inline
function emitLit(b: u32): void {
  store<u32>(SYMS + (symCount << 2), b)
  symCount++
  bump(LFREQ, b)
  covered++
}

// @ts-ignore: decorator
@inline
function emitMatch(len: u32, dist: u32): void {
  store<u32>(SYMS + (symCount << 2), (dist << 8) | (len - 3))
  symCount++
  bump(LFREQ, 257 + lenCode(len - 3))
  bump(DFREQ, distCode(dist - 1))
  covered += len
}

// @ts-ignore: decorator
@inline
function hash3(p: usize): usize {
  return <usize>(((load<u32>(p) << 8) * 0x9e3779b1) >> (32 - HASH_BITS))
}

// @ts-ignore: decorator
@inline
function insert(p: usize, key: u32): u32 {
  const slot = HEAD + (hash3(p) << 2)
  const h = load<u32>(slot)
  store<u32>(PREV + ((key & WMASK) << 2), h)
  store<u32>(slot, key)
  return h
}

let matchDist: u32 = 0

/**
 * Longest match at p (key pKey) along the chain starting at cand, longer than `best`;
 * returns its length (0 if none longer) and sets matchDist.
 */
// @ts-ignore: decorator
@inline
function longestMatch(src: usize, p: usize, pKey: u32, cand: u32, best: usize, maxLen: usize, chain: u32, nice: usize, base: u32): usize {
  let found: usize = 0
  if (best >= maxLen) return 0
  const limitKey: u32 = pKey - base > WSIZE ? pKey - WSIZE : base
  const first = load<u16>(p)
  while (cand >= limitKey && cand < pKey) {
    const c = src + <usize>(cand - base)
    if (load<u16>(c + best - 1) == load<u16>(p + best - 1) && load<u16>(c) == first) {
      const l = commonPrefix(p, c, maxLen)
      if (l > best) {
        best = l
        found = l
        matchDist = <u32>(p - c)
        if (l >= nice || l >= maxLen) break
      }
    }
    if (--chain == 0) break
    const nk = load<u32>(PREV + ((cand & WMASK) << 2))
    if (nk >= cand) break
    cand = nk
  }
  return found
}

// zlib's configuration table: good, lazy (max insert for 1-3), nice, chain
const CFG: usize = memory.data<u16>([
  0, 0, 0, 0,
  4, 4, 8, 4,
  4, 5, 16, 8,
  4, 6, 32, 32,
  4, 4, 16, 16,
  8, 16, 32, 32,
  8, 16, 128, 128,
  8, 32, 128, 256,
  32, 128, 258, 1024,
  32, 258, 258, 4096,
])

/** Worst case raw DEFLATE size of srcLen bytes. */
export function deflateBound(srcLen: i32): i32 {
  const n = <i64>srcLen
  const b = n + 5 * (n / 16384 + n / 65535 + 2) + 16
  return b > 0x7fffffff ? -1 : <i32>b
}

/** Raw DEFLATE of src[0..srcLen) into dst; level 0..9. Bytes written or E_DST_TOO_SMALL. */
export function deflateRaw(level: i32, src: usize, srcLen: i32, dst: usize, dstCap: i32): i32 {
  if (!encInit) initEncoder()
  if (level < 0 || level > 9) level = 6
  const end = src + <usize>srcLen
  const oend = dst + <usize>dstCap
  bb = 0
  bc = 0
  out = dst
  if (level == 0) {
    if (<u64>srcLen + 5 * (<u64>srcLen / 65535 + 1) > <u64>dstCap) return E_DST_TOO_SMALL
    writeStored(src, <usize>srcLen, true)
    return <i32>(out - dst)
  }
  const good = <u32>load<u16>(CFG + (<usize>level << 3))
  const lazy = <usize>load<u16>(CFG + (<usize>level << 3), 2)
  const nice = <usize>load<u16>(CFG + (<usize>level << 3), 4)
  const maxChain = <u32>load<u16>(CFG + (<usize>level << 3), 6)

  if (<u64>dEpoch + <u64>srcLen + 2 >= 0xf000_0000) {
    memory.fill(HEAD, 0, 4 << HASH_BITS)
    memory.fill(PREV, 0, 4 * WSIZE)
    dEpoch = 1
  }
  const base = dEpoch
  dEpoch += <u32>srcLen + 1
  memory.fill(LFREQ, 0, 4 * 288)
  memory.fill(DFREQ, 0, 4 * 32)
  symCount = 0
  blockStart = src
  covered = src

  let p = src
  // Incompressible stretches: after `skipStart` literals in a row (levels 1-6), emit the
  // following literals in growing runs without hashing them (as lz4 / snappy do); a match
  // resets the run. Levels 7-9 search every position like zlib.
  const skipStart: usize = level <= 3 ? 32 : level <= 6 ? 128 : 0x7fffffff
  const skipShift: usize = level <= 3 ? 4 : 5
  let misses: usize = 0
  if (level <= 3) {
    // greedy
    while (p < end) {
      if (misses > skipStart) {
        const run = min<usize>(min<usize>(1 + ((misses - skipStart) >> skipShift), end - p), <usize>(SYM_MAX - symCount))
        for (let k: usize = 0; k < run; k++) emitLit(<u32>load<u8>(p + k))
        p += run
        misses += run
        if (symCount >= SYM_MAX && !flushBlock(false, oend)) return E_DST_TOO_SMALL
        if (p >= end) break
      }
      let len: usize = 0
      const avail = end - p
      if (avail >= 4) {
        const key = base + <u32>(p - src)
        const h = insert(p, key)
        len = longestMatch(src, p, key, h, 2, min<usize>(MAX_MATCH, avail), maxChain, nice, base)
        if (len == 3 && matchDist > <u32>TOO_FAR) len = 0
      }
      if (len >= 3) {
        misses = 0
        emitMatch(<u32>len, matchDist)
        if (len <= lazy) {
          const stop = p + len
          let q = p + 1
          const qEnd = min<usize>(stop, end - 3)
          while (q < qEnd) {
            insert(q, base + <u32>(q - src))
            q++
          }
        }
        p += len
      } else {
        emitLit(<u32>load<u8>(p))
        p++
        misses++
      }
      if (symCount >= SYM_MAX && !flushBlock(false, oend)) return E_DST_TOO_SMALL
    }
  } else {
    // lazy
    let prevLen: usize = 0
    let prevDist: u32 = 0
    let havePrev = false
    while (p < end) {
      if (havePrev && prevLen < 3 && misses > skipStart) {
        // pending literal at p - 1, then a run of literals that are not hashed
        const run = min<usize>(min<usize>(1 + ((misses - skipStart) >> skipShift), end - p), <usize>(SYM_MAX - 1 - symCount))
        emitLit(<u32>load<u8>(p - 1))
        for (let k: usize = 0; k < run; k++) emitLit(<u32>load<u8>(p + k))
        p += run
        misses += run + 1
        havePrev = false
        prevLen = 0
        if (symCount >= SYM_MAX && !flushBlock(false, oend)) return E_DST_TOO_SMALL
        if (p >= end) break
      }
      let curLen: usize = 0
      let curDist: u32 = 0
      const avail = end - p
      if (avail >= 4) {
        const key = base + <u32>(p - src)
        const h = insert(p, key)
        if (prevLen < lazy) {
          const chain = prevLen >= <usize>good ? maxChain >> 2 : maxChain
          curLen = longestMatch(src, p, key, h, max<usize>(prevLen, 2), min<usize>(MAX_MATCH, avail), chain, nice, base)
          curDist = matchDist
          if (curLen == 3 && curDist > <u32>TOO_FAR) curLen = 0
        }
      }
      if (havePrev && prevLen >= 3 && curLen <= prevLen) {
        emitMatch(<u32>prevLen, prevDist)
        misses = 0
        const stop = p - 1 + prevLen
        let q = p + 1
        const qEnd = min<usize>(stop, end - 3)
        while (q < qEnd) {
          insert(q, base + <u32>(q - src))
          q++
        }
        p = stop
        havePrev = false
        prevLen = 0
      } else if (havePrev) {
        emitLit(<u32>load<u8>(p - 1))
        misses++
        prevLen = curLen
        prevDist = curDist
        p++
      } else {
        havePrev = true
        prevLen = curLen
        prevDist = curDist
        p++
      }
      if (symCount >= SYM_MAX && !flushBlock(false, oend)) return E_DST_TOO_SMALL
    }
    if (havePrev) emitLit(<u32>load<u8>(p - 1))
  }
  if (!flushBlock(true, oend)) return E_DST_TOO_SMALL
  flushBitsToByte()
  return <i32>(out - dst)
}

// ================================================================ decoder
const FAST_BITS: u32 = 10
const FAST_SIZE: u32 = 1 << FAST_BITS
// a decode table set: fast u16[1024] | count u16[16] | syms u16[288]
const SET_FAST: usize = 0
const SET_COUNT: usize = 2 * FAST_SIZE
const SET_SYMS: usize = SET_COUNT + 32
const SET_BYTES: usize = SET_SYMS + 2 * 288
const DYN_L: usize = memory.data(<i32>SET_BYTES, 16)
const DYN_D: usize = memory.data(<i32>SET_BYTES, 16)
const DYN_CL: usize = memory.data(<i32>SET_BYTES, 16)
const FIX_L: usize = memory.data(<i32>SET_BYTES, 16)
const FIX_D: usize = memory.data(<i32>SET_BYTES, 16)
const DLENS: usize = memory.data(320, 16)
const OFFS: usize = memory.data(2 * 16, 16)
const NEXTC: usize = memory.data(4 * 16, 16)
let decInit = false

/** Builds a decode table set from lens[0..n); E_CORRUPT if the code is over-subscribed. */
function buildDecode(lens: usize, n: u32, set: usize): i32 {
  const cnt = set + SET_COUNT
  memory.fill(cnt, 0, 32)
  for (let s: u32 = 0; s < n; s++) {
    const p = cnt + (<usize>load<u8>(lens + s) << 1)
    store<u16>(p, load<u16>(p) + 1)
  }
  store<u16>(cnt, 0)
  let left: i32 = 1
  for (let l: u32 = 1; l < 16; l++) {
    left <<= 1
    left -= <i32>load<u16>(cnt + (l << 1))
    if (left < 0) return E_CORRUPT
  }
  store<u16>(OFFS + 2, 0)
  for (let l: u32 = 1; l < 15; l++) {
    store<u16>(OFFS + ((l + 1) << 1), load<u16>(OFFS + (l << 1)) + load<u16>(cnt + (l << 1)))
  }
  let code: u32 = 0
  for (let l: u32 = 1; l < 16; l++) {
    code = (code + <u32>load<u16>(cnt + ((l - 1) << 1))) << 1
    store<u32>(NEXTC + (l << 2), code)
  }
  const fast = set + SET_FAST
  memory.fill(fast, 0, 2 * FAST_SIZE)
  for (let s: u32 = 0; s < n; s++) {
    const l = <u32>load<u8>(lens + s)
    if (l == 0) continue
    const op = OFFS + (l << 1)
    const o = load<u16>(op)
    store<u16>(set + SET_SYMS + (<usize>o << 1), <u16>s)
    store<u16>(op, o + 1)
    const np = NEXTC + (l << 2)
    const c = load<u32>(np)
    store<u32>(np, c + 1)
    if (l <= FAST_BITS) {
      const e = <u16>((s << 4) | l)
      for (let k = reverseBits(c, l); k < FAST_SIZE; k += 1 << l) store<u16>(fast + (k << 1), e)
    }
  }
  return 0
}

function initDecoder(): void {
  for (let i: u32 = 0; i < 288; i++) store<u8>(DLENS + i, i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8)
  buildDecode(DLENS, 288, FIX_L)
  for (let i: u32 = 0; i < 30; i++) store<u8>(DLENS + i, 5)
  buildDecode(DLENS, 30, FIX_D)
  decInit = true
}

// bit reader state
let rb: u64 = 0
let rc: u32 = 0
let rin: usize = 0
let rend: usize = 0
let rpad: u32 = 0
/** Input position after the last consumed byte of the most recent inflateRaw call. */
export let inflateEnd: usize = 0

// @ts-ignore: decorator
@inline
function refill(): void {
  if (rc <= 56) {
    if (rend - rin >= 8) {
      rb |= load<u64>(rin) << rc
      const n = (63 - rc) >> 3
      rin += n
      rc += n << 3
    } else {
      while (rc <= 56) {
        if (rin < rend) rb |= <u64>load<u8>(rin++) << rc
        else rpad += 8
        rc += 8
      }
    }
  }
}

// @ts-ignore: decorator
@inline
function bits(n: u32): u32 {
  const v = <u32>rb & ((1 << n) - 1)
  rb >>= n
  rc -= n
  return v
}

/** Decodes one symbol (bits must have been refilled); -1 if no code matches. */
// @ts-ignore: decorator
@inline
function decodeSym(set: usize): i32 {
  const e = <u32>load<u16>(set + (<usize>(<u32>rb & (FAST_SIZE - 1)) << 1))
  if (e != 0) {
    const l = e & 15
    rb >>= l
    rc -= l
    return <i32>(e >> 4)
  }
  return decodeSlow(set)
}

function decodeSlow(set: usize): i32 {
  let code: i32 = 0
  let first: i32 = 0
  let index: i32 = 0
  for (let l: u32 = 1; l < 16; l++) {
    code |= <i32>(<u32>rb & 1)
    rb >>= 1
    rc--
    const count = <i32>load<u16>(set + SET_COUNT + (l << 1))
    if (code - count < first) return <i32>load<u16>(set + SET_SYMS + (<usize>(index + (code - first)) << 1))
    index += count
    first += count
    first <<= 1
    code <<= 1
  }
  return -1
}

function readDynamic(): i32 {
  refill()
  const hlit = bits(5) + 257
  const hdist = bits(5) + 1
  const hclen = bits(4) + 4
  if (hlit > 286 || hdist > 30) return E_CORRUPT
  memory.fill(DLENS, 0, 19)
  for (let i: u32 = 0; i < hclen; i++) {
    refill()
    store<u8>(DLENS + <usize>load<u8>(CL_ORDER + i), <u8>bits(3))
  }
  if (rc < rpad) return E_TRUNCATED
  if (buildDecode(DLENS, 19, DYN_CL) < 0) return E_CORRUPT
  const total = hlit + hdist
  let i: u32 = 0
  while (i < total) {
    refill()
    const sym = decodeSym(DYN_CL)
    if (sym < 0) return E_CORRUPT
    if (sym < 16) {
      store<u8>(DLENS + i, <u8>sym)
      i++
    } else {
      let v: u8 = 0
      let rep: u32
      if (sym == 16) {
        if (i == 0) return E_CORRUPT
        v = load<u8>(DLENS + i - 1)
        rep = 3 + bits(2)
      } else if (sym == 17) {
        rep = 3 + bits(3)
      } else {
        rep = 11 + bits(7)
      }
      if (i + rep > total) return E_CORRUPT
      memory.fill(DLENS + i, v, rep)
      i += rep
    }
    if (rc < rpad) return E_TRUNCATED
  }
  if (load<u8>(DLENS + 256) == 0) return E_CORRUPT
  if (buildDecode(DLENS, hlit, DYN_L) < 0) return E_CORRUPT
  if (buildDecode(DLENS + hlit, hdist, DYN_D) < 0) return E_CORRUPT
  return 0
}

/** Gives back whole unread bytes from the bit buffer; false if we read past the input. */
function alignInput(): bool {
  if (rc < rpad) return false
  const drop = rc & 7
  rb >>= drop
  rc -= drop
  rin -= <usize>((rc - rpad) >> 3)
  rb = 0
  rc = 0
  rpad = 0
  return true
}

/** Inflates raw DEFLATE from src..src+srcLen into dst; bytes written or a negative code. inflateEnd = end of the stream. */
export function inflateRaw(src: usize, srcLen: usize, dst: usize, dstCap: usize): i32 {
  if (!decInit) initDecoder()
  rb = 0
  rc = 0
  rpad = 0
  rin = src
  rend = src + srcLen
  let op = dst
  const oend = dst + dstCap
  while (true) {
    refill()
    const final = bits(1)
    const type = bits(2)
    if (rc < rpad) return E_TRUNCATED
    if (type == 0) {
      if (!alignInput()) return E_TRUNCATED
      if (rend - rin < 4) return E_TRUNCATED
      const len = <usize>load<u16>(rin)
      if ((len ^ <usize>load<u16>(rin, 2)) != 0xffff) return E_CORRUPT
      rin += 4
      if (len > rend - rin) return E_TRUNCATED
      if (len > oend - op) return E_DST_TOO_SMALL
      memory.copy(op, rin, len)
      rin += len
      op += len
    } else {
      let lset = FIX_L
      let dset = FIX_D
      if (type == 2) {
        const r = readDynamic()
        if (r < 0) return r
        lset = DYN_L
        dset = DYN_D
      } else if (type == 3) {
        return E_CORRUPT
      }
      while (true) {
        refill()
        const sym = decodeSym(lset)
        if (rc < rpad) return E_TRUNCATED
        if (sym < 256) {
          if (sym < 0) return E_CORRUPT
          if (op >= oend) return E_DST_TOO_SMALL
          store<u8>(op++, <u8>sym)
          continue
        }
        if (sym == 256) break
        const li = <usize>(sym - 257)
        if (li >= 29) return E_CORRUPT
        const len = <usize>load<u16>(LEN_BASE + (li << 1)) + <usize>bits(<u32>load<u8>(LEN_EXTRA + li))
        const ds = decodeSym(dset)
        if (ds < 0 || ds >= 30) return E_CORRUPT
        const dist = <usize>load<u16>(DIST_BASE + (<usize>ds << 1)) + <usize>bits(<u32>load<u8>(DIST_EXTRA + <usize>ds))
        if (rc < rpad) return E_TRUNCATED
        if (dist > op - dst) return E_CORRUPT
        if (len > oend - op) return E_DST_TOO_SMALL
        copyMatch(op, dist, len, oend - op >= len + 8)
        op += len
      }
    }
    if (final != 0) break
  }
  if (!alignInput()) return E_TRUNCATED
  inflateEnd = rin
  return <i32>(op - dst)
}

/** Test hook: moves the hash-table epoch (to exercise its wrap-around). Not in the product exports. */
export function deflateSetEpochForTest(e: u32): void {
  dEpoch = e
}
