// Codec contract between the batch builder (assembly/batch.ts) and the codec implementations.
// Codec ids are Kafka's attribute bits: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
// This file is a placeholder owned by the codec engineers: codec 0 copies, every other codec
// reports NOT_BUILT until its implementation lands.

/** compressInto / compressBound result: dst is too small. */
export const DST_TOO_SMALL: i32 = -1
/** compressInto / compressBound result: this codec is not compiled into this module. */
export const NOT_BUILT: i32 = -2
/** `level` value meaning "the codec's default level" (Java's defaults: gzip 6, lz4 9, zstd 3). */
export const LEVEL_DEFAULT: i32 = i32.MIN_VALUE

/** Compresses src[0..srcLen) into dst[0..dstCap); returns bytes written, DST_TOO_SMALL or NOT_BUILT. */
export function compressInto(codec: i32, level: i32, src: usize, srcLen: i32, dst: usize, dstCap: i32): i32 {
  if (codec != 0) return NOT_BUILT
  if (srcLen > dstCap) return DST_TOO_SMALL
  memory.copy(dst, src, <usize>srcLen)
  return srcLen
}

/** Worst-case compressed size of srcLen bytes, or NOT_BUILT. */
export function compressBound(codec: i32, srcLen: i32): i32 {
  if (codec != 0) return NOT_BUILT
  return srcLen
}
