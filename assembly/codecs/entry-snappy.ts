// Size-measurement entry: only the snappy codec (see scripts/codec-sizes.mjs).
export { snappyCompressInto, snappyCompressBound, snappyDecompressInto, snappyDecompressedSizeHint } from './snappy'
