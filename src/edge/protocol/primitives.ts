import { ProtocolError } from '../errors.js'

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

/** raw() inputs at least this large are kept by reference and copied once, by finish(). */
const RAW_BY_REFERENCE = 1024

/**
 * Growable big-endian writer. Strings are measured with TextEncoder once per write. Large byte
 * arrays (record batches) are not copied into the growing buffer: they are kept by reference and
 * finish() copies every piece once into a frame of the exact size. So a batch is copied once into
 * its request, and the buffer never grows (and re-copies) because of batches. The caller must not
 * change such an array before finish().
 */
export class Writer {
  private buf: Uint8Array
  private view: DataView
  /** Write position in buf; buf[start, at) is the not yet parted tail. */
  private at = 0
  private start = 0
  /** Pieces before buf[start]: slices of earlier buffers and large raw() inputs, in order. */
  private parts: Uint8Array[] | null = null
  /** Per part: written by this writer (true) or a caller's array kept by reference (never patched). */
  private owned: boolean[] | null = null
  private partsBytes = 0

  constructor(initial = 256) {
    this.buf = new Uint8Array(initial)
    this.view = new DataView(this.buf.buffer)
  }

  /** Bytes written so far. */
  get pos(): number { return this.partsBytes + this.at - this.start }

  private ensure(n: number): void {
    if (this.at + n <= this.buf.length) return
    // Only the tail since the last part moves; parts keep their own (old) buffers alive.
    const used = this.at - this.start
    let size = this.buf.length * 2
    while (size < used + n) size *= 2
    const next = new Uint8Array(size)
    next.set(this.buf.subarray(this.start, this.at))
    this.buf = next
    this.view = new DataView(next.buffer)
    this.start = 0
    this.at = used
  }

  private part(bytes: Uint8Array, owned: boolean): void {
    (this.parts ??= []).push(bytes)
    ;(this.owned ??= []).push(owned)
    this.partsBytes += bytes.length
  }

  int8(v: number): this { this.ensure(1); this.view.setInt8(this.at, v); this.at += 1; return this }
  int16(v: number): this { this.ensure(2); this.view.setInt16(this.at, v); this.at += 2; return this }
  uint16(v: number): this { this.ensure(2); this.view.setUint16(this.at, v); this.at += 2; return this }
  int32(v: number): this { this.ensure(4); this.view.setInt32(this.at, v); this.at += 4; return this }
  uint32(v: number): this { this.ensure(4); this.view.setUint32(this.at, v); this.at += 4; return this }
  int64(v: bigint): this { this.ensure(8); this.view.setBigInt64(this.at, v); this.at += 8; return this }
  float64(v: number): this { this.ensure(8); this.view.setFloat64(this.at, v); this.at += 8; return this }
  bool(v: boolean): this { return this.int8(v ? 1 : 0) }

  uvarint(v: number): this {
    this.ensure(5)
    v >>>= 0
    while (v > 0x7f) { this.buf[this.at++] = (v & 0x7f) | 0x80; v >>>= 7 }
    this.buf[this.at++] = v
    return this
  }

  raw(bytes: Uint8Array): this {
    if (bytes.length >= RAW_BY_REFERENCE) {
      // Close the tail as a part (a view: no copy) and keep going in the rest of buf.
      if (this.at > this.start) this.part(this.buf.subarray(this.start, this.at), true)
      this.start = this.at
      this.part(bytes, false)
      return this
    }
    this.ensure(bytes.length)
    this.buf.set(bytes, this.at)
    this.at += bytes.length
    return this
  }

  /** Patches an int32 written earlier (frame sizes). */
  setInt32At(at: number, v: number): void {
    for (let i = 0; i < 4; i++) this.setByteAt(at + i, (v >>> (24 - 8 * i)) & 0xff)
  }

  private setByteAt(at: number, b: number): void {
    if (this.parts) {
      for (let i = 0; i < this.parts.length; i++) {
        const p = this.parts[i]!
        if (at < p.length) {
          if (!this.owned![i]) throw new RangeError('Writer.setInt32At: offset inside bytes kept by reference')
          p[at] = b
          return
        }
        at -= p.length
      }
    }
    this.buf[this.start + at] = b
  }

  string(v: string | null, compact: boolean): this {
    if (v === null) return compact ? this.uvarint(0) : this.int16(-1)
    const bytes = encoder.encode(v)
    if (compact) this.uvarint(bytes.length + 1)
    else {
      if (bytes.length > 0x7fff) throw new ProtocolError(`string of ${bytes.length} bytes exceeds the int16 length limit`)
      this.int16(bytes.length)
    }
    return this.raw(bytes)
  }

  bytes(v: Uint8Array | null, compact: boolean): this {
    if (v === null) return compact ? this.uvarint(0) : this.int32(-1)
    if (compact) this.uvarint(v.length + 1)
    else this.int32(v.length)
    return this.raw(v)
  }

  finish(): Uint8Array {
    if (!this.parts) return this.buf.subarray(0, this.at)
    const out = new Uint8Array(this.pos)
    let o = 0
    for (const p of this.parts) { out.set(p, o); o += p.length }
    out.set(this.buf.subarray(this.start, this.at), o)
    return out
  }
}

/** Bounds-checked big-endian reader: every overrun is a ProtocolError, never a RangeError or garbage. */
export class Reader {
  private readonly view: DataView
  pos: number

  constructor(readonly buf: Uint8Array, start = 0, readonly end = buf.length) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
    this.pos = start
  }

  get remaining(): number { return this.end - this.pos }

  private need(n: number, what: string): void {
    if (n < 0 || this.pos + n > this.end) {
      throw new ProtocolError(`truncated ${what}: need ${n} bytes at offset ${this.pos}, ${this.end - this.pos} left`)
    }
  }

  int8(): number { this.need(1, 'int8'); return this.view.getInt8(this.pos++) }
  int16(): number { this.need(2, 'int16'); const v = this.view.getInt16(this.pos); this.pos += 2; return v }
  uint16(): number { this.need(2, 'uint16'); const v = this.view.getUint16(this.pos); this.pos += 2; return v }
  int32(): number { this.need(4, 'int32'); const v = this.view.getInt32(this.pos); this.pos += 4; return v }
  uint32(): number { this.need(4, 'uint32'); const v = this.view.getUint32(this.pos); this.pos += 4; return v }
  int64(): bigint { this.need(8, 'int64'); const v = this.view.getBigInt64(this.pos); this.pos += 8; return v }
  float64(): number { this.need(8, 'float64'); const v = this.view.getFloat64(this.pos); this.pos += 8; return v }
  bool(): boolean {
    const v = this.int8()
    if (v !== 0 && v !== 1) throw new ProtocolError(`invalid boolean byte ${v} at offset ${this.pos - 1}`)
    return v === 1
  }

  uvarint(): number {
    let result = 0
    // A multiplier, not 2 ** shift: V8 calls its C++ pow for a ** whose exponent varies, on every byte.
    for (let scale = 1; scale <= 0x10000000; scale *= 0x80) {
      this.need(1, 'varint')
      const b = this.buf[this.pos++]!
      result += (b & 0x7f) * scale
      if ((b & 0x80) === 0) {
        if (result > 0xffffffff) throw new ProtocolError(`unsigned varint ${result} exceeds 32 bits`)
        return result
      }
    }
    throw new ProtocolError(`unsigned varint longer than 5 bytes at offset ${this.pos}`)
  }

  raw(n: number, what = 'bytes'): Uint8Array {
    this.need(n, what)
    const out = this.buf.subarray(this.pos, this.pos + n)
    this.pos += n
    return out
  }

  /** Moves past n bytes with raw()'s bounds check, without making a view of them (the relay walks fields it does not read). */
  skip(n: number, what = 'bytes'): void {
    this.need(n, what)
    this.pos += n
  }

  private length(compact: boolean, what: string): number {
    if (compact) return this.uvarint() - 1
    return what === 'string' ? this.int16() : this.int32()
  }

  string(compact: boolean): string | null {
    const n = this.length(compact, 'string')
    if (n < -1) throw new ProtocolError(`invalid string length ${n}`)
    if (n === -1) return null
    try {
      return decoder.decode(this.raw(n, 'string'))
    } catch (e) {
      if (e instanceof ProtocolError) throw e
      throw new ProtocolError('string is not valid UTF-8', { cause: e })
    }
  }

  bytes(compact: boolean): Uint8Array | null {
    const n = this.length(compact, 'bytes')
    if (n < -1) throw new ProtocolError(`invalid bytes length ${n}`)
    return n === -1 ? null : this.raw(n, 'bytes')
  }

  /** Array length; the element count is checked against the bytes left so a forged count cannot make us allocate. */
  arrayLength(compact: boolean, minElementBytes: number): number {
    const n = compact ? this.uvarint() - 1 : this.int32()
    if (n < -1) throw new ProtocolError(`invalid array length ${n}`)
    if (n > 0 && n * minElementBytes > this.remaining) {
      throw new ProtocolError(`array of ${n} elements cannot fit in the ${this.remaining} bytes left`)
    }
    return n
  }
}
