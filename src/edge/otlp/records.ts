/**
 * An OTLP export request as Kafka records, as the Collector's kafkaexporter writes them: one
 * `TracesData` / `LogsData` / `MetricsData` per record (the request body's own bytes: the
 * Export*ServiceRequest messages have the same single field), keyed like the exporter's
 * partition_* options, and split along resource, scope and trace boundaries so that no record is
 * larger than the producer can send. Works on field slices of the checked body: nothing is decoded
 * that is not needed, and fields this code does not know (a newer OTLP) travel unchanged.
 */
import { protoToJson } from './transcode.js'
import { I64, LEN, concat, fields, lenFieldSize, readVarint64 } from './wire.js'
import { xxhash64 } from './xxhash64.js'

export type Signal = 'traces' | 'logs' | 'metrics'

export interface SignalSpec {
  /** The message a record holds (and a request is). */
  data: string
  /** What the exporter counts and a partial success rejects: spans, log records, data points. */
  items: string
  /** The response message and its partial-success field. */
  response: string
  partial: string
  rejectedField: string
}

export const SIGNALS: Record<Signal, SignalSpec> = {
  traces: { data: 'TracesData', items: 'spans', response: 'ExportTraceServiceResponse', partial: 'ExportTracePartialSuccess', rejectedField: 'rejectedSpans' },
  logs: { data: 'LogsData', items: 'log records', response: 'ExportLogsServiceResponse', partial: 'ExportLogsPartialSuccess', rejectedField: 'rejectedLogRecords' },
  metrics: { data: 'MetricsData', items: 'data points', response: 'ExportMetricsServiceResponse', partial: 'ExportMetricsPartialSuccess', rejectedField: 'rejectedDataPoints' },
}

export interface RecordOptions {
  /** otlp_proto (the exporter's default) or otlp_json. */
  encoding: 'otlp_proto' | 'otlp_json'
  /** traces: one record per trace, key = the trace id in hex (partition_traces_by_id). */
  partitionTracesById?: boolean
  /** logs: one record per trace id, key = its hex, none for logs without one (partition_logs_by_trace_id). */
  partitionLogsByTraceId?: boolean
  /** logs / metrics: one record per resource, key = the 16-byte hash of its attributes (partition_*_by_resource_attributes). */
  partitionLogsByResourceAttributes?: boolean
  partitionMetricsByResourceAttributes?: boolean
  /** Largest record value in bytes; bigger requests are split. */
  maxRecordBytes: number
}

export interface OtlpRecord { key: Uint8Array | null; value: Uint8Array<ArrayBuffer> }
export interface RecordsResult {
  records: OtlpRecord[]
  /** Spans, log records or data points in the request. */
  items: number
  /** Those left out because one alone does not fit in a record (a partial success). */
  rejected: number
}

/** A scope (ScopeSpans / ScopeLogs / ScopeMetrics): its own fields and its items (field 2), as raw fields. */
interface Scope { header: Uint8Array[]; headerLen: number; items: Item[] }
interface Item { field: Uint8Array; body: Uint8Array; count: number }
/** A resource (ResourceSpans / ...): its own fields (resource, schema_url) and its scopes (field 2). */
interface Res { header: Uint8Array[]; headerLen: number; resource: Uint8Array | null; scopes: Scope[] }

const sum = (xs: readonly Uint8Array[]) => xs.reduce((n, x) => n + x.length, 0)
const scopeLen = (s: Scope) => s.headerLen + s.items.reduce((n, i) => n + i.field.length, 0)
const resLen = (r: Res) => r.headerLen + r.scopes.reduce((n, s) => n + lenFieldSize(2, scopeLen(s)), 0)
/** A LEN field's tag and length prefix take at most this many bytes (tag 1 byte, length up to 5). */
const OVERHEAD = 6

/** Splits a message into its field-2 children and the rest, as raw field slices. */
function children(buf: Uint8Array): { header: Uint8Array[]; kids: Array<{ field: Uint8Array; body: Uint8Array }>; first: Uint8Array | null } {
  const header: Uint8Array[] = []
  const kids: Array<{ field: Uint8Array; body: Uint8Array }> = []
  let first: Uint8Array | null = null
  for (const fl of fields(buf)) {
    const field = buf.subarray(fl.start, fl.end)
    if (fl.no === 2 && fl.wt === LEN) kids.push({ field, body: buf.subarray(fl.valueStart, fl.end) })
    else {
      header.push(field)
      if (fl.no === 1 && fl.wt === LEN) first = buf.subarray(fl.valueStart, fl.end)
    }
  }
  return { header, kids, first }
}

/** Data points of a Metric (what the exporter's metric counts are in). */
function dataPoints(metric: Uint8Array): number {
  let n = 0
  for (const fl of fields(metric)) {
    if (fl.wt !== LEN || ![5, 7, 9, 10, 11].includes(fl.no)) continue
    for (const dp of fields(metric, fl.valueStart, fl.end)) if (dp.no === 1 && dp.wt === LEN) n++
  }
  return n
}

function parse(signal: Signal, body: Uint8Array): Res[] {
  const out: Res[] = []
  for (const fl of fields(body)) {
    if (fl.no !== 1 || fl.wt !== LEN) continue
    const r = children(body.subarray(fl.valueStart, fl.end))
    out.push({
      header: r.header, headerLen: sum(r.header), resource: r.first,
      scopes: r.kids.map((k) => {
        const s = children(k.body)
        return { header: s.header, headerLen: sum(s.header), items: s.kids.map((i) => ({ ...i, count: signal === 'metrics' ? dataPoints(i.body) : 1 })) }
      }),
    })
  }
  return out
}

/** The trace id of a span (field 1) or log record (field 9) in hex; '' when empty or all zeros (pdata's empty TraceID). */
function traceIdHex(item: Uint8Array, no: number): string {
  let id: Uint8Array | null = null
  for (const fl of fields(item)) if (fl.no === no && fl.wt === LEN) id = item.subarray(fl.valueStart, fl.end)
  if (!id || id.every((b) => b === 0)) return ''
  return Array.from(id, (b) => b.toString(16).padStart(2, '0')).join('')
}

/** Per resource and scope, the items grouped by trace id in order of first appearance (batchpersignal's split). */
function byTrace(resources: Res[], idField: number): Array<{ hex: string; res: Res }> {
  const out: Array<{ hex: string; res: Res }> = []
  for (const r of resources) {
    for (const s of r.scopes) {
      const groups = new Map<string, Item[]>()
      for (const item of s.items) {
        const hex = traceIdHex(item.body, idField)
        let g = groups.get(hex)
        if (!g) {
          g = []
          groups.set(hex, g)
          out.push({ hex, res: { ...r, scopes: [{ ...s, items: g }] } })
        }
        g.push(item)
      }
    }
  }
  return out
}

const utf8 = new TextEncoder()

/** The record groups (each one record before size splits) with their keys, per the partition options. */
function partition(signal: Signal, resources: Res[], o: RecordOptions): Array<{ key: Uint8Array | null; resources: Res[] }> {
  if (signal === 'traces' && o.partitionTracesById) {
    return byTrace(resources, 1).map((g) => ({ key: utf8.encode(g.hex), resources: [g.res] }))
  }
  if ((signal === 'logs' && o.partitionLogsByResourceAttributes) || (signal === 'metrics' && o.partitionMetricsByResourceAttributes)) {
    return resources.map((r) => ({ key: resourceAttributesHash(r.resource), resources: [r] }))
  }
  if (signal === 'logs' && o.partitionLogsByTraceId) {
    return byTrace(resources, 9).map((g) => ({ key: g.hex === '' ? null : utf8.encode(g.hex), resources: [g.res] }))
  }
  return [{ key: null, resources }]
}

/** Greedy packing of units into lists of at most `budget` bytes; a unit too big alone is replaced by `split`'s parts. */
function pack<T>(units: readonly T[], size: (u: T) => number, budget: number, split: (u: T) => T[]): T[][] {
  const out: T[][] = []
  let cur: T[] = []
  let used = 0
  const add = (u: T, s: number) => {
    if (used + s > budget && cur.length > 0) { out.push(cur); cur = []; used = 0 }
    cur.push(u)
    used += s
  }
  for (const u of units) {
    const s = size(u)
    if (s <= budget) add(u, s)
    else for (const p of split(u)) add(p, size(p))
  }
  if (cur.length > 0) out.push(cur)
  return out
}

/** The resources as groups of at most `limit` encoded bytes each, counting the items that fit nowhere. */
function split(resources: Res[], limit: number, traces: boolean, rejected: { n: number }): Res[][] {
  const reject = (items: Item[]) => { for (const i of items) rejected.n += i.count }
  const splitScope = (s: Scope, budget: number): Scope[] => {
    const room = budget - s.headerLen
    // Whole traces first (split along trace boundaries), a trace too big span by span, a span too big is rejected.
    const units: Item[][] = traces ? [...groupBy(s.items, (i) => traceIdHex(i.body, 1)).values()] : s.items.map((i) => [i])
    const itemsLen = (u: Item[]) => u.reduce((n, i) => n + i.field.length, 0)
    const packs = pack(units, itemsLen, room, (u) => {
      const fit = u.filter((i) => i.field.length <= room)
      reject(u.filter((i) => i.field.length > room))
      return fit.map((i) => [i])
    })
    return packs.map((p) => ({ ...s, items: p.flat() }))
  }
  const splitRes = (r: Res): Res[] => {
    const room = limit - OVERHEAD - r.headerLen
    const packs = pack(r.scopes, (s) => lenFieldSize(2, scopeLen(s)), room, (s) => splitScope(s, room - OVERHEAD))
    return packs.map((scopes) => ({ ...r, scopes }))
  }
  return pack(resources, (r) => lenFieldSize(1, resLen(r)), limit, splitRes)
}

function groupBy<T>(xs: readonly T[], key: (x: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>()
  for (const x of xs) {
    const k = key(x)
    const g = m.get(k)
    if (g) g.push(x)
    else m.set(k, [x])
  }
  return m
}

function lenPrefix(no: number, len: number): Uint8Array {
  const out: number[] = [no * 8 + LEN]
  let v = len
  while (v >= 0x80) { out.push((v % 128) | 0x80); v = Math.floor(v / 128) }
  out.push(v)
  return Uint8Array.from(out)
}

function encode(resources: Res[]): Uint8Array<ArrayBuffer> {
  const parts: Uint8Array[] = []
  for (const r of resources) {
    parts.push(lenPrefix(1, resLen(r)), ...r.header)
    for (const s of r.scopes) {
      parts.push(lenPrefix(2, scopeLen(s)), ...s.header)
      for (const i of s.items) parts.push(i.field)
    }
  }
  return concat(parts)
}

/**
 * The records of one checked request body. `items` counts what the request holds; `rejected` what
 * could not be written because a single span, log record or metric is larger than maxRecordBytes.
 */
export function toRecords(signal: Signal, body: Uint8Array, o: RecordOptions): RecordsResult {
  const resources = parse(signal, body)
  const items = resources.reduce((n, r) => n + r.scopes.reduce((m, s) => m + s.items.reduce((k, i) => k + i.count, 0), 0), 0)
  const rejected = { n: 0 }
  const records: OtlpRecord[] = []
  const data = SIGNALS[signal].data
  for (const g of partition(signal, resources, o)) {
    // otlp_json is larger than the protobuf it is made from: a group whose JSON does not fit is split finer.
    const emit = (rs: Res[], limit: number, depth: number) => {
      for (const part of split(rs, limit, signal === 'traces', depth === 0 ? rejected : { n: 0 })) {
        const proto = encode(part)
        if (o.encoding === 'otlp_proto') { records.push({ key: g.key, value: proto }); continue }
        const json = utf8.encode(JSON.stringify(protoToJson(proto, data)))
        if (json.length <= o.maxRecordBytes || depth >= 8) records.push({ key: g.key, value: json })
        else emit(part, Math.floor(limit * o.maxRecordBytes / json.length * 0.9), depth + 1)
      }
    }
    emit(g.resources, o.maxRecordBytes, 0)
  }
  return { records, items, rejected: rejected.n }
}

// ---- the resource-attribute key: pdata xhash.MapHash, byte for byte ---------------------------------

const KEY = 0xf4
const EMPTY = 0xf5
const BYTES = 0xf6
const STR = 0xf7
const TRUE = 0xf8
const FALSE = 0xf9
const INT = 0xfa
const DOUBLE = 0xfb
const MAP_START = 0xfc
const MAP_END = 0xfd
const SLICE_START = 0xfe
const SLICE_END = 0xff
const EXTRA = 0xf3

class HashBuf {
  bytes: number[] = []
  uvarint(v: number): void {
    while (v >= 0x80) { this.bytes.push((v % 128) | 0x80); v = Math.floor(v / 128) }
    this.bytes.push(v)
  }
  lenPrefixed(b: Uint8Array): void {
    this.uvarint(b.length)
    for (const x of b) this.bytes.push(x)
  }
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!
  return a.length - b.length
}

/** KeyValue messages (field `no` of `buf[start,end)`) as [key bytes, AnyValue bytes | null]. */
function entries(buf: Uint8Array, start: number, end: number, no: number): Array<[Uint8Array, Uint8Array | null]> {
  const out: Array<[Uint8Array, Uint8Array | null]> = []
  for (const fl of fields(buf, start, end)) {
    if (fl.no !== no || fl.wt !== LEN) continue
    let key: Uint8Array = new Uint8Array(0)
    let value: Uint8Array | null = null
    for (const kv of fields(buf, fl.valueStart, fl.end)) {
      if (kv.no === 1 && kv.wt === LEN) key = buf.subarray(kv.valueStart, kv.end)
      else if (kv.no === 2 && kv.wt === LEN) value = buf.subarray(kv.valueStart, kv.end)
    }
    out.push([key, value])
  }
  return out
}

function writeMap(h: HashBuf, list: Array<[Uint8Array, Uint8Array | null]>): void {
  for (const [key, value] of [...list].sort((a, b) => compareBytes(a[0], b[0]))) {
    h.bytes.push(KEY)
    h.lenPrefixed(key)
    writeValue(h, value)
  }
}

function writeValue(h: HashBuf, any: Uint8Array | null): void {
  let last: { no: number; wt: number; valueStart: number; end: number } | null = null
  if (any) for (const fl of fields(any)) if (fl.no >= 1 && fl.no <= 7) last = fl
  if (!any || !last) { h.bytes.push(EMPTY); return }
  const v = any.subarray(last.valueStart, last.end)
  switch (last.no) {
    case 1: h.bytes.push(STR); h.lenPrefixed(v); return
    case 2: h.bytes.push(readVarint64(any, last.valueStart, last.end)[0] !== 0n ? TRUE : FALSE); return
    case 3: {
      const u = readVarint64(any, last.valueStart, last.end)[0]
      h.bytes.push(INT)
      for (let i = 0n; i < 64n; i += 8n) h.bytes.push(Number((u >> i) & 0xffn))
      return
    }
    case 4: h.bytes.push(DOUBLE); if (last.wt === I64) for (const x of v) h.bytes.push(x); return
    case 5:
      h.bytes.push(SLICE_START)
      for (const fl of fields(v)) if (fl.no === 1 && fl.wt === LEN) writeValue(h, v.subarray(fl.valueStart, fl.end))
      h.bytes.push(SLICE_END)
      return
    case 6: h.bytes.push(MAP_START); writeMap(h, entries(v, 0, v.length, 1)); h.bytes.push(MAP_END); return
    case 7: h.bytes.push(BYTES); h.lenPrefixed(v); return
  }
}

const le64 = (v: bigint) => Array.from({ length: 8 }, (_, i) => Number((v >> BigInt(i * 8)) & 0xffn))

/** The 16-byte key of a Resource message's attributes (16 zero bytes when it has none), as pdata's xhash.MapHash makes it. */
export function resourceAttributesHash(resource: Uint8Array | null): Uint8Array {
  const list = resource ? entries(resource, 0, resource.length, 1) : []
  if (list.length === 0) return new Uint8Array(16)
  const h = new HashBuf()
  writeMap(h, list)
  const first = xxhash64(Uint8Array.from(h.bytes))
  h.bytes.push(EXTRA)
  const second = xxhash64(Uint8Array.from(h.bytes))
  return Uint8Array.from([...le64(first), ...le64(second)])
}
