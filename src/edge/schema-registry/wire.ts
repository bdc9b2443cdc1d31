/**
 * The bytes both binary formats write, and the Confluent wire format around them: magic byte 0x00,
 * the schema id as a big-endian int32, then (Protobuf only) the message indexes, then the payload.
 */
const encoder = new TextEncoder()

/** A growable byte buffer; one per serializer, reused for every record. */
export class ByteWriter {
  buf = new Uint8Array(256)
  view = new DataView(this.buf.buffer)
  pos = 0

  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n))
    next.set(this.buf.subarray(0, this.pos))
    this.buf = next
    this.view = new DataView(next.buffer)
  }

  byte(b: number): void { this.ensure(1); this.buf[this.pos++] = b }

  bytes(b: Uint8Array): void { this.ensure(b.length); this.buf.set(b, this.pos); this.pos += b.length }

  /** An unsigned varint of up to 2^53 (Protobuf lengths and fields, zig-zagged Avro ints). */
  uvarint(v: number): void {
    this.ensure(10)
    while (v >= 0x80) { this.buf[this.pos++] = (v % 0x80) | 0x80; v = Math.floor(v / 0x80) }
    this.buf[this.pos++] = v
  }

  /** An unsigned 64-bit varint given as a bigint in [0, 2^64). */
  uvarint64(v: bigint): void {
    if (v < 0x20000000000000n) { this.uvarint(Number(v)); return }
    this.ensure(10)
    while (v >= 0x80n) { this.buf[this.pos++] = Number(v & 0x7fn) | 0x80; v >>= 7n }
    this.buf[this.pos++] = Number(v)
  }

  /** Zig-zag varint (Avro int and long, Protobuf sint32/sint64, Confluent message indexes). */
  zigzag(v: number | bigint): void {
    if (typeof v === 'number' && Number.isSafeInteger(v) && Math.abs(v) < 2 ** 52) this.uvarint(v >= 0 ? v * 2 : -v * 2 - 1)
    else { const b = BigInt(v); this.uvarint64(b >= 0n ? b << 1n : ((-b) << 1n) - 1n) }
  }

  int32be(v: number): void { this.ensure(4); this.view.setInt32(this.pos, v); this.pos += 4 }
  float32(v: number): void { this.ensure(4); this.view.setFloat32(this.pos, v, true); this.pos += 4 }
  float64(v: number): void { this.ensure(8); this.view.setFloat64(this.pos, v, true); this.pos += 8 }
  fixed32(v: number): void { this.ensure(4); this.view.setUint32(this.pos, v >>> 0, true); this.pos += 4 }
  fixed64(v: bigint): void { this.ensure(8); this.view.setBigUint64(this.pos, BigInt.asUintN(64, v), true); this.pos += 8 }

  /** UTF-8 text, without a length. */
  utf8(s: string): number {
    this.ensure(s.length * 3)
    const { written } = encoder.encodeInto(s, this.buf.subarray(this.pos))
    this.pos += written
    return written
  }

  /**
   * Length-delimited content written after beginLength() and closed by endLength(start): one byte is
   * reserved for the length and the content is moved up in the rare case the length needs more.
   */
  beginLength(): number { this.ensure(1); return this.pos++ }

  endLength(start: number): void {
    const len = this.pos - start - 1
    if (len < 0x80) { this.buf[start] = len; return }
    let n = 1
    for (let v = len; v >= 0x80; v = Math.floor(v / 0x80)) n++
    this.ensure(n - 1)
    this.buf.copyWithin(start + n, start + 1, this.pos)
    const end = this.pos + n - 1
    this.pos = start
    this.uvarint(len)
    this.pos = end
  }

  /** A copy of what was written since `from`, and the writer reset for the next record. */
  take(from = 0): Uint8Array {
    const out = this.buf.slice(from, this.pos)
    this.pos = 0
    return out
  }
}

/** 0x00 and the schema id: the 5 bytes before every Confluent-framed payload. */
export function writeHeader(w: ByteWriter, id: number): void {
  w.byte(0)
  w.int32be(id)
}

/**
 * Confluent's message-index array for a Protobuf message (MessageIndexes.java): the path of indexes
 * from the file's top-level messages down to the nested one, as a count then each index, all zig-zag
 * varints. The first top-level message, [0], is written as the single byte 0x00.
 */
export function writeMessageIndexes(w: ByteWriter, indexes: readonly number[]): void {
  if (indexes.length === 1 && indexes[0] === 0) { w.byte(0); return }
  w.zigzag(indexes.length)
  for (const i of indexes) w.zigzag(i)
}
