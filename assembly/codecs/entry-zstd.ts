// Size-measurement entry: only the zstd codec (encoder + decoder).
export { zstdCompressInto, zstdCompressBound, zstdDecompressInto, zstdDecompressedSizeHint } from './zstd'
