// The core module's exports. src/edge/wasm/core.ts is the only caller.
export { crc32c } from './crc32c'
export {
  stagingReserve, stagingCapacity, stagingTrim, batchOpen, batchAppend, batchFinish, batchData, batchFree, codecSupported,
} from './batch'
