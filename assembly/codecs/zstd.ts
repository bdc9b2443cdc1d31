// zstd codec contract (see assembly/codecs/index.ts). Implementation: zstd-encoder.ts (frame
// encoder), zstd-decoder.ts (frame decoder), zstd-common.ts (tables, FSE), zstd-xxh64.ts.
// A module importing only the compress side gets no decoder code, and vice versa.
import { zstdCompressFrame } from './zstd-encoder'
export { zstdCompressBound } from './zstd-encoder'
export { zstdDecompressInto, zstdDecompressedSizeHint } from './zstd-decoder'

/** One zstd frame (no checksum) of src into dst: bytes written, -1 if dst is too small. */
export function zstdCompressInto(level: i32, src: usize, srcLen: i32, dst: usize, dstCap: i32): i32 {
  return zstdCompressFrame(level, false, src, srcLen, dst, dstCap)
}

/** Same as zstdCompressInto, with the frame's content checksum (xxh64 low 32 bits) when checksum. */
export function zstdCompressIntoChecked(level: i32, checksum: bool, src: usize, srcLen: i32, dst: usize, dstCap: i32): i32 {
  return zstdCompressFrame(level, checksum, src, srcLen, dst, dstCap)
}
