// The batch builder: an OpenBatch appends records through the Core's staging into its own region of
// WASM memory and finishes it there (header, compression, CRC). restamp, batchHeader and
// readBatchRecords work on finished batches; the sizes match assembly/batch.ts byte for byte.

import { UnsupportedCompressionError, WasmCoreError } from '../errors.js'
import { codecName, outOfMemory, typedTrap, type Core } from './core.js'

export interface RecordHeader {
  key: string
  value: Uint8Array | null
}

/** A header as it goes into a batch: a string value is written into WASM memory as UTF-8. */
export interface HeaderInput {
  key: string
  value: Uint8Array | string | null
}

/**
 * A record as it goes into a batch. Strings are written into WASM memory as UTF-8 (TextEncoder's
 * bytes) without a Uint8Array of their own: most records from pages and Workers are JSON text, and
 * an encode() per string was a third of what such a record cost.
 */
export interface RecordInput {
  key: Uint8Array | string | null
  value: Uint8Array | string | null
  headers?: readonly HeaderInput[]
  /** Milliseconds since the epoch; an integer. */
  timestamp: number
}

/** A record as readBatchRecords() decodes it. */
export interface DecodedRecord extends RecordInput {
  key: Uint8Array | null
  value: Uint8Array | null
  headers?: readonly RecordHeader[]
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

const TRANSACTIONAL_BIT = 0x10
/** assembly/batch.ts status codes. */
const ERR_OUT_OF_MEMORY = -1
const ERR_CODEC_NOT_BUILT = -2

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
    // send() usually staged the record already (to size it); anything else is staged here.
    if (core.stagedRecord !== record) core.stage(record)
    core.stagedRecord = null
    const headerCount = core.stagedHeaderCount
    const first = this.count === 0 ? ts : this.firstTs
    let size: number
    try {
      size = core.exports.batchAppend(handle, ts - first, this.count, core.stagedKeyBytes, core.stagedValueBytes, headerCount)
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
export function readBatchRecords(core: Core, bytes: Uint8Array): DecodedRecord[] {
  const header = batchHeader(bytes)
  const codec = header.attributes & 7
  const section = bytes.subarray(RECORD_BATCH_HEADER_SIZE)
  const data = codec === 0 ? section : core.decompress(codecName(codec), section)
  const r = new RecordReader(data)
  const out: DecodedRecord[] = []
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
const utf8Encoder = new TextEncoder()
/**
 * Strings up to this many UTF-16 units are tried as ASCII first, skipping a subarray + encodeInto.
 * In Node, past 16 units encodeInto takes fewer instructions than the loop (callgrind, bench --
 * instructions). workerd's TextEncoder is a binding rather than a V8 builtin, so each call costs
 * more there: with the loop to 192 units, writeUtf8 and encodeInto together took about two fifths
 * less of the Worker's isolate per 100-event POST (docs/benchmarks.md, "The isolate's tick").
 */
const ASCII_FAST_PATH = (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent === 'Cloudflare-Workers' ? 192 : 16

/**
 * @internal Writes `s` as UTF-8 at `at` (room for 3 bytes per UTF-16 unit) and returns its length;
 * the bytes are TextEncoder's.
 */
export function writeUtf8(u8: Uint8Array, s: string, at: number): number {
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
  return utf8Encoder.encodeInto(s, u8.subarray(at, at + 3 * n)).written
}

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

/** @internal */
export function varintSize(n: number): number {
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
  let body = fieldSize(record.key) + fieldSize(record.value)
  const headers = record.headers
  const headerCount = headers === undefined ? 0 : headers.length
  body += varintSize(headerCount)
  for (let i = 0; i < headerCount; i++) {
    const h = headers![i]!
    const k = utf8Length(h.key)
    body += varintSize(k) + k + fieldSize(h.value)
  }
  return body
}

/** A nullable bytes field: its length varint and its bytes (-1 for null: one byte). */
function fieldSize(v: Uint8Array | string | null): number {
  return fieldSizeOf(v === null ? -1 : typeof v === 'string' ? utf8Length(v) : v.length)
}

/** @internal fieldSize() of a field of `n` bytes (-1: null). */
export function fieldSizeOf(n: number): number {
  return n < 0 ? 1 : varintSize(n) + n
}

/** Exact encoded size of a record with the given recordBaseSize() at these deltas (attributes byte included). */
export function recordSizeFromBase(baseSize: number, offsetDelta: number, timestampDelta: number): number {
  const body = 1 + varlongSize(timestampDelta) + varintSize(offsetDelta) + baseSize
  return varintSize(body) + body
}

/**
 * UTF-8 length as TextEncoder produces it (a lone surrogate becomes U+FFFD, 3 bytes). Only records
 * send() does not stage at once (before the core loads, or past 64 KiB) are measured this way.
 */
export function utf8Length(s: string): number {
  return utf8Encoder.encode(s).length
}
