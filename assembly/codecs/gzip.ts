// gzip (RFC 1952) around deflate.ts: 10-byte header, raw DEFLATE, CRC-32 (IEEE) + ISIZE.
// Levels follow Java's compression.gzip.level: -1 (or LEVEL_DEFAULT) = 6, 1..9 (0 = stored).
// The reader validates header flags, CRC-32 and ISIZE, reads concatenated members, and (like
// java.util.zip.GZIPInputStream) stops at trailing bytes that do not start another member.

import { E_DST_TOO_SMALL, E_TRUNCATED, E_CORRUPT, E_CHECKSUM } from './common'
import { deflateRaw, deflateBound, inflateRaw, inflateEnd } from './deflate'

export const GZIP_DEFAULT_LEVEL: i32 = 6

// CRC-32 (reflected 0xEDB88320), slicing by 8
const CRC_TABLE: usize = memory.data(8 * 256 * 4, 16)
let crcInit = false

function initCrc(): void {
  for (let i: u32 = 0; i < 256; i++) {
    let c = i
    for (let k = 0; k < 8; k++) c = (c & 1) != 0 ? 0xedb88320 ^ (c >> 1) : c >> 1
    store<u32>(CRC_TABLE + (<usize>i << 2), c)
  }
  for (let i: u32 = 0; i < 256; i++) {
    let c = load<u32>(CRC_TABLE + (<usize>i << 2))
    for (let t: u32 = 1; t < 8; t++) {
      c = load<u32>(CRC_TABLE + (<usize>(c & 0xff) << 2)) ^ (c >> 8)
      store<u32>(CRC_TABLE + (<usize>(t * 256 + i) << 2), c)
    }
  }
  crcInit = true
}

// @ts-ignore: decorator
@inline
function T(t: u32, i: u32): u32 {
  return load<u32>(CRC_TABLE + (<usize>((t << 8) | i) << 2))
}

/** CRC-32 (IEEE) of p[0..len), continuing from crc (0 to start). */
export function crc32(crc: u32, p: usize, len: usize): u32 {
  if (!crcInit) initCrc()
  let c = ~crc
  const end = p + len
  while (p + 8 <= end) {
    const a = load<u32>(p) ^ c
    const b = load<u32>(p, 4)
    c = T(7, a & 0xff) ^ T(6, (a >> 8) & 0xff) ^ T(5, (a >> 16) & 0xff) ^ T(4, a >> 24) ^
      T(3, b & 0xff) ^ T(2, (b >> 8) & 0xff) ^ T(1, (b >> 16) & 0xff) ^ T(0, b >> 24)
    p += 8
  }
  while (p < end) {
    c = T(0, (c ^ <u32>load<u8>(p)) & 0xff) ^ (c >> 8)
    p++
  }
  return ~c
}

export function gzipCompressBound(srcLen: i32): i32 {
  const b = deflateBound(srcLen)
  return b < 0 || b > 0x7fffffff - 18 ? -1 : b + 18
}

/** gzip member of src[0..srcLen); bytes written or E_DST_TOO_SMALL. */
export function gzipCompressInto(level: i32, src: usize, srcLen: i32, dst: usize, dstCap: i32): i32 {
  if (level < 0 || level > 9) level = GZIP_DEFAULT_LEVEL
  if (srcLen < 0 || dstCap < 18) return E_DST_TOO_SMALL
  store<u32>(dst, 0x00088b1f) // ID1 ID2 CM=8 FLG=0
  store<u32>(dst, 0, 4) // MTIME
  store<u8>(dst, level == 9 ? 2 : level == 1 ? 4 : 0, 8) // XFL
  store<u8>(dst, 255, 9) // OS unknown
  const n = deflateRaw(level, src, srcLen, dst + 10, dstCap - 18)
  if (n < 0) return n
  const t = dst + 10 + <usize>n
  store<u32>(t, crc32(0, src, <usize>srcLen))
  store<u32>(t, <u32>srcLen, 4)
  return n + 18
}

/** One or more gzip members; bytes written or a negative code. */
export function gzipDecompressInto(src: usize, srcLen: i32, dst: usize, dstCap: i32): i32 {
  if (srcLen <= 0) return E_TRUNCATED
  let ip = src
  const iend = src + <usize>srcLen
  let op = dst
  const oend = dst + <usize>max(dstCap, 0)
  let members = 0
  while (true) {
    const avail = iend - ip
    if (members > 0 && (avail < 2 || load<u16>(ip) != 0x8b1f)) break
    if (avail < 10) return avail >= 1 && load<u8>(ip) != 0x1f ? E_CORRUPT : E_TRUNCATED
    if (load<u16>(ip) != 0x8b1f || load<u8>(ip, 2) != 8) return E_CORRUPT
    const flg = <u32>load<u8>(ip, 3)
    if ((flg & 0xe0) != 0) return E_CORRUPT
    const hstart = ip
    ip += 10
    if ((flg & 4) != 0) {
      // FEXTRA
      if (iend - ip < 2) return E_TRUNCATED
      const xlen = <usize>load<u16>(ip)
      ip += 2
      if (xlen > iend - ip) return E_TRUNCATED
      ip += xlen
    }
    if ((flg & 8) != 0) {
      // FNAME
      while (true) {
        if (ip >= iend) return E_TRUNCATED
        if (load<u8>(ip++) == 0) break
      }
    }
    if ((flg & 16) != 0) {
      // FCOMMENT
      while (true) {
        if (ip >= iend) return E_TRUNCATED
        if (load<u8>(ip++) == 0) break
      }
    }
    if ((flg & 2) != 0) {
      // FHCRC: low 16 bits of the CRC-32 of the header so far
      if (iend - ip < 2) return E_TRUNCATED
      if ((crc32(0, hstart, ip - hstart) & 0xffff) != <u32>load<u16>(ip)) return E_CHECKSUM
      ip += 2
    }
    const n = inflateRaw(ip, iend - ip, op, oend - op)
    if (n < 0) return n
    ip = inflateEnd
    if (iend - ip < 8) return E_TRUNCATED
    if (crc32(0, op, <usize>n) != load<u32>(ip)) return E_CHECKSUM
    if (<u32>n != load<u32>(ip, 4)) return E_CHECKSUM
    ip += 8
    op += <usize>n
    members++
  }
  return <i32>(op - dst)
}

/** ISIZE of the last member (exact for a single member), or -1. */
export function gzipDecompressedSizeHint(src: usize, srcLen: i32): i32 {
  if (srcLen < 18) return -1
  const n = load<u32>(src + <usize>srcLen - 4)
  return n > 0x7fffffff ? -1 : <i32>n
}
