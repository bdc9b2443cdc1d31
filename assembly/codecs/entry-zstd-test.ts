// Test entry for the zstd codec: compiled on its own (test/helpers/zstd-harness.ts) so the zstd
// tests do not depend on the core build. Exposes the contract plus a scratch buffer.
export { zstdCompressInto, zstdCompressIntoChecked, zstdCompressBound, zstdDecompressInto, zstdDecompressedSizeHint } from './zstd'
import { fseBuildDTable, LL_DEFAULT_NORM, ML_DEFAULT_NORM, OF_DEFAULT_NORM } from './zstd-common'
import { xxh64 } from './zstd-xxh64'

let base: usize = 0

/** Returns a 16-aligned buffer of at least `size` bytes after the static data (grows memory). */
export function scratch(size: i32): usize {
  if (base == 0) base = (__heap_base + 15) & ~<usize>15
  const need = base + <usize>size
  const have = <usize>memory.size() << 16
  if (need > have) memory.grow(<i32>((need - have + 0xFFFF) >> 16))
  return base
}

const DT: usize = memory.data(512 * 4)
/** Cell `state` of the predefined decoding table of kind (0 LL, 1 OF, 2 ML). */
export function predefinedCell(kind: i32, state: i32): u32 {
  if (kind == 0) fseBuildDTable(LL_DEFAULT_NORM, 35, 6, DT)
  else if (kind == 1) fseBuildDTable(OF_DEFAULT_NORM, 28, 5, DT)
  else fseBuildDTable(ML_DEFAULT_NORM, 52, 6, DT)
  return load<u32>(DT + (<usize>state << 2))
}

export function hash64(p: usize, len: i32): u64 {
  return xxh64(p, <usize>len, 0)
}
