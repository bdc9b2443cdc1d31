// Test / bench entry: the codec contract plus a tiny arena for the TS harness
// (test/helpers/codec-harness.ts). The product module is build/core.wasm (assembly/index.ts).
export { compressInto, compressBound, decompressInto, decompressedSizeHint } from './index'

/** Makes sure `bytes` bytes are addressable from the arena base and returns the base. */
export function arena(bytes: i32): usize {
  const base = (__heap_base + 15) & ~<usize>15
  const need = base + <usize>bytes
  const have = <usize>memory.size() << 16
  if (need > have) {
    const pages = <i32>((need - have + 0xffff) >> 16)
    if (memory.grow(pages) < 0) return 0
  }
  return base
}

export { lz4SetEpochForTest } from './lz4'
export { deflateSetEpochForTest } from './deflate'
