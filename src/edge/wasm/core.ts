// The only code that touches the WebAssembly core's memory. Records go into WASM memory once
// (staging), are encoded into their batch's region by WASM, and the finished batch comes out once.

import {
  CODEC_STATUS, CorruptCompressedDataError, DecompressedSizeLimitError, UnsupportedCompressionError, WasmCoreError,
} from '../errors.js'

export type CompressionType = 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd'

export interface RecordHeader {
  key: string
  value: Uint8Array | null
}

export interface RecordInput {
  key: Uint8Array | null
  value: Uint8Array | null
  headers?: readonly RecordHeader[]
  /** Milliseconds since the epoch; an integer. */
  timestamp: number
}

export interface ProducerStamp {
  producerId: bigint
  producerEpoch: number
  baseSequence: number
  transactional: boolean
}

export const NO_PRODUCER: ProducerStamp = /* @__PURE__ */ Object.freeze({
  producerId: -1n,
  producerEpoch: -1,
  baseSequence: -1,
  transactional: false,
})

export const RECORD_BATCH_HEADER_SIZE = 61

/** Kafka's codec ids (attribute bits 0-2). */
export const COMPRESSION_CODEC: Readonly<Record<CompressionType, number>> = Object.freeze({
  none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4,
})

const TRANSACTIONAL_BIT = 0x10
/** assembly/codecs/index.ts LEVEL_DEFAULT: the codec picks its default level. */
const LEVEL_DEFAULT = -0x80000000
/** assembly/batch.ts status codes. */
const ERR_OUT_OF_MEMORY = -1
const ERR_CODEC_NOT_BUILT = -2
/** Core.crc32c feeds JS bytes through staging in chunks this size, so staging never grows for it. */
const CRC_CHUNK = 64 << 10
/** Header keys up to this many UTF-16 units are tried as ASCII first, skipping a subarray + encodeInto. */
const ASCII_FAST_PATH = 64
/** assembly/codecs/index.ts codecFeatures bits. */
const FEATURE_ENCODER = 1
const FEATURE_DECODER = 2
/** Core.decompress default output limit. */
export const DECOMPRESS_MAX_BYTES_DEFAULT = 64 << 20
/** First output allocation when the stream does not say its size (and no sizeHint is given): this many times the input. */
const UNKNOWN_SIZE_FACTOR = 4

interface CoreExports {
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

const utf8 = new TextEncoder()

export class Core {
  /** @internal Raw exports, for benchmarks and tests of the module itself. */
  readonly exports: CoreExports
  private u8: Uint8Array
  private dv: DataView
  // Cached staging location: saves a JS -> WASM call per record while records fit.
  private stagingAt = 0
  private stagingCap = 0

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

  /** Exact encoded size of one record inside a batch. */
  recordSize(record: RecordInput, offsetDelta: number, timestampDelta: number): number {
    return recordSize(record, offsetDelta, timestampDelta)
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
    if (this.exports.stagingTrim()) this.stagingCap = 0
  }

  /**
   * @internal Writes a record's key, value and headers into staging, in the layout batchAppend
   * reads (assembly/batch.ts). Returns the header count.
   */
  stage(record: RecordInput): number {
    const key = record.key
    const value = record.value
    const headers = record.headers
    const keyBytes = key === null ? 0 : key.length
    const valueBytes = value === null ? 0 : value.length
    let size = keyBytes + valueBytes
    const headerCount = headers === undefined ? 0 : headers.length
    for (let i = 0; i < headerCount; i++) {
      const h = headers![i]!
      // UTF-8 needs at most 3 bytes per UTF-16 unit.
      size += 8 + 3 * h.key.length + (h.value === null ? 0 : h.value.length)
    }
    const at = this.staging(size)
    const u8 = this.u8
    if (keyBytes > 0) copyIn(u8, key!, at)
    if (valueBytes > 0) copyIn(u8, value!, at + keyBytes)
    if (headerCount > 0) {
      const dv = this.dv
      let p = at + keyBytes + valueBytes
      for (let i = 0; i < headerCount; i++) {
        const h = headers![i]!
        const n = writeUtf8(u8, h.key, p + 4)
        dv.setInt32(p, n, true)
        p += 4 + n
        const v = h.value
        if (v === null) {
          dv.setInt32(p, -1, true)
          p += 4
        } else {
          dv.setInt32(p, v.length, true)
          if (v.length > 0) copyIn(u8, v, p + 4)
          p += 4 + v.length
        }
      }
    }
    return headerCount
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

export class OpenBatch {
  private count = 0
  private size = RECORD_BATCH_HEADER_SIZE
  private firstTs = 0
  private maxTs = 0
  private handle: number
  private readonly core: Core
  private readonly codec: number
  private readonly level: number

  /** @internal Use Core.openBatch(). */
  constructor(core: Core, handle: number, codec: number, level: number) {
    this.core = core
    this.handle = handle
    this.codec = codec
    this.level = level
  }

  get recordCount(): number { return this.count }
  /** Header plus records section so far, before compression. */
  get uncompressedBytes(): number { return this.size }
  /** The first record's timestamp (0 while empty). */
  get firstTimestamp(): number { return this.firstTs }

  /** Appends unconditionally; check estimatedSizeWith() first to respect a size limit. */
  append(record: RecordInput): void {
    const handle = this.live()
    const core = this.core
    const ts = record.timestamp
    const headerCount = core.stage(record)
    const first = this.count === 0 ? ts : this.firstTs
    const key = record.key
    const value = record.value
    let size: number
    try {
      size = core.exports.batchAppend(
        handle, ts - first, this.count, key === null ? -1 : key.length, value === null ? -1 : value.length, headerCount,
      )
    } catch (err) {
      throw typedTrap(err)
    }
    if (size === ERR_OUT_OF_MEMORY) throw outOfMemory(this.size)
    if (this.count === 0) {
      this.firstTs = ts
      this.maxTs = ts
    } else if (ts > this.maxTs) {
      this.maxTs = ts
    }
    this.count++
    this.size = size
  }

  /**
   * Uncompressed batch size (header included) if `record` were appended next. Pass the record's
   * recordBaseSize() when it is known, so the record is not walked again.
   */
  estimatedSizeWith(record: RecordInput, baseSize = recordBaseSize(record)): number {
    const delta = this.count === 0 ? 0 : record.timestamp - this.firstTs
    return this.size + recordSizeFromBase(baseSize, this.count, delta)
  }

  /** Completes the batch (header, compression, CRC) and returns its bytes; the batch is closed after. */
  finish(stamp: ProducerStamp): Uint8Array {
    const handle = this.live()
    if (this.count === 0) throw new WasmCoreError('cannot finish a batch with no records')
    const core = this.core
    const pid = stamp.producerId
    const length = core.call(() => core.exports.batchFinish(
      handle, this.codec, this.level, stamp.transactional ? TRANSACTIONAL_BIT : 0, this.count,
      this.firstTs, this.maxTs,
      Number(BigInt.asIntN(32, pid >> 32n)), Number(BigInt.asIntN(32, pid)),
      stamp.producerEpoch, stamp.baseSequence,
    ))
    if (length < 0) {
      this.discard()
      if (length === ERR_CODEC_NOT_BUILT) throw new UnsupportedCompressionError(codecName(this.codec))
      if (length === ERR_OUT_OF_MEMORY) throw outOfMemory(this.size)
      throw new WasmCoreError(`compression (${codecName(this.codec)}) failed with status ${length}`)
    }
    const at = core.exports.batchData(handle) >>> 0
    const out = core.bytes().slice(at, at + length)
    this.discard()
    return out
  }

  /** Frees the batch without producing bytes. Idempotent. */
  discard(): void {
    if (this.handle === 0) return
    this.core.exports.batchFree(this.handle)
    this.handle = 0
    // A single huge record may have grown staging far beyond its usual size; give it back.
    this.core.trimStaging()
  }

  private live(): number {
    if (this.handle === 0) throw new WasmCoreError('batch already finished or discarded')
    return this.handle
  }
}

/**
 * Rewrites producer id, epoch, base sequence and the transactional bit of a finished batch in
 * place, and recomputes its CRC (used when an epoch bump forces resequencing).
 */
export function restamp(core: Core, batch: Uint8Array, stamp: ProducerStamp): void {
  if (batch.length < RECORD_BATCH_HEADER_SIZE) throw new WasmCoreError(`not a record batch: ${batch.length} bytes`)
  const dv = new DataView(batch.buffer, batch.byteOffset, batch.byteLength)
  const attributes = dv.getInt16(21)
  dv.setInt16(21, stamp.transactional ? attributes | TRANSACTIONAL_BIT : attributes & ~TRANSACTIONAL_BIT)
  dv.setBigInt64(43, stamp.producerId)
  dv.setInt16(51, stamp.producerEpoch)
  dv.setInt32(53, stamp.baseSequence)
  dv.setUint32(17, core.crc32c(batch.subarray(21)))
}

export interface BatchHeader {
  baseOffset: bigint
  batchLength: number
  partitionLeaderEpoch: number
  magic: number
  /** Unsigned. */
  crc: number
  attributes: number
  lastOffsetDelta: number
  baseTimestamp: number
  maxTimestamp: number
  producerId: bigint
  producerEpoch: number
  baseSequence: number
  recordCount: number
}

/** Parses the 61-byte RecordBatch v2 header (no CRC check). */
export function batchHeader(bytes: Uint8Array): BatchHeader {
  if (bytes.length < RECORD_BATCH_HEADER_SIZE) throw new WasmCoreError(`not a record batch: ${bytes.length} bytes`)
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  return {
    baseOffset: dv.getBigInt64(0),
    batchLength: dv.getInt32(8),
    partitionLeaderEpoch: dv.getInt32(12),
    magic: dv.getInt8(16),
    crc: dv.getUint32(17),
    attributes: dv.getInt16(21),
    lastOffsetDelta: dv.getInt32(23),
    baseTimestamp: Number(dv.getBigInt64(27)),
    maxTimestamp: Number(dv.getBigInt64(35)),
    producerId: dv.getBigInt64(43),
    producerEpoch: dv.getInt16(51),
    baseSequence: dv.getInt32(53),
    recordCount: dv.getInt32(57),
  }
}

/**
 * The records of a finished batch (decompressed if it needs to be), as inputs that re-encode to the
 * same records: how a batch the broker refused as too large is split without the producer keeping
 * every appended record around until the batch completes. Throws UnsupportedCompressionError when the
 * core has no decoder for the batch's codec, WasmCoreError when the bytes are not a record batch.
 */
export function readBatchRecords(core: Core, bytes: Uint8Array): RecordInput[] {
  const header = batchHeader(bytes)
  const codec = header.attributes & 7
  const section = bytes.subarray(RECORD_BATCH_HEADER_SIZE)
  const data = codec === 0 ? section : core.decompress(codecName(codec), section)
  const r = new RecordReader(data)
  const out: RecordInput[] = []
  for (let i = 0; i < header.recordCount; i++) {
    const end = r.varint() + r.at
    r.at++ // attributes
    const timestamp = header.baseTimestamp + r.varint()
    r.varint() // offset delta
    const key = r.bytes()
    const value = r.bytes()
    const headerCount = r.varint()
    const headers: RecordHeader[] = []
    for (let h = 0; h < headerCount; h++) headers.push({ key: utf8Decoder.decode(r.bytes() ?? new Uint8Array(0)), value: r.bytes() })
    if (r.at !== end) throw new WasmCoreError(`record ${i} of the batch is malformed`)
    out.push(headerCount === 0 ? { key, value, timestamp } : { key, value, headers, timestamp })
  }
  return out
}

const utf8Decoder = new TextDecoder()

class RecordReader {
  at = 0
  constructor(private readonly data: Uint8Array) {}

  private byte(): number {
    if (this.at >= this.data.length) throw new WasmCoreError('record batch truncated')
    return this.data[this.at++]!
  }

  /** Zigzag varint or varlong, as a number (record fields stay well inside 2^53). */
  varint(): number {
    let result = 0
    let scale = 1
    for (let shift = 0; shift < 70; shift += 7) {
      const b = this.byte()
      result += (b & 0x7f) * scale
      scale *= 128
      if ((b & 0x80) === 0) return result % 2 === 0 ? result / 2 : -(result + 1) / 2
    }
    throw new WasmCoreError('record batch has a malformed varint')
  }

  /** A varint-length byte field; length -1 is null. */
  bytes(): Uint8Array | null {
    const n = this.varint()
    if (n < 0) return null
    if (this.at + n > this.data.length) throw new WasmCoreError('record batch truncated')
    this.at += n
    return this.data.subarray(this.at - n, this.at)
  }
}

// ---------------------------------------------------------------------------------------------
// Sizes (must match assembly/batch.ts batchAppend byte for byte; the tests check it).

function uvarintSize(v: number): number {
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5
}

function varintSize(n: number): number {
  return uvarintSize(((n << 1) ^ (n >> 31)) >>> 0)
}

/** Zigzag varlong size of an integer up to 2^53 in magnitude. */
function varlongSize(n: number): number {
  if (n >= -0x40000000 && n < 0x40000000) return varintSize(n)
  let zz = n >= 0 ? n * 2 : -n * 2 - 1
  let size = 1
  while (zz >= 0x80) {
    zz = Math.floor(zz / 0x80)
    size++
  }
  return size
}

export function recordSize(record: RecordInput, offsetDelta: number, timestampDelta: number): number {
  return recordSizeFromBase(recordBaseSize(record), offsetDelta, timestampDelta)
}

/**
 * The part of a record's encoded body that does not depend on where it sits in a batch (key, value,
 * headers): computed once per record, then recordSizeFromBase() adds the deltas and the length prefix.
 */
export function recordBaseSize(record: RecordInput): number {
  const key = record.key
  const value = record.value
  let body = (key === null ? 1 : varintSize(key.length) + key.length)
    + (value === null ? 1 : varintSize(value.length) + value.length)
  const headers = record.headers
  const headerCount = headers === undefined ? 0 : headers.length
  body += varintSize(headerCount)
  for (let i = 0; i < headerCount; i++) {
    const h = headers![i]!
    const k = utf8Length(h.key)
    body += varintSize(k) + k + (h.value === null ? 1 : varintSize(h.value.length) + h.value.length)
  }
  return body
}

/** Exact encoded size of a record with the given recordBaseSize() at these deltas (attributes byte included). */
export function recordSizeFromBase(baseSize: number, offsetDelta: number, timestampDelta: number): number {
  const body = 1 + varlongSize(timestampDelta) + varintSize(offsetDelta) + baseSize
  return varintSize(body) + body
}

/** UTF-8 length as TextEncoder produces it (a lone surrogate becomes U+FFFD, 3 bytes). */
function utf8Length(s: string): number {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) n += 1
    else if (c < 0x800) n += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4
      i++
    } else n += 3
  }
  return n
}

// ---------------------------------------------------------------------------------------------

/** Copies src into WASM memory; a byte loop beats TypedArray.set's call overhead for short inputs. */
function copyIn(u8: Uint8Array, src: Uint8Array, at: number): void {
  const n = src.length
  if (n <= 16) {
    for (let i = 0; i < n; i++) u8[at + i] = src[i]!
  } else {
    u8.set(src, at)
  }
}

function writeUtf8(u8: Uint8Array, s: string, at: number): number {
  const n = s.length
  if (n <= ASCII_FAST_PATH) {
    let i = 0
    for (; i < n; i++) {
      const c = s.charCodeAt(i)
      if (c >= 0x80) break
      u8[at + i] = c
    }
    if (i === n) return n
  }
  return utf8.encodeInto(s, u8.subarray(at, at + 3 * n)).written
}

function codecName(codec: number): CompressionType {
  return (Object.keys(COMPRESSION_CODEC) as CompressionType[]).find((k) => COMPRESSION_CODEC[k] === codec) ?? 'none'
}

function typedTrap(err: unknown): unknown {
  return err instanceof WebAssembly.RuntimeError
    ? new WasmCoreError(`WebAssembly core trapped: ${err.message}`, { cause: err })
    : err
}

function outOfMemory(bytes: number): WasmCoreError {
  return new WasmCoreError(`WebAssembly memory exhausted (needed ${bytes} more bytes); finish or discard open batches`)
}

// ---------------------------------------------------------------------------------------------
// Loading

/** ArrayBufferView too: TS 5.7+ types a Node Buffer / Uint8Array<ArrayBufferLike> as not a BufferSource. */
export type CoreSource = WebAssembly.Module | BufferSource | ArrayBufferView | Promise<Response> | Response

let defaultCore: Promise<Core> | undefined
const loaded = new WeakMap<object, Promise<Core>>()

/** What loadCore() uses when the producer is given no `wasm`: a function, so nothing loads until a producer connects. */
export type DefaultCoreSource = () => CoreSource | Promise<CoreSource>

/**
 * The literal stays inside `new URL(..., import.meta.url)` because that is the form Vite, webpack
 * and Parcel recognise: they copy the file into the build and rewrite the URL. src/edge/wasm and
 * dist/edge/wasm sit at the same depth, so the path holds in a checkout and in the package.
 */
function bundledCoreUrl(): URL {
  return new URL('../../../build/core.wasm', import.meta.url)
}

/**
 * The separate build/core.wasm: read from disk where the module URL is a file (Node, Deno, Bun;
 * `process.getBuiltinModule` keeps `node:fs` out of what browser bundlers see), fetched otherwise.
 */
async function fetchBundledCore(url = bundledCoreUrl()): Promise<CoreSource> {
  if (url.protocol === 'file:') {
    const getBuiltin = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule
    const fs = getBuiltin?.('fs/promises') as { readFile(u: URL): Promise<Uint8Array> } | undefined
    if (fs) return fs.readFile(url)
  }
  let response: Response
  try {
    response = await fetch(url)
  } catch (err) {
    throw new WasmCoreError(`could not fetch the kafka-edge WebAssembly core from ${url.href}: ${(err as Error)?.message ?? err}${WHERE_THE_CORE_COMES_FROM}`, { cause: err })
  }
  if (!response.ok) throw new WasmCoreError(`fetching the kafka-edge WebAssembly core from ${url.href} failed: HTTP ${response.status}${WHERE_THE_CORE_COMES_FROM}`)
  return response
}

const WHERE_THE_CORE_COMES_FROM = '. A bundler that does not copy `new URL(..., import.meta.url)` assets (esbuild) needs the core'
  + ' passed as the producer\'s `wasm` (e.g. fetch() of kafka-edge/core.wasm emitted with the file loader),'
  + ' or import kafka-edge/inline, which embeds it'

let defaultSource: DefaultCoreSource = () => fetchBundledCore()

let lz4Core: Promise<CoreSource> | undefined
/**
 * The lz4-only core (build/core-lz4.wasm, 5 kB gzip against 21 kB for all four codecs), fetched next
 * to the bundle like the default one: the browser SDK's, which compresses with lz4 and reads back
 * only its own batches. One promise per page, so loadCore() caches one instance for it.
 */
export function bundledLz4Core(): Promise<CoreSource> {
  return lz4Core ??= fetchBundledCore(new URL('../../../build/core-lz4.wasm', import.meta.url))
}

/**
 * @internal Replaces where loadCore() finds the core when it is given none: the `kafka-edge/inline`
 * entry installs its embedded copy, the workerd entry the module wrangler compiled.
 */
export function setDefaultCoreSource(source: DefaultCoreSource): void {
  defaultSource = source
  defaultCore = undefined
}

export interface LoadCoreOptions {
  /**
   * The codec the caller will compress with: loading fails with UnsupportedCompressionError when
   * the module was built without its encoder (e.g. `kafka-edge/core-lz4.wasm` and 'zstd'), so a
   * producer fails at connect() rather than at its first batch.
   */
  compression?: CompressionType
}

/**
 * Instantiates the core. Without a source it loads `kafka-edge/core.wasm` (all four codecs) as a
 * separate file: read from disk in Node, Deno and Bun, fetched next to the bundle in a page (Vite
 * and webpack emit it), imported as a module under workerd. `kafka-edge/inline` embeds it as
 * base64 instead, for one-file deployments. Smaller builds with one codec
 * (`kafka-edge/core-lz4.wasm`, `core-gzip`, `core-snappy`, `core-zstd`), none (`core-none`) or only
 * the encoders (`core-encoders`) are passed as `source` (a WebAssembly.Module, bytes, or a fetch()
 * Response). Results are cached per source.
 */
export async function loadCore(source?: CoreSource, opts: LoadCoreOptions = {}): Promise<Core> {
  const core = await loadCoreCached(source)
  const compression = opts.compression
  if (compression !== undefined && compression !== 'none') {
    if (COMPRESSION_CODEC[compression] === undefined) throw new WasmCoreError(`unknown compression type '${String(compression)}'`)
    if (!core.supportsCompression(compression)) throw new UnsupportedCompressionError(compression)
  }
  return core
}

function loadCoreCached(source?: CoreSource): Promise<Core> {
  if (source === undefined) {
    if (defaultCore === undefined) {
      const p = instantiate(Promise.resolve().then(defaultSource))
      defaultCore = p
      p.catch(() => { if (defaultCore === p) defaultCore = undefined })
    }
    return defaultCore
  }
  let core = loaded.get(source)
  if (core === undefined) {
    core = instantiate(source)
    loaded.set(source, core)
    core.catch(() => loaded.delete(source))
  }
  return core
}

async function instantiate(source: CoreSource | Promise<CoreSource>): Promise<Core> {
  let memory: WebAssembly.Memory | undefined
  const imports = {
    env: {
      abort(message: number, file: number, line: number, column: number): never {
        const text = memory ? `${readAscString(memory, message)} at ${readAscString(memory, file)}:${line}:${column}` : 'abort'
        throw new WasmCoreError(`WebAssembly core aborted: ${text}`)
      },
      seed: () => Date.now(),
      trace: () => {},
    },
  }
  let resolved: CoreSource | undefined
  try {
    resolved = await source
    let instance: WebAssembly.Instance
    if (resolved instanceof WebAssembly.Module) {
      instance = await WebAssembly.instantiate(resolved, imports)
    } else if (isResponse(resolved)) {
      instance = await instantiateResponse(resolved, imports)
    } else {
      instance = (await WebAssembly.instantiate(resolved as BufferSource, imports)).instance
    }
    const exports = instance.exports as unknown as CoreExports
    memory = exports.memory
    return new Core(exports)
  } catch (err) {
    if (err instanceof WasmCoreError) throw err
    // Both refusals look alike (a CompileError about code generation): name both ways out.
    const hint = resolved instanceof WebAssembly.Module
      ? ''
      : ". A page whose Content-Security-Policy has script-src needs 'wasm-unsafe-eval' in it;"
        + " workerd forbids compiling bytes: pass the WebAssembly.Module that `import core from 'kafka-edge/core.wasm'` gives"
    throw new WasmCoreError(`could not load the kafka-edge WebAssembly core: ${(err as Error)?.message ?? err}${hint}`, { cause: err })
  }
}

function isResponse(x: unknown): x is Response {
  return typeof x === 'object' && x !== null && typeof (x as Response).arrayBuffer === 'function' && 'headers' in x
}

async function instantiateResponse(response: Response, imports: WebAssembly.Imports): Promise<WebAssembly.Instance> {
  if (!response.ok) throw new WasmCoreError(`fetching the WebAssembly core failed: HTTP ${response.status}`)
  // Streaming compiles while downloading but requires the application/wasm content type.
  if (typeof WebAssembly.instantiateStreaming === 'function' && response.headers.get('content-type')?.startsWith('application/wasm')) {
    return (await WebAssembly.instantiateStreaming(response, imports)).instance
  }
  return (await WebAssembly.instantiate(await response.arrayBuffer(), imports)).instance
}

/** @internal For kafka-edge/inline. */
export function base64Bytes(b64: string): Uint8Array {
  const bin = atob(b64)
  const out = new Uint8Array(bin.length)
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i)
  return out
}

/** AssemblyScript strings: UTF-16LE, byte length in the u32 before the pointer. */
function readAscString(memory: WebAssembly.Memory, ptr: number): string {
  if (ptr === 0) return ''
  const bytes = new Uint8Array(memory.buffer)
  const at = ptr >>> 0
  const len = new DataView(memory.buffer).getUint32(at - 4, true)
  let s = ''
  for (let i = 0; i + 1 < len; i += 2) s += String.fromCharCode(bytes[at + i]! | (bytes[at + i + 1]! << 8))
  return s
}
