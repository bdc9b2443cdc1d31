// Size-measurement entry: only the gzip codec (see scripts/codec-sizes.mjs).
export { gzipCompressInto, gzipCompressBound, gzipDecompressInto, gzipDecompressedSizeHint } from './gzip'
