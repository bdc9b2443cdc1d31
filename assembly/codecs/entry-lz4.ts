// Size-measurement entry: only the lz4 codec (see scripts/codec-sizes.mjs).
export { lz4CompressInto, lz4CompressBound, lz4DecompressInto, lz4DecompressedSizeHint } from './lz4'
