// Snappy: raw block format (greedy hash-table matcher in the style of the reference
// implementation: 64 KiB fragments, literal / copy-1 / copy-2 tags) wrapped in xerial framing
// as snappy-java's SnappyOutputStream writes it and Kafka reads it:
//   82 53 4E 41 50 50 59 00 | int32 BE version 1 | int32 BE compatible 1 |
//   chunks [int32 BE compressed length][raw snappy block]
// We write one 64 KiB fragment per chunk (snappy-java reads chunks up to 512 MiB).
// The reader takes xerial streams (also concatenated ones) and bare raw snappy blocks.

import { E_DST_TOO_SMALL, E_TRUNCATED, E_CORRUPT, commonPrefix, copyLiteral, copyMatch, storeU32BE, loadU32BE } from './common'

const FRAGMENT: usize = 65536
const MAX_HASH_LOG: u32 = 14
const INPUT_MARGIN: usize = 15
const TABLE: usize = memory.data(2 << MAX_HASH_LOG, 16) // u16 offsets from the fragment start
const MAGIC_LO: u64 = 0x0059_5050_414e_5382 // 82 53 4E 41 50 50 59 00 read as LE u64

/** Raw snappy worst case (reference formula). */
// @ts-ignore: decorator
@inline
function maxRaw(n: usize): usize {
  return 32 + n + n / 6
}

export function snappyCompressBound(srcLen: i32): i32 {
  if (srcLen < 0) return E_DST_TOO_SMALL
  const chunks = (srcLen + <i32>FRAGMENT - 1) / <i32>FRAGMENT
  return 16 + chunks * 4 + chunks * 32 + srcLen + srcLen / 6 + 6
}

// @ts-ignore: decorator
@inline
function hash(p: usize, shift: u32): usize {
  return <usize>((load<u32>(p) * 0x1e35a7bd) >> shift)
}

/** Literal element; returns new op or 0 if it does not fit. */
// @ts-ignore: decorator
@inline
function emitLiteral(op: usize, oend: usize, lit: usize, len: usize, canOverread: bool): usize {
  if (op + len + 21 > oend) return 0
  const n = len - 1
  if (n < 60) {
    store<u8>(op++, <u8>(n << 2))
    if (canOverread) {
      // len <= 60: reads end before ip + 8 <= fragment end - 7, writes before op + len + 8 (room checked)
      copyLiteral(op, lit, len, true)
      return op + len
    }
  } else if (n < 256) {
    store<u8>(op, 60 << 2)
    store<u8>(op, <u8>n, 1)
    op += 2
  } else if (n < 65536) {
    store<u8>(op, 61 << 2)
    store<u16>(op, <u16>n, 1)
    op += 3
  } else if (n < 16777216) {
    store<u8>(op, 62 << 2)
    store<u16>(op, <u16>n, 1)
    store<u8>(op, <u8>(n >> 16), 3)
    op += 4
  } else {
    store<u8>(op, 63 << 2)
    store<u32>(op, <u32>n, 1)
    op += 5
  }
  memory.copy(op, lit, len)
  return op + len
}

// @ts-ignore: decorator
@inline
function emitCopy(op: usize, oend: usize, off: usize, len: usize): usize {
  if (op + 3 * (len / 60 + 2) > oend) return 0
  while (len >= 68) {
    store<u8>(op, 2 | ((64 - 1) << 2))
    store<u16>(op, <u16>off, 1)
    op += 3
    len -= 64
  }
  if (len > 64) {
    store<u8>(op, 2 | ((60 - 1) << 2))
    store<u16>(op, <u16>off, 1)
    op += 3
    len -= 60
  }
  if (len < 12 && off < 2048) {
    store<u8>(op, <u8>(1 | ((len - 4) << 2) | ((off >> 8) << 5)))
    store<u8>(op, <u8>off, 1)
    op += 2
  } else {
    store<u8>(op, <u8>(2 | ((len - 1) << 2)))
    store<u16>(op, <u16>off, 1)
    op += 3
  }
  return op
}

/** Compresses one fragment (<= 64 KiB) as raw snappy elements (no length varint). 0 = no room. */
function compressFragment(fs: usize, fe: usize, op: usize, oend: usize): usize {
  const len = fe - fs
  let nextEmit = fs
  if (len >= INPUT_MARGIN) {
    let hashLog: u32 = 8
    while (hashLog < MAX_HASH_LOG && (<usize>1 << hashLog) < len) hashLog++
    memory.fill(TABLE, 0, <usize>2 << hashLog)
    const shift = 32 - hashLog
    const ipLimit = fe - INPUT_MARGIN
    let ip = fs + 1
    let nextHash = hash(ip, shift)
    while (true) {
      let skip: u32 = 32
      let nextIp = ip
      let cand: usize = 0
      let found = false
      while (true) {
        ip = nextIp
        const h = nextHash
        const between = <usize>(skip >> 5)
        skip += <u32>between
        nextIp = ip + between
        if (nextIp > ipLimit) break
        nextHash = hash(nextIp, shift)
        const slot = TABLE + (h << 1)
        cand = fs + <usize>load<u16>(slot)
        store<u16>(slot, <u16>(ip - fs))
        if (load<u32>(ip) == load<u32>(cand)) {
          found = true
          break
        }
      }
      if (!found) break
      op = emitLiteral(op, oend, nextEmit, ip - nextEmit, true)
      if (op == 0) return 0
      let done = false
      while (true) {
        const matched = 4 + commonPrefix(ip + 4, cand + 4, fe - ip - 4)
        op = emitCopy(op, oend, ip - cand, matched)
        if (op == 0) return 0
        ip += matched
        nextEmit = ip
        if (ip >= ipLimit) {
          done = true
          break
        }
        store<u16>(TABLE + (hash(ip - 1, shift) << 1), <u16>(ip - 1 - fs))
        const slot = TABLE + (hash(ip, shift) << 1)
        cand = fs + <usize>load<u16>(slot)
        store<u16>(slot, <u16>(ip - fs))
        if (load<u32>(ip) != load<u32>(cand)) break
      }
      if (done) break
      ip++
      nextHash = hash(ip, shift)
    }
  }
  if (nextEmit < fe) {
    op = emitLiteral(op, oend, nextEmit, fe - nextEmit, false)
    if (op == 0) return 0
  }
  return op
}

/** Xerial-framed snappy; returns bytes written or E_DST_TOO_SMALL. */
export function snappyCompressInto(src: usize, srcLen: i32, dst: usize, dstCap: i32): i32 {
  if (srcLen < 0 || dstCap < 16) return E_DST_TOO_SMALL
  store<u64>(dst, MAGIC_LO)
  storeU32BE(dst + 8, 1)
  storeU32BE(dst + 12, 1)
  let op = dst + 16
  const oend = dst + <usize>dstCap
  const end = src + <usize>srcLen
  let fs = src
  while (fs < end) {
    const fe = fs + min<usize>(FRAGMENT, end - fs)
    const chunk = op
    op += 4
    if (op + 5 > oend) return E_DST_TOO_SMALL
    // uncompressed length varint
    let v = <u32>(fe - fs)
    while (v >= 0x80) {
      store<u8>(op++, <u8>(v | 0x80))
      v >>= 7
    }
    store<u8>(op++, <u8>v)
    op = compressFragment(fs, fe, op, oend)
    if (op == 0) return E_DST_TOO_SMALL
    storeU32BE(chunk, <u32>(op - chunk - 4))
    fs = fe
  }
  return <i32>(op - dst)
}

/** Decodes one raw snappy block ip..iend into op..oend; bytes written or a negative code. */
function decodeRaw(ip: usize, iend: usize, op: usize, oend: usize): i32 {
  // uncompressed length varint (<= 32 bits)
  let ulen: u64 = 0
  let shift: u64 = 0
  while (true) {
    if (ip >= iend) return E_TRUNCATED
    const b = <u64>load<u8>(ip++)
    ulen |= (b & 0x7f) << shift
    if (b < 0x80) break
    shift += 7
    if (shift > 28) return E_CORRUPT
  }
  if (ulen > 0x7fffffff) return E_CORRUPT
  if (ulen > <u64>(oend - op)) return E_DST_TOO_SMALL
  const ostart = op
  const olim = op + <usize>ulen
  while (ip < iend) {
    const tag = <usize>load<u8>(ip++)
    const kind = tag & 3
    if (kind == 0) {
      let len = (tag >> 2) + 1
      if (len > 60) {
        const nb = len - 60
        if (iend - ip < nb) return E_TRUNCATED
        let v: usize = 0
        for (let i: usize = 0; i < nb; i++) v |= <usize>load<u8>(ip + i) << (i << 3)
        ip += nb
        if (v >= 0x7fffffff) return E_CORRUPT
        len = v + 1
      }
      if (len > olim - op) return E_CORRUPT
      if (len > iend - ip) return E_TRUNCATED
      copyLiteral(op, ip, len, len <= 64 && iend - ip >= len + 8 && oend - op >= len + 8)
      ip += len
      op += len
      continue
    }
    let len: usize
    let off: usize
    if (kind == 1) {
      if (ip >= iend) return E_TRUNCATED
      len = 4 + ((tag >> 2) & 7)
      off = ((tag >> 5) << 8) | <usize>load<u8>(ip++)
    } else if (kind == 2) {
      if (iend - ip < 2) return E_TRUNCATED
      len = (tag >> 2) + 1
      off = <usize>load<u16>(ip)
      ip += 2
    } else {
      if (iend - ip < 4) return E_TRUNCATED
      len = (tag >> 2) + 1
      off = <usize>load<u32>(ip)
      ip += 4
    }
    if (off == 0 || off > op - ostart) return E_CORRUPT
    if (len > olim - op) return E_CORRUPT
    copyMatch(op, off, len, oend - op >= len + 8)
    op += len
  }
  if (op != olim) return E_TRUNCATED
  return <i32>(op - ostart)
}

// @ts-ignore: decorator
@inline
function isXerial(p: usize, avail: usize): bool {
  return avail >= 8 && load<u64>(p) == MAGIC_LO
}

/** Xerial-framed or raw snappy; bytes written or a negative code. */
export function snappyDecompressInto(src: usize, srcLen: i32, dst: usize, dstCap: i32): i32 {
  if (srcLen <= 0) return E_TRUNCATED
  const iend = src + <usize>srcLen
  const oend = dst + <usize>max(dstCap, 0)
  if (!isXerial(src, <usize>srcLen)) return decodeRaw(src, iend, dst, oend)
  let ip = src
  let op = dst
  while (ip < iend) {
    if (isXerial(ip, iend - ip)) {
      // a (further) stream header: snappy-java reads concatenated streams
      if (iend - ip < 16) return E_TRUNCATED
      ip += 16
      continue
    }
    if (iend - ip < 4) return E_TRUNCATED
    const clen = <usize>loadU32BE(ip)
    ip += 4
    if (clen > 0x7fffffff) return E_CORRUPT
    if (clen > iend - ip) return E_TRUNCATED
    const r = decodeRaw(ip, ip + clen, op, oend)
    if (r < 0) return r
    op += <usize>r
    ip += clen
  }
  return <i32>(op - dst)
}

/** Exact decompressed size (sum of the chunks' length varints), or -1. */
export function snappyDecompressedSizeHint(src: usize, srcLen: i32): i32 {
  if (srcLen <= 0) return -1
  const iend = src + <usize>srcLen
  let ip = src
  let total: u64 = 0
  const framed = isXerial(src, <usize>srcLen)
  while (ip < iend) {
    let blockEnd = iend
    if (framed) {
      if (isXerial(ip, iend - ip)) {
        ip += 16
        continue
      }
      if (iend - ip < 4) return -1
      const clen = <usize>loadU32BE(ip)
      ip += 4
      if (clen > iend - ip) return -1
      blockEnd = ip + clen
    }
    let v: u64 = 0
    let s: u64 = 0
    let p = ip
    while (true) {
      if (p >= blockEnd || s > 28) return -1
      const b = <u64>load<u8>(p++)
      v |= (b & 0x7f) << s
      if (b < 0x80) break
      s += 7
    }
    total += v
    if (total > 0x7fffffff) return -1
    if (!framed) break
    ip = blockEnd
  }
  return <i32>total
}
