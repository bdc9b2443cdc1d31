import { InvalidSchemaException, SerializationException } from './errors.js'
import type { ByteWriter } from './wire.js'

/**
 * Avro binary encoding (the Avro 1.12 specification), interpreting the parsed schema: no code is
 * generated, so it runs where `new Function` is refused (workerd at request time, strict CSP pages).
 *
 * Values are plain JavaScript: records are objects by field name, enums their symbol, bytes and fixed
 * Uint8Array, maps objects (or Map), long a number (a safe integer) or a bigint. A union takes the
 * first branch the value fits, in the schema's order; `{ "typeName": value }` (Avro's JSON form)
 * names the branch where that is ambiguous. Logical types take their natural values: decimal a
 * string ("12.34"), a bigint (the unscaled value) or a number; uuid a string; date, time-* and
 * timestamp-* a Date or the underlying number.
 */
export type AvroSchema = string | Record<string, unknown> | unknown[]

type Logical =
  | { name: 'decimal'; precision: number; scale: number }
  | { name: 'uuid' | 'date' | 'time-millis' | 'time-micros' | 'timestamp-millis' | 'timestamp-micros' | 'timestamp-nanos'
      | 'local-timestamp-millis' | 'local-timestamp-micros' | 'local-timestamp-nanos' }

type Primitive = 'null' | 'boolean' | 'int' | 'long' | 'float' | 'double' | 'bytes' | 'string'
export type AvroType =
  | { kind: Primitive; logical?: Logical }
  | { kind: 'record'; name: string; fields: AvroField[] }
  | { kind: 'enum'; name: string; symbols: string[]; index: Map<string, number> }
  | { kind: 'array'; items: AvroType }
  | { kind: 'map'; values: AvroType }
  | { kind: 'fixed'; name: string; size: number; logical?: Logical }
  | { kind: 'union'; branches: AvroType[] }
export interface AvroField { name: string; type: AvroType; hasDefault: boolean; default: unknown }

const PRIMITIVES = new Set<string>(['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string'])
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/
const invalid = (msg: string): never => { throw new InvalidSchemaException(`invalid Avro schema: ${msg}`) }

/** A parsed schema: the type tree with every named type resolved, and the top-level record's full name. */
export interface ParsedAvro { type: AvroType; name: string | undefined; text: string }

export function parseAvro(schema: AvroSchema): ParsedAvro {
  let json: unknown = schema
  if (typeof schema === 'string') {
    try { json = JSON.parse(schema) } catch { json = schema } // a bare primitive name such as "string" is a schema too
  }
  const named = new Map<string, AvroType>()
  const type = parseType(json, '', named)
  return { type, name: 'name' in type ? type.name : undefined, text: typeof schema === 'string' ? schema : JSON.stringify(schema) }
}

function fullName(name: string, namespace: string | undefined, enclosing: string): string {
  if (name.includes('.')) return name
  const ns = namespace ?? enclosing
  return ns ? `${ns}.${name}` : name
}

function parseType(s: unknown, ns: string, named: Map<string, AvroType>): AvroType {
  if (typeof s === 'string') {
    if (PRIMITIVES.has(s)) return { kind: s as Primitive }
    return named.get(fullName(s, undefined, ns)) ?? named.get(s) ?? invalid(`unknown type ${JSON.stringify(s)}`)
  }
  if (Array.isArray(s)) {
    const branches = s.map((b) => parseType(b, ns, named))
    if (branches.some((b) => b.kind === 'union')) invalid('a union may not directly contain a union')
    return { kind: 'union', branches }
  }
  if (!s || typeof s !== 'object') return invalid(`not a schema: ${JSON.stringify(s)}`)
  const o = s as Record<string, unknown>
  const t = o.type
  const logical = logicalOf(o)
  if (typeof t === 'string' && PRIMITIVES.has(t)) return { kind: t as Primitive, ...(logical ? { logical } : {}) }
  if (t === 'array') return { kind: 'array', items: parseType(o.items, ns, named) }
  if (t === 'map') return { kind: 'map', values: parseType(o.values, ns, named) }
  if (t === 'record' || t === 'error' || t === 'enum' || t === 'fixed') {
    if (typeof o.name !== 'string' || !o.name.split('.').every((p) => NAME.test(p))) invalid(`${t} needs a valid name, got ${JSON.stringify(o.name)}`)
    const name = fullName(o.name as string, typeof o.namespace === 'string' ? o.namespace : undefined, ns)
    if (named.has(name)) invalid(`${name} is defined twice`)
    const inner = name.includes('.') ? name.slice(0, name.lastIndexOf('.')) : ''
    if (t === 'fixed') {
      if (!Number.isInteger(o.size) || (o.size as number) < 0) invalid(`fixed ${name} needs a size`)
      const f: AvroType = { kind: 'fixed', name, size: o.size as number, ...(logical ? { logical } : {}) }
      named.set(name, f)
      return f
    }
    if (t === 'enum') {
      const symbols = o.symbols
      if (!Array.isArray(symbols) || !symbols.every((x) => typeof x === 'string' && NAME.test(x))) invalid(`enum ${name} needs symbols`)
      const e: AvroType = { kind: 'enum', name, symbols: symbols as string[], index: new Map((symbols as string[]).map((x, i) => [x, i])) }
      named.set(name, e)
      return e
    }
    // Registered before its fields are parsed, so a record can refer to itself (a linked list, a tree).
    const r: AvroType & { kind: 'record' } = { kind: 'record', name, fields: [] }
    named.set(name, r)
    if (!Array.isArray(o.fields)) invalid(`record ${name} needs fields`)
    for (const f of o.fields as Array<Record<string, unknown>>) {
      if (typeof f?.name !== 'string' || !NAME.test(f.name)) invalid(`record ${name} has a field without a valid name`)
      const type = parseType(f.type, inner, named)
      const hasDefault = 'default' in f
      r.fields.push({ name: f.name as string, type, hasDefault, default: hasDefault ? fromJson(type.kind === 'union' ? type.branches[0]! : type, f.default, `${name}.${String(f.name)}`) : undefined })
    }
    return r
  }
  if (typeof t === 'object' && t !== null) return parseType(t, ns, named)
  return invalid(`unknown type ${JSON.stringify(t)}`)
}

function logicalOf(o: Record<string, unknown>): Logical | undefined {
  const l = o.logicalType
  if (typeof l !== 'string') return undefined
  // As the specification asks, a logical type that does not fit its base type is ignored (the base type is written).
  if (l === 'decimal') {
    const precision = o.precision, scale = o.scale ?? 0
    if (!Number.isInteger(precision) || (precision as number) < 1) return undefined
    if (!Number.isInteger(scale) || (scale as number) < 0 || (scale as number) > (precision as number)) return undefined
    if (o.type !== 'bytes' && o.type !== 'fixed') return undefined
    return { name: 'decimal', precision: precision as number, scale: scale as number }
  }
  const base: Record<string, string> = {
    uuid: o.type === 'fixed' ? 'fixed' : 'string', date: 'int', 'time-millis': 'int', 'time-micros': 'long', 'timestamp-millis': 'long',
    'timestamp-micros': 'long', 'timestamp-nanos': 'long', 'local-timestamp-millis': 'long', 'local-timestamp-micros': 'long', 'local-timestamp-nanos': 'long',
  }
  if (base[l] !== o.type || (l === 'uuid' && o.type === 'fixed' && o.size !== 16)) return undefined
  return { name: l } as Logical
}

/** A default value from its JSON form (bytes and fixed defaults are strings of code points 0-255). */
function fromJson(t: AvroType, v: unknown, path: string): unknown {
  if ((t.kind === 'bytes' || t.kind === 'fixed') && typeof v === 'string' && !t.logical) return Uint8Array.from(v, (c) => c.charCodeAt(0))
  if (t.kind === 'record' && v && typeof v === 'object') {
    const o = v as Record<string, unknown>
    return Object.fromEntries(t.fields.map((f) => [f.name, f.name in o ? fromJson(f.type.kind === 'union' ? f.type.branches[0]! : f.type, o[f.name], `${path}.${f.name}`) : f.default]))
  }
  if (t.kind === 'array' && Array.isArray(v)) return v.map((x) => fromJson(t.items, x, path))
  if (t.kind === 'map' && v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fromJson(t.values, x, path)]))
  return v
}

// --- encoding ---------------------------------------------------------------------------------------

const fail = (path: string, msg: string): never => { throw new SerializationException(`${path || 'value'}: ${msg}`, { path }) }
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array) && !(v instanceof Date) && !(v instanceof Map)
const INT_MIN = -(2 ** 31), INT_MAX = 2 ** 31 - 1
const LONG_MIN = -(2n ** 63n), LONG_MAX = 2n ** 63n - 1n
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const DAY_MS = 86_400_000

export function encodeAvro(w: ByteWriter, t: AvroType, v: unknown, path = ''): void {
  switch (t.kind) {
    case 'null': if (v !== null && v !== undefined) fail(path, `expected null, got ${typeof v}`); return
    case 'boolean': if (typeof v !== 'boolean') fail(path, `expected a boolean, got ${typeof v}`); w.byte(v ? 1 : 0); return
    case 'int': {
      const n = t.logical ? intLogical(t.logical.name, v, path) : v
      if (typeof n !== 'number' || !Number.isInteger(n) || n < INT_MIN || n > INT_MAX) fail(path, `expected an int (32-bit integer), got ${String(v)}`)
      w.zigzag(n as number)
      return
    }
    case 'long': {
      const n = t.logical ? longLogical(t.logical.name, v) : v
      if (typeof n === 'number' ? !Number.isSafeInteger(n) : typeof n !== 'bigint' || n < LONG_MIN || n > LONG_MAX) {
        fail(path, `expected a long (a safe integer or a bigint in the 64-bit range), got ${String(v)}`)
      }
      w.zigzag(n as number | bigint)
      return
    }
    case 'float': if (typeof v !== 'number') fail(path, `expected a number, got ${typeof v}`); w.float32(v as number); return
    case 'double': if (typeof v !== 'number') fail(path, `expected a number, got ${typeof v}`); w.float64(v as number); return
    case 'bytes': {
      const b = t.logical?.name === 'decimal' ? decimalBytes(t.logical, v, path, 0) : v
      if (!(b instanceof Uint8Array)) fail(path, `expected a Uint8Array, got ${typeof v}`)
      w.zigzag((b as Uint8Array).length)
      w.bytes(b as Uint8Array)
      return
    }
    case 'string': {
      if (typeof v !== 'string') fail(path, `expected a string, got ${typeof v}`)
      if (t.logical?.name === 'uuid' && !UUID.test(v as string)) fail(path, `expected a UUID, got ${JSON.stringify(v)}`)
      stringOf(w, v as string)
      return
    }
    case 'record': {
      if (!isObject(v)) fail(path, `expected an object for record ${t.name}, got ${v === null ? 'null' : typeof v}`)
      const o = v as Record<string, unknown>
      for (const f of t.fields) {
        const x = o[f.name]
        const p = path ? `${path}.${f.name}` : f.name
        if (x !== undefined) encodeAvro(w, f.type, x, p)
        else if (f.hasDefault) writeDefault(w, f, p)
        else if (f.type.kind === 'union' && f.type.branches.some((b) => b.kind === 'null')) encodeAvro(w, f.type, null, p)
        else fail(p, `missing, and field ${f.name} of ${t.name} has no default`)
      }
      for (const k in o) if (!t.fields.some((f) => f.name === k)) fail(path ? `${path}.${k}` : k, `record ${t.name} has no field ${k}`)
      return
    }
    case 'enum': {
      const i = typeof v === 'string' ? t.index.get(v) : undefined
      if (i === undefined) fail(path, `expected one of ${t.symbols.join(', ')} (enum ${t.name}), got ${JSON.stringify(v)}`)
      w.zigzag(i!)
      return
    }
    case 'array': {
      if (!Array.isArray(v)) fail(path, `expected an array, got ${typeof v}`)
      const a = v as unknown[]
      if (a.length) { w.zigzag(a.length); for (let i = 0; i < a.length; i++) encodeAvro(w, t.items, a[i], `${path}[${i}]`) }
      w.byte(0)
      return
    }
    case 'map': {
      const entries = v instanceof Map ? [...v.entries()] : isObject(v) ? Object.entries(v) : fail(path, `expected an object or a Map, got ${typeof v}`)
      if (entries.length) {
        w.zigzag(entries.length)
        for (const [k, x] of entries) {
          if (typeof k !== 'string') fail(path, 'map keys must be strings')
          stringOf(w, k as string)
          encodeAvro(w, t.values, x, `${path}[${JSON.stringify(k)}]`)
        }
      }
      w.byte(0)
      return
    }
    case 'fixed': {
      const b = t.logical?.name === 'decimal' ? decimalBytes(t.logical, v, path, t.size)
        : t.logical?.name === 'uuid' && typeof v === 'string' ? uuidBytes(v, path) : v
      if (!(b instanceof Uint8Array) || b.length !== t.size) fail(path, `expected a Uint8Array of ${t.size} bytes (fixed ${t.name}), got ${b instanceof Uint8Array ? `${b.length} bytes` : typeof v}`)
      w.bytes(b as Uint8Array)
      return
    }
    case 'union': {
      let i = t.branches.findIndex((b) => fits(b, v))
      let x = v
      if (i < 0 && isObject(v)) {
        const keys = Object.keys(v)
        if (keys.length === 1) { i = t.branches.findIndex((b) => typeName(b) === keys[0] || shortName(b) === keys[0]); x = v[keys[0]!] }
      }
      if (i < 0) fail(path, `${v === null ? 'null' : typeof v} fits no branch of the union [${t.branches.map(typeName).join(', ')}]`)
      w.zigzag(i)
      encodeAvro(w, t.branches[i]!, x, path)
    }
  }
}

function writeDefault(w: ByteWriter, f: AvroField, path: string): void {
  if (f.type.kind === 'union') { w.byte(0); encodeAvro(w, f.type.branches[0]!, f.default, path) } // a union's default is of its first branch
  else encodeAvro(w, f.type, f.default, path)
}

function stringOf(w: ByteWriter, s: string): void {
  // ASCII is common: write the length as if every char were one byte, then fix it up if not.
  const start = w.pos
  w.zigzag(s.length)
  const lenBytes = w.pos - start
  const n = w.utf8(s)
  if (n === s.length) return
  const text = w.buf.slice(start + lenBytes, w.pos)
  w.pos = start
  w.zigzag(n)
  w.bytes(text)
}

const typeName = (t: AvroType): string => 'name' in t ? t.name : t.kind
const shortName = (t: AvroType): string => 'name' in t ? t.name.slice(t.name.lastIndexOf('.') + 1) : t.kind

/** Whether a value is of this branch's type: unions pick the first branch that fits. */
function fits(t: AvroType, v: unknown): boolean {
  switch (t.kind) {
    case 'null': return v === null || v === undefined
    case 'boolean': return typeof v === 'boolean'
    case 'int': return (typeof v === 'number' && Number.isInteger(v) && v >= INT_MIN && v <= INT_MAX) || (v instanceof Date && t.logical?.name === 'date')
    case 'long': return (typeof v === 'number' && Number.isSafeInteger(v)) || typeof v === 'bigint' || (v instanceof Date && !!t.logical)
    case 'float': case 'double': return typeof v === 'number'
    case 'bytes': return v instanceof Uint8Array || (t.logical?.name === 'decimal' && (typeof v === 'bigint' || typeof v === 'string'))
    case 'string': return typeof v === 'string' && (t.logical?.name !== 'uuid' || UUID.test(v))
    case 'record': return isObject(v) && Object.keys(v).every((k) => t.fields.some((f) => f.name === k)) &&
      t.fields.every((f) => f.hasDefault || v[f.name] !== undefined || (f.type.kind === 'union' && f.type.branches.some((b) => b.kind === 'null')))
    case 'enum': return typeof v === 'string' && t.index.has(v)
    case 'array': return Array.isArray(v)
    case 'map': return v instanceof Map || isObject(v)
    case 'fixed': return (v instanceof Uint8Array && v.length === t.size) || (t.logical?.name === 'uuid' && typeof v === 'string' && UUID.test(v))
    case 'union': return false
  }
}

function intLogical(name: string, v: unknown, path: string): unknown {
  if (!(v instanceof Date)) return v
  if (name !== 'date') fail(path, `${name} takes a number, not a Date`)
  return Math.floor(v.getTime() / DAY_MS)
}

function longLogical(name: string, v: unknown): unknown {
  if (!(v instanceof Date)) return v
  const ms = v.getTime()
  if (name.endsWith('millis')) return ms
  if (name.endsWith('micros')) return ms * 1000
  if (name.endsWith('nanos')) return BigInt(ms) * 1_000_000n
  return v
}

function uuidBytes(s: string, path: string): Uint8Array {
  if (!UUID.test(s)) fail(path, `expected a UUID, got ${JSON.stringify(s)}`)
  const hex = s.replace(/-/g, '')
  return Uint8Array.from({ length: 16 }, (_, i) => parseInt(hex.slice(i * 2, i * 2 + 2), 16))
}

/** The unscaled value as big-endian two's complement: minimal for bytes, sign-extended to `size` for fixed. */
function decimalBytes(d: { precision: number; scale: number }, v: unknown, path: string, size: number): Uint8Array {
  let unscaled: bigint
  if (typeof v === 'bigint') unscaled = v
  else if (typeof v === 'string' || typeof v === 'number') {
    const s = typeof v === 'number' ? v.toFixed(d.scale) : v.trim()
    const m = /^([+-]?)(\d*)(?:\.(\d*))?$/.exec(s)
    if (!m || (!m[2] && !m[3])) return fail(path, `expected a decimal number, got ${JSON.stringify(v)}`)
    const frac = m[3] ?? ''
    if (frac.length > d.scale && /[1-9]/.test(frac.slice(d.scale))) fail(path, `${s} has more than scale ${d.scale} decimal places`)
    unscaled = BigInt(`${m[1]}${m[2] || '0'}${frac.slice(0, d.scale).padEnd(d.scale, '0')}`)
  } else return fail(path, `expected a decimal as a string, a number or a bigint (the unscaled value), got ${typeof v}`)
  if ((unscaled < 0n ? -unscaled : unscaled).toString().length > d.precision) fail(path, `${String(v)} has more than precision ${d.precision} digits`)
  const out: number[] = []
  let x = unscaled
  do { out.unshift(Number(BigInt.asUintN(8, x))); x >>= 8n } while (!(x === 0n && (out[0]! & 0x80) === 0) && !(x === -1n && (out[0]! & 0x80) !== 0))
  if (size) {
    if (out.length > size) fail(path, `${String(v)} does not fit ${size} bytes`)
    while (out.length < size) out.unshift(unscaled < 0n ? 0xff : 0)
  }
  return Uint8Array.from(out)
}
