import { ConfigException } from '../errors.js'
import { InvalidSchemaException, SerializationException } from './errors.js'
import type { ByteWriter } from './wire.js'

/**
 * Protobuf from .proto text, as the registry stores it: a small parser for proto2 and proto3 files
 * (messages, nested messages, enums, oneofs, maps, packages, imports; options are read for packed and
 * json_name and otherwise skipped), and a binary encoder that interprets what it parsed. Nothing is
 * generated at run time.
 *
 * Values are plain objects keyed by the .proto field names (or their lowerCamelCase JSON names):
 * 64-bit integers a number, a bigint or a decimal string; enums their value name or number; bytes a
 * Uint8Array; maps an object or a Map; a oneof by setting one of its fields.
 */
export interface ProtoFile { name: string; pkg: string; syntax: 'proto2' | 'proto3'; imports: string[]; messages: ProtoMessage[]; enums: ProtoEnum[] }
export interface ProtoMessage { name: string; fullName: string; fields: ProtoField[]; nested: ProtoMessage[]; enums: ProtoEnum[]; file: ProtoFile; byName: Map<string, ProtoField> }
export interface ProtoEnum { name: string; fullName: string; values: Map<string, number>; closed: boolean }
export interface ProtoField {
  name: string; jsonName: string; number: number
  label: 'implicit' | 'optional' | 'required' | 'repeated'
  typeName: string
  /** A scalar's name, or the message or enum the type name resolved to. */
  type: string | ProtoMessage | ProtoEnum
  packed: boolean | undefined
  oneof: string | undefined
  /** For map<K, V>: the synthetic entry message (fields key = 1, value = 2). */
  map: ProtoMessage | undefined
}

const SCALARS = new Set(['double', 'float', 'int32', 'int64', 'uint32', 'uint64', 'sint32', 'sint64', 'fixed32', 'fixed64', 'sfixed32', 'sfixed64', 'bool', 'string', 'bytes'])
const TOKEN = /\s+|\/\/[^\n]*|\/\*[\s\S]*?\*\/|("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|\.?[A-Za-z_][\w.]*|[-+]?(?:0[xX][0-9a-fA-F]+|\d[\d.]*(?:[eE][-+]?\d+)?|\.\d+)|[{}()[\]<>=;,:/-])/y

const bad = (file: string, msg: string): never => { throw new InvalidSchemaException(`invalid .proto ${file}: ${msg}`) }

function tokenize(text: string, file: string): string[] {
  const out: string[] = []
  TOKEN.lastIndex = 0
  while (TOKEN.lastIndex < text.length) {
    const at = TOKEN.lastIndex
    const m = TOKEN.exec(text)
    if (!m) bad(file, `unexpected character ${JSON.stringify(text[at])} at offset ${at}`)
    if (m![1] !== undefined) out.push(m![1])
  }
  return out
}

const camel = (s: string): string => s.replace(/_+([a-z0-9])/g, (_, c: string) => c.toUpperCase())
const unquote = (s: string): string => JSON.parse(s.startsWith("'") ? `"${s.slice(1, -1).replace(/"/g, '\\"')}"` : s) as string

/** Parses one .proto file; types stay unresolved until resolveProto(). */
export function parseProto(text: string, name = 'schema.proto'): ProtoFile {
  const t = tokenize(text, name)
  let i = 0
  const peek = (): string | undefined => t[i]
  const next = (): string => t[i++] ?? bad(name, 'unexpected end of file')
  const expect = (s: string): void => { const got = next(); if (got !== s) bad(name, `expected ${s}, got ${got}`) }
  /** Skips a statement up to its ';' or a block up to its '}', nested braces included. */
  const skip = (): void => {
    let depth = 0
    for (;;) {
      const s = next()
      if (s === '{') depth++
      else if (s === '}') { if (--depth <= 0) { if (peek() === ';') i++; return } }
      else if (s === ';' && depth === 0) return
    }
  }
  const file: ProtoFile = { name, pkg: '', syntax: 'proto2', imports: [], messages: [], enums: [] }
  const options = (): { packed?: boolean; jsonName?: string } => {
    const o: { packed?: boolean; jsonName?: string } = {}
    if (peek() !== '[') return o
    let depth = 0
    for (;;) {
      const s = next()
      if (s === '[' || s === '{') depth++
      else if (s === ']' || s === '}') { if (--depth === 0) return o }
      else if (depth === 1 && s === 'packed' && peek() === '=') { i++; o.packed = next() === 'true' }
      else if (depth === 1 && s === 'json_name' && peek() === '=') { i++; o.jsonName = unquote(next()) }
    }
  }
  const number = (): number => {
    const s = next()
    const n = Number(s)
    if (!Number.isInteger(n)) bad(name, `expected a number, got ${s}`)
    return n
  }
  const enumBody = (scope: string): ProtoEnum => {
    const en = next()
    const e: ProtoEnum = { name: en, fullName: scope ? `${scope}.${en}` : en, values: new Map(), closed: file.syntax === 'proto2' }
    expect('{')
    while (peek() !== '}') {
      const s = next()
      if (s === 'option' || s === 'reserved') { skip(); continue }
      if (s === ';') continue
      expect('=')
      e.values.set(s, number())
      options()
      expect(';')
    }
    i++
    return e
  }
  const messageBody = (scope: string): ProtoMessage => {
    const mn = next()
    const fullName = scope ? `${scope}.${mn}` : mn
    const m: ProtoMessage = { name: mn, fullName, fields: [], nested: [], enums: [], file, byName: new Map() }
    const field = (label: ProtoField['label'], typeName: string, oneof: string | undefined, map?: ProtoMessage): void => {
      const fname = next()
      expect('=')
      const num = number()
      const o = options()
      expect(';')
      m.fields.push({ name: fname, jsonName: o.jsonName ?? camel(fname), number: num, label, typeName, type: typeName, packed: o.packed, oneof, map })
    }
    expect('{')
    while (peek() !== '}') {
      const s = next()
      if (s === ';') continue
      if (s === 'message') { m.nested.push(messageBody(fullName)); continue }
      if (s === 'enum') { m.enums.push(enumBody(fullName)); continue }
      if (s === 'option' || s === 'reserved' || s === 'extensions' || s === 'extend') { skip(); continue }
      if (s === 'group' || peek() === 'group') bad(name, `groups are not supported (message ${fullName})`)
      if (s === 'oneof') {
        const on = next()
        expect('{')
        while (peek() !== '}') {
          const x = next()
          if (x === 'option') { skip(); continue }
          if (x === ';') continue
          field('optional', x, on)
        }
        i++
        continue
      }
      if (s === 'map' && peek() === '<') {
        i++
        const k = next(); expect(','); const v = next(); expect('>')
        // protoc adds the entry type to the nested messages where the map is declared, and Confluent's
        // message indexes count it, so it is added here in the same place.
        const fname = t[i]!
        const entryName = `${camel(`_${fname}`)}Entry`
        const entry: ProtoMessage = { name: entryName, fullName: `${fullName}.${entryName}`, fields: [], nested: [], enums: [], file, byName: new Map() }
        entry.fields.push({ name: 'key', jsonName: 'key', number: 1, label: 'optional', typeName: k, type: k, packed: undefined, oneof: undefined, map: undefined })
        entry.fields.push({ name: 'value', jsonName: 'value', number: 2, label: 'optional', typeName: v, type: v, packed: undefined, oneof: undefined, map: undefined })
        m.nested.push(entry)
        field('repeated', entry.fullName, undefined, entry)
        continue
      }
      if (s === 'optional' || s === 'required' || s === 'repeated') field(s, next(), undefined)
      else field('implicit', s, undefined)
    }
    i++
    return m
  }
  while (i < t.length) {
    const s = next()
    if (s === ';') continue
    if (s === 'syntax') { expect('='); const v = unquote(next()); if (v !== 'proto2' && v !== 'proto3') bad(name, `syntax ${v} is not supported`); file.syntax = v as ProtoFile['syntax']; expect(';') }
    else if (s === 'edition') bad(name, 'editions are not supported: use syntax = "proto3" or "proto2"')
    else if (s === 'package') { file.pkg = next(); expect(';') }
    else if (s === 'import') { if (peek() === 'public' || peek() === 'weak') i++; file.imports.push(unquote(next())); expect(';') }
    else if (s === 'option' || s === 'service' || s === 'extend') skip()
    else if (s === 'message') file.messages.push(messageBody(file.pkg))
    else if (s === 'enum') file.enums.push(enumBody(file.pkg))
    else bad(name, `unexpected ${s}`)
  }
  return file
}

/**
 * Resolves every field's type name in `files` (the main file first, then what it imports), by
 * protobuf's scoping: the innermost enclosing scope first, out to the package root.
 */
export function resolveProto(files: ProtoFile[]): void {
  const types = new Map<string, ProtoMessage | ProtoEnum>()
  const add = (m: ProtoMessage): void => { types.set(m.fullName, m); m.nested.forEach(add); for (const e of m.enums) types.set(e.fullName, e) }
  for (const f of files) { f.messages.forEach(add); for (const e of f.enums) types.set(e.fullName, e) }
  const visit = (m: ProtoMessage): void => {
    for (const f of m.fields) {
      if (f.map) { visit(f.map); continue }
      if (SCALARS.has(f.typeName)) continue
      let found: ProtoMessage | ProtoEnum | undefined
      if (f.typeName.startsWith('.')) found = types.get(f.typeName.slice(1))
      else {
        for (let scope = m.fullName; !found; scope = scope.slice(0, Math.max(0, scope.lastIndexOf('.')))) {
          found = types.get(scope ? `${scope}.${f.typeName}` : f.typeName)
          if (!scope) break
        }
      }
      if (!found) bad(m.file.name, `unknown type ${f.typeName} of field ${m.fullName}.${f.name} (pass the file that defines it in references)`)
      f.type = found!
      if (f.label === 'implicit' && 'fields' in found! ) f.label = 'optional' // a message field always has presence
    }
    m.fields.sort((a, b) => a.number - b.number)
    for (const f of m.fields) { m.byName.set(f.name, f); m.byName.set(f.jsonName, f) }
    m.nested.forEach(visit)
  }
  for (const f of files) f.messages.forEach(visit)
}

/** The message and its Confluent message indexes: its path from the file's top-level messages. */
export function findMessage(file: ProtoFile, name: string | undefined): { message: ProtoMessage; indexes: number[] } {
  if (name === undefined) {
    const first = file.messages[0] ?? bad(file.name, 'no message in the file')
    return { message: first, indexes: [0] }
  }
  const want = name.startsWith('.') ? name.slice(1) : name
  const search = (list: ProtoMessage[], path: number[]): { message: ProtoMessage; indexes: number[] } | undefined => {
    for (let i = 0; i < list.length; i++) {
      const m = list[i]!
      if (m.fullName === want || m.fullName === `${file.pkg}.${want}`) return { message: m, indexes: [...path, i] }
      const r = search(m.nested, [...path, i])
      if (r) return r
    }
    return undefined
  }
  return search(file.messages, []) ?? (() => { throw new ConfigException(`message ${name} is not in ${file.name}; its messages are ${file.messages.map((m) => m.fullName).join(', ')}`) })()
}

// --- encoding ---------------------------------------------------------------------------------------

const fail = (path: string, msg: string): never => { throw new SerializationException(`${path || 'value'}: ${msg}`, { path }) }
const VARINT = 0, I64 = 1, LEN = 2, I32 = 5
const WIRE: Record<string, number> = {
  double: I64, float: I32, int32: VARINT, int64: VARINT, uint32: VARINT, uint64: VARINT, sint32: VARINT, sint64: VARINT,
  fixed32: I32, fixed64: I64, sfixed32: I32, sfixed64: I64, bool: VARINT, string: LEN, bytes: LEN,
}
const U64 = 2n ** 64n

export function encodeProto(w: ByteWriter, m: ProtoMessage, v: unknown, path = ''): void {
  if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof Uint8Array) fail(path, `expected an object for message ${m.fullName}`)
  const o = v as Record<string, unknown>
  for (const k in o) if (!m.byName.has(k)) fail(path ? `${path}.${k}` : k, `message ${m.fullName} has no field ${k}`)
  let oneofs: Map<string, string> | undefined
  for (const f of m.fields) {
    let x = o[f.name]
    if (x === undefined && f.jsonName !== f.name) x = o[f.jsonName]
    const p = path ? `${path}.${f.name}` : f.name
    if (x === undefined || x === null) {
      if (f.label === 'required') fail(p, `required field of ${m.fullName} is missing`)
      continue
    }
    if (f.oneof) {
      oneofs ??= new Map()
      const other = oneofs.get(f.oneof)
      if (other) fail(p, `oneof ${f.oneof} already has ${other} set`)
      oneofs.set(f.oneof, f.name)
    }
    if (f.map) {
      const entries = x instanceof Map ? [...x.entries()] : typeof x === 'object' && !Array.isArray(x) ? Object.entries(x) : fail(p, 'expected an object or a Map')
      const kf = f.map.fields[0]!, vf = f.map.fields[1]!
      for (const [k, val] of entries) {
        w.uvarint(f.number * 8 + LEN)
        const start = w.beginLength()
        writeField(w, kf, keyOf(kf.type as string, k, p), `${p}[${String(k)}]`)
        writeField(w, vf, val, `${p}[${String(k)}]`)
        w.endLength(start)
      }
    } else if (f.label === 'repeated') {
      if (!Array.isArray(x)) fail(p, 'expected an array (repeated field)')
      const a = x as unknown[]
      if (a.length === 0) continue
      const scalarWire = typeof f.type === 'string' ? WIRE[f.type] : 'values' in f.type ? VARINT : LEN
      if (scalarWire !== LEN && (f.packed ?? m.file.syntax === 'proto3')) {
        w.uvarint(f.number * 8 + LEN)
        const start = w.beginLength()
        for (let i = 0; i < a.length; i++) writeValue(w, f, a[i], `${p}[${i}]`)
        w.endLength(start)
      } else for (let i = 0; i < a.length; i++) writeField(w, f, a[i], `${p}[${i}]`)
    } else {
      if (f.label === 'implicit' && isDefault(f, x)) continue
      writeField(w, f, x, p)
    }
  }
}

function keyOf(type: string, k: unknown, path: string): unknown {
  if (type === 'string') return k
  if (type === 'bool') return k === true || k === 'true' ? true : k === false || k === 'false' ? false : fail(path, `map key ${String(k)} is not a bool`)
  return typeof k === 'string' && /^-?\d+$/.test(k) ? (WIRE[type] === VARINT && /64/.test(type) ? BigInt(k) : Number(k)) : k
}

function isDefault(f: ProtoField, x: unknown): boolean {
  if (typeof f.type !== 'string') return 'values' in f.type && (x === 0 || (typeof x === 'string' && f.type.values.get(x) === 0))
  return x === 0 || x === 0n || x === false || x === '' || x === '0' || (x instanceof Uint8Array && x.length === 0)
}

function writeField(w: ByteWriter, f: ProtoField, x: unknown, path: string): void {
  const wire = typeof f.type === 'string' ? WIRE[f.type]! : 'values' in f.type ? VARINT : LEN
  w.uvarint(f.number * 8 + wire)
  writeValue(w, f, x, path)
}

function writeValue(w: ByteWriter, f: ProtoField, x: unknown, path: string): void {
  const t = f.type
  if (typeof t !== 'string') {
    if ('values' in t) {
      const n = typeof x === 'string' ? t.values.get(x) : x
      if (typeof n !== 'number' || !Number.isInteger(n) || (t.closed && ![...t.values.values()].includes(n))) {
        fail(path, `expected one of ${[...t.values.keys()].join(', ')} (enum ${t.fullName}), got ${JSON.stringify(x)}`)
      }
      varint64(w, BigInt(n as number))
      return
    }
    const start = w.beginLength()
    encodeProto(w, t, x, path)
    w.endLength(start)
    return
  }
  switch (t) {
    case 'string': {
      if (typeof x !== 'string') fail(path, `expected a string, got ${typeof x}`)
      const start = w.beginLength()
      w.utf8(x as string)
      w.endLength(start)
      return
    }
    case 'bytes':
      if (!(x instanceof Uint8Array)) fail(path, `expected a Uint8Array, got ${typeof x}`)
      w.uvarint((x as Uint8Array).length)
      w.bytes(x as Uint8Array)
      return
    case 'bool': if (typeof x !== 'boolean') fail(path, `expected a boolean, got ${typeof x}`); w.byte(x ? 1 : 0); return
    case 'double': if (typeof x !== 'number') fail(path, `expected a number, got ${typeof x}`); w.float64(x as number); return
    case 'float': if (typeof x !== 'number') fail(path, `expected a number, got ${typeof x}`); w.float32(x as number); return
  }
  const n = integer(x, t, path)
  switch (t) {
    case 'int32': case 'int64': varint64(w, n); return
    case 'uint32': case 'uint64': w.uvarint64(n); return
    case 'sint32': case 'sint64': w.zigzag(n); return
    case 'fixed32': case 'sfixed32': w.fixed32(Number(n)); return
    default: w.fixed64(n)
  }
}

const RANGES: Record<string, [bigint, bigint]> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n], sint32: [-(2n ** 31n), 2n ** 31n - 1n], sfixed32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n], fixed32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n], sint64: [-(2n ** 63n), 2n ** 63n - 1n], sfixed64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, U64 - 1n], fixed64: [0n, U64 - 1n],
}

function integer(x: unknown, t: string, path: string): bigint {
  let n: bigint | undefined
  if (typeof x === 'number' && Number.isSafeInteger(x)) n = BigInt(x)
  else if (typeof x === 'bigint') n = x
  else if (typeof x === 'string' && /^-?\d+$/.test(x)) n = BigInt(x)
  const [lo, hi] = RANGES[t]!
  if (n === undefined || n < lo || n > hi) return fail(path, `expected a ${t} (an integer from ${lo} to ${hi}), got ${String(x)}`)
  return n
}

/** int32/int64/enum: a negative value is its 64-bit two's complement, ten bytes. */
function varint64(w: ByteWriter, n: bigint): void {
  if (n >= 0n) w.uvarint64(n)
  else w.uvarint64(n + U64)
}
