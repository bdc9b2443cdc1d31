import { ProtocolError } from '../errors.js'
import { Reader, Writer } from './primitives.js'

/**
 * Protocol messages are declared as data (one file per API in apis/) and read by this one engine,
 * the way Kafka's own message JSON drives its generated code. A field carries the version range it
 * exists in, the range it may be null in, and, for tagged fields, its tag.
 */
export type Primitive = 'int8' | 'int16' | 'uint16' | 'int32' | 'int64' | 'float64' | 'bool' | 'string' | 'bytes' | 'records' | 'uuid'
type Range = readonly [number, number]

export interface Field {
  readonly name: string
  readonly type: Primitive | readonly Field[]
  readonly array: boolean
  readonly versions: Range
  readonly nullable: Range | null
  readonly tag: number | null
  readonly defaultValue: unknown
}

/** A Field as declared: its name, type, arrayness and nullability kept as types, so messages can be typed from it. */
export interface TypedField<N extends string, T extends Primitive | readonly Field[], A extends boolean, Nul extends Range | null> extends Field {
  readonly name: N
  readonly type: T
  readonly array: A
  readonly nullable: Nul
}

export interface ApiSchema<Req extends readonly Field[] = readonly Field[], Res extends readonly Field[] = readonly Field[]> {
  readonly key: number
  readonly name: string
  /** Versions this client speaks. */
  readonly minVersion: number
  readonly maxVersion: number
  /** First flexible version, or Infinity. */
  readonly flexibleFrom: number
  readonly request: Req
  readonly response: Res
}

/**
 * Declares an API once: the field lists drive the codec at run time and, through `RequestOf` /
 * `ResponseOf`, the TypeScript types of its messages (kmsg-style generated types, without a generator).
 */
export function defineApi<const Req extends readonly Field[], const Res extends readonly Field[]>(api: ApiSchema<Req, Res>): ApiSchema<Req, Res> {
  return api
}

// ---- message types derived from the field lists -----------------------------------------------

type Scalar<P, Req extends boolean> = P extends 'int64' ? (Req extends true ? bigint | number : bigint)
  : P extends 'bool' ? boolean
    : P extends 'string' ? string
      : P extends 'bytes' | 'records' | 'uuid' ? Uint8Array
        : number

type Element<T, Req extends boolean> = T extends readonly Field[] ? (Req extends true ? RequestOf<T> : MessageOf<T>) : Scalar<T, Req>

// A struct that is not an array is absent (null) in the versions before it exists.
type ValueOf<F, Req extends boolean> = F extends TypedField<string, infer T, infer A, infer Nul>
  ? (A extends true ? Element<T, Req>[] : Element<T, Req>) | (Nul extends Range ? null : never) | (A extends false ? (T extends readonly Field[] ? null : never) : never)
  : never

/** A decoded message: every field present (absent versions decode to the field's default). */
export type MessageOf<Fs extends readonly Field[]> = { -readonly [F in Fs[number] as F['name']]: ValueOf<F, false> }
/** A message to encode: any field may be left out and is written as its default. */
export type RequestOf<Fs extends readonly Field[]> = { -readonly [F in Fs[number] as F['name']]?: ValueOf<F, true> }
// An ApiSchema whose fields are not declared as literals (the generic `ApiSchema`) has untyped messages.
export type RequestBody<A> = A extends ApiSchema<infer Req, readonly Field[]> ? (readonly Field[] extends Req ? Message : RequestOf<Req>) : never
export type ResponseBody<A> = A extends ApiSchema<readonly Field[], infer Res> ? (readonly Field[] extends Res ? Message : MessageOf<Res>) : never

export function range(spec: string): Range {
  if (spec === 'none') return [Infinity, -Infinity]
  const plus = /^(\d+)\+$/.exec(spec)
  if (plus) return [Number(plus[1]), Infinity]
  const span = /^(\d+)-(\d+)$/.exec(spec)
  if (span) return [Number(span[1]), Number(span[2])]
  if (/^\d+$/.test(spec)) return [Number(spec), Number(spec)]
  throw new Error(`bad version range ${spec}`)
}

const inRange = (r: Range | null, v: number): boolean => r !== null && v >= r[0] && v <= r[1]

interface FieldOpts { nullable?: string; tag?: number; default?: unknown }
type NullableOf<O> = O extends { nullable: string } ? Range : null

export function field<const N extends string, const T extends Primitive, const O extends FieldOpts = FieldOpts>(
  name: N, type: T, versions: string, opts?: O,
): TypedField<N, T, false, NullableOf<O>> {
  const o: FieldOpts = opts ?? {}
  return {
    name, type, array: false, versions: range(versions),
    nullable: (o.nullable ? range(o.nullable) : null) as NullableOf<O>,
    tag: o.tag ?? null,
    defaultValue: o.default !== undefined ? o.default : defaultFor(type),
  }
}

export function array<const N extends string, const T extends Primitive | readonly Field[], const O extends FieldOpts = FieldOpts>(
  name: N, versions: string, of: T, opts?: O,
): TypedField<N, T, true, NullableOf<O>> {
  const o: FieldOpts = opts ?? {}
  return {
    name, type: of, array: true, versions: range(versions),
    nullable: (o.nullable ? range(o.nullable) : null) as NullableOf<O>,
    tag: o.tag ?? null,
    defaultValue: o.default !== undefined ? o.default : [],
  }
}

/** A struct-valued (non-array) field, used for tagged sub-structures such as CurrentLeader. */
export function struct<const N extends string, const T extends readonly Field[]>(name: N, versions: string, fields: T, opts: FieldOpts = {}): TypedField<N, T, false, null> {
  return {
    name, type: fields, array: false, versions: range(versions),
    nullable: null, tag: opts.tag ?? null, defaultValue: opts.default ?? null,
  }
}

function defaultFor(type: Primitive): unknown {
  switch (type) {
    case 'int64': return 0n
    case 'bool': return false
    case 'string': return ''
    case 'bytes': case 'records': return new Uint8Array(0)
    case 'uuid': return new Uint8Array(16)
    default: return 0
  }
}

export type Message = Record<string, unknown>

export function encodeMessage(fields: readonly Field[], version: number, flexible: boolean, value: Message, w: Writer): void {
  const tagged: Field[] = []
  for (const f of fields) {
    if (!inRange(f.versions, version)) continue
    if (f.tag !== null) {
      if (flexible && !isDefault(f, value[f.name])) tagged.push(f)
      continue
    }
    writeField(f, version, flexible, value[f.name] ?? (inRange(f.nullable, version) ? null : f.defaultValue), w)
  }
  if (!flexible) return
  tagged.sort((a, b) => a.tag! - b.tag!)
  w.uvarint(tagged.length)
  for (const f of tagged) {
    const inner = new Writer(64)
    writeField(f, version, flexible, value[f.name], inner)
    const bytes = inner.finish()
    w.uvarint(f.tag!).uvarint(bytes.length).raw(bytes)
  }
}

function isDefault(f: Field, v: unknown): boolean {
  if (v === undefined || v === null) return true
  if (f.array) return (v as unknown[]).length === 0
  return v === f.defaultValue
}

function writeField(f: Field, version: number, flexible: boolean, v: unknown, w: Writer): void {
  if (f.array) {
    if (v === null) {
      if (!inRange(f.nullable, version)) throw new ProtocolError(`${f.name} may not be null in version ${version}`)
      if (flexible) w.uvarint(0)
      else w.int32(-1)
      return
    }
    const items = v as unknown[]
    if (flexible) w.uvarint(items.length + 1)
    else w.int32(items.length)
    for (const item of items) writeValue(f.type, version, flexible, item, w, f)
    return
  }
  writeValue(f.type, version, flexible, v, w, f)
}

function writeValue(type: Field['type'], version: number, flexible: boolean, v: unknown, w: Writer, f: Field): void {
  if (typeof type !== 'string') {
    encodeMessage(type, version, flexible, v as Message, w)
    return
  }
  if (v === null && (type === 'string' || type === 'bytes' || type === 'records') && !inRange(f.nullable, version)) {
    throw new ProtocolError(`${f.name} may not be null in version ${version}`)
  }
  switch (type) {
    case 'int8': w.int8(v as number); break
    case 'int16': w.int16(v as number); break
    case 'uint16': w.uint16(v as number); break
    case 'int32': w.int32(v as number); break
    case 'int64': w.int64(BigInt(v as bigint | number)); break
    case 'float64': w.float64(v as number); break
    case 'bool': w.bool(v as boolean); break
    case 'string': w.string(v as string | null, flexible); break
    case 'bytes': case 'records': w.bytes(v as Uint8Array | null, flexible); break
    case 'uuid': w.raw(v as Uint8Array); break
  }
}

export function decodeMessage(fields: readonly Field[], version: number, flexible: boolean, r: Reader): Message {
  const out: Message = {}
  for (const f of fields) {
    if (!inRange(f.versions, version) || (flexible && f.tag !== null)) {
      out[f.name] = f.defaultValue
      continue
    }
    if (f.tag !== null) { out[f.name] = f.defaultValue; continue }
    out[f.name] = readField(f, version, flexible, r)
  }
  if (flexible) {
    const count = r.uvarint()
    let lastTag = -1
    for (let i = 0; i < count; i++) {
      const tag = r.uvarint()
      if (tag <= lastTag) throw new ProtocolError(`tagged fields out of order: ${tag} after ${lastTag}`)
      lastTag = tag
      const size = r.uvarint()
      const body = r.raw(size, 'tagged field')
      const f = fields.find((x) => x.tag === tag && inRange(x.versions, version))
      if (!f) continue // unknown tags are skipped, as the protocol requires
      const inner = new Reader(body)
      out[f.name] = readField(f, version, flexible, inner)
    }
  }
  return out
}

function readField(f: Field, version: number, flexible: boolean, r: Reader): unknown {
  if (f.array) {
    const n = r.arrayLength(flexible, minBytes(f.type, version, flexible))
    if (n === -1) {
      if (!inRange(f.nullable, version)) throw new ProtocolError(`${f.name} is null but not nullable in version ${version}`)
      return null
    }
    const items = new Array<unknown>(n)
    for (let i = 0; i < n; i++) items[i] = readValue(f.type, version, flexible, r, f)
    return items
  }
  return readValue(f.type, version, flexible, r, f)
}

function readValue(type: Field['type'], version: number, flexible: boolean, r: Reader, f: Field): unknown {
  if (typeof type !== 'string') return decodeMessage(type, version, flexible, r)
  switch (type) {
    case 'int8': return r.int8()
    case 'int16': return r.int16()
    case 'uint16': return r.uint16()
    case 'int32': return r.int32()
    case 'int64': return r.int64()
    case 'float64': return r.float64()
    case 'bool': return r.bool()
    case 'uuid': return r.raw(16, 'uuid').slice()
    case 'string': {
      const s = r.string(flexible)
      if (s === null && !inRange(f.nullable, version)) throw new ProtocolError(`${f.name} is null but not nullable in version ${version}`)
      return s
    }
    case 'bytes': case 'records': {
      const b = r.bytes(flexible)
      if (b === null && !inRange(f.nullable, version)) throw new ProtocolError(`${f.name} is null but not nullable in version ${version}`)
      return b
    }
  }
}

/** Smallest encoding of one element, so a forged array count is rejected before any allocation. */
function minBytes(type: Field['type'], version: number, flexible: boolean): number {
  if (typeof type !== 'string') {
    let n = flexible ? 1 : 0
    for (const f of type) {
      if (!inRange(f.versions, version) || (flexible && f.tag !== null)) continue
      n += f.array ? (flexible ? 1 : 4) : minBytes(f.type, version, flexible)
    }
    return Math.max(n, 1)
  }
  switch (type) {
    case 'int8': case 'bool': return 1
    case 'int16': case 'uint16': return 2
    case 'int32': return 4
    case 'int64': case 'float64': return 8
    case 'uuid': return 16
    case 'string': return flexible ? 1 : 2
    case 'bytes': case 'records': return flexible ? 1 : 4
  }
}
