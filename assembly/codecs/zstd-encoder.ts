// zstd frame encoder (RFC 8878), written from the format document.
//  - one frame: single segment + Frame_Content_Size up to 1 MiB input, else a 1 MiB window
//    descriptor + 4-byte content size; optional content checksum (xxh64 low 32 bits)
//  - blocks of at most 128 KiB; raw or RLE blocks when compression does not pay
//  - LZ77, levels 1-3: no chains; a 5-byte-hash table (+ an 8-byte one from level 2) holding
//    frame-tagged positions (no clearing per call), rep0 tried first, skip steps on misses;
//    levels 4+: hash chains, repeat-offset checks, lazy matching
//  - literals: Huffman (11-bit limited, weights direct or FSE, 1 or 4 streams), raw or RLE
//  - sequences: predefined, RLE or per-block FSE tables, whichever is estimated smallest
// No allocation: all scratch is static (memory.data).

import {
  ZSTD_MAGIC, BLOCK_SIZE_MAX, Z_DST_TOO_SMALL, LL_BASE, LL_BITS, ML_BASE, ML_BITS,
  LL_DEFAULT_NORM, LL_DEFAULT_LOG, ML_DEFAULT_NORM, ML_DEFAULT_LOG, OF_DEFAULT_NORM, OF_DEFAULT_LOG,
  LL_MAX_LOG, ML_MAX_LOG, OF_MAX_LOG, CTABLE_SIZE, CT_NEXT, CT_TT, highbit, log2fix, fseBuildCTable,
  fseBuildCTableRle, fseInitState, fseSymbolCost256, fseNormalize, fseWriteNCount,
} from './zstd-common'
import { xxh64 } from './zstd-xxh64'

const HASH_LOG_MAX = 17
const CHAIN_LOG_MAX = 17
const WINDOW_LOG = 20                    // window of frames larger than SINGLE_SEGMENT_MAX
const SINGLE_SEGMENT_MAX = 1 << WINDOW_LOG
const MAX_SEQ = 44000                    // > 128 KiB / 3

const HT: usize = memory.data(4 << HASH_LOG_MAX, 16)
const CHAIN: usize = memory.data(4 << CHAIN_LOG_MAX, 16)
const LIT: usize = memory.data(BLOCK_SIZE_MAX + 64, 16)
const SEQ_LL: usize = memory.data(MAX_SEQ * 4, 16)
const SEQ_ML: usize = memory.data(MAX_SEQ * 4, 16) // match length - 3
const SEQ_OV: usize = memory.data(MAX_SEQ * 4, 16)
const C_LL: usize = memory.data(MAX_SEQ, 16)
const C_ML: usize = memory.data(MAX_SEQ, 16)
const C_OF: usize = memory.data(MAX_SEQ, 16)
const BLK: usize = memory.data(BLOCK_SIZE_MAX + 2048, 16)
const CT_PRE_LL: usize = memory.data(<i32>CTABLE_SIZE, 16)
const CT_PRE_ML: usize = memory.data(<i32>CTABLE_SIZE, 16)
const CT_PRE_OF: usize = memory.data(<i32>CTABLE_SIZE, 16)
const CT_LL: usize = memory.data(<i32>CTABLE_SIZE, 16)
const CT_ML: usize = memory.data(<i32>CTABLE_SIZE, 16)
const CT_OF: usize = memory.data(<i32>CTABLE_SIZE, 16)
const CT_W: usize = memory.data(<i32>CTABLE_SIZE, 16)
const CNT: usize = memory.data(64 * 4, 16)
const HIST: usize = memory.data(3 * 64 * 4, 16) // LL, OF, ML code counts of the block
const ENORM: usize = memory.data(64 * 2, 16)
const ENORM_BEST: usize = memory.data(64 * 2, 16)
const NCBUF: usize = memory.data(256, 16)
const NCBEST: usize = memory.data(256, 16)
const FREQ: usize = memory.data(256 * 4, 16)
const HLEN: usize = memory.data(256, 16)
const HCODE: usize = memory.data(256 * 4, 16) // code | length << 16
const HSORT: usize = memory.data(256 * 2, 16)
const HKEY: usize = memory.data(256 * 4, 16)
const HNODE: usize = memory.data(512 * 4, 16)
const HPARENT: usize = memory.data(512 * 2, 16)
const HDEPTH: usize = memory.data(512, 16)
const HSTART: usize = memory.data(16 * 4, 16)
const WEIGHTS: usize = memory.data(256, 16)
const WHDR: usize = memory.data(256, 16)
const WTMP: usize = memory.data(256, 16)
const LL_CODE: usize = memory.data(64, 16)
const MASK: usize = memory.data(33 * 8, 16) // (1 << n) - 1: one load where a shift, a subtract and their moves were
const ML_CODE: usize = memory.data(128, 16)

let preReady = false

function preparePredefined(): void {
  fseBuildCTable(LL_DEFAULT_NORM, 35, LL_DEFAULT_LOG, CT_PRE_LL)
  fseBuildCTable(ML_DEFAULT_NORM, 52, ML_DEFAULT_LOG, CT_PRE_ML)
  fseBuildCTable(OF_DEFAULT_NORM, 28, OF_DEFAULT_LOG, CT_PRE_OF)
  for (let c = 0; c <= 35; c++) {
    const base = <i32>load<u32>(LL_BASE + (<usize>c << 2))
    const n = 1 << <i32>load<u8>(LL_BITS + <usize>c)
    for (let v = base; v < base + n && v < 64; v++) store<u8>(LL_CODE + <usize>v, <u8>c)
  }
  for (let c = 0; c <= 52; c++) {
    const base = <i32>load<u32>(ML_BASE + (<usize>c << 2)) - 3
    const n = 1 << <i32>load<u8>(ML_BITS + <usize>c)
    for (let v = base; v < base + n && v < 128; v++) store<u8>(ML_CODE + <usize>v, <u8>c)
  }
  for (let n = 0; n <= 32; n++) store<u64>(MASK + (<usize>n << 3), (<u64>1 << <u64>n) - 1)
  preReady = true
}

// @ts-ignore: decorator
@inline
function llCode(ll: u32): u32 {
  return ll < 64 ? <u32>load<u8>(LL_CODE + <usize>ll) : <u32>highbit(ll) + 19
}

// @ts-ignore: decorator
@inline
function mlCode(mlBase: u32): u32 {
  return mlBase < 128 ? <u32>load<u8>(ML_CODE + <usize>mlBase) : <u32>highbit(mlBase) + 36
}

// ---- forward bit writer -------------------------------------------------------------------
let bwStart: usize = 0
let bwPtr: usize = 0
let bwEnd: usize = 0
let bwAcc: u64 = 0
let bwBits: i32 = 0
let bwOvf = false

function bwInit(p: usize, end: usize): void {
  bwStart = p
  bwPtr = p
  bwEnd = end
  bwAcc = 0
  bwBits = 0
  bwOvf = false
}

// @ts-ignore: decorator
@inline
function bwAdd(v: u64, n: i32): void {
  bwAcc |= v << <u64>bwBits
  bwBits += n
  if (bwBits >= 32) {
    if (bwPtr + 4 <= bwEnd) store<u32>(bwPtr, <u32>bwAcc)
    else bwOvf = true
    bwPtr += 4
    bwAcc >>= 32
    bwBits -= 32
  }
}

/** Adds the end-of-stream marker bit and flushes; returns the stream size or -1 on overflow. */
function bwFinish(): i32 {
  bwAdd(1, 1)
  while (bwBits > 0) {
    if (bwPtr + 1 <= bwEnd) store<u8>(bwPtr, <u8>bwAcc)
    else bwOvf = true
    bwPtr++
    bwAcc >>= 8
    bwBits -= 8
  }
  bwBits = 0
  if (bwOvf) return -1
  return <i32>(bwPtr - bwStart)
}

/** Encodes symbol s from state T (FSE encoding runs backwards); returns the new state. */
// @ts-ignore: decorator
@inline
function fseEncode(ct: usize, s: u32, T: u32): u32 {
  const tt = load<u64>(ct + CT_TT + (<usize>s << 3))
  const nb = (T + <u32>tt) >> 16
  bwAdd(<u64>(T & ((<u32>1 << nb) - 1)), <i32>nb)
  return <u32>load<u16>(ct + CT_NEXT + (<usize>((T >> nb) + <u32>(tt >> 32)) << 1))
}

// ---- level parameters ---------------------------------------------------------------------
let pHashLog = 16
let pChainLog = 16
let pDepth = 4
let pLazy = 1
let pMinMatch = 4
let pTarget = 64
let pStepShift = 8
let pLazyStop = 32
let pSparse = false
let pFast = false

function setLevel(level: i32, srcLen: i32): void {
  if (level <= 1) {
    pHashLog = 15; pChainLog = 0; pDepth = 1; pLazy = 0; pMinMatch = 5; pTarget = 32; pStepShift = 5
  } else if (level == 2) {
    pHashLog = 16; pChainLog = 16; pDepth = 2; pLazy = 0; pMinMatch = 5; pTarget = 32; pStepShift = 7
  } else if (level == 3) {
    pHashLog = 16; pChainLog = 16; pDepth = 4; pLazy = 1; pMinMatch = 5; pTarget = 32; pStepShift = 6
  } else if (level == 4) {
    pHashLog = 17; pChainLog = 17; pDepth = 12; pLazy = 1; pMinMatch = 4; pTarget = 64; pStepShift = 8
  } else if (level == 5) {
    pHashLog = 17; pChainLog = 17; pDepth = 24; pLazy = 1; pMinMatch = 4; pTarget = 96; pStepShift = 8
  } else if (level <= 6) {
    pHashLog = 17; pChainLog = 17; pDepth = 32; pLazy = 2; pMinMatch = 4; pTarget = 128; pStepShift = 9
  } else if (level <= 9) {
    pHashLog = 17; pChainLog = 17; pDepth = 64; pLazy = 2; pMinMatch = 4; pTarget = 256; pStepShift = 10
  } else if (level <= 15) {
    pHashLog = 17; pChainLog = 17; pDepth = 192; pLazy = 2; pMinMatch = 4; pTarget = 512; pStepShift = 12
  } else {
    pHashLog = 17; pChainLog = 17; pDepth = 512; pLazy = 2; pMinMatch = 4; pTarget = 1024; pStepShift = 14
  }
  pLazyStop = level <= 3 ? 24 : level <= 5 ? 48 : pTarget
  pSparse = level <= 3
  pFast = level <= 3
  fShortLog = level <= 1 ? 15 : 16
  fLongLog = level <= 1 ? 0 : 16
  // Tables no larger than the input needs.
  const need = srcLen > 1 ? highbit(<u32>(srcLen - 1)) + 2 : 8
  if (need < pHashLog) pHashLog = need < 8 ? 8 : need
  if (pChainLog > 0 && need < pChainLog) pChainLog = need < 8 ? 8 : need
  if (need < fShortLog) fShortLog = need < 8 ? 8 : need
  if (fLongLog > 0 && need < fLongLog) fLongLog = need < 8 ? 8 : need
  fShortShift = <u64>(64 - fShortLog)
  fLongShift = <u64>(64 - fLongLog)
}

// ---- match finder ------------------------------------------------------------------------
let mSrc: usize = 0
let mSrcLen: i32 = 0
let mMaxDist: i32 = 0
let nextToUpdate: i32 = 0
let mLen: i32 = 0
let mOff: i32 = 0
let rep0: u32 = 1
let rep1: u32 = 4
let rep2: u32 = 8
let nbSeq: i32 = 0
let litCount: i32 = 0

// @ts-ignore: decorator
@inline
function hashAt(p: usize): u32 {
  if (pMinMatch == 4) return (load<u32>(p) * 0x9E3779B1) >> <u32>(32 - pHashLog)
  return <u32>(((load<u64>(p) << <u64>(64 - 8 * pMinMatch)) * 0xCF1BBCDCB7A56463) >> <u64>(64 - pHashLog))
}

// @ts-ignore: decorator
@inline
function matchLength(a: usize, b: usize, limit: usize): i32 {
  const start = a
  while (a + 8 <= limit) {
    const x = load<u64>(a) ^ load<u64>(b)
    if (x != 0) return <i32>(a - start) + (<i32>ctz<u64>(x) >> 3)
    a += 8
    b += 8
  }
  while (a < limit && load<u8>(a) == load<u8>(b)) {
    a++
    b++
  }
  return <i32>(a - start)
}

// @ts-ignore: decorator
@inline
function offCost(off: u32): i32 {
  if (off == rep0 || off == rep1 || off == rep2) return 0
  return highbit(off + 3)
}

function insertAt(p: i32): void {
  const cmask = (1 << pChainLog) - 1
  const hp = <usize>hashAt(mSrc + <usize>p) << 2
  store<i32>(CHAIN + (<usize>(p & cmask) << 2), load<i32>(HT + hp))
  store<i32>(HT + hp, p)
}

/** Best match at pos (sets mLen / mOff; mLen 0 if none). Inserts pos into the tables. */
function findMatch(pos: i32, end: i32): void {
  const ip = mSrc + <usize>pos
  const limit = mSrc + <usize>end
  const maxLen = end - pos
  let bestLen = 0
  let bestOff = 0
  let bestGain = 0
  const cur32 = load<u32>(ip)
  // Repeat offsets first: they are the cheapest to encode.
  for (let r = 0; r < 3; r++) {
    const d = r == 0 ? rep0 : r == 1 ? rep1 : rep2
    if (d == 0 || <i32>d > pos || <i32>d > mMaxDist) continue
    if (load<u32>(ip - <usize>d) != cur32) continue
    const len = 4 + matchLength(ip + 4, ip + 4 - <usize>d, limit)
    const g = len * 4
    if (g > bestGain) {
      bestGain = g
      bestLen = len
      bestOff = <i32>d
    }
  }
  const h = <usize>hashAt(ip) << 2
  let cand = load<i32>(HT + h)
  if (pChainLog == 0) {
    store<i32>(HT + h, pos)
  } else {
    const cmask = (1 << pChainLog) - 1
    // Insert the positions skipped since the last search, then this one.
    while (nextToUpdate < pos) {
      const hp = <usize>hashAt(mSrc + <usize>nextToUpdate) << 2
      store<i32>(CHAIN + (<usize>(nextToUpdate & cmask) << 2), load<i32>(HT + hp))
      store<i32>(HT + hp, nextToUpdate)
      nextToUpdate++
    }
    if (nextToUpdate == pos) {
      cand = load<i32>(HT + h)
      store<i32>(CHAIN + (<usize>(pos & cmask) << 2), cand)
      store<i32>(HT + h, pos)
      nextToUpdate = pos + 1
    } else {
      cand = load<i32>(HT + h)
      if (cand == pos) cand = load<i32>(CHAIN + (<usize>(pos & cmask) << 2))
    }
  }
  if (bestLen < pTarget && bestLen < maxLen) {
    const minPos = pos - mMaxDist
    const chainMin = pos - (1 << pChainLog)
    const cmask = (1 << pChainLog) - 1
    let depth = pDepth
    while (cand < pos && cand >= minPos && depth > 0) {
      depth--
      const m = mSrc + <usize>cand
      if (load<u32>(m) == cur32 && load<u8>(m + <usize>bestLen) == load<u8>(ip + <usize>bestLen)) {
        const len = 4 + matchLength(ip + 4, m + 4, limit)
        if (len >= pMinMatch) {
          const off = pos - cand
          const g = len * 4 - offCost(<u32>off)
          if (g > bestGain) {
            bestGain = g
            bestLen = len
            bestOff = off
            if (len >= pTarget || len >= maxLen) break
          }
        }
      }
      if (pChainLog == 0 || cand <= chainMin) break
      const next = load<i32>(CHAIN + (<usize>(cand & cmask) << 2))
      if (next >= cand) break
      cand = next
    }
  }
  mLen = bestLen
  mOff = bestOff
}

/** Copies literals src[from..from+n) to LIT at `at` (LIT has slack for the short-run overshoot). */
// @ts-ignore: decorator
@inline
function copyLiterals(at: i32, from: i32, n: i32): void {
  if (n <= 16 && from + 16 <= mSrcLen) {
    // Short runs: two 8-byte moves (reads stay inside src).
    const d = LIT + <usize>at
    const sp = mSrc + <usize>from
    store<u64>(d, load<u64>(sp))
    store<u64>(d + 8, load<u64>(sp + 8))
  } else {
    memory.copy(LIT + <usize>at, mSrc + <usize>from, <usize>n)
  }
}

/** Stores sequence k (literal length, match length - 3, offset value), its codes and their counts. */
// @ts-ignore: decorator
@inline
function pushSequence(k: i32, ll: u32, ml3: u32, ov: u32): void {
  const o = <usize>k << 2
  store<u32>(SEQ_LL + o, ll)
  store<u32>(SEQ_ML + o, ml3)
  store<u32>(SEQ_OV + o, ov)
  // Codes and their histograms, for the table choice and the encoder.
  const llc = <usize>llCode(ll)
  const mlc = <usize>mlCode(ml3)
  const ofc = <usize>highbit(ov)
  store<u8>(C_LL + <usize>k, <u8>llc)
  store<u8>(C_ML + <usize>k, <u8>mlc)
  store<u8>(C_OF + <usize>k, <u8>ofc)
  const hl = HIST + (llc << 2)
  store<u32>(hl, load<u32>(hl) + 1)
  const ho = HIST + 256 + (ofc << 2)
  store<u32>(ho, load<u32>(ho) + 1)
  const hm = HIST + 512 + (mlc << 2)
  store<u32>(hm, load<u32>(hm) + 1)
}

function emitSequence(litStart: i32, litLen: i32, off: u32, mlen: i32): void {
  copyLiterals(litCount, litStart, litLen)
  litCount += litLen
  let ov: u32
  if (litLen > 0 && off == rep0) {
    ov = 1
  } else {
    // Repeat codes: with literals 1-3 are rep0-rep2; without, rep1, rep2 and rep0 - 1.
    if (off == rep1) {
      ov = litLen > 0 ? 2 : 1
    } else if (off == rep2) {
      ov = litLen > 0 ? 3 : 2
      rep2 = rep1
    } else if (litLen == 0 && off == rep0 - 1) {
      ov = 3
      rep2 = rep1
    } else {
      ov = off + 3
      rep2 = rep1
    }
    rep1 = rep0
    rep0 = off
  }
  pushSequence(nbSeq, <u32>litLen, <u32>mlen - 3, ov)
  nbSeq++
}

function seqReset(): void {
  nbSeq = 0
  litCount = 0
  memory.fill(HIST, 0, 3 * 256)
}

/** Parses src[start..end) into sequences + literals (history: everything before start). */
function parseBlock(start: i32, end: i32): void {
  seqReset()
  let anchor = start
  let pos = start
  const ilimit = end - 8
  while (pos < ilimit) {
    findMatch(pos, end)
    if (mLen < 4) {
      pos += 1 + ((pos - anchor) >> pStepShift)
      continue
    }
    let len = mLen
    let off = mOff
    for (let k = 0; k < pLazy; k++) {
      if (pos + 1 >= ilimit || len >= pLazyStop) break
      findMatch(pos + 1, end)
      if (mLen >= 4 && mLen * 4 - offCost(<u32>mOff) > len * 4 - offCost(<u32>off) + 4) {
        pos++
        len = mLen
        off = mOff
      } else {
        break
      }
    }
    // Extend backwards into the pending literals.
    while (pos > anchor && pos - off > 0 && load<u8>(mSrc + <usize>(pos - 1)) == load<u8>(mSrc + <usize>(pos - 1 - off))) {
      pos--
      len++
    }
    emitSequence(anchor, pos - anchor, <u32>off, len)
    pos += len
    anchor = pos
    if (pSparse && pChainLog > 0 && pos - nextToUpdate > 8) {
      // Fast levels: index only a few positions inside a long match.
      insertAt(nextToUpdate)
      insertAt(nextToUpdate + 1)
      nextToUpdate = pos - 3
    }
    if (pChainLog == 0 && pos - 2 < ilimit) {
      store<i32>(HT + (<usize>hashAt(mSrc + <usize>(pos - 2)) << 2), pos - 2)
    }
    // Immediate repeat (literal length 0: code 1 means rep1).
    while (pos < ilimit) {
      const d = rep1
      if (<i32>d > pos || <i32>d > mMaxDist) break
      const ip = mSrc + <usize>pos
      if (load<u32>(ip) != load<u32>(ip - <usize>d)) break
      const l2 = 4 + matchLength(ip + 4, ip + 4 - <usize>d, mSrc + <usize>end)
      emitSequence(pos, 0, d, l2)
      pos += l2
      anchor = pos
    }
  }
  memory.copy(LIT + <usize>litCount, mSrc + <usize>anchor, <usize>(end - anchor))
  litCount += end - anchor
}

// ---- fast match finder (levels 1-3) ---------------------------------------------------------
// No chains: one table of 5-byte hashes (HT) and, from level 2, one of 8-byte hashes (CHAIN
// region). Entries hold gBase + position; gBase grows by srcLen + FRAME_GAP per frame, so an entry
// of an earlier frame reads as more than a window before any position of this one and the tables
// need no clearing per call: one unsigned compare, pos - 1 - cand < maxDist, tells a usable entry.
const FRAME_GAP: u32 = 1 << WINDOW_LOG
let gBase: u32 = 0
let fBase: u32 = 0 // gBase of the current frame
let fastDirty = true // the chain finder reuses HT / CHAIN with raw positions
let fShortLog = 15
let fLongLog = 0
// The hashes' shift counts, as 64-bit values: computed in the parser they cost a sign extension and
// a subtraction per probe once the register allocator spills them.
let fShortShift: u64 = 49
let fLongShift: u64 = 64

// @ts-ignore: decorator
@inline
function hash5(v: u64, shift: u64): usize {
  return <usize>(((v << 24) * 0xCF1BBCDCB7A56463) >> shift) << 2
}

// @ts-ignore: decorator
@inline
function hash8(v: u64, shift: u64): usize {
  return <usize>((v * 0x9FB21C651E98DF25) >> shift) << 2
}

function fastReset(srcLen: i32): void {
  if (fastDirty || gBase > 0x70000000 - <u32>srcLen) {
    memory.fill(HT, 0, <usize>(4 << HASH_LOG_MAX))
    memory.fill(CHAIN, 0, <usize>(4 << CHAIN_LOG_MAX))
    gBase = FRAME_GAP
    fastDirty = false
  }
  fBase = gBase
  gBase += <u32>srcLen + FRAME_GAP
}

/**
 * Fast parser: per position one 5-byte and (from level 2) one 8-byte hash probe, rep0 one byte
 * ahead first. Everything it touches per position is a local (the repeat offsets and sequence
 * counts go back to the globals at the end), and sequences are written in place.
 */
function parseFast(start: i32, end: i32): void {
  if (fLongLog != 0) parseFastWith(start, end, true)
  else parseFastWith(start, end, false)
}

/** parseFast, compiled once per value of `long` (the 8-byte table, levels 2-3) so no probe tests it. */
// @ts-ignore: decorator
@inline
function parseFastWith(start: i32, end: i32, long: bool): void {
  seqReset()
  const src = mSrc
  const limit = src + <usize>end
  const base = fBase
  const sShift = fShortShift
  const lShift = fLongShift
  const maxDist = mMaxDist
  const stepShift = pStepShift
  // The repeat offsets and the sequence count live in locals for the whole block: the sequence write
  // below is emitSequence's, repeated here because a call (or an @inline function, which cannot
  // assign its caller's locals) would spill them to globals on every match.
  let r0 = rep0
  let r1 = rep1
  let r2 = rep2
  let ns = 0
  let lits = 0
  let anchor = start
  let pos = start
  const ilimit = end - 8
  while (pos < ilimit) {
    const ip = src + <usize>pos
    const v = load<u64>(ip)
    const hs = HT + hash5(v, sShift)
    const sCand = <i32>(load<u32>(hs) - base)
    store<u32>(hs, base + <u32>pos)
    let lCand = pos // unusable unless the long table has one
    if (long) {
      const hl = CHAIN + hash8(v, lShift)
      lCand = <i32>(load<u32>(hl) - base)
      store<u32>(hl, base + <u32>pos)
    }
    let mpos = pos
    let len = 0
    let off = 0
    // Repeat offset at pos + 1 (one literal keeps rep0 as code 1); every rep is <= maxDist.
    if (<i32>r0 <= pos + 1 && load<u32>(ip + 1) == load<u32>(ip + 1 - <usize>r0)) {
      mpos = pos + 1
      off = <i32>r0
      len = 4 + matchLength(ip + 5, ip + 5 - <usize>r0, limit)
    } else if (<u32>(pos - 1 - lCand) < <u32>maxDist && load<u64>(src + <usize>lCand) == v) {
      off = pos - lCand
      len = 8 + matchLength(ip + 8, src + <usize>lCand + 8, limit)
    } else if (<u32>(pos - 1 - sCand) < <u32>maxDist && ((load<u64>(src + <usize>sCand) ^ v) << 24) == 0) {
      off = pos - sCand
      len = 5 + matchLength(ip + 5, src + <usize>sCand + 5, limit)
      if (long && pos + 1 < ilimit) {
        // A long match one byte later beats a short one here.
        const v1 = load<u64>(ip + 1)
        const h1 = CHAIN + hash8(v1, lShift)
        const c1 = <i32>(load<u32>(h1) - base)
        store<u32>(h1, base + <u32>(pos + 1))
        if (<u32>(pos - c1) < <u32>maxDist && load<u64>(src + <usize>c1) == v1) {
          const l1 = 8 + matchLength(ip + 9, src + <usize>c1 + 8, limit)
          if (l1 > len + 1) {
            mpos = pos + 1
            off = pos + 1 - c1
            len = l1
          }
        }
      }
    } else {
      pos += 1 + ((pos - anchor) >> stepShift)
      continue
    }
    // Extend backwards into the pending literals.
    while (mpos > anchor && mpos - off > 0 && load<u8>(src + <usize>(mpos - 1)) == load<u8>(src + <usize>(mpos - 1 - off))) {
      mpos--
      len++
    }
    const litLen = mpos - anchor
    copyLiterals(lits, anchor, litLen)
    lits += litLen
    const uoff = <u32>off
    let ov: u32
    if (litLen > 0 && uoff == r0) {
      ov = 1
    } else {
      if (uoff == r1) {
        ov = litLen > 0 ? 2 : 1
      } else if (uoff == r2) {
        ov = litLen > 0 ? 3 : 2
        r2 = r1
      } else if (litLen == 0 && uoff == r0 - 1) {
        ov = 3
        r2 = r1
      } else {
        ov = uoff + 3
        r2 = r1
      }
      r1 = r0
      r0 = uoff
    }
    pushSequence(ns, <u32>litLen, <u32>len - 3, ov)
    ns++
    const mstart = mpos
    pos = mpos + len
    anchor = pos
    if (pos < ilimit) {
      // Index a few positions of the match (its start and end).
      const va = load<u64>(src + <usize>(mstart + 2))
      const vb = load<u64>(src + <usize>(pos - 2))
      store<u32>(HT + hash5(va, sShift), base + <u32>(mstart + 2))
      if (long) store<u32>(CHAIN + hash8(va, lShift), base + <u32>(mstart + 2))
      store<u32>(HT + hash5(vb, sShift), base + <u32>(pos - 2))
      if (long) store<u32>(CHAIN + hash8(vb, lShift), base + <u32>(pos - 2))
      store<u32>(HT + hash5(load<u64>(src + <usize>(pos - 1)), sShift), base + <u32>(pos - 1))
    }
    // Immediate repeat (literal length 0: code 1 means rep1).
    while (pos < ilimit) {
      const d = r1
      if (<i32>d > pos) break
      const ip2 = src + <usize>pos
      if (load<u32>(ip2) != load<u32>(ip2 - <usize>d)) break
      const l2 = 4 + matchLength(ip2 + 4, ip2 + 4 - <usize>d, limit)
      const v2 = load<u64>(ip2)
      store<u32>(HT + hash5(v2, sShift), base + <u32>pos)
      if (long) store<u32>(CHAIN + hash8(v2, lShift), base + <u32>pos)
      r1 = r0
      r0 = d
      pushSequence(ns, 0, <u32>l2 - 3, 1)
      ns++
      pos += l2
      anchor = pos
    }
  }
  memory.copy(LIT + <usize>lits, src + <usize>anchor, <usize>(end - anchor))
  litCount = lits + end - anchor
  nbSeq = ns
  rep0 = r0
  rep1 = r1
  rep2 = r2
}

// ---- Huffman literals -----------------------------------------------------------------------

/** Builds code lengths (HLEN) limited to 11 bits for FREQ[0..maxSym]; returns max length or 0. */
function buildHuffman(maxSym: i32): i32 {
  let n = 0
  for (let s = 0; s <= maxSym; s++) {
    store<u8>(HLEN + <usize>s, 0)
    const f = load<u32>(FREQ + (<usize>s << 2))
    if (f == 0) continue
    // insertion sort of (frequency, symbol) keys, ascending (frequencies < 2^24)
    const key = (f << 8) | <u32>s
    let j = n
    while (j > 0) {
      const prev = load<u32>(HKEY + (<usize>(j - 1) << 2))
      if (prev <= key) break
      store<u32>(HKEY + (<usize>j << 2), prev)
      j--
    }
    store<u32>(HKEY + (<usize>j << 2), key)
    n++
  }
  if (n < 2) return 0
  for (let i = 0; i < n; i++) {
    const key = load<u32>(HKEY + (<usize>i << 2))
    store<u16>(HSORT + (<usize>i << 1), <u16>(key & 0xFF))
    store<u32>(HNODE + (<usize>i << 2), key >> 8)
  }
  // Two-queue construction: leaves 0..n-1 (sorted), internal nodes n..2n-2 in creation order.
  let leaf = 0
  let inner = n
  let next = n
  while (next < 2 * n - 1) {
    let a: i32
    let b: i32
    if (leaf < n && (inner >= next || load<u32>(HNODE + (<usize>leaf << 2)) <= load<u32>(HNODE + (<usize>inner << 2)))) a = leaf++
    else a = inner++
    if (leaf < n && (inner >= next || load<u32>(HNODE + (<usize>leaf << 2)) <= load<u32>(HNODE + (<usize>inner << 2)))) b = leaf++
    else b = inner++
    store<u32>(HNODE + (<usize>next << 2), load<u32>(HNODE + (<usize>a << 2)) + load<u32>(HNODE + (<usize>b << 2)))
    store<u16>(HPARENT + (<usize>a << 1), <u16>next)
    store<u16>(HPARENT + (<usize>b << 1), <u16>next)
    next++
  }
  const root = 2 * n - 2
  store<u8>(HDEPTH + <usize>root, 0)
  for (let i = root - 1; i >= 0; i--) {
    const d = <i32>load<u8>(HDEPTH + <usize>load<u16>(HPARENT + (<usize>i << 1))) + 1
    store<u8>(HDEPTH + <usize>i, <u8>(d > 255 ? 255 : d))
  }
  // Limit to 11 bits, then make the code complete (Kraft sum exactly 1).
  let kraft = 0
  for (let i = 0; i < n; i++) {
    let l = <i32>load<u8>(HDEPTH + <usize>i)
    if (l > 11) l = 11
    store<u8>(HDEPTH + <usize>i, <u8>l)
    kraft += 1 << (11 - l)
  }
  while (kraft > 2048) {
    // lengthen the least frequent among the longest codes shorter than 11
    let best = -1
    let bestLen = 0
    for (let i = 0; i < n; i++) {
      const l = <i32>load<u8>(HDEPTH + <usize>i)
      if (l < 11 && l > bestLen) {
        bestLen = l
        best = i
      }
    }
    store<u8>(HDEPTH + <usize>best, <u8>(bestLen + 1))
    kraft -= 1 << (10 - bestLen)
  }
  while (kraft < 2048) {
    for (let i = n - 1; i >= 0 && kraft < 2048; i--) {
      const l = <i32>load<u8>(HDEPTH + <usize>i)
      if (l > 1 && kraft + (1 << (11 - l)) <= 2048) {
        store<u8>(HDEPTH + <usize>i, <u8>(l - 1))
        kraft += 1 << (11 - l)
      }
    }
  }
  let maxLen = 0
  for (let i = 0; i < n; i++) {
    const l = <i32>load<u8>(HDEPTH + <usize>i)
    store<u8>(HLEN + <usize>load<u16>(HSORT + (<usize>i << 1)), <u8>l)
    if (l > maxLen) maxLen = l
  }
  // Canonical codes: longest first, natural symbol order within a length.
  for (let l = 0; l <= 12; l++) store<i32>(HSTART + (<usize>l << 2), 0)
  for (let s = 0; s <= maxSym; s++) {
    const l = <usize>load<u8>(HLEN + <usize>s)
    if (l) store<i32>(HSTART + (l << 2), load<i32>(HSTART + (l << 2)) + 1)
  }
  let code = 0
  for (let l = maxLen; l >= 1; l--) {
    const cnt = load<i32>(HSTART + (<usize>l << 2))
    store<i32>(HSTART + (<usize>l << 2), code)
    code = (code + cnt) >> 1
  }
  for (let s = 0; s <= maxSym; s++) {
    const l = <usize>load<u8>(HLEN + <usize>s)
    if (l) {
      const c = load<i32>(HSTART + (l << 2))
      store<u32>(HCODE + (<usize>s << 2), <u32>c | (<u32>l << 16))
      store<i32>(HSTART + (l << 2), c + 1)
    }
  }
  return maxLen
}

/** Writes the Huffman tree description for symbols 0..maxSym into WHDR; returns its size or -1. */
function writeHuffTree(maxSym: i32, maxLen: i32): i32 {
  const nw = maxSym // weights of 0..maxSym-1; the last one is implied
  for (let s = 0; s < nw; s++) {
    const l = <i32>load<u8>(HLEN + <usize>s)
    store<u8>(WEIGHTS + <usize>s, <u8>(l ? maxLen + 1 - l : 0))
  }
  let best = -1
  if (nw <= 128) {
    store<u8>(WHDR, <u8>(127 + nw))
    for (let i = 0; i < nw; i += 2) {
      const hi = <u32>load<u8>(WEIGHTS + <usize>i)
      const lo = i + 1 < nw ? <u32>load<u8>(WEIGHTS + <usize>(i + 1)) : 0
      store<u8>(WHDR + 1 + <usize>(i >> 1), <u8>((hi << 4) | lo))
    }
    best = 1 + ((nw + 1) >> 1)
  }
  if (nw >= 2) {
    // FSE-compressed weights (two interleaved states sharing one table).
    for (let w = 0; w < 16; w++) store<u32>(CNT + (<usize>w << 2), 0)
    let maxW = 0
    for (let i = 0; i < nw; i++) {
      const w = <usize>load<u8>(WEIGHTS + <usize>i)
      store<u32>(CNT + (w << 2), load<u32>(CNT + (w << 2)) + 1)
      if (<i32>w > maxW) maxW = <i32>w
    }
    let distinct = 0
    for (let w = 0; w <= maxW; w++) if (load<u32>(CNT + (<usize>w << 2)) != 0) distinct++
    if (distinct >= 2) {
      for (let log = pFast ? 6 : 5; log <= 6; log++) {
        if (!fseNormalize(CNT, maxW, <u32>nw, log, ENORM)) continue
        const nc = fseWriteNCount(ENORM, maxW, log, WTMP + 1, 120)
        if (nc < 0) continue
        if (!fseBuildCTable(ENORM, maxW, log, CT_W)) continue
        bwInit(WTMP + 1 + <usize>nc, WTMP + 128)
        // states: index parity 0 -> state1, 1 -> state2
        let st0: u32 = 0
        let st1: u32 = 0
        const wl = <u32>load<u8>(WEIGHTS + <usize>(nw - 1))
        const wp = <u32>load<u8>(WEIGHTS + <usize>(nw - 2))
        const sl = fseInitState(CT_W, <i32>wl)
        const sp = fseInitState(CT_W, <i32>wp)
        if (((nw - 1) & 1) == 0) { st0 = sl; st1 = sp } else { st1 = sl; st0 = sp }
        for (let i = nw - 3; i >= 0; i--) {
          const w = <u32>load<u8>(WEIGHTS + <usize>i)
          if ((i & 1) == 0) st0 = fseEncode(CT_W, w, st0)
          else st1 = fseEncode(CT_W, w, st1)
        }
        const mask = (<u32>1 << <u32>log) - 1
        bwAdd(<u64>(st1 & mask), log)
        bwAdd(<u64>(st0 & mask), log)
        const bs = bwFinish()
        if (bs < 0) continue
        const total = nc + bs
        if (total > 127) continue
        if (best < 0 || 1 + total < best) {
          store<u8>(WTMP, <u8>total)
          memory.copy(WHDR, WTMP, <usize>(1 + total))
          best = 1 + total
        }
      }
    }
  }
  return best
}

/**
 * True when the order-0 entropy of the literals (FREQ, a lower bound for Huffman), less a margin
 * for the log2 approximation, plus a rough tree cost does not beat the raw size: then the code
 * is not built.
 */
function huffHopeless(n: i32, maxSym: i32, rawSize: i32): bool {
  const ln = log2fix(<u32>n)
  let bits: i64 = 0
  let distinct = 0
  for (let s = 0; s <= maxSym; s++) {
    const f = load<u32>(FREQ + (<usize>s << 2))
    if (f) {
      bits += <i64>f * <i64>(ln - log2fix(f))
      distinct++
    }
  }
  // + section header and ~2 bits per described weight (rough: a near miss only costs a few bytes).
  const bytes = bits >> 11
  return bytes - (bytes >> 6) + 3 + <i64>(distinct >> 2) >= <i64>rawSize
}

/** Writes the literals section at op (limit oend); returns its size or -1. */
function writeLiterals(op: usize, oend: usize): i32 {
  const n = litCount
  const rawHdr = n < 32 ? 1 : n < 4096 ? 2 : 3
  const rawSize = rawHdr + n
  let maxSym = 0
  let distinct = 0
  if (n >= 2) {
    memory.fill(FREQ, 0, 256 * 4)
    for (let i = 0; i < n; i++) {
      const b = <usize>load<u8>(LIT + <usize>i) << 2
      store<u32>(FREQ + b, load<u32>(FREQ + b) + 1)
    }
    for (let s = 0; s < 256; s++) {
      if (load<u32>(FREQ + (<usize>s << 2)) != 0) {
        distinct++
        maxSym = s
      }
    }
    if (distinct == 1) {
      if (<i32>(oend - op) < rawHdr + 1) return -1
      writeRawHeader(op, 1, n)
      store<u8>(op + <usize>rawHdr, load<u8>(LIT))
      return rawHdr + 1
    }
  }
  if (n >= 32 && distinct >= 2 && !huffHopeless(n, maxSym, rawSize)) {
    const r = writeHuffLiterals(op, oend, maxSym, rawSize)
    if (r > 0) return r
  }
  if (<i32>(oend - op) < rawSize) return -1
  writeRawHeader(op, 0, n)
  memory.copy(op + <usize>rawHdr, LIT, <usize>n)
  return rawSize
}

function writeRawHeader(op: usize, type: u32, n: i32): void {
  if (n < 32) {
    store<u8>(op, <u8>(type | (<u32>n << 3)))
  } else if (n < 4096) {
    store<u16>(op, <u16>(type | (1 << 2) | (<u32>n << 4)))
  } else {
    const v = type | (3 << 2) | (<u32>n << 4)
    store<u16>(op, <u16>v)
    store<u8>(op + 2, <u8>(v >> 16))
  }
}

function encodeHufStream(out: usize, end: usize, from: i32, to: i32): i32 {
  // Local accumulator, flushed every four symbols (at most 7 + 4 * 11 bits pending); the first
  // (to - from) % 4 symbols, taken from the end, go before the first flush.
  let acc: u64 = 0
  let bits: u64 = 0
  let p = out
  const pend = end - 8
  let i = to - 1
  const head = to - ((to - from) & 3)
  if (head < to) {
    while (i >= head) {
      const c = load<u32>(HCODE + (<usize>load<u8>(LIT + <usize>i) << 2))
      acc |= <u64>(c & 0xFFFF) << bits
      bits += <u64>(c >> 16)
      i--
    }
    if (p > pend) return -1
    store<u64>(p, acc)
    p += <usize>(bits >> 3)
    acc >>= bits & ~7
    bits &= 7
  }
  while (i >= from + 3) {
    if (p > pend) return -1
    const q = LIT + <usize>i
    const c0 = load<u32>(HCODE + (<usize>load<u8>(q) << 2))
    const c1 = load<u32>(HCODE + (<usize>load<u8>(q - 1) << 2))
    const c2 = load<u32>(HCODE + (<usize>load<u8>(q - 2) << 2))
    const c3 = load<u32>(HCODE + (<usize>load<u8>(q - 3) << 2))
    acc |= <u64>(c0 & 0xFFFF) << bits
    bits += <u64>(c0 >> 16)
    acc |= <u64>(c1 & 0xFFFF) << bits
    bits += <u64>(c1 >> 16)
    acc |= <u64>(c2 & 0xFFFF) << bits
    bits += <u64>(c2 >> 16)
    acc |= <u64>(c3 & 0xFFFF) << bits
    bits += <u64>(c3 >> 16)
    store<u64>(p, acc)
    p += <usize>(bits >> 3)
    acc >>= bits & ~7
    bits &= 7
    i -= 4
  }
  bwInit(p, end)
  bwAdd(acc, <i32>bits)
  const r = bwFinish()
  if (r < 0) return -1
  return <i32>(p - out) + r
}

function writeHuffLiterals(op: usize, oend: usize, maxSym: i32, rawSize: i32): i32 {
  const n = litCount
  const maxLen = buildHuffman(maxSym)
  if (maxLen == 0) return -1
  const tree = writeHuffTree(maxSym, maxLen)
  if (tree < 0) return -1
  let bits: u64 = 0
  for (let s = 0; s <= maxSym; s++) bits += <u64>load<u32>(FREQ + (<usize>s << 2)) * <u64>load<u8>(HLEN + <usize>s)
  const single = n < 256
  const hdr = single || n <= 1023 ? 3 : n <= 16383 ? 4 : 5
  const estimate = hdr + tree + <i32>(bits >> 3) + (single ? 1 : 10)
  if (estimate >= rawSize) return -1
  let limit = op + <usize>(rawSize - 1)
  if (limit > oend) limit = oend
  let p = op + <usize>hdr
  if (p + <usize>tree > limit) return -1
  memory.copy(p, WHDR, <usize>tree)
  p += <usize>tree
  if (single) {
    const r = encodeHufStream(p, limit, 0, n)
    if (r < 0) return -1
    p += <usize>r
  } else {
    if (p + 6 > limit) return -1
    const jt = p
    p += 6
    const seg = (n + 3) >> 2
    for (let k = 0; k < 4; k++) {
      const from = k * seg
      const to = k == 3 ? n : from + seg
      const r = encodeHufStream(p, limit, from, to)
      if (r < 0) return -1
      if (k < 3) {
        if (r > 65535) return -1
        store<u16>(jt + (<usize>k << 1), <u16>r)
      }
      p += <usize>r
    }
  }
  const csize = <i32>(p - op) - hdr
  const sf: u32 = single ? 0 : hdr == 3 ? 1 : hdr == 4 ? 2 : 3
  if (hdr == 3) {
    const v = 2 | (sf << 2) | (<u32>n << 4) | (<u32>csize << 14)
    store<u16>(op, <u16>v)
    store<u8>(op + 2, <u8>(v >> 16))
  } else if (hdr == 4) {
    store<u32>(op, 2 | (sf << 2) | (<u32>n << 4) | (<u32>csize << 18))
  } else {
    const v: u64 = 2 | (<u64>sf << 2) | (<u64>n << 4) | (<u64>csize << 22)
    store<u32>(op, <u32>v)
    store<u8>(op + 4, <u8>(v >> 32))
  }
  return <i32>(p - op)
}

// ---- sequences -------------------------------------------------------------------------------

let chosenCt: usize = 0
let chosenMode: i32 = 0

/**
 * Picks predefined / RLE / FSE for one symbol kind (0 LL, 1 OF, 2 ML) from its HIST counts,
 * writes its table description at op; returns bytes written or -1.
 */
function chooseTable(kind: i32, op: usize, oend: usize): i32 {
  memory.copy(CNT, HIST + (<usize>kind << 8), 256)
  let maxSym = 63
  while (maxSym > 0 && load<u32>(CNT + (<usize>maxSym << 2)) == 0) maxSym--
  let distinct = 0
  let only = 0
  for (let s = 0; s <= maxSym; s++) {
    if (load<u32>(CNT + (<usize>s << 2)) != 0) {
      distinct++
      only = s
    }
  }
  const ct = kind == 0 ? CT_LL : kind == 1 ? CT_OF : CT_ML
  if (distinct == 1 && nbSeq > 2) {
    if (op >= oend) return -1
    store<u8>(op, <u8>only)
    fseBuildCTableRle(only, ct)
    chosenCt = ct
    chosenMode = 1
    return 1
  }
  const pre = kind == 0 ? CT_PRE_LL : kind == 1 ? CT_PRE_OF : CT_PRE_ML
  const preMax = kind == 0 ? 35 : kind == 1 ? 28 : 52
  let bestCost: i64 = i64.MAX_VALUE
  let bestLog = 0
  let bestNc = 0
  if (maxSym <= preMax) {
    let c: i64 = 0
    for (let s = 0; s <= maxSym; s++) {
      const n = load<u32>(CNT + (<usize>s << 2))
      if (n) c += <i64>n * <i64>fseSymbolCost256(pre, s)
    }
    bestCost = c
  }
  const maxLog = kind == 0 ? LL_MAX_LOG : kind == 1 ? OF_MAX_LOG : ML_MAX_LOG
  if (nbSeq >= 8 && distinct >= 2) {
    // Fast levels try two table sizes near the one the sequence count supports, not all.
    let loLog = 5
    let hiLog = maxLog
    if (pFast) {
      hiLog = highbit(<u32>nbSeq) - 1
      if (hiLog > maxLog) hiLog = maxLog
      if (hiLog < 6) hiLog = 6
      loLog = hiLog - 1
    }
    for (let log = loLog; log <= hiLog; log++) {
      if ((1 << log) < distinct) continue
      if (!fseNormalize(CNT, maxSym, <u32>nbSeq, log, ENORM)) continue
      const nc = fseWriteNCount(ENORM, maxSym, log, NCBUF, 256)
      if (nc < 0) continue
      let c: i64 = <i64>nc * 8 * 256
      for (let s = 0; s <= maxSym; s++) {
        const n = load<u32>(CNT + (<usize>s << 2))
        if (n) c += <i64>n * <i64>((log << 8) - log2fix(<u32>load<i16>(ENORM + (<usize>s << 1))))
      }
      if (c < bestCost) {
        bestCost = c
        bestLog = log
        bestNc = nc
        memory.copy(ENORM_BEST, ENORM, 64 * 2)
        memory.copy(NCBEST, NCBUF, <usize>nc)
      }
    }
  }
  if (bestLog == 0) {
    chosenCt = pre
    chosenMode = 0
    return 0
  }
  if (<i32>(oend - op) < bestNc) return -1
  memory.copy(op, NCBEST, <usize>bestNc)
  fseBuildCTable(ENORM_BEST, maxSym, bestLog, ct)
  chosenCt = ct
  chosenMode = 2
  return bestNc
}

function writeSequences(op: usize, oend: usize): i32 {
  const start = op
  const n = nbSeq
  if (<i32>(oend - op) < 4) return -1
  if (n < 128) {
    store<u8>(op, <u8>n)
    op += 1
  } else if (n < 0x7F00) {
    store<u8>(op, <u8>((n >> 8) + 0x80))
    store<u8>(op + 1, <u8>n)
    op += 2
  } else {
    store<u8>(op, 0xFF)
    store<u16>(op + 1, <u16>(n - 0x7F00))
    op += 3
  }
  if (n == 0) return <i32>(op - start)
  const modesAt = op
  op++
  let r = chooseTable(0, op, oend)
  if (r < 0) return -1
  op += <usize>r
  const ctLL = chosenCt
  const mLL = chosenMode
  r = chooseTable(1, op, oend)
  if (r < 0) return -1
  op += <usize>r
  const ctOF = chosenCt
  const mOF = chosenMode
  r = chooseTable(2, op, oend)
  if (r < 0) return -1
  op += <usize>r
  const ctML = chosenCt
  const mML = chosenMode
  store<u8>(modesAt, <u8>((mLL << 6) | (mOF << 4) | (mML << 2)))

  // Local bit accumulator: after each flush fewer than 8 bits are pending; between two flushes
  // go one sequence's states (at most 26 bits) and its extra bits, when those are 30 or fewer, else
  // states + literal length (16) and then match length + offset (16 + 31). Extra bits go out as the value's low bits: every
  // code's baseline is a multiple of 1 << its bit count (the format's tables are built that way),
  // so value & mask is value - baseline.
  const last = n - 1
  let sLL = fseInitState(ctLL, <i32>load<u8>(C_LL + <usize>last))
  let sOF = fseInitState(ctOF, <i32>load<u8>(C_OF + <usize>last))
  let sML = fseInitState(ctML, <i32>load<u8>(C_ML + <usize>last))
  const ttLL = ctLL + CT_TT
  const ttOF = ctOF + CT_TT
  const ttML = ctML + CT_TT
  const nxLL = ctLL + CT_NEXT
  const nxOF = ctOF + CT_NEXT
  const nxML = ctML + CT_NEXT
  let acc: u64 = 0
  let bits: u64 = 0
  let p = op
  const pend = oend - 8
  let i = last
  for (;;) {
    const llc = <usize>load<u8>(C_LL + <usize>i)
    const mlc = <usize>load<u8>(C_ML + <usize>i)
    const ofc = <u32>load<u8>(C_OF + <usize>i)
    const o = <usize>i << 2
    const llb = <u64>load<u8>(LL_BITS + llc)
    acc |= (<u64>load<u32>(SEQ_LL + o) & load<u64>(MASK + (<usize>llb << 3))) << bits
    bits += llb
    const mlb = <u64>load<u8>(ML_BITS + mlc)
    if (llb + mlb + <u64>ofc > 30) {
      if (p > pend) return -1
      store<u64>(p, acc)
      p += <usize>(bits >> 3)
      acc >>= bits & ~7
      bits &= 7
    }
    acc |= (<u64>load<u32>(SEQ_ML + o) & load<u64>(MASK + (<usize>mlb << 3))) << bits
    bits += mlb
    acc |= (<u64>load<u32>(SEQ_OV + o) & load<u64>(MASK + (<usize>ofc << 3))) << bits
    bits += <u64>ofc
    if (p > pend) return -1
    store<u64>(p, acc)
    p += <usize>(bits >> 3)
    acc >>= bits & ~7
    bits &= 7
    if (i == 0) break
    i--
    // The next (earlier) sequence's symbols, from the states the later ones left.
    let tt = load<u64>(ttOF + (<usize>load<u8>(C_OF + <usize>i) << 3))
    let nb = (sOF + <u32>tt) >> 16
    acc |= (<u64>sOF & load<u64>(MASK + (<usize>nb << 3))) << bits
    bits += <u64>nb
    sOF = <u32>load<u16>(nxOF + (<usize>((sOF >> nb) + <u32>(tt >> 32)) << 1))
    tt = load<u64>(ttML + (<usize>load<u8>(C_ML + <usize>i) << 3))
    nb = (sML + <u32>tt) >> 16
    acc |= (<u64>sML & load<u64>(MASK + (<usize>nb << 3))) << bits
    bits += <u64>nb
    sML = <u32>load<u16>(nxML + (<usize>((sML >> nb) + <u32>(tt >> 32)) << 1))
    tt = load<u64>(ttLL + (<usize>load<u8>(C_LL + <usize>i) << 3))
    nb = (sLL + <u32>tt) >> 16
    acc |= (<u64>sLL & load<u64>(MASK + (<usize>nb << 3))) << bits
    bits += <u64>nb
    sLL = <u32>load<u16>(nxLL + (<usize>((sLL >> nb) + <u32>(tt >> 32)) << 1))
  }
  bwInit(p, oend)
  bwAdd(acc, <i32>bits)
  const logML = load<i32>(ctML)
  const logOF = load<i32>(ctOF)
  const logLL = load<i32>(ctLL)
  bwAdd(<u64>(sML & ((<u32>1 << <u32>logML) - 1)), logML)
  bwAdd(<u64>(sOF & ((<u32>1 << <u32>logOF) - 1)), logOF)
  bwAdd(<u64>(sLL & ((<u32>1 << <u32>logLL) - 1)), logLL)
  const bs = bwFinish()
  if (bs < 0) return -1
  op = p
  return <i32>(op - start) + bs
}

/** Compresses src[start..start+len) into BLK; returns the block content size or -1. */
function compressBlock(start: i32, len: i32): i32 {
  if (len < 16) return -1
  if (pFast) parseFast(start, start + len)
  else parseBlock(start, start + len)
  const oend = BLK + <usize>(len - 1)
  const a = writeLiterals(BLK, oend)
  if (a < 0) return -1
  const b = writeSequences(BLK + <usize>a, oend)
  if (b < 0) return -1
  return a + b
}

function isRun(p: usize, len: i32): bool {
  const b = load<u8>(p)
  const w = <u64>b * 0x0101010101010101
  let i = 0
  while (i + 8 <= len) {
    if (load<u64>(p + <usize>i) != w) return false
    i += 8
  }
  while (i < len) {
    if (load<u8>(p + <usize>i) != b) return false
    i++
  }
  return true
}

/** Worst-case frame size for srcLen bytes (raw blocks + headers + checksum). */
export function zstdCompressBound(srcLen: i32): i32 {
  if (srcLen < 0) return -1
  const blocks = srcLen == 0 ? 1 : (srcLen + BLOCK_SIZE_MAX - 1) / BLOCK_SIZE_MAX
  return srcLen + 3 * blocks + 18
}

/** One zstd frame of src into dst; bytes written, or -1 if dst is too small. */
export function zstdCompressFrame(level: i32, checksum: bool, src: usize, srcLen: i32, dst: usize, dstCap: i32): i32 {
  if (srcLen < 0 || dstCap < 0) return Z_DST_TOO_SMALL
  if (!preReady) preparePredefined()
  if (level < 1) level = level == i32.MIN_VALUE ? 3 : 1
  if (level > 22) level = 22
  setLevel(level, srcLen)
  let op = dst
  const oend = dst + <usize>dstCap
  const single = srcLen <= SINGLE_SEGMENT_MAX
  let fcsFlag: u32
  let fcsSize: i32
  if (single) {
    if (srcLen < 256) { fcsFlag = 0; fcsSize = 1 }
    else if (srcLen < 65536 + 256) { fcsFlag = 1; fcsSize = 2 }
    else { fcsFlag = 2; fcsSize = 4 }
  } else {
    fcsFlag = 2
    fcsSize = 4
  }
  const hdr = 5 + (single ? 0 : 1) + fcsSize
  if (dstCap < hdr) return Z_DST_TOO_SMALL
  store<u32>(op, ZSTD_MAGIC)
  store<u8>(op + 4, <u8>((fcsFlag << 6) | (single ? 0x20 : 0) | (checksum ? 4 : 0)))
  op += 5
  if (!single) {
    store<u8>(op, <u8>((WINDOW_LOG - 10) << 3))
    op++
  }
  if (fcsSize == 1) store<u8>(op, <u8>srcLen)
  else if (fcsSize == 2) store<u16>(op, <u16>(srcLen - 256))
  else store<u32>(op, <u32>srcLen)
  op += <usize>fcsSize

  mSrc = src
  mSrcLen = srcLen
  mMaxDist = single ? srcLen : (1 << WINDOW_LOG) - 1
  if (pFast) {
    fastReset(srcLen)
  } else {
    memory.fill(HT, 0, <usize>(4 << pHashLog))
    fastDirty = true
  }
  nextToUpdate = 0
  rep0 = 1
  rep1 = 4
  rep2 = 8
  let pos = 0
  do {
    const blen = srcLen - pos < BLOCK_SIZE_MAX ? srcLen - pos : BLOCK_SIZE_MAX
    const last: u32 = pos + blen == srcLen ? 1 : 0
    const r0 = rep0
    const r1 = rep1
    const r2 = rep2
    const run = blen > 4 && isRun(src + <usize>pos, blen)
    const csize = run ? -1 : compressBlock(pos, blen)
    if (csize > 0 && csize < blen) {
      if (<i32>(oend - op) < 3 + csize) return Z_DST_TOO_SMALL
      const bh = last | (2 << 1) | (<u32>csize << 3)
      store<u16>(op, <u16>bh)
      store<u8>(op + 2, <u8>(bh >> 16))
      memory.copy(op + 3, BLK, <usize>csize)
      op += 3 + <usize>csize
    } else {
      rep0 = r0
      rep1 = r1
      rep2 = r2
      if (run) {
        if (<i32>(oend - op) < 4) return Z_DST_TOO_SMALL
        const bh = last | (1 << 1) | (<u32>blen << 3)
        store<u16>(op, <u16>bh)
        store<u8>(op + 2, <u8>(bh >> 16))
        store<u8>(op + 3, load<u8>(src + <usize>pos))
        op += 4
      } else {
        if (<i32>(oend - op) < 3 + blen) return Z_DST_TOO_SMALL
        const bh = last | (<u32>blen << 3)
        store<u16>(op, <u16>bh)
        store<u8>(op + 2, <u8>(bh >> 16))
        memory.copy(op + 3, src + <usize>pos, <usize>blen)
        op += 3 + <usize>blen
      }
    }
    pos += blen
  } while (pos < srcLen)
  if (checksum) {
    if (<i32>(oend - op) < 4) return Z_DST_TOO_SMALL
    store<u32>(op, <u32>xxh64(src, <usize>srcLen, 0))
    op += 4
  }
  return <i32>(op - dst)
}
