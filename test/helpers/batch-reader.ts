// An independent RecordBatch v2 reader for tests: plain TypeScript, no code shared with the
// AssemblyScript builder, deliberately simple (bitwise CRC, byte-at-a-time varints).

export interface ReadHeader {
  key: string
  value: Uint8Array | null
}

export interface ReadRecord {
  attributes: number
  offsetDelta: number
  timestampDelta: number
  timestamp: number
  key: Uint8Array | null
  value: Uint8Array | null
  headers: ReadHeader[]
}

export interface ReadBatch {
  baseOffset: bigint
  batchLength: number
  partitionLeaderEpoch: number
  magic: number
  crc: number
  computedCrc: number
  attributes: number
  compression: number
  transactional: boolean
  control: boolean
  lastOffsetDelta: number
  baseTimestamp: number
  maxTimestamp: number
  producerId: bigint
  producerEpoch: number
  baseSequence: number
  recordCount: number
  records: ReadRecord[]
}

export class BatchReadError extends Error {
  override name = 'BatchReadError'
}

/** Bitwise CRC-32C (reflected 0x82F63B78); slow and obviously right. */
export function crc32cBitwise(bytes: Uint8Array, crc = 0): number {
  let c = ~crc >>> 0
  for (let i = 0; i < bytes.length; i++) {
    c ^= bytes[i]!
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1
  }
  return ~c >>> 0
}

class Cursor {
  pos: number
  constructor(readonly bytes: Uint8Array, pos: number, readonly end: number) {
    this.pos = pos
  }

  need(n: number, what: string): void {
    if (n < 0 || this.pos + n > this.end) {
      throw new BatchReadError(`truncated: ${what} needs ${n} bytes at ${this.pos}, ${this.end - this.pos} left`)
    }
  }

  u8(what: string): number {
    this.need(1, what)
    return this.bytes[this.pos++]!
  }

  take(n: number, what: string): Uint8Array {
    this.need(n, what)
    const out = this.bytes.slice(this.pos, this.pos + n)
    this.pos += n
    return out
  }

  /** Zigzag varlong as a JS number (exact up to 2^53). */
  varlong(what: string): number {
    let result = 0n
    let shift = 0n
    for (;;) {
      const b = this.u8(what)
      result |= BigInt(b & 0x7f) << shift
      if ((b & 0x80) === 0) break
      shift += 7n
      if (shift > 63n) throw new BatchReadError(`${what}: varlong longer than 10 bytes`)
    }
    const decoded = (result >> 1n) ^ -(result & 1n)
    return Number(BigInt.asIntN(64, decoded))
  }

  varint(what: string): number {
    const v = this.varlong(what)
    if (v < -0x80000000 || v > 0x7fffffff) throw new BatchReadError(`${what}: varint out of int32 range: ${v}`)
    return v
  }

  nullableBytes(what: string): Uint8Array | null {
    const len = this.varint(`${what} length`)
    if (len < -1) throw new BatchReadError(`${what}: invalid length ${len}`)
    return len === -1 ? null : this.take(len, what)
  }
}

/** Parses one uncompressed RecordBatch v2; throws BatchReadError on truncation or inconsistency. */
export function readBatch(bytes: Uint8Array, opts: { verifyCrc?: boolean } = {}): ReadBatch {
  if (bytes.length < 61) throw new BatchReadError(`truncated: ${bytes.length} bytes, header needs 61`)
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const batchLength = dv.getInt32(8)
  if (batchLength + 12 !== bytes.length) {
    throw new BatchReadError(`batchLength ${batchLength} + 12 != ${bytes.length} bytes`)
  }
  const attributes = dv.getInt16(21)
  const header = {
    baseOffset: dv.getBigInt64(0),
    batchLength,
    partitionLeaderEpoch: dv.getInt32(12),
    magic: dv.getInt8(16),
    crc: dv.getUint32(17),
    computedCrc: crc32cBitwise(bytes.subarray(21)),
    attributes,
    compression: attributes & 7,
    transactional: (attributes & 0x10) !== 0,
    control: (attributes & 0x20) !== 0,
    lastOffsetDelta: dv.getInt32(23),
    baseTimestamp: Number(dv.getBigInt64(27)),
    maxTimestamp: Number(dv.getBigInt64(35)),
    producerId: dv.getBigInt64(43),
    producerEpoch: dv.getInt16(51),
    baseSequence: dv.getInt32(53),
    recordCount: dv.getInt32(57),
  }
  if (header.magic !== 2) throw new BatchReadError(`magic ${header.magic}, expected 2`)
  if ((opts.verifyCrc ?? true) && header.crc !== header.computedCrc) {
    throw new BatchReadError(`CRC mismatch: header ${header.crc.toString(16)}, computed ${header.computedCrc.toString(16)}`)
  }
  if (header.compression !== 0) throw new BatchReadError(`compressed batch (codec ${header.compression}); readBatch reads only uncompressed`)

  const c = new Cursor(bytes, 61, bytes.length)
  const records: ReadRecord[] = []
  for (let i = 0; i < header.recordCount; i++) {
    const length = c.varint(`record ${i} length`)
    c.need(length, `record ${i} body`)
    const r = new Cursor(bytes, c.pos, c.pos + length)
    const recordAttributes = r.u8('record attributes')
    const timestampDelta = r.varlong('timestampDelta')
    const offsetDelta = r.varint('offsetDelta')
    const key = r.nullableBytes('key')
    const value = r.nullableBytes('value')
    const headerCount = r.varint('header count')
    if (headerCount < 0) throw new BatchReadError(`record ${i}: header count ${headerCount}`)
    const headers: ReadHeader[] = []
    for (let h = 0; h < headerCount; h++) {
      const keyBytes = r.nullableBytes('header key')
      if (keyBytes === null) throw new BatchReadError(`record ${i} header ${h}: null key`)
      headers.push({ key: new TextDecoder('utf-8', { fatal: true }).decode(keyBytes), value: r.nullableBytes('header value') })
    }
    if (r.pos !== r.end) throw new BatchReadError(`record ${i}: ${r.end - r.pos} trailing bytes inside its length`)
    c.pos = r.end
    records.push({
      attributes: recordAttributes, offsetDelta, timestampDelta,
      timestamp: header.baseTimestamp + timestampDelta, key, value, headers,
    })
  }
  if (c.pos !== bytes.length) throw new BatchReadError(`${bytes.length - c.pos} bytes after the last record`)
  return { ...header, records }
}
