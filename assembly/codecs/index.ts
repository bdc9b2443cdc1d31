// Codec contract between the batch builder and the codec implementations.
// Codec ids are Kafka's attribute bits: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
// Each codec lives in its own module (gzip.ts+deflate.ts, snappy.ts, lz4.ts+xxhash32.ts,
// zstd*.ts) importing only common.ts, so an entry that imports one codec module directly
// builds a wasm without the others.
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

/** compressInto / compressBound result: dst is too small. */
export const DST_TOO_SMALL: i32 = -1
/** compressInto / compressBound result: this codec is not compiled into this module. */
export const NOT_BUILT: i32 = -2
/** `level` value meaning "the codec's default level" (Java's defaults: gzip 6, lz4 9, zstd 3). -1 works too. */
export const LEVEL_DEFAULT: i32 = i32.MIN_VALUE

/** Compresses src[0..srcLen) into dst[0..dstCap); returns bytes written, DST_TOO_SMALL or NOT_BUILT. */
export function compressInto(codec: i32, level: i32, src: usize, srcLen: i32, dst: usize, dstCap: i32): i32 {
  if (srcLen < 0 || dstCap < 0) return DST_TOO_SMALL
  switch (codec) {
    case 0: {
      if (srcLen > dstCap) return DST_TOO_SMALL
      memory.copy(dst, src, <usize>srcLen)
      return srcLen
    }
    case 1: return gzipCompressInto(level, src, srcLen, dst, dstCap)
    case 2: return snappyCompressInto(src, srcLen, dst, dstCap)
    case 3: return lz4CompressInto(level, src, srcLen, dst, dstCap)
    case 4: return zstdCompressInto(level, src, srcLen, dst, dstCap)
  }
  return NOT_BUILT
}

/** Worst-case compressed size of srcLen bytes, or NOT_BUILT. */
export function compressBound(codec: i32, srcLen: i32): i32 {
  switch (codec) {
    case 0: return srcLen
    case 1: return gzipCompressBound(srcLen)
    case 2: return snappyCompressBound(srcLen)
    case 3: return lz4CompressBound(srcLen)
    case 4: return zstdCompressBound(srcLen)
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
    case 1: return gzipDecompressInto(src, srcLen, dst, dstCap)
    case 2: return snappyDecompressInto(src, srcLen, dst, dstCap)
    case 3: return lz4DecompressInto(src, srcLen, dst, dstCap)
    case 4: return zstdDecompressInto(src, srcLen, dst, dstCap)
  }
  return E_NOT_BUILT
}

/**
 * Capacity to allocate for decompressing src: exact when the stream says (snappy lengths,
 * lz4 content size, gzip ISIZE of a single member), else an upper bound from the block
 * headers (lz4); -1 if unknown.
 */
export function decompressedSizeHint(codec: i32, src: usize, srcLen: i32): i32 {
  switch (codec) {
    case 0: return srcLen
    case 1: return gzipDecompressedSizeHint(src, srcLen)
    case 2: return snappyDecompressedSizeHint(src, srcLen)
    case 3: return lz4DecompressedSizeHint(src, srcLen)
    case 4: return zstdDecompressedSizeHint(src, srcLen)
  }
  return -1
}
