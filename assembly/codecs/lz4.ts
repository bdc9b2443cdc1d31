// LZ4 frame format (the form Kafka's Lz4BlockOutputStream writes and Lz4BlockInputStream reads):
//   magic 0x184D2204 LE | FLG | BD | HC | blocks [u32 LE size, high bit = stored][data] | u32 0
// We write FLG = version 01 + block independence (0x60), BD = 64 KiB blocks (0x40), no block /
// content checksums, no content size; HC = (xxh32(FLG..BD, 0) >> 8) & 0xFF (without the magic).
// Levels follow Kafka's compression.lz4.level (1..17, default 9): like Java, the default level
// uses the fast compressor; every other level uses hash chains (search depth grows with the
// level, as in lz4hc) with one-step lazy matching.
// The reader accepts any LZ4 frame: block / content checksums (verified), content size
// (verified), linked blocks, skippable frames, concatenated frames; dictionary ids are refused.

import {
  E_DST_TOO_SMALL, E_TRUNCATED, E_CORRUPT, E_CHECKSUM, E_UNSUPPORTED, commonPrefix, copyLiteral, copyMatch,
} from './common'
import { xxh32 } from './xxhash32'

const MAGIC: u32 = 0x184d2204
const BLOCK_MAX: usize = 65536
const MINMATCH: usize = 4
const LASTLITERALS: usize = 5
const MFLIMIT: usize = 12
const MAX_DIST: usize = 65535
const FAST_HASH_LOG: u32 = 14
const HC_HASH_LOG: u32 = 15
export const LZ4_DEFAULT_LEVEL: i32 = 9

// Hash tables hold "keys" = epoch + position offset, so no table is cleared between calls: a key
// below the current epoch is stale. The HC tables count from src with a u32 epoch per call
// (keys below the current block's start are stale too). The fast table counts from each
// block's start with a u16 epoch per block (half the cache footprint of u32 keys), cleared
// when the u16 range runs out, i.e. once per 64 KiB of input.
const FAST_TABLE: usize = memory.data(2 << FAST_HASH_LOG, 16)
const HC_HEAD: usize = memory.data(4 << HC_HASH_LOG, 16)
const HC_CHAIN: usize = memory.data(2 << 16, 16) // u16 distance to the previous same-hash position
let epoch: u32 = 1
let fastEpoch: u32 = 1

// @ts-ignore: decorator
@inline
function hashFast(seq: u32): usize {
  return <usize>((seq * 2654435761) >> (32 - FAST_HASH_LOG))
}
// @ts-ignore: decorator
@inline
function hashHC(seq: u32): usize {
  return <usize>((seq * 2654435761) >> (32 - HC_HASH_LOG))
}

/** Worst-case frame size for srcLen bytes: header, every block stored, end mark. */
export function lz4CompressBound(srcLen: i32): i32 {
  if (srcLen < 0) return E_DST_TOO_SMALL
  const blocks = (srcLen + <i32>BLOCK_MAX - 1) / <i32>BLOCK_MAX
  return 7 + 4 + srcLen + 4 * blocks
}

/**
 * Writes one sequence (literals anchor..ip, then a match of length ml at distance off; ml = 0
 * means "last literals only"). Returns the new output pointer, or 0 if it would pass oend.
 */
// @ts-ignore: decorator
@inline
function emitSequence(op: usize, oend: usize, anchor: usize, ip: usize, off: usize, ml: usize): usize {
  const litLen = ip - anchor
  if (op + litLen + litLen / 255 + ml / 255 + 16 > oend) return 0
  const token = op++
  let t: u32
  if (litLen >= 15) {
    t = 15 << 4
    let l = litLen - 15
    while (l >= 255) {
      store<u8>(op++, 255)
      l -= 255
    }
    store<u8>(op++, <u8>l)
  } else {
    t = <u32>litLen << 4
  }
  // wild: reads end before ip + 8 <= block end - 4, writes before op + litLen + 8 (room checked)
  copyLiteral(op, anchor, litLen, litLen <= 64)
  op += litLen
  if (ml != 0) {
    store<u16>(op, <u16>off)
    op += 2
    let m = ml - MINMATCH
    if (m >= 15) {
      t |= 15
      m -= 15
      while (m >= 255) {
        store<u8>(op++, 255)
        m -= 255
      }
      store<u8>(op++, <u8>m)
    } else {
      t |= <u32>m
    }
  }
  store<u8>(token, <u8>t)
  return op
}

/** Last literals of a block (no 8-byte over-read). Returns new op or 0. */
function emitLastLiterals(op: usize, oend: usize, anchor: usize, be: usize): usize {
  const litLen = be - anchor
  if (op + 1 + litLen + litLen / 255 + 1 > oend) return 0
  if (litLen >= 15) {
    store<u8>(op++, 15 << 4)
    let l = litLen - 15
    while (l >= 255) {
      store<u8>(op++, 255)
      l -= 255
    }
    store<u8>(op++, <u8>l)
  } else {
    store<u8>(op++, <u8>(litLen << 4))
  }
  memory.copy(op, anchor, litLen)
  return op + litLen
}

/**
 * Looks up and replaces the fast table's entry for position p (whose first 4 bytes are seq) and
 * returns the candidate match source. A stale key falls back to vb + base, the block start (a
 * real, harmless candidate), so that a probe takes a single, rarely taken branch: a branch on
 * staleness mispredicts about half the time while the table fills up.
 */
// @ts-ignore: decorator
@inline
function fastProbe(p: usize, seq: u32, vb: usize, base: u32): usize {
  const slot = FAST_TABLE + (hashFast(seq) << 1)
  const key = <u32>load<u16>(slot)
  store<u16>(slot, <u16>(p - vb))
  return vb + <usize>max(key, base)
}

/** Fast (greedy, single hash probe, skip acceleration) LZ4 block compression of bs..be. */
function compressBlockFast(bs: usize, be: usize, op: usize, oend: usize): usize {
  let anchor = bs
  if (be - bs >= MFLIMIT + 1) {
    const mflimit = be - MFLIMIT
    const matchlimit = be - LASTLITERALS
    if (fastEpoch + <u32>(be - bs) > 0xffff) {
      memory.fill(FAST_TABLE, 0, 2 << FAST_HASH_LOG)
      fastEpoch = 1
    }
    const base = fastEpoch
    fastEpoch += <u32>(be - bs)
    // key = position - vb; earlier blocks' and calls' keys are below base
    const vb = bs - <usize>base
    store<u16>(FAST_TABLE + (hashFast(load<u32>(bs)) << 1), <u16>base)
    // every candidate lies in bs..ip - 1 (a fallback to bs included), so bs itself is not probed
    let ip = bs + 1
    while (true) {
      let ref: usize
      // The first 64 probes after a match (before skip acceleration) are at consecutive
      // positions: four per 8-byte load. On batches of short records these are most probes.
      const start = ip
      const quadsEnd = ip + min<usize>(64, (mflimit + 1 - ip) & ~3)
      while (true) {
        if (ip >= quadsEnd) {
          let searchNb: usize = (1 << 6) + ip - start
          while (true) {
            if (ip > mflimit) return emitLastLiterals(op, oend, anchor, be)
            const seq = load<u32>(ip)
            ref = fastProbe(ip, seq, vb, base)
            if (load<u32>(ref) == seq) break
            ip += searchNb++ >> 6
          }
          break
        }
        const seq8 = load<u64>(ip)
        ref = fastProbe(ip, <u32>seq8, vb, base)
        if (load<u32>(ref) == <u32>seq8) break
        ip++
        ref = fastProbe(ip, <u32>(seq8 >> 8), vb, base)
        if (load<u32>(ref) == <u32>(seq8 >> 8)) break
        ip++
        ref = fastProbe(ip, <u32>(seq8 >> 16), vb, base)
        if (load<u32>(ref) == <u32>(seq8 >> 16)) break
        ip++
        ref = fastProbe(ip, <u32>(seq8 >> 24), vb, base)
        if (load<u32>(ref) == <u32>(seq8 >> 24)) break
        ip++
      }
      while (ip > anchor && ref > bs && load<u8>(ip - 1) == load<u8>(ref - 1)) {
        ip--
        ref--
      }
      const ml = MINMATCH + commonPrefix(ip + MINMATCH, ref + MINMATCH, matchlimit - ip - MINMATCH)
      op = emitSequence(op, oend, anchor, ip, ip - ref, ml)
      if (op == 0) return 0
      ip += ml
      anchor = ip
      if (ip > mflimit) break
      store<u16>(FAST_TABLE + (hashFast(load<u32>(ip - 2)) << 1), <u16>(ip - 2 - vb))
    }
  }
  return emitLastLiterals(op, oend, anchor, be)
}

let hcNext: usize = 0
let hcMatchRef: usize = 0

// @ts-ignore: decorator
@inline
function hcInsertUpTo(src: usize, target: usize, base: u32, minKey: u32): void {
  let p = hcNext
  while (p < target) {
    const slot = HC_HEAD + (hashHC(load<u32>(p)) << 2)
    const key = load<u32>(slot)
    const me: u32 = base + <u32>(p - src)
    let delta: u32 = 0
    if (key >= minKey) {
      const d = me - key
      if (d <= <u32>MAX_DIST) delta = d
    }
    store<u16>(HC_CHAIN + ((<usize>me & 0xffff) << 1), <u16>delta)
    store<u32>(slot, me)
    p++
  }
  hcNext = p
}

/** Longest match for ip (length, or < MINMATCH if none); the match start goes to hcMatchRef. */
function hcFindLongest(src: usize, ip: usize, matchlimit: usize, base: u32, minKey: u32, attempts: i32): usize {
  hcInsertUpTo(src, ip, base, minKey)
  let best: usize = MINMATCH - 1
  const maxLen = matchlimit - ip
  const seq = load<u32>(ip)
  let key = load<u32>(HC_HEAD + (hashHC(seq) << 2))
  while (key >= minKey && attempts-- > 0) {
    const r = src + <usize>(key - base)
    if (ip - r > MAX_DIST) break
    if (load<u8>(r + best) == load<u8>(ip + best) && load<u32>(r) == seq) {
      const l = MINMATCH + commonPrefix(ip + MINMATCH, r + MINMATCH, maxLen - MINMATCH)
      if (l > best) {
        best = l
        hcMatchRef = r
        if (l >= maxLen) break
      }
    }
    const d = <u32>load<u16>(HC_CHAIN + ((<usize>key & 0xffff) << 1))
    if (d == 0 || d > key) break
    key -= d
  }
  return best
}

/** Hash-chain LZ4 block compression with one-step lazy matching. */
function compressBlockHC(src: usize, bs: usize, be: usize, op: usize, oend: usize, base: u32, attempts: i32): usize {
  let anchor = bs
  if (be - bs >= MFLIMIT + 1) {
    const mflimit = be - MFLIMIT
    const matchlimit = be - LASTLITERALS
    const minKey: u32 = base + <u32>(bs - src)
    hcNext = bs
    let ip = bs
    while (ip <= mflimit) {
      let ml = hcFindLongest(src, ip, matchlimit, base, minKey, attempts)
      if (ml < MINMATCH) {
        ip++
        continue
      }
      let ref = hcMatchRef
      // lazy evaluation: prefer a longer match starting one (or, if clearly longer, two) bytes later
      while (ip + 1 <= mflimit) {
        const ml1 = hcFindLongest(src, ip + 1, matchlimit, base, minKey, attempts)
        if (ml1 > ml) {
          ip++
          ml = ml1
          ref = hcMatchRef
          continue
        }
        if (ip + 2 > mflimit) break
        const ml2 = hcFindLongest(src, ip + 2, matchlimit, base, minKey, attempts)
        if (ml2 <= ml + 1) break
        ip += 2
        ml = ml2
        ref = hcMatchRef
      }
      while (ip > anchor && ref > bs && load<u8>(ip - 1) == load<u8>(ref - 1)) {
        ip--
        ref--
        ml++
      }
      op = emitSequence(op, oend, anchor, ip, ip - ref, ml)
      if (op == 0) return 0
      ip += ml
      anchor = ip
    }
  }
  return emitLastLiterals(op, oend, anchor, be)
}

/** LZ4 frame compression; returns bytes written or E_DST_TOO_SMALL. */
export function lz4CompressInto(level: i32, src: usize, srcLen: i32, dst: usize, dstCap: i32): i32 {
  if (srcLen < 0 || dstCap < 11) return E_DST_TOO_SMALL
  if (level <= 0) level = LZ4_DEFAULT_LEVEL
  if (level > 17) level = 17
  // Like Kafka's Lz4BlockOutputStream: the default level uses the fast compressor, every other
  // level the high-compression one (search depth 2 for levels 1-2, 2^(level-1) from level 3).
  const hc = level != LZ4_DEFAULT_LEVEL
  const attempts: i32 = level <= 2 ? 2 : 1 << min(level - 1, 12)

  store<u32>(dst, MAGIC)
  store<u8>(dst, 0x60, 4) // version 01, block independence
  store<u8>(dst, 0x40, 5) // 64 KiB max block size
  store<u8>(dst, <u8>((xxh32(dst + 4, 2, 0) >> 8) & 0xff), 6)
  let op = dst + 7
  const oend = dst + <usize>dstCap

  if (<u64>epoch + <u64>srcLen + 2 >= 0xf000_0000) {
    memory.fill(HC_HEAD, 0, 4 << HC_HASH_LOG)
    epoch = 1
  }
  const base = epoch
  epoch += <u32>srcLen + 1

  const end = src + <usize>srcLen
  let bs = src
  while (bs < end) {
    const blen = min<usize>(BLOCK_MAX, end - bs)
    const be = bs + blen
    if (op + 4 > oend) return E_DST_TOO_SMALL
    // a compressed block must be smaller than the stored form to be worth it
    const lim = min<usize>(oend, op + 4 + blen - 1)
    const r = hc
      ? compressBlockHC(src, bs, be, op + 4, lim, base, attempts)
      : compressBlockFast(bs, be, op + 4, lim)
    if (r == 0) {
      if (op + 4 + blen > oend) return E_DST_TOO_SMALL
      store<u32>(op, <u32>blen | 0x80000000)
      memory.copy(op + 4, bs, blen)
      op += 4 + blen
    } else {
      store<u32>(op, <u32>(r - op - 4))
      op = r
    }
    bs = be
  }
  if (op + 4 > oend) return E_DST_TOO_SMALL
  store<u32>(op, 0)
  return <i32>(op + 4 - dst)
}

let decOut: usize = 0

/**
 * Decodes one LZ4 block ip[0..size) to op, never writing at or past olim and never reading
 * a match before lowLimit. overflow is the code returned when the output passes olim.
 */
function decodeBlock(ip: usize, size: usize, op: usize, olim: usize, oend: usize, lowLimit: usize, overflow: i32): i32 {
  const iend = ip + size
  while (true) {
    if (ip >= iend) return E_CORRUPT
    const token = <usize>load<u8>(ip++)
    let litLen = token >> 4
    if (litLen == 15) {
      let b: usize
      do {
        if (ip >= iend) return E_CORRUPT
        b = <usize>load<u8>(ip++)
        litLen += b
      } while (b == 255)
    }
    if (litLen > iend - ip) return E_CORRUPT
    if (litLen > olim - op) return overflow
    copyLiteral(op, ip, litLen, litLen <= 64 && iend - ip >= litLen + 8 && oend - op >= litLen + 8)
    ip += litLen
    op += litLen
    if (ip == iend) break // the last sequence has literals only
    if (iend - ip < 2) return E_CORRUPT
    const off = <usize>load<u16>(ip)
    ip += 2
    if (off == 0 || off > op - lowLimit) return E_CORRUPT
    let ml = token & 15
    if (ml == 15) {
      let b: usize
      do {
        if (ip >= iend) return E_CORRUPT
        b = <usize>load<u8>(ip++)
        ml += b
      } while (b == 255)
    }
    ml += MINMATCH
    if (ml > olim - op) return overflow
    copyMatch(op, off, ml, op + ml + 8 <= oend)
    op += ml
  }
  decOut = op
  return 0
}

/** Reads LZ4 frames (concatenated, skippable frames skipped). Bytes written or a negative code. */
export function lz4DecompressInto(src: usize, srcLen: i32, dst: usize, dstCap: i32): i32 {
  if (srcLen <= 0) return E_TRUNCATED
  let ip = src
  const iend = src + <usize>srcLen
  let op = dst
  const oend = dst + <usize>max(dstCap, 0)
  while (ip < iend) {
    if (iend - ip < 4) return E_TRUNCATED
    const magic = load<u32>(ip)
    if ((magic & 0xfffffff0) == 0x184d2a50) {
      if (iend - ip < 8) return E_TRUNCATED
      const skip = <usize>load<u32>(ip, 4)
      if (skip > iend - ip - 8) return E_TRUNCATED
      ip += 8 + skip
      continue
    }
    if (magic != MAGIC) return E_CORRUPT
    ip += 4
    if (iend - ip < 3) return E_TRUNCATED
    const flg = <u32>load<u8>(ip)
    const bd = <u32>load<u8>(ip, 1)
    if ((flg >> 6) != 1 || (flg & 2) != 0 || (bd & 0x8f) != 0) return E_CORRUPT
    const bsCode = (bd >> 4) & 7
    if (bsCode < 4) return E_CORRUPT
    const blockMax = <usize>1 << (8 + 2 * bsCode)
    const hasSize = (flg & 8) != 0
    const hdrLen: usize = 2 + (hasSize ? 8 : 0) + ((flg & 1) != 0 ? 4 : 0)
    if (iend - ip < hdrLen + 1) return E_TRUNCATED
    if (((xxh32(ip, hdrLen, 0) >> 8) & 0xff) != <u32>load<u8>(ip + hdrLen)) return E_CHECKSUM
    if ((flg & 1) != 0) return E_UNSUPPORTED
    const contentSize: u64 = hasSize ? load<u64>(ip, 2) : 0
    ip += hdrLen + 1
    const independent = (flg & 0x20) != 0
    const blockChecksum = (flg & 0x10) != 0
    const contentChecksum = (flg & 4) != 0
    const frameStart = op
    while (true) {
      if (iend - ip < 4) return E_TRUNCATED
      const word = load<u32>(ip)
      ip += 4
      if (word == 0) break
      const size = <usize>(word & 0x7fffffff)
      if (size > blockMax) return E_CORRUPT
      if (size > iend - ip) return E_TRUNCATED
      if (blockChecksum) {
        if (iend - ip - size < 4) return E_TRUNCATED
        if (xxh32(ip, size, 0) != load<u32>(ip + size)) return E_CHECKSUM
      }
      if ((word & 0x80000000) != 0) {
        if (size > oend - op) return E_DST_TOO_SMALL
        memory.copy(op, ip, size)
        op += size
      } else {
        let olim = op + blockMax
        let overflow = E_CORRUPT
        if (blockMax > oend - op) {
          olim = oend
          overflow = E_DST_TOO_SMALL
        }
        const rc = decodeBlock(ip, size, op, olim, oend, independent ? op : frameStart, overflow)
        if (rc < 0) return rc
        op = decOut
      }
      ip += size + (blockChecksum ? 4 : 0)
    }
    if (contentChecksum) {
      if (iend - ip < 4) return E_TRUNCATED
      if (xxh32(frameStart, op - frameStart, 0) != load<u32>(ip)) return E_CHECKSUM
      ip += 4
    }
    if (hasSize && contentSize != <u64>(op - frameStart)) return E_CORRUPT
  }
  return <i32>(op - dst)
}

/**
 * Capacity that is enough to decompress src: the content size when the frame has one,
 * else a walk over the block headers (stored blocks exact, compressed blocks at most the
 * frame's block size). -1 if the headers cannot be walked.
 */
export function lz4DecompressedSizeHint(src: usize, srcLen: i32): i32 {
  let ip = src
  const iend = src + <usize>max(srcLen, 0)
  let total: u64 = 0
  while (ip < iend) {
    if (iend - ip < 7) return -1
    const magic = load<u32>(ip)
    if ((magic & 0xfffffff0) == 0x184d2a50) {
      if (iend - ip < 8) return -1
      ip += 8 + <usize>load<u32>(ip, 4)
      continue
    }
    if (magic != MAGIC) return -1
    const flg = <u32>load<u8>(ip, 4)
    const blockMax = <u64>1 << (8 + 2 * ((<u32>load<u8>(ip, 5) >> 4) & 7))
    const hdrLen: usize = 2 + ((flg & 8) != 0 ? 8 : 0) + ((flg & 1) != 0 ? 4 : 0)
    if (iend - ip < 4 + hdrLen + 1) return -1
    const hasSize = (flg & 8) != 0
    if (hasSize) total += load<u64>(ip, 6)
    ip += 4 + hdrLen + 1
    while (true) {
      if (iend - ip < 4) return -1
      const word = load<u32>(ip)
      ip += 4
      if (word == 0) break
      const size = <usize>(word & 0x7fffffff)
      if (!hasSize) total += (word & 0x80000000) != 0 ? <u64>size : blockMax
      if (size > iend - ip) return -1
      ip += size + ((flg & 0x10) != 0 ? 4 : 0)
    }
    if ((flg & 4) != 0) ip += 4
    if (total > 0x7fffffff) return -1
  }
  return <i32>total
}

/**
 * Test hook: moves the hash-table epochs (to exercise their wrap-around): the HC one to e, the
 * fast one as far below its limit (0xffff) as e is below 0xf000_0000, but never back below keys
 * already in its table. Not in the product exports.
 */
export function lz4SetEpochForTest(e: u32): void {
  epoch = e
  fastEpoch = max(fastEpoch, 0xffff - min(0xf000_0000 - e, 0xfffe))
}
