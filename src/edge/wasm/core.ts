// The WebAssembly core and its memory: with the batch builder (batch.ts), the only code that reads or
// writes it. Records go into WASM memory once (staging), are encoded into their batch's region by
// WASM, and the finished batch comes out once. Loading the module is load.ts's. Callers import all
// three through this module.

import {
  CODEC_STATUS, CorruptCompressedDataError, DecompressedSizeLimitError, UnsupportedCompressionError, WasmCoreError,
} from '../errors.js'
import { OpenBatch, fieldSizeOf, varintSize, writeUtf8, type RecordInput } from './batch.js'

export {
  NO_PRODUCER, OpenBatch, RECORD_BATCH_HEADER_SIZE, batchHeader, readBatchRecords, recordBaseSize, recordSize, recordSizeFromBase, restamp,
  type BatchHeader, type DecodedRecord, type HeaderInput, type ProducerStamp, type RecordHeader, type RecordInput,
} from './batch.js'
// Not the @internal setDefaultCoreSource and base64Bytes: a declaration file re-exporting what
// stripInternal removed would not type-check (the entries that use them import load.js).
export { bundledLz4Core, loadCore, type CoreSource, type DefaultCoreSource, type LoadCoreOptions } from './load.js'

export type CompressionType = 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd'

/** Kafka's codec ids (attribute bits 0-2). */
export const COMPRESSION_CODEC: Readonly<Record<CompressionType, number>> = Object.freeze({
  none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4,
})

/** assembly/codecs/index.ts LEVEL_DEFAULT: the codec picks its default level. */
const LEVEL_DEFAULT = -0x80000000
/** Core.crc32c feeds JS bytes through staging in chunks this size, so staging never grows for it. */
const CRC_CHUNK = 64 << 10
/** assembly/codecs/index.ts codecFeatures bits. */
const FEATURE_ENCODER = 1
const FEATURE_DECODER = 2
/** Core.decompress default output limit. */
export const DECOMPRESS_MAX_BYTES_DEFAULT = 64 << 20
/** First output allocation when the stream does not say its size (and no sizeHint is given): this many times the input. */
const UNKNOWN_SIZE_FACTOR = 4

/** @internal What load.ts instantiates. */
export interface CoreExports {
  memory: WebAssembly.Memory
  crc32c(ptr: number, len: number, crc: number): number
  stagingReserve(size: number): number
  stagingCapacity(): number
  stagingTrim(): number
  batchOpen(capacity: number): number
  batchAppend(h: number, timestampDelta: number, offsetDelta: number, keyLen: number, valueLen: number, headerCount: number): number
  batchFinish(
    h: number, codec: number, level: number, attributes: number, recordCount: number,
    baseTimestamp: number, maxTimestamp: number,
    producerIdHigh: number, producerIdLow: number, producerEpoch: number, baseSequence: number,
  ): number
  batchData(h: number): number
  batchFree(h: number): void
  codecSupported(codec: number): number
  codecFeatures(codec: number): number
  decompressInto(codec: number, src: number, srcLen: number, dst: number, dstCap: number): number
  decompressedSizeHint(codec: number, src: number, srcLen: number): number
  bufferAlloc(size: number): number
  bufferFree(ptr: number): void
}

export class Core {
  /** @internal Raw exports, for benchmarks and tests of the module itself. */
  readonly exports: CoreExports
  private u8: Uint8Array
  private dv: DataView
  // Cached staging location: saves a JS -> WASM call per record while records fit.
  private stagingAt = 0
  private stagingCap = 0
  /** @internal The UTF-8 lengths stage() wrote for the key and the value (-1: null), for batchAppend. */
  stagedKeyBytes = -1
  /** @internal */
  stagedValueBytes = -1
  /**
   * @internal The record staging holds, its header count and its recordBaseSize(), from the lengths
   * stage() wrote: send() stages a record once, sizes it from there, and append() finds it staged.
   */
  stagedRecord: RecordInput | null = null
  /** @internal */
  stagedHeaderCount = 0
  /** @internal */
  stagedBaseSize = 0

  /** @internal Use loadCore(). */
  constructor(exports: CoreExports) {
    this.exports = exports
    this.u8 = new Uint8Array(exports.memory.buffer)
    this.dv = new DataView(exports.memory.buffer)
  }

  /** @internal Current view of WASM memory (memory.grow detaches the old buffer: its views read length 0). */
  bytes(): Uint8Array {
    if (this.u8.byteLength === 0) this.refresh()
    return this.u8
  }

  private refresh(): void {
    this.u8 = new Uint8Array(this.exports.memory.buffer)
    this.dv = new DataView(this.exports.memory.buffer)
  }

  /** CRC-32C of `bytes`; pass a previous result as `init` to continue it over more bytes. */
  crc32c(bytes: Uint8Array, init = 0): number {
    let crc = init | 0
    let off = 0
    do {
      const n = Math.min(CRC_CHUNK, bytes.length - off)
      const at = this.staging(n)
      this.u8.set(bytes.subarray(off, off + n), at)
      crc = this.exports.crc32c(at, n, crc)
      off += n
    } while (off < bytes.length)
    return crc >>> 0
  }

  /** Whether this module was built with the `compression` encoder (what a producer needs). */
  supportsCompression(compression: CompressionType): boolean {
    const codec = COMPRESSION_CODEC[compression]
    return codec !== undefined && this.exports.codecSupported(codec) !== 0
  }

  /** Whether this module was built with the `compression` decoder (Core.decompress). */
  supportsDecompression(compression: CompressionType): boolean {
    const codec = COMPRESSION_CODEC[compression]
    return codec !== undefined && (this.exports.codecFeatures(codec) & FEATURE_DECODER) !== 0
  }

  /** The codecs this module was built with: `encoders` for compression, `decoders` for decompress(). */
  codecs(): { encoders: CompressionType[]; decoders: CompressionType[] } {
    const all = Object.keys(COMPRESSION_CODEC) as CompressionType[]
    const has = (c: CompressionType, bit: number) => (this.exports.codecFeatures(COMPRESSION_CODEC[c]) & bit) !== 0
    return { encoders: all.filter((c) => has(c, FEATURE_ENCODER)), decoders: all.filter((c) => has(c, FEATURE_DECODER)) }
  }

  /**
   * Decompresses `bytes` (one compressed records section, as Kafka stores it for `codec`).
   * The output buffer starts at `sizeHint` if given, else at the size the stream declares (snappy,
   * lz4 content size, gzip ISIZE, zstd frame content size), else at 4x the input; it doubles
   * while the decoder says it is too small, up to `maxBytes` (default 64 MiB), so a hostile
   * stream cannot make it allocate more than that. Throws CorruptCompressedDataError for
   * truncated or malformed input, DecompressedSizeLimitError past maxBytes, and
   * UnsupportedCompressionError if this module has no decoder for `codec`.
   */
  decompress(codec: CompressionType, bytes: Uint8Array, sizeHint?: number, maxBytes = DECOMPRESS_MAX_BYTES_DEFAULT): Uint8Array {
    const id = COMPRESSION_CODEC[codec]
    if (id === undefined) throw new WasmCoreError(`unknown compression type '${String(codec)}'`)
    if (!this.supportsDecompression(codec)) {
      throw new UnsupportedCompressionError(codec, `decompressing '${codec}' is not built into this kafka-edge WebAssembly core; ` +
        `use a build with its decoder (the default core, or kafka-edge/core-${codec}.wasm)`)
    }
    if (!(maxBytes >= 0) || !Number.isSafeInteger(maxBytes)) throw new WasmCoreError(`maxBytes must be a non-negative integer, got ${maxBytes}`)
    const limit = Math.min(maxBytes, 0x7fffffff)
    const x = this.exports
    const n = bytes.length
    const src = this.call(() => x.bufferAlloc(n)) >>> 0
    if (src === 0) throw outOfMemory(n)
    let dst = 0
    try {
      this.bytes().set(bytes, src)
      let cap: number
      if (sizeHint !== undefined && Number.isFinite(sizeHint) && sizeHint >= 0) {
        cap = Math.floor(sizeHint)
      } else {
        const declared = this.call(() => x.decompressedSizeHint(id, src, n))
        cap = declared >= 0 ? declared : n * UNKNOWN_SIZE_FACTOR
      }
      cap = Math.min(Math.max(cap, 0), limit)
      for (;;) {
        dst = this.call(() => x.bufferAlloc(cap)) >>> 0
        if (dst === 0) throw outOfMemory(cap)
        const r = this.call(() => x.decompressInto(id, src, n, dst, cap))
        if (r >= 0) return this.bytes().slice(dst, dst + r)
        x.bufferFree(dst)
        dst = 0
        if (r !== CODEC_STATUS.DST_TOO_SMALL) {
          if (r === CODEC_STATUS.NOT_BUILT) throw new UnsupportedCompressionError(codec)
          throw new CorruptCompressedDataError(codec, r)
        }
        if (cap >= limit) throw new DecompressedSizeLimitError(codec, maxBytes)
        cap = Math.min(limit, Math.max(cap * 2, 1024))
      }
    } finally {
      if (dst !== 0) x.bufferFree(dst)
      x.bufferFree(src)
    }
  }

  openBatch(opts: { compression: CompressionType; level?: number; initialCapacity?: number }): OpenBatch {
    const codec = COMPRESSION_CODEC[opts.compression]
    if (codec === undefined) throw new WasmCoreError(`unknown compression type '${String(opts.compression)}'`)
    if (!this.supportsCompression(opts.compression)) throw new UnsupportedCompressionError(opts.compression)
    const capacity = Math.max(0, Math.min(opts.initialCapacity ?? 16384, 0x40000000))
    const handle = this.call(() => this.exports.batchOpen(capacity)) >>> 0
    if (handle === 0) throw outOfMemory(capacity)
    return new OpenBatch(this, handle, codec, opts.level ?? LEVEL_DEFAULT)
  }

  /** Size of the module's linear memory (it grows, it never shrinks). */
  memoryBytes(): number {
    return this.exports.memory.buffer.byteLength
  }

  /** @internal Staging pointer with room for `size` bytes; refreshes the views if memory grew. */
  staging(size: number): number {
    if (size > this.stagingCap) {
      const at = this.exports.stagingReserve(size) >>> 0
      if (at === 0) throw outOfMemory(size)
      this.stagingAt = at
      this.stagingCap = this.exports.stagingCapacity()
    }
    if (this.u8.byteLength === 0) this.refresh()
    return this.stagingAt
  }

  /** @internal Gives back staging grown by a huge record. */
  trimStaging(): void {
    this.stagedRecord = null
    if (this.exports.stagingTrim()) this.stagingCap = 0
  }

  /**
   * @internal Writes a record's key, value and headers into staging, in the layout batchAppend
   * reads (assembly/batch.ts), and sets stagedRecord, stagedHeaderCount and stagedBaseSize. A record
   * that could need more than `maxRoom` bytes of staging is not staged (false): staging only grows.
   */
  stage(record: RecordInput, maxRoom = Infinity): boolean {
    const key = record.key
    const value = record.value
    const headers = record.headers
    let size = roomFor(key) + roomFor(value)
    const headerCount = headers === undefined ? 0 : headers.length
    for (let i = 0; i < headerCount; i++) {
      const h = headers![i]!
      size += 8 + 3 * h.key.length + roomFor(h.value)
    }
    if (size > maxRoom) { this.stagedRecord = null; return false }
    const at = this.staging(size)
    const u8 = this.u8
    const keyBytes = key === null ? -1 : put(u8, key, at)
    let p = at + Math.max(0, keyBytes)
    const valueBytes = value === null ? -1 : put(u8, value, p)
    p += Math.max(0, valueBytes)
    this.stagedKeyBytes = keyBytes
    this.stagedValueBytes = valueBytes
    // recordBaseSize() from the lengths just written: the strings are not measured a second time.
    let base = fieldSizeOf(keyBytes) + fieldSizeOf(valueBytes) + varintSize(headerCount)
    if (headerCount > 0) {
      const dv = this.dv
      for (let i = 0; i < headerCount; i++) {
        const h = headers![i]!
        const n = writeUtf8(u8, h.key, p + 4)
        dv.setInt32(p, n, true)
        p += 4 + n
        const v = h.value
        const m = v === null ? -1 : put(u8, v, p + 4)
        dv.setInt32(p, m, true)
        p += 4 + Math.max(0, m)
        base += varintSize(n) + n + fieldSizeOf(m)
      }
    }
    this.stagedRecord = record
    this.stagedHeaderCount = headerCount
    this.stagedBaseSize = base
    return true
  }

  /** @internal Runs a WASM call, turning a trap into a typed error. */
  call<T>(fn: () => T): T {
    try {
      return fn()
    } catch (err) {
      throw typedTrap(err)
    }
  }
}

// ---------------------------------------------------------------------------------------------

/** Staging room for a field: UTF-8 needs at most 3 bytes per UTF-16 unit. */
function roomFor(v: Uint8Array | string | null): number {
  return v === null ? 0 : typeof v === 'string' ? 3 * v.length : v.length
}

/** Writes a field into WASM memory and returns its length in bytes. */
function put(u8: Uint8Array, v: Uint8Array | string, at: number): number {
  if (typeof v === 'string') return writeUtf8(u8, v, at)
  copyIn(u8, v, at)
  return v.length
}

/** Copies src into WASM memory; a byte loop beats TypedArray.set's call overhead for short inputs. */
function copyIn(u8: Uint8Array, src: Uint8Array, at: number): void {
  const n = src.length
  if (n <= 16) {
    for (let i = 0; i < n; i++) u8[at + i] = src[i]!
  } else {
    u8.set(src, at)
  }
}

/** @internal */
export function codecName(codec: number): CompressionType {
  return (Object.keys(COMPRESSION_CODEC) as CompressionType[]).find((k) => COMPRESSION_CODEC[k] === codec) ?? 'none'
}

/** @internal */
export function typedTrap(err: unknown): unknown {
  return err instanceof WebAssembly.RuntimeError
    ? new WasmCoreError(`WebAssembly core trapped: ${err.message}`, { cause: err })
    : err
}

/** @internal */
export function outOfMemory(bytes: number): WasmCoreError {
  return new WasmCoreError(`WebAssembly memory exhausted (needed ${bytes} more bytes); finish or discard open batches`)
}
