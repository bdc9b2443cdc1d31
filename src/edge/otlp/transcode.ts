/**
 * OTLP bodies checked and transcoded by the schema table: a protobuf body checked as the Collector's
 * decoder would refuse it, and the OTLP/JSON mapping both ways (ids as hex, 64-bit integers as
 * strings, enums as integers, lowerCamelCase keys; snake_case keys, enum names and numbers for
 * 64-bit integers are accepted too, as protojson readers do; unknown keys are ignored).
 */
import { INDEX, ENUM_NAMES, type FieldSpec, type Kind } from './schema.js'
import { I32, I64, LEN, OtlpInputError, ProtobufError, VARINT, Writer, fields, readVarint64 } from './wire.js'

/** A malformed OTLP/JSON body: answered 400. */
export class OtlpJsonError extends OtlpInputError {
  override readonly name = 'OtlpJsonError'
}

/** Nesting deeper than this (AnyValue inside AnyValue ...) is refused rather than followed. */
const MAX_DEPTH = 64

function wireTypeOf(kind: Kind): number {
  switch (kind) {
    case 'string': case 'bytes': case 'message': return LEN
    case 'double': case 'fixed64': case 'sfixed64': return I64
    case 'fixed32': return I32
    default: return VARINT
  }
}

/**
 * Checks that buf[start, end) is a well-formed `message`: every known field has its wire type (packed
 * repeated scalars too), nested messages are well-formed, ids have 16 or 8 bytes (or none).
 * Unknown fields are skipped, as protobuf decoders do. Throws ProtobufError naming the path.
 */
export function checkProto(buf: Uint8Array, message: string, start = 0, end = buf.length): void {
  try {
    checkMessage(buf, message, start, end, 0)
  } catch (e) {
    if (e instanceof ProtobufError) e.at(message)
    throw e
  }
}

function checkMessage(buf: Uint8Array, message: string, start: number, end: number, depth: number): void {
  if (depth > MAX_DEPTH) throw new ProtobufError(`nested more than ${MAX_DEPTH} deep`)
  const index = INDEX[message]!
  for (const fl of fields(buf, start, end)) {
    const spec = index.byNo.get(fl.no)
    if (!spec) continue
    try {
      const want = wireTypeOf(spec.kind)
      if (fl.wt !== want) {
        if (!(spec.repeated && want !== LEN && fl.wt === LEN)) throw new ProtobufError(`wire type ${fl.wt}, expected ${want}`)
        checkPacked(buf, fl.valueStart, fl.end, want)
      } else if (spec.kind === 'message') checkMessage(buf, spec.message!, fl.valueStart, fl.end, depth + 1)
      else if (spec.id) {
        const n = fl.end - fl.valueStart
        if (n !== 0 && n !== spec.id) throw new ProtobufError(`${n} bytes; an id has ${spec.id}`)
      }
    } catch (e) {
      if (e instanceof ProtobufError) e.at(`.${spec.json}`)
      throw e
    }
  }
}

function checkPacked(buf: Uint8Array, start: number, end: number, wt: number): void {
  if (wt === I64 || wt === I32) {
    if ((end - start) % (wt === I64 ? 8 : 4) !== 0) throw new ProtobufError(`packed length ${end - start} is not a multiple of the element size`)
    return
  }
  for (let p = start; p < end;) p = readVarint64(buf, p, end)[1]
}

// ---- JSON -> protobuf ----------------------------------------------------------------------------

const INT64_MIN = -(1n << 63n)
const INT64_MAX = (1n << 63n) - 1n
const UINT64_MAX = (1n << 64n) - 1n

function integer(v: unknown): bigint {
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw new OtlpJsonError(`${v} is not an integer`)
    return BigInt(v)
  }
  if (typeof v === 'string' && /^\s*-?\d+\s*$/.test(v)) return BigInt(v.trim())
  // protojson takes "1e3"-style strings for integers too; an exact float is an integer.
  if (typeof v === 'string' && v.trim() !== '' && Number.isInteger(Number(v))) return BigInt(Number(v))
  throw new OtlpJsonError(`expected an integer (a JSON number or a decimal string), got ${JSON.stringify(v)}`)
}

function inRange(n: bigint, lo: bigint, hi: bigint): bigint {
  if (n < lo || n > hi) throw new OtlpJsonError(`${n} is out of range`)
  return n
}

function double(v: unknown): number {
  if (typeof v === 'number') return v
  if (v === 'NaN') return NaN
  if (v === 'Infinity') return Infinity
  if (v === '-Infinity') return -Infinity
  if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))) return Number(v)
  throw new OtlpJsonError(`expected a number, got ${JSON.stringify(v)}`)
}

function hexBytes(v: unknown, len: number): Uint8Array {
  if (typeof v !== 'string' || (v.length !== 0 && v.length !== len * 2) || !/^[0-9a-fA-F]*$/.test(v)) {
    throw new OtlpJsonError(`expected ${len * 2} hex digits (OTLP/JSON ids are hex, not base64), got ${JSON.stringify(v)}`)
  }
  const out = new Uint8Array(v.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = parseInt(v.slice(i * 2, i * 2 + 2), 16)
  return out
}

function base64Bytes(v: unknown): Uint8Array {
  if (typeof v !== 'string') throw new OtlpJsonError(`expected base64 text, got ${JSON.stringify(v)}`)
  let s = v.replace(/-/g, '+').replace(/_/g, '/')
  if (!/^[A-Za-z0-9+/]*=*$/.test(s)) throw new OtlpJsonError(`not base64`)
  s = s.replace(/=+$/, '')
  s += '='.repeat((4 - (s.length % 4)) % 4)
  let bin: string
  try {
    bin = atob(s)
  } catch {
    throw new OtlpJsonError(`not base64`)
  }
  const out = new Uint8Array(bin.length)
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i)
  return out
}

/** Writes one scalar element with its tag; a default value is left out unless `always`. */
function writeScalar(w: Writer, spec: FieldSpec, v: unknown, always: boolean): void {
  const tag = () => w.tag(spec.no, wireTypeOf(spec.kind))
  switch (spec.kind) {
    case 'string':
      if (typeof v !== 'string') throw new OtlpJsonError(`expected a string, got ${JSON.stringify(v)}`)
      if (v !== '' || always) w.string(spec.no, v)
      return
    case 'bytes': {
      const b = spec.id ? hexBytes(v, spec.id) : base64Bytes(v)
      if (b.length > 0 || always) w.bytes(spec.no, b)
      return
    }
    case 'bool':
      if (typeof v !== 'boolean') throw new OtlpJsonError(`expected true or false, got ${JSON.stringify(v)}`)
      if (v || always) tag().varint(v ? 1 : 0)
      return
    case 'double': {
      const d = double(v)
      if (d !== 0 || Object.is(d, -0) || always) tag().double(d)
      return
    }
    case 'enum': case 'int32': {
      const n = typeof v === 'string' && spec.kind === 'enum' && v in ENUM_NAMES ? BigInt(ENUM_NAMES[v]!) : inRange(integer(v), -(1n << 31n), (1n << 31n) - 1n)
      if (n !== 0n || always) tag().varint64(n)
      return
    }
    case 'uint32': case 'fixed32': {
      const n = Number(inRange(integer(v), 0n, 0xffffffffn))
      if (n !== 0 || always) { tag(); if (spec.kind === 'fixed32') w.fixed32(n); else w.varint(n) }
      return
    }
    case 'sint32': {
      const n = Number(inRange(integer(v), -(1n << 31n), (1n << 31n) - 1n))
      if (n !== 0 || always) tag().varint(n >= 0 ? n * 2 : -n * 2 - 1)
      return
    }
    case 'int64': case 'sfixed64': {
      const n = inRange(integer(v), INT64_MIN, INT64_MAX)
      if (n !== 0n || always) { tag(); if (spec.kind === 'sfixed64') w.fixed64(n); else w.varint64(n) }
      return
    }
    case 'uint64': case 'fixed64': {
      const n = inRange(integer(v), 0n, UINT64_MAX)
      if (n !== 0n || always) { tag(); if (spec.kind === 'fixed64') w.fixed64(n); else w.varint64(n) }
      return
    }
    case 'message': throw new Error('unreachable')
  }
}

/** The protobuf encoding of the OTLP/JSON object `obj` as `message`. Throws OtlpJsonError naming the path. */
export function jsonToProto(obj: unknown, message: string): Uint8Array<ArrayBuffer> {
  const w = new Writer()
  try {
    writeMessage(w, obj, message, 0)
  } catch (e) {
    if (e instanceof OtlpJsonError) e.at(message)
    throw e
  }
  return w.finish()
}

function writeMessage(w: Writer, obj: unknown, message: string, depth: number): Writer {
  if (depth > MAX_DEPTH) throw new OtlpJsonError(`nested more than ${MAX_DEPTH} deep`)
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new OtlpJsonError(`expected an object, got ${Array.isArray(obj) ? 'an array' : JSON.stringify(obj)}`)
  const index = INDEX[message]!
  for (const key in obj) {
    const v = (obj as Record<string, unknown>)[key]
    const spec = index.byName.get(key)
    if (!spec || v === null || v === undefined) continue
    let i = -1
    try {
      if (spec.repeated) {
        if (!Array.isArray(v)) throw new OtlpJsonError('expected an array')
        for (i = 0; i < v.length; i++) {
          if (spec.kind === 'message') writeMessage(w.fork(spec.no), v[i], spec.message!, depth + 1).join()
          else writeScalar(w, spec, v[i], true)
        }
      } else if (spec.kind === 'message') {
        writeMessage(w.fork(spec.no), v, spec.message!, depth + 1).join()
      } else writeScalar(w, spec, v, spec.presence === true)
    } catch (e) {
      if (e instanceof OtlpJsonError) e.at(i >= 0 && Array.isArray(v) && i < v.length ? `.${key}[${i}]` : `.${key}`)
      throw e
    }
  }
  return w
}

// ---- protobuf -> JSON ----------------------------------------------------------------------------

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')
function base64(b: Uint8Array): string {
  let s = ''
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000))
  return btoa(s)
}
const jsonDouble = (d: number): number | string => (Number.isFinite(d) ? d : Number.isNaN(d) ? 'NaN' : d > 0 ? 'Infinity' : '-Infinity')
const utf8 = new TextDecoder()

function readElement(buf: Uint8Array, pos: number, end: number, kind: Kind, view: DataView): [unknown, number] {
  switch (kind) {
    case 'double': return [jsonDouble(view.getFloat64(pos, true)), pos + 8]
    case 'fixed64': return [view.getBigUint64(pos, true).toString(), pos + 8]
    case 'sfixed64': return [view.getBigInt64(pos, true).toString(), pos + 8]
    case 'fixed32': return [view.getUint32(pos, true), pos + 4]
    default: {
      const [u, next] = readVarint64(buf, pos, end)
      switch (kind) {
        case 'bool': return [u !== 0n, next]
        case 'uint32': return [Number(BigInt.asUintN(32, u)), next]
        case 'int32': case 'enum': return [Number(BigInt.asIntN(32, u)), next]
        case 'sint32': { const n = Number(BigInt.asUintN(32, u)); return [(n >>> 1) ^ -(n & 1), next] }
        case 'int64': return [BigInt.asIntN(64, u).toString(), next]
        default: return [u.toString(), next]
      }
    }
  }
}

/** The OTLP/JSON object of the (checked) protobuf message in buf[start, end). Unknown fields are dropped. */
export function protoToJson(buf: Uint8Array, message: string, start = 0, end = buf.length): Record<string, unknown> {
  const index = INDEX[message]!
  const out: Record<string, unknown> = {}
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
  for (const fl of fields(buf, start, end)) {
    const spec = index.byNo.get(fl.no)
    if (!spec) continue
    let value: unknown
    if (spec.kind === 'message') value = protoToJson(buf, spec.message!, fl.valueStart, fl.end)
    else if (spec.kind === 'string') value = utf8.decode(buf.subarray(fl.valueStart, fl.end))
    else if (spec.kind === 'bytes') value = spec.id ? hex(buf.subarray(fl.valueStart, fl.end)) : base64(buf.subarray(fl.valueStart, fl.end))
    else if (spec.repeated && fl.wt === LEN) {
      const list = (out[spec.json] ??= []) as unknown[]
      for (let p = fl.valueStart; p < fl.end;) {
        const [v, next] = readElement(buf, p, fl.end, spec.kind, view)
        list.push(v)
        p = next
      }
      continue
    } else value = readElement(buf, fl.valueStart, fl.end, spec.kind, view)[0]
    if (spec.repeated) ((out[spec.json] ??= []) as unknown[]).push(value)
    else {
      // The last member of a oneof on the wire wins, as decoders do.
      for (const o of ONEOFS) if (o.has(spec.json)) for (const k of o) delete out[k]
      out[spec.json] = value
    }
  }
  return out
}

// The oneofs: AnyValue's members, a data point's or exemplar's value, a metric's data.
const ONEOFS: ReadonlyArray<ReadonlySet<string>> = [
  new Set(['stringValue', 'boolValue', 'intValue', 'doubleValue', 'arrayValue', 'kvlistValue', 'bytesValue', 'stringValueStrindex']),
  new Set(['asDouble', 'asInt']),
  new Set(['gauge', 'sum', 'histogram', 'exponentialHistogram', 'summary']),
]
