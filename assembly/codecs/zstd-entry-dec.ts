// Size-measurement entry: the zstd decoder only.
export { zstdDecompressInto, zstdDecompressedSizeHint } from './zstd'
