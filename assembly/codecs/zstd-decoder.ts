// zstd frame decoder (RFC 8878): raw / RLE / compressed blocks, raw / RLE / Huffman / treeless
// literals (1 or 4 streams, weights direct or FSE), sequences with predefined / RLE / FSE / repeat
// tables, repeat offsets, skippable frames, concatenated frames, content checksum.
// Every read is bounds-checked: malformed input yields a negative code, never a trap or a hang.
// Output goes straight to dst (the whole output is the window); scratch is static.

import {
  ZSTD_MAGIC, BLOCK_SIZE_MAX, Z_DST_TOO_SMALL, Z_TRUNCATED, Z_CORRUPT, Z_CHECKSUM, Z_UNSUPPORTED,
  LL_BASE, LL_BITS, ML_BASE, ML_BITS, LL_DEFAULT_NORM, LL_DEFAULT_LOG, ML_DEFAULT_NORM, ML_DEFAULT_LOG,
  OF_DEFAULT_NORM, OF_DEFAULT_LOG, LL_MAX_SYMBOL, ML_MAX_SYMBOL, OF_MAX_SYMBOL, LL_MAX_LOG, ML_MAX_LOG,
  OF_MAX_LOG, highbit, fseBuildDTable, fseBuildDTableRle, fseReadNCount, ncountLog, ncountMaxSym,
} from './zstd-common'
import { xxh64 } from './zstd-xxh64'

const LITBUF: usize = memory.data(BLOCK_SIZE_MAX + 64, 16)
const HUFT: usize = memory.data(2048 * 2, 16)     // u16: symbol | nbBits << 8
const LLT: usize = memory.data(512 * 4, 16)
const MLT: usize = memory.data(512 * 4, 16)
const OFT: usize = memory.data(256 * 4, 16)
const WT: usize = memory.data(64 * 4, 16)         // FSE table for Huffman weights
const DNORM: usize = memory.data(256 * 2, 16)
const WEIGHTS: usize = memory.data(256 + 16, 16)

let hufOk = false
let hufBits = 0
let llLog = 0
let mlLog = 0
let ofLog = 0
let llOk = false
let mlOk = false
let ofOk = false
let rep0: u32 = 1
let rep1: u32 = 4
let rep2: u32 = 8

// ---- backward bit reader --------------------------------------------------------------------
let brSrc: usize = 0
let brLen: i32 = 0
let brRem: i32 = 0   // bits not yet consumed (negative: over-read)

/** Starts a backward stream on src[0..len); false if it has no final-bit marker. */
function brInit(src: usize, len: i32): bool {
  if (len < 1) return false
  const last = <u32>load<u8>(src + <usize>(len - 1))
  if (last == 0) return false
  brSrc = src
  brLen = len
  brRem = (len - 1) * 8 + highbit(last)
  return true
}

// @ts-ignore: decorator
@inline
function brWord(bitPos: i32): u64 {
  // 64 bits starting at bitPos >= 0, zero beyond the stream end.
  const byte = bitPos >> 3
  let v: u64
  if (byte + 8 <= brLen) {
    v = load<u64>(brSrc + <usize>byte)
  } else {
    v = 0
    for (let i = 7; i >= 0; i--) {
      v <<= 8
      if (byte + i < brLen) v |= <u64>load<u8>(brSrc + <usize>(byte + i))
    }
  }
  return v >> <u64>(bitPos & 7)
}

/** Bits [brRem - n, brRem) without consuming; bits below the stream start read as 0. n <= 32. */
// @ts-ignore: decorator
@inline
function brPeek(n: i32): u32 {
  if (n == 0) return 0
  const pos = brRem - n
  const mask: u64 = (<u64>1 << <u64>n) - 1
  if (pos >= 0) return <u32>(brWord(pos) & mask)
  if (brRem <= 0) return 0
  return <u32>((brWord(0) << <u64>(-pos)) & mask)
}

// @ts-ignore: decorator
@inline
function brRead(n: i32): u32 {
  const v = brPeek(n)
  brRem -= n
  return v
}

// ---- Huffman ----------------------------------------------------------------------------------

/** Reads a Huffman tree description at src[0..len); returns bytes used or an error. */
function readHuffTree(src: usize, len: i32): i32 {
  if (len < 1) return Z_CORRUPT
  const hb = <i32>load<u8>(src)
  let n = 0
  let used = 0
  if (hb < 128) {
    // FSE-compressed weights, hb bytes.
    if (hb == 0 || hb + 1 > len) return Z_CORRUPT
    const p = src + 1
    const r = fseReadNCount(p, hb, 15, 6, DNORM)
    if (r < 0) return r
    const log = ncountLog
    if (!fseBuildDTable(DNORM, ncountMaxSym, log, WT)) return Z_CORRUPT
    if (!brInit(p + <usize>r, hb - r)) return Z_CORRUPT
    let s1 = brRead(log)
    let s2 = brRead(log)
    if (brRem < 0) return Z_CORRUPT
    for (;;) {
      if (n > 253) return Z_CORRUPT
      let c = load<u32>(WT + (<usize>s1 << 2))
      store<u8>(WEIGHTS + <usize>n, <u8>c)
      n++
      s1 = (c >> 16) + brRead(<i32>((c >> 8) & 0xFF))
      if (brRem < 0) {
        store<u8>(WEIGHTS + <usize>n, <u8>load<u32>(WT + (<usize>s2 << 2)))
        n++
        break
      }
      c = load<u32>(WT + (<usize>s2 << 2))
      store<u8>(WEIGHTS + <usize>n, <u8>c)
      n++
      s2 = (c >> 16) + brRead(<i32>((c >> 8) & 0xFF))
      if (brRem < 0) {
        store<u8>(WEIGHTS + <usize>n, <u8>load<u32>(WT + (<usize>s1 << 2)))
        n++
        break
      }
    }
    used = 1 + hb
  } else {
    n = hb - 127
    const bytes = (n + 1) >> 1
    if (1 + bytes > len) return Z_CORRUPT
    for (let i = 0; i < n; i++) {
      const b = <u32>load<u8>(src + 1 + <usize>(i >> 1))
      store<u8>(WEIGHTS + <usize>i, <u8>((i & 1) ? (b & 15) : (b >> 4)))
    }
    used = 1 + bytes
  }
  // Weights -> table.
  let sum: u32 = 0
  for (let i = 0; i < n; i++) {
    const w = <u32>load<u8>(WEIGHTS + <usize>i)
    if (w > 11) return Z_CORRUPT
    if (w > 0) sum += <u32>1 << (w - 1)
  }
  if (sum == 0) return Z_CORRUPT
  const maxBits = highbit(sum) + 1
  if (maxBits > 11) return Z_CORRUPT
  const rest = (<u32>1 << <u32>maxBits) - sum
  if ((rest & (rest - 1)) != 0) return Z_CORRUPT
  store<u8>(WEIGHTS + <usize>n, <u8>(highbit(rest) + 1))
  const nsym = n + 1
  let hasOne = false
  for (let i = 0; i < nsym; i++) if (load<u8>(WEIGHTS + <usize>i) == 1) hasOne = true
  if (!hasOne) return Z_CORRUPT
  let idx = 0
  for (let w = 1; w <= maxBits; w++) {
    const cnt = 1 << (w - 1)
    const entry = <u16>(maxBits + 1 - w) << 8
    for (let s = 0; s < nsym; s++) {
      if (<i32>load<u8>(WEIGHTS + <usize>s) == w) {
        const e = entry | <u16>s
        for (let k = 0; k < cnt; k++) store<u16>(HUFT + (<usize>(idx + k) << 1), e)
        idx += cnt
      }
    }
  }
  if (idx != 1 << maxBits) return Z_CORRUPT
  hufBits = maxBits
  hufOk = true
  return used
}

/** Decodes `count` literals from the Huffman stream src[0..len) into out. */
function decodeHufStream(src: usize, len: i32, out: usize, count: i32): i32 {
  if (!brInit(src, len)) return Z_CORRUPT
  const bits = hufBits
  const mask: u64 = (<u64>1 << <u64>bits) - 1
  const fastLimit = (brLen - 8) * 8
  let i = 0
  for (; i < count; i++) {
    const pos = brRem - bits
    let v: u32
    if (pos >= 0 && pos < fastLimit) {
      v = <u32>((load<u64>(brSrc + <usize>(pos >> 3)) >> <u64>(pos & 7)) & mask)
    } else {
      v = brPeek(bits)
    }
    const e = <u32>load<u16>(HUFT + (<usize>v << 1))
    store<u8>(out + <usize>i, <u8>e)
    brRem -= <i32>(e >> 8)
    if (brRem < 0) return Z_CORRUPT
  }
  if (brRem != 0) return Z_CORRUPT
  return 0
}

// ---- sequences tables ----------------------------------------------------------------------

/** Builds one sequence table for `mode`; returns bytes used or an error. kind 0 LL, 1 OF, 2 ML. */
function buildSeqTable(kind: i32, mode: i32, src: usize, len: i32): i32 {
  const dt = kind == 0 ? LLT : kind == 1 ? OFT : MLT
  const maxSym = kind == 0 ? LL_MAX_SYMBOL : kind == 1 ? OF_MAX_SYMBOL : ML_MAX_SYMBOL
  let log = 0
  let used = 0
  if (mode == 0) {
    const norm = kind == 0 ? LL_DEFAULT_NORM : kind == 1 ? OF_DEFAULT_NORM : ML_DEFAULT_NORM
    log = kind == 0 ? LL_DEFAULT_LOG : kind == 1 ? OF_DEFAULT_LOG : ML_DEFAULT_LOG
    const ms = kind == 0 ? 35 : kind == 1 ? 28 : 52
    fseBuildDTable(norm, ms, log, dt)
  } else if (mode == 1) {
    if (len < 1) return Z_CORRUPT
    const s = <i32>load<u8>(src)
    if (s > maxSym) return Z_CORRUPT
    fseBuildDTableRle(s, dt)
    log = 0
    used = 1
  } else if (mode == 2) {
    const maxLog = kind == 0 ? LL_MAX_LOG : kind == 1 ? OF_MAX_LOG : ML_MAX_LOG
    const r = fseReadNCount(src, len, maxSym, maxLog, DNORM)
    if (r < 0) return r
    if (r > len) return Z_CORRUPT
    log = ncountLog
    if (!fseBuildDTable(DNORM, ncountMaxSym, log, dt)) return Z_CORRUPT
    used = r
  } else {
    const ok = kind == 0 ? llOk : kind == 1 ? ofOk : mlOk
    if (!ok) return Z_CORRUPT
    return 0
  }
  if (kind == 0) { llLog = log; llOk = true } else if (kind == 1) { ofLog = log; ofOk = true } else { mlLog = log; mlOk = true }
  return used
}

// @ts-ignore: decorator
@inline
function copyMatch(op: usize, off: usize, len: usize): void {
  const from = op - off
  if (off >= len) {
    memory.copy(op, from, len)
  } else if (off == 1) {
    memory.fill(op, load<u8>(from), len)
  } else if (off >= 8) {
    let done: usize = 0
    while (done < len) {
      const n = len - done < off ? len - done : off
      memory.copy(op + done, from + done, n)
      done += n
    }
  } else {
    for (let i: usize = 0; i < len; i++) store<u8>(op + i, load<u8>(from + i))
  }
}

// Block decoding results.
let outPos: usize = 0

/**
 * Decodes one compressed block src[0..size) to op. frameStart: first byte of this frame's output.
 * Sets outPos to the new output position; returns 0 or an error.
 */
function decodeBlock(src: usize, size: i32, op: usize, oend: usize, frameStart: usize, windowSize: u64, blockMax: i32): i32 {
  const end = src + <usize>size
  let ip = src
  if (size < 1) return Z_CORRUPT
  // Literals section.
  const b0 = <u32>load<u8>(ip)
  const ltype = b0 & 3
  const sf = (b0 >> 2) & 3
  let regen = 0
  let litPtr: usize = 0
  if (ltype <= 1) {
    let lhs = 1
    if (sf == 0 || sf == 2) {
      regen = <i32>(b0 >> 3)
    } else if (sf == 1) {
      if (size < 2) return Z_CORRUPT
      regen = <i32>((b0 >> 4) + (<u32>load<u8>(ip + 1) << 4))
      lhs = 2
    } else {
      if (size < 3) return Z_CORRUPT
      regen = <i32>((b0 >> 4) + (<u32>load<u8>(ip + 1) << 4) + (<u32>load<u8>(ip + 2) << 12))
      lhs = 3
    }
    if (regen > blockMax) return Z_CORRUPT
    ip += <usize>lhs
    if (ltype == 0) {
      if (<i32>(end - ip) < regen) return Z_CORRUPT
      litPtr = ip
      ip += <usize>regen
    } else {
      if (end - ip < 1) return Z_CORRUPT
      memory.fill(LITBUF, load<u8>(ip), <usize>regen)
      litPtr = LITBUF
      ip += 1
    }
  } else {
    let lhs = 3
    let csize = 0
    if (sf <= 1) {
      if (size < 3) return Z_CORRUPT
      const v = <u32>load<u16>(ip) | (<u32>load<u8>(ip + 2) << 16)
      regen = <i32>((v >> 4) & 0x3FF)
      csize = <i32>((v >> 14) & 0x3FF)
    } else if (sf == 2) {
      if (size < 4) return Z_CORRUPT
      const v = load<u32>(ip)
      regen = <i32>((v >> 4) & 0x3FFF)
      csize = <i32>(v >> 18)
      lhs = 4
    } else {
      if (size < 5) return Z_CORRUPT
      const v = <u64>load<u32>(ip) | (<u64>load<u8>(ip + 4) << 32)
      regen = <i32>((v >> 4) & 0x3FFFF)
      csize = <i32>((v >> 22) & 0x3FFFF)
      lhs = 5
    }
    if (regen > blockMax) return Z_CORRUPT
    ip += <usize>lhs
    if (<i32>(end - ip) < csize) return Z_CORRUPT
    const litEnd = ip + <usize>csize
    if (ltype == 2) {
      const r = readHuffTree(ip, csize)
      if (r < 0) return r
      ip += <usize>r
    } else if (!hufOk) {
      return Z_CORRUPT
    }
    const total = <i32>(litEnd - ip)
    if (sf == 0) {
      const r = decodeHufStream(ip, total, LITBUF, regen)
      if (r < 0) return r
    } else {
      if (total < 10) return Z_CORRUPT
      const s1 = <i32>load<u16>(ip)
      const s2 = <i32>load<u16>(ip + 2)
      const s3 = <i32>load<u16>(ip + 4)
      const s4 = total - 6 - s1 - s2 - s3
      if (s4 < 1) return Z_CORRUPT
      const seg = (regen + 3) >> 2
      const last = regen - 3 * seg
      if (last < 0) return Z_CORRUPT
      let p = ip + 6
      let r = decodeHufStream(p, s1, LITBUF, seg)
      if (r < 0) return r
      p += <usize>s1
      r = decodeHufStream(p, s2, LITBUF + <usize>seg, seg)
      if (r < 0) return r
      p += <usize>s2
      r = decodeHufStream(p, s3, LITBUF + <usize>(2 * seg), seg)
      if (r < 0) return r
      p += <usize>s3
      r = decodeHufStream(p, s4, LITBUF + <usize>(3 * seg), last)
      if (r < 0) return r
    }
    litPtr = LITBUF
    ip = litEnd
  }

  // Sequences section.
  if (ip >= end) return Z_CORRUPT
  let nbSeq = <i32>load<u8>(ip)
  ip++
  if (nbSeq >= 128) {
    if (nbSeq < 255) {
      if (ip >= end) return Z_CORRUPT
      nbSeq = ((nbSeq - 128) << 8) + <i32>load<u8>(ip)
      ip++
    } else {
      if (end - ip < 2) return Z_CORRUPT
      nbSeq = <i32>load<u16>(ip) + 0x7F00
      ip += 2
    }
  }
  const blockStart = op
  let lp = litPtr
  let litLeft = regen
  if (nbSeq > 0) {
    if (ip >= end) return Z_CORRUPT
    const modes = <i32>load<u8>(ip)
    ip++
    if ((modes & 3) != 0) return Z_CORRUPT
    let r = buildSeqTable(0, modes >> 6, ip, <i32>(end - ip))
    if (r < 0) return r
    ip += <usize>r
    r = buildSeqTable(1, (modes >> 4) & 3, ip, <i32>(end - ip))
    if (r < 0) return r
    ip += <usize>r
    r = buildSeqTable(2, (modes >> 2) & 3, ip, <i32>(end - ip))
    if (r < 0) return r
    ip += <usize>r
    if (!brInit(ip, <i32>(end - ip))) return Z_CORRUPT
    let llS = brRead(llLog)
    let ofS = brRead(ofLog)
    let mlS = brRead(mlLog)
    if (brRem < 0) return Z_CORRUPT
    const blockLimit = blockStart + <usize>blockMax
    for (let i = 0; i < nbSeq; i++) {
      const llE = load<u32>(LLT + (<usize>llS << 2))
      const mlE = load<u32>(MLT + (<usize>mlS << 2))
      const ofE = load<u32>(OFT + (<usize>ofS << 2))
      const ofCode = ofE & 0xFF
      // Offset_Value = (1 << ofCode) + ofCode bits (ofCode <= 31 by table construction).
      const ofv: u32 = (<u32>1 << ofCode) + brRead(<i32>ofCode)
      const mlCode = <usize>(mlE & 0xFF)
      const ml = load<u32>(ML_BASE + (mlCode << 2)) + brRead(<i32>load<u8>(ML_BITS + mlCode))
      const llCode = <usize>(llE & 0xFF)
      const ll = load<u32>(LL_BASE + (llCode << 2)) + brRead(<i32>load<u8>(LL_BITS + llCode))
      if (i != nbSeq - 1) {
        llS = (llE >> 16) + brRead(<i32>((llE >> 8) & 0xFF))
        mlS = (mlE >> 16) + brRead(<i32>((mlE >> 8) & 0xFF))
        ofS = (ofE >> 16) + brRead(<i32>((ofE >> 8) & 0xFF))
      }
      if (brRem < 0) return Z_CORRUPT
      let off: u32
      if (ofv > 3) {
        off = ofv - 3
        rep2 = rep1
        rep1 = rep0
        rep0 = off
      } else {
        const idx = ofv - 1 + (ll == 0 ? 1 : 0)
        if (idx == 0) {
          off = rep0
        } else if (idx == 1) {
          off = rep1
          rep1 = rep0
          rep0 = off
        } else if (idx == 2) {
          off = rep2
          rep2 = rep1
          rep1 = rep0
          rep0 = off
        } else {
          off = rep0 - 1
          rep2 = rep1
          rep1 = rep0
          rep0 = off
        }
      }
      // Execute.
      if (<i32>ll > litLeft) return Z_CORRUPT
      const need = <u64>ll + <u64>ml
      if (need > <u64>(oend - op)) return Z_DST_TOO_SMALL
      if (op + <usize>need > blockLimit) return Z_CORRUPT
      memory.copy(op, lp, <usize>ll)
      op += <usize>ll
      lp += <usize>ll
      litLeft -= <i32>ll
      if (off == 0 || <usize>off > op - frameStart || <u64>off > windowSize) return Z_CORRUPT
      copyMatch(op, <usize>off, <usize>ml)
      op += <usize>ml
    }
    if (brRem != 0) return Z_CORRUPT
  } else {
    if (ip != end) return Z_CORRUPT
  }
  if (<usize>litLeft > oend - op) return Z_DST_TOO_SMALL
  if (op + <usize>litLeft - blockStart > <usize>blockMax) return Z_CORRUPT
  memory.copy(op, lp, <usize>litLeft)
  op += <usize>litLeft
  outPos = op
  return 0
}

// ---- frames ---------------------------------------------------------------------------------

let frameIp: usize = 0

/** Decodes the frame whose header starts at ip (after the magic). Sets frameIp / outPos. */
function decodeFrame(ip: usize, iend: usize, op: usize, oend: usize): i32 {
  if (ip >= iend) return Z_TRUNCATED
  const fhd = <u32>load<u8>(ip)
  ip++
  const fcsFlag = fhd >> 6
  const single = (fhd >> 5) & 1
  if ((fhd & 8) != 0) return Z_CORRUPT
  const checksum = (fhd >> 2) & 1
  const didFlag = fhd & 3
  const didSize = didFlag == 0 ? 0 : didFlag == 1 ? 1 : didFlag == 2 ? 2 : 4
  const fcsSize = fcsFlag == 0 ? <i32>single : fcsFlag == 1 ? 2 : fcsFlag == 2 ? 4 : 8
  const hdr = (single ? 0 : 1) + didSize + fcsSize
  if (<i32>(iend - ip) < hdr) return Z_TRUNCATED
  let windowSize: u64 = 0
  if (!single) {
    const wd = <u32>load<u8>(ip)
    ip++
    const wlog = 10 + (wd >> 3)
    const base: u64 = <u64>1 << <u64>wlog
    windowSize = base + (base >> 3) * <u64>(wd & 7)
  }
  if (didSize > 0) {
    let did: u32 = 0
    if (didSize == 1) did = <u32>load<u8>(ip)
    else if (didSize == 2) did = <u32>load<u16>(ip)
    else did = load<u32>(ip)
    ip += <usize>didSize
    if (did != 0) return Z_UNSUPPORTED
  }
  let fcs: u64 = 0
  const hasFcs = fcsSize > 0
  if (fcsSize == 1) fcs = <u64>load<u8>(ip)
  else if (fcsSize == 2) fcs = <u64>load<u16>(ip) + 256
  else if (fcsSize == 4) fcs = <u64>load<u32>(ip)
  else if (fcsSize == 8) fcs = load<u64>(ip)
  ip += <usize>fcsSize
  if (single) windowSize = fcs
  if (hasFcs && fcs > <u64>(oend - op)) return Z_DST_TOO_SMALL
  const blockMax = windowSize < <u64>BLOCK_SIZE_MAX ? <i32>windowSize : BLOCK_SIZE_MAX
  const frameStart = op
  rep0 = 1
  rep1 = 4
  rep2 = 8
  hufOk = false
  llOk = false
  mlOk = false
  ofOk = false
  for (;;) {
    if (iend - ip < 3) return Z_TRUNCATED
    const bh = <u32>load<u16>(ip) | (<u32>load<u8>(ip + 2) << 16)
    ip += 3
    const last = bh & 1
    const btype = (bh >> 1) & 3
    const bsize = <i32>(bh >> 3)
    if (btype == 3) return Z_CORRUPT
    if (bsize > blockMax) return Z_CORRUPT
    if (btype == 0) {
      if (<i32>(iend - ip) < bsize) return Z_TRUNCATED
      if (<i32>(oend - op) < bsize) return Z_DST_TOO_SMALL
      memory.copy(op, ip, <usize>bsize)
      ip += <usize>bsize
      op += <usize>bsize
    } else if (btype == 1) {
      if (iend - ip < 1) return Z_TRUNCATED
      if (<i32>(oend - op) < bsize) return Z_DST_TOO_SMALL
      memory.fill(op, load<u8>(ip), <usize>bsize)
      ip += 1
      op += <usize>bsize
    } else {
      if (<i32>(iend - ip) < bsize) return Z_TRUNCATED
      const r = decodeBlock(ip, bsize, op, oend, frameStart, windowSize, blockMax)
      if (r < 0) return r
      ip += <usize>bsize
      op = outPos
    }
    if (hasFcs && <u64>(op - frameStart) > fcs) return Z_CORRUPT
    if (last) break
  }
  if (hasFcs && <u64>(op - frameStart) != fcs) return Z_CORRUPT
  if (checksum) {
    if (iend - ip < 4) return Z_TRUNCATED
    const h = <u32>xxh64(frameStart, op - frameStart, 0)
    if (h != load<u32>(ip)) return Z_CHECKSUM
    ip += 4
  }
  frameIp = ip
  outPos = op
  return 0
}

/** Decompresses all frames of src into dst; bytes written or a negative error. */
export function zstdDecompressInto(src: usize, srcLen: i32, dst: usize, dstCap: i32): i32 {
  if (srcLen <= 0) return Z_TRUNCATED
  if (dstCap < 0) return Z_DST_TOO_SMALL
  let ip = src
  const iend = src + <usize>srcLen
  let op = dst
  const oend = dst + <usize>dstCap
  while (ip < iend) {
    if (iend - ip < 4) return Z_TRUNCATED
    const magic = load<u32>(ip)
    if ((magic & 0xFFFFFFF0) == 0x184D2A50) {
      if (iend - ip < 8) return Z_TRUNCATED
      const fsize = <u64>load<u32>(ip + 4)
      if (fsize > <u64>(iend - ip - 8)) return Z_TRUNCATED
      ip += 8 + <usize>fsize
      continue
    }
    if (magic != ZSTD_MAGIC) return Z_CORRUPT
    const r = decodeFrame(ip + 4, iend, op, oend)
    if (r < 0) return r
    ip = frameIp
    op = outPos
  }
  return <i32>(op - dst)
}

/**
 * Sum of Frame_Content_Size over all frames of src, or -1 when a frame lacks it, the input is
 * malformed, or the sum exceeds i32.
 */
export function zstdDecompressedSizeHint(src: usize, srcLen: i32): i32 {
  if (srcLen <= 0) return -1
  let ip = src
  const iend = src + <usize>srcLen
  let total: u64 = 0
  while (ip < iend) {
    if (iend - ip < 4) return -1
    const magic = load<u32>(ip)
    if ((magic & 0xFFFFFFF0) == 0x184D2A50) {
      if (iend - ip < 8) return -1
      const fsize = <u64>load<u32>(ip + 4)
      if (fsize > <u64>(iend - ip - 8)) return -1
      ip += 8 + <usize>fsize
      continue
    }
    if (magic != ZSTD_MAGIC) return -1
    ip += 4
    if (ip >= iend) return -1
    const fhd = <u32>load<u8>(ip)
    ip++
    const fcsFlag = fhd >> 6
    const single = (fhd >> 5) & 1
    const didFlag = fhd & 3
    const didSize = didFlag == 0 ? 0 : didFlag == 1 ? 1 : didFlag == 2 ? 2 : 4
    const fcsSize = fcsFlag == 0 ? <i32>single : fcsFlag == 1 ? 2 : fcsFlag == 2 ? 4 : 8
    if (fcsSize == 0) return -1
    const hdr = (single ? 0 : 1) + didSize + fcsSize
    if (<i32>(iend - ip) < hdr) return -1
    ip += <usize>((single ? 0 : 1) + didSize)
    let fcs: u64 = 0
    if (fcsSize == 1) fcs = <u64>load<u8>(ip)
    else if (fcsSize == 2) fcs = <u64>load<u16>(ip) + 256
    else if (fcsSize == 4) fcs = <u64>load<u32>(ip)
    else fcs = load<u64>(ip)
    ip += <usize>fcsSize
    total += fcs
    if (total > <u64>i32.MAX_VALUE) return -1
    // Walk the blocks to find the next frame.
    for (;;) {
      if (iend - ip < 3) return -1
      const bh = <u32>load<u16>(ip) | (<u32>load<u8>(ip + 2) << 16)
      ip += 3
      const btype = (bh >> 1) & 3
      const bsize = <usize>(bh >> 3)
      const adv: usize = btype == 1 ? 1 : bsize
      if (btype == 3 || iend - ip < adv) return -1
      ip += adv
      if (bh & 1) break
    }
    if (fhd & 4) {
      if (iend - ip < 4) return -1
      ip += 4
    }
  }
  return <i32>total
}
