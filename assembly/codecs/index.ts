// Codec contract between the batch builder and the codec implementations.
// Codec ids are Kafka's attribute bits: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
// Each codec lives in its own module (gzip.ts+deflate.ts, snappy.ts, lz4.ts+xxhash32.ts,
// zstd*.ts) importing only common.ts, so an entry that imports one codec module directly
// builds a wasm without the others.
//
// Build-time codec set. Each codec has a compile-time constant, set with asc's
// `--use KE_CODECS_<NAME>=<bits>` (scripts/build-wasm.mjs does this per variant):
//   bit 1 = encoder, bit 2 = decoder; 3 = both, 0 = left out. Undefined means 3 (both).
// The dispatch below only references a codec's functions behind `if (<CONST>)`; AssemblyScript
// compiles functions lazily and drops statically false branches, so a codec that is left out
// contributes no code and no static data to the module (check with `wasm-objdump -x`).
//
// Results: >= 0 bytes written; negative = error code (see common.ts):
//   -1 dst too small, -2 codec not built, -3 truncated input, -4 corrupt input,
//   -5 checksum mismatch, -6 unsupported feature.

import { E_NOT_BUILT } from './common'
import { gzipCompressInto, gzipCompressBound, gzipDecompressInto, gzipDecompressedSizeHint } from './gzip'
import { snappyCompressInto, snappyCompressBound, snappyDecompressInto, snappyDecompressedSizeHint } from './snappy'
import { lz4CompressInto, lz4CompressBound, lz4DecompressInto, lz4DecompressedSizeHint } from './lz4'
import { zstdCompressInto, zstdCompressBound, zstdDecompressInto, zstdDecompressedSizeHint } from './zstd'

export {
  E_DST_TOO_SMALL, E_NOT_BUILT, E_TRUNCATED, E_CORRUPT, E_CHECKSUM, E_UNSUPPORTED,
} from './common'

// @ts-ignore: compile-time constants (asc --use); isDefined keeps the unset case compiling
const GZIP: i32 = isDefined(KE_CODECS_GZIP) ? KE_CODECS_GZIP : 3
// @ts-ignore: compile-time constant
const SNAPPY: i32 = isDefined(KE_CODECS_SNAPPY) ? KE_CODECS_SNAPPY : 3
// @ts-ignore: compile-time constant
const LZ4: i32 = isDefined(KE_CODECS_LZ4) ? KE_CODECS_LZ4 : 3
// @ts-ignore: compile-time constant
const ZSTD: i32 = isDefined(KE_CODECS_ZSTD) ? KE_CODECS_ZSTD : 3

const GZIP_ENC: bool = (GZIP & 1) != 0
const GZIP_DEC: bool = (GZIP & 2) != 0
const SNAPPY_ENC: bool = (SNAPPY & 1) != 0
const SNAPPY_DEC: bool = (SNAPPY & 2) != 0
const LZ4_ENC: bool = (LZ4 & 1) != 0
const LZ4_DEC: bool = (LZ4 & 2) != 0
const ZSTD_ENC: bool = (ZSTD & 1) != 0
const ZSTD_DEC: bool = (ZSTD & 2) != 0

/** codecFeatures bits. */
export const FEATURE_ENCODER: i32 = 1
export const FEATURE_DECODER: i32 = 2

/** compressInto / compressBound result: dst is too small. */
export const DST_TOO_SMALL: i32 = -1
/** compressInto / compressBound result: this codec is not compiled into this module. */
export const NOT_BUILT: i32 = -2
/** `level` value meaning "the codec's default level" (Java's defaults: gzip 6, lz4 9, zstd 3). -1 works too. */
export const LEVEL_DEFAULT: i32 = i32.MIN_VALUE

/** What of `codec` this module contains: FEATURE_ENCODER | FEATURE_DECODER bits (none: both). */
export function codecFeatures(codec: i32): i32 {
  switch (codec) {
    case 0: return 3
    case 1: return GZIP & 3
    case 2: return SNAPPY & 3
    case 3: return LZ4 & 3
    case 4: return ZSTD & 3
  }
  return 0
}

/** Compresses src[0..srcLen) into dst[0..dstCap); returns bytes written, DST_TOO_SMALL or NOT_BUILT. */
export function compressInto(codec: i32, level: i32, src: usize, srcLen: i32, dst: usize, dstCap: i32): i32 {
  if (srcLen < 0 || dstCap < 0) return DST_TOO_SMALL
  switch (codec) {
    case 0: {
      if (srcLen > dstCap) return DST_TOO_SMALL
      memory.copy(dst, src, <usize>srcLen)
      return srcLen
    }
    case 1: if (GZIP_ENC) return gzipCompressInto(level, src, srcLen, dst, dstCap); break
    case 2: if (SNAPPY_ENC) return snappyCompressInto(src, srcLen, dst, dstCap); break
    case 3: if (LZ4_ENC) return lz4CompressInto(level, src, srcLen, dst, dstCap); break
    case 4: if (ZSTD_ENC) return zstdCompressInto(level, src, srcLen, dst, dstCap); break
  }
  return NOT_BUILT
}

/** Worst-case compressed size of srcLen bytes, or NOT_BUILT (also when only the decoder is built). */
export function compressBound(codec: i32, srcLen: i32): i32 {
  switch (codec) {
    case 0: return srcLen
    case 1: if (GZIP_ENC) return gzipCompressBound(srcLen); break
    case 2: if (SNAPPY_ENC) return snappyCompressBound(srcLen); break
    case 3: if (LZ4_ENC) return lz4CompressBound(srcLen); break
    case 4: if (ZSTD_ENC) return zstdCompressBound(srcLen); break
  }
  return NOT_BUILT
}

/** Decompresses src[0..srcLen) into dst[0..dstCap); bytes written or a negative error code. */
export function decompressInto(codec: i32, src: usize, srcLen: i32, dst: usize, dstCap: i32): i32 {
  if (srcLen < 0 || dstCap < 0) return DST_TOO_SMALL
  switch (codec) {
    case 0: {
      if (srcLen > dstCap) return DST_TOO_SMALL
      memory.copy(dst, src, <usize>srcLen)
      return srcLen
    }
    case 1: if (GZIP_DEC) return gzipDecompressInto(src, srcLen, dst, dstCap); break
    case 2: if (SNAPPY_DEC) return snappyDecompressInto(src, srcLen, dst, dstCap); break
    case 3: if (LZ4_DEC) return lz4DecompressInto(src, srcLen, dst, dstCap); break
    case 4: if (ZSTD_DEC) return zstdDecompressInto(src, srcLen, dst, dstCap); break
  }
  return E_NOT_BUILT
}

/**
 * Capacity to allocate for decompressing src: exact when the stream says (snappy lengths,
 * lz4 content size, gzip ISIZE of a single member), else an upper bound from the block
 * headers (lz4); -1 if unknown (or the decoder is not built).
 */
export function decompressedSizeHint(codec: i32, src: usize, srcLen: i32): i32 {
  switch (codec) {
    case 0: return srcLen
    case 1: if (GZIP_DEC) return gzipDecompressedSizeHint(src, srcLen); break
    case 2: if (SNAPPY_DEC) return snappyDecompressedSizeHint(src, srcLen); break
    case 3: if (LZ4_DEC) return lz4DecompressedSizeHint(src, srcLen); break
    case 4: if (ZSTD_DEC) return zstdDecompressedSizeHint(src, srcLen); break
  }
  return -1
}
