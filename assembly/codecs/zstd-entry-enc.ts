// Size-measurement entry: the zstd encoder only.
export { zstdCompressInto, zstdCompressBound } from './zstd'
