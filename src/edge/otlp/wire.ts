/**
 * The protobuf wire format, the little the OTLP messages need: a field iterator over a byte range
 * (no copies: a field is its position in the buffer) and a writer. Hand-rolled instead of a
 * protobuf library because the Worker mostly moves fields between messages without decoding them
 * (passthrough, splitting, keying), which a generated-message library would decode and re-encode, and
 * because generated code (or runtime codegen, refused by workerd) would be most of the bundle.
 */

export const VARINT = 0
export const I64 = 1
export const LEN = 2
export const I32 = 5

/** Bad OTLP input; at() adds the path (`TracesData.resourceSpans.scopeSpans...`) as the error passes each message. */
export class OtlpInputError extends Error {
  readonly path: string[] = []
  constructor(readonly detail: string) {
    super(detail)
  }
  at(step: string): this {
    this.path.unshift(step)
    this.message = `${this.path.join('')}: ${this.detail}`
    return this
  }
}

/** A malformed protobuf body: answered 400 by the OTLP routes. */
export class ProtobufError extends OtlpInputError {
  override readonly name = 'ProtobufError'
}

/** One field: its number and wire type, where it starts (the tag) and ends, and for LEN its payload. */
export interface Field {
  no: number
  wt: number
  /** First byte of the tag. */
  start: number
  /** First byte after the field. */
  end: number
  /** The payload of a LEN field (valueStart..end); for other types, where the value starts. */
  valueStart: number
}

/** Reads an unsigned varint of at most 53 bits (tags, lengths, counts) at `pos`: [value, next]. */
export function readVarint(buf: Uint8Array, pos: number, end: number): [number, number] {
  let value = 0
  let mul = 1
  for (let i = 0; i < 10; i++) {
    if (pos >= end) throw new ProtobufError('truncated varint')
    const b = buf[pos++]!
    value += (b & 0x7f) * mul
    if (b < 0x80) {
      if (i === 9 && b > 1) throw new ProtobufError('varint longer than 64 bits')
      return [value, pos]
    }
    mul *= 128
  }
  throw new ProtobufError('varint longer than 10 bytes')
}

/** An unsigned 64-bit varint as a bigint. */
export function readVarint64(buf: Uint8Array, pos: number, end: number): [bigint, number] {
  let value = 0n
  let shift = 0n
  for (let i = 0; i < 10; i++) {
    if (pos >= end) throw new ProtobufError('truncated varint')
    const b = buf[pos++]!
    value |= BigInt(b & 0x7f) << shift
    if (b < 0x80) return [BigInt.asUintN(64, value), pos]
    shift += 7n
  }
  throw new ProtobufError('varint longer than 10 bytes')
}

/** The fields of the message in buf[start, end), in wire order. Throws ProtobufError on a malformed one. */
export function* fields(buf: Uint8Array, start = 0, end = buf.length): Generator<Field> {
  let pos = start
  while (pos < end) {
    const fieldStart = pos
    const [tag, afterTag] = readVarint(buf, pos, end)
    const no = Math.floor(tag / 8)
    const wt = tag & 7
    if (no < 1 || no > 0x1fffffff) throw new ProtobufError(`field number ${no} out of range`)
    pos = afterTag
    let valueStart = pos
    switch (wt) {
      case VARINT: pos = readVarint(buf, pos, end)[1]; break
      case I64: pos += 8; break
      case I32: pos += 4; break
      case LEN: {
        const [len, p] = readVarint(buf, pos, end)
        valueStart = p
        pos = p + len
        break
      }
      default: throw new ProtobufError(`field ${no}: wire type ${wt} (groups and unknown types are not OTLP)`)
    }
    if (pos > end) throw new ProtobufError(`field ${no}: runs past the end of its message`)
    yield { no, wt, start: fieldStart, end: pos, valueStart }
  }
}

const utf8 = new TextEncoder()

/** A growable buffer that writes the wire format; nested messages are written in place (fork/join). */
export class Writer {
  private buf: Uint8Array<ArrayBuffer> = new Uint8Array(1024)
  private view = new DataView(this.buf.buffer)
  private len = 0
  private readonly forks: number[] = []

  private room(n: number): void {
    if (this.len + n <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < this.len + n) size *= 2
    const next = new Uint8Array(size)
    next.set(this.buf.subarray(0, this.len))
    this.buf = next
    this.view = new DataView(next.buffer)
  }

  varint(v: number): this {
    this.room(10)
    while (v >= 0x80) {
      this.buf[this.len++] = (v % 128) | 0x80
      v = Math.floor(v / 128)
    }
    this.buf[this.len++] = v
    return this
  }

  varint64(v: bigint): this {
    const u = BigInt.asUintN(64, v)
    if (u <= 0x1fffffffffffffn) return this.varint(Number(u))
    this.room(10)
    let lo = Number(u & 0xffffffffn)
    let hi = Number(u >> 32n)
    // 7 bits at a time across the two 32-bit halves.
    while (hi > 0 || lo >= 0x80) {
      this.buf[this.len++] = (lo & 0x7f) | 0x80
      lo = ((lo >>> 7) | (hi << 25)) >>> 0
      hi >>>= 7
    }
    this.buf[this.len++] = lo
    return this
  }

  tag(no: number, wt: number): this { return this.varint(no * 8 + wt) }

  raw(b: Uint8Array): this {
    this.room(b.length)
    this.buf.set(b, this.len)
    this.len += b.length
    return this
  }

  /** A LEN field holding `b`. */
  bytes(no: number, b: Uint8Array): this { return this.tag(no, LEN).varint(b.length).raw(b) }

  string(no: number, s: string): this {
    this.tag(no, LEN)
    // Room for the worst case (3 bytes per UTF-16 unit) after a 5-byte length, then the length moved up.
    this.room(5 + s.length * 3)
    const at = this.len
    const { written } = utf8.encodeInto(s, this.buf.subarray(at + 5))
    return this.placeLength(at, written)
  }

  /** Starts a LEN field whose payload is written next; join() closes it. */
  fork(no: number): this {
    this.tag(no, LEN)
    this.room(5)
    this.forks.push(this.len)
    this.len += 5
    return this
  }

  join(): this {
    const at = this.forks.pop()!
    return this.placeLength(at, this.len - at - 5)
  }

  /** Writes the varint length `n` at `at`, moving the `n` payload bytes at `at + 5` right behind it. */
  private placeLength(at: number, n: number): this {
    const size = varintSize(n)
    this.buf.copyWithin(at + size, at + 5, at + 5 + n)
    let v = n
    let p = at
    while (v >= 0x80) { this.buf[p++] = (v % 128) | 0x80; v = Math.floor(v / 128) }
    this.buf[p] = v
    this.len = at + size + n
    return this
  }

  fixed32(v: number): this {
    this.room(4)
    this.view.setUint32(this.len, v >>> 0, true)
    this.len += 4
    return this
  }

  fixed64(v: bigint): this {
    this.room(8)
    this.view.setBigUint64(this.len, BigInt.asUintN(64, v), true)
    this.len += 8
    return this
  }

  double(v: number): this {
    this.room(8)
    this.view.setFloat64(this.len, v, true)
    this.len += 8
    return this
  }

  get length(): number { return this.len }
  finish(): Uint8Array<ArrayBuffer> { return this.buf.slice(0, this.len) }
}

/** Bytes a varint of `v` takes. */
export function varintSize(v: number): number {
  let n = 1
  while (v >= 0x80) { v = Math.floor(v / 128); n++ }
  return n
}

/** Bytes a LEN field `no` of `len` payload bytes takes on the wire. */
export function lenFieldSize(no: number, len: number): number {
  return varintSize(no * 8) + varintSize(len) + len
}

/** Concatenates byte arrays. */
export function concat(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  let n = 0
  for (const p of parts) n += p.length
  const out = new Uint8Array(n)
  let at = 0
  for (const p of parts) { out.set(p, at); at += p.length }
  return out
}
