// The core module's exports. src/edge/wasm/core.ts is the only caller.
// Which codecs are compiled in is a build-time choice (see assembly/codecs/index.ts and the
// variants in scripts/build-wasm.mjs); the exports are the same in every variant.
export { crc32c } from './crc32c'
export {
  stagingReserve, stagingCapacity, stagingTrim, batchOpen, batchAppend, batchFinish, batchData, batchFree, codecSupported,
} from './batch'
export { codecFeatures, decompressInto, decompressedSizeHint } from './codecs/index'

/**
 * A scratch heap block of `size` bytes for decompression input/output, or 0 when it cannot fit
 * under the wasm32 memory limit (heap.alloc would trap instead). Free it with bufferFree.
 */
export function bufferAlloc(size: i32): usize {
  if (size < 0) return 0
  // TLSF grows memory by the block size plus bookkeeping (< 64 KiB).
  const pagesNeeded = ((size + (64 << 10)) >>> 16) + 1
  if (memory.size() + pagesNeeded > 65536) return 0
  return heap.alloc(<usize>max(size, 1))
}

/** Releases a block from bufferAlloc. */
export function bufferFree(p: usize): void {
  if (p != 0) heap.free(p)
}
