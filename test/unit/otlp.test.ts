// The OTLP pieces without I/O: the wire reader/writer, the JSON mapping both ways, the body check,
// the exporter's keys and the size splits. The e2e suite (test/e2e/worker-otlp.test.ts) has the
// real Collector decode what these make.
import { describe, expect, it } from 'vitest'
import { resourceAttributesHash, toRecords, type RecordOptions } from '../../src/edge/otlp/records.js'
import { checkProto, jsonToProto, protoToJson } from '../../src/edge/otlp/transcode.js'
import { ProtobufError, Writer, fields } from '../../src/edge/otlp/wire.js'
import { xxhash64 } from '../../src/edge/otlp/xxhash64.js'

const hexId = (n: number, len: number) => n.toString(16).padStart(len * 2, '0')

export function tracesJson(resources: number, spansPerScope: number, traces = 3) {
  return {
    resourceSpans: Array.from({ length: resources }, (_, r) => ({
      resource: { attributes: [{ key: 'service.name', value: { stringValue: `svc-${r}` } }, { key: 'n', value: { intValue: String(r) } }] },
      schemaUrl: 'https://opentelemetry.io/schemas/1.26.0',
      scopeSpans: [{
        scope: { name: 'test', version: '1.0' },
        spans: Array.from({ length: spansPerScope }, (_, i) => ({
          traceId: hexId(1 + (i % traces), 16), spanId: hexId(1 + i, 8), name: `op-${i}`, kind: 2,
          startTimeUnixNano: '1750000000000000000', endTimeUnixNano: '1750000000123456789',
          attributes: [{ key: 'i', value: { intValue: String(i) } }, { key: 'big', value: { intValue: '9007199254740993' } }],
          status: { code: 1 },
        })),
      }],
    })),
  }
}

const opts = (o: Partial<RecordOptions> = {}): RecordOptions => ({ encoding: 'otlp_proto', maxRecordBytes: 1_000_000, ...o })

describe('protobuf wire', () => {
  it('writes and reads varints past 2^53 and fixed fields', () => {
    const w = new Writer().tag(1, 0).varint64(18446744073709551615n).tag(2, 1).fixed64(1n << 62n).tag(3, 5).fixed32(0xffffffff).string(4, 'hé')
    const b = w.finish()
    const fs = [...fields(b)]
    expect(fs.map((f) => [f.no, f.wt])).toEqual([[1, 0], [2, 1], [3, 5], [4, 2]])
    expect(new TextDecoder().decode(b.subarray(fs[3]!.valueStart, fs[3]!.end))).toBe('hé')
  })

  it('refuses truncated and malformed input', () => {
    expect(() => [...fields(Uint8Array.of(0x0a, 0x05, 1, 2))]).toThrow(ProtobufError)
    expect(() => [...fields(Uint8Array.of(0x08))]).toThrow(/truncated varint/)
    expect(() => [...fields(Uint8Array.of(0x0b))]).toThrow(/wire type 3/)
  })
})

describe('xxhash64', () => {
  it('matches the reference vectors', () => {
    const enc = new TextEncoder()
    expect(xxhash64(new Uint8Array(0))).toBe(0xef46db3751d8e999n)
    expect(xxhash64(enc.encode('a'))).toBe(0xd24ec4f1a98c6e5bn)
    expect(xxhash64(enc.encode('abc'))).toBe(0x44bc2cf5ad770999n)
    expect(xxhash64(enc.encode('Nobody inspects the spammish repetition'))).toBe(0xfbcea83c8a378bf1n)
  })
})

describe('OTLP/JSON <-> protobuf', () => {
  it('round-trips traces: hex ids, int64 strings beyond 2^53, enums as integers', () => {
    const json = tracesJson(2, 4)
    const proto = jsonToProto(json, 'TracesData')
    checkProto(proto, 'TracesData')
    const back = protoToJson(proto, 'TracesData') as ReturnType<typeof tracesJson>
    expect(back).toEqual(json)
  })

  it('takes snake_case keys, enum names, numbers for int64 and ignores unknown keys', () => {
    const a = jsonToProto({ resource_spans: [{ scope_spans: [{ spans: [{ trace_id: hexId(1, 16), kind: 'SPAN_KIND_SERVER', start_time_unix_nano: 5, extra: 1 }] }] }] }, 'TracesData')
    const b = jsonToProto({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: hexId(1, 16), kind: 2, startTimeUnixNano: '5' }] }] }] }, 'TracesData')
    expect(a).toEqual(b)
  })

  it('round-trips logs and every metric type', () => {
    const logs = { resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: '1', severityNumber: 9, severityText: 'INFO', body: { kvlistValue: { values: [{ key: 'a', value: { arrayValue: { values: [{ doubleValue: 1.5 }, { boolValue: true }, { bytesValue: 'AQID' }] } } }] } }, traceId: hexId(7, 16), spanId: hexId(7, 8), flags: 1, eventName: 'e' }] }] }] }
    expect(protoToJson(jsonToProto(logs, 'LogsData'), 'LogsData')).toEqual(logs)
    const metrics = { resourceMetrics: [{ scopeMetrics: [{ metrics: [
      { name: 'g', gauge: { dataPoints: [{ timeUnixNano: '2', asDouble: 0 }, { asInt: '-3' }] } },
      { name: 's', sum: { dataPoints: [{ asInt: '4' }], aggregationTemporality: 2, isMonotonic: true } },
      { name: 'h', histogram: { dataPoints: [{ count: '3', sum: 0, bucketCounts: ['1', '2'], explicitBounds: [0.5], min: -1, max: 'Infinity' }], aggregationTemporality: 1 } },
      { name: 'e', exponentialHistogram: { dataPoints: [{ scale: -2, zeroCount: '1', positive: { offset: -1, bucketCounts: ['5', '6'] } }] } },
      { name: 'q', summary: { dataPoints: [{ count: '1', sum: 2.5, quantileValues: [{ quantile: 0.5, value: 1 }] }] } },
    ] }] }] }
    expect(protoToJson(jsonToProto(metrics, 'MetricsData'), 'MetricsData')).toEqual(metrics)
  })

  it('refuses base64 ids, ids of the wrong length and non-integers', () => {
    expect(() => jsonToProto({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'AAECAwQFBgcICQoLDA0ODw==' }] }] }] }, 'TracesData')).toThrow(/hex/)
    expect(() => jsonToProto({ resourceSpans: [{ scopeSpans: [{ spans: [{ spanId: 'abcd' }] }] }] }, 'TracesData')).toThrow(/16 hex digits/)
    expect(() => jsonToProto({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: 1.5 }] }] }] }, 'LogsData')).toThrow(/integer/)
    expect(() => jsonToProto({ resourceSpans: {} }, 'TracesData')).toThrow(/array/)
  })

  it('checkProto refuses a wrong wire type, an id of the wrong length, a field past the end', () => {
    const span = new Writer().tag(1, 0).varint(1).finish() // trace_id as a varint
    const bad = new Writer().bytes(1, new Writer().bytes(2, new Writer().bytes(2, span).finish()).finish()).finish()
    expect(() => checkProto(bad, 'TracesData')).toThrow(/traceId: wire type 0/)
    const short = new Writer().bytes(1, new Writer().bytes(2, new Writer().bytes(2, new Writer().bytes(1, new Uint8Array(5)).finish()).finish()).finish()).finish()
    expect(() => checkProto(short, 'TracesData')).toThrow(/5 bytes; an id has 16/)
    expect(() => checkProto(Uint8Array.of(0x0a, 0x10, 0x0a), 'TracesData')).toThrow(ProtobufError)
  })
})

describe('records as the kafkaexporter writes them', () => {
  it('one record, no key, the body itself by default', () => {
    const proto = jsonToProto(tracesJson(2, 5), 'TracesData')
    const { records, items, rejected } = toRecords('traces', proto, opts())
    expect(records).toHaveLength(1)
    expect(records[0]!.key).toBeNull()
    expect(records[0]!.value).toEqual(proto)
    expect([items, rejected]).toEqual([10, 0])
  })

  it('partition_traces_by_id: one record per resource/scope/trace, key = the trace id in hex', () => {
    const proto = jsonToProto(tracesJson(2, 6, 3), 'TracesData')
    const { records } = toRecords('traces', proto, opts({ partitionTracesById: true }))
    expect(records).toHaveLength(6)
    const keys = records.map((r) => new TextDecoder().decode(r.key!))
    expect(keys).toEqual([1, 2, 3, 1, 2, 3].map((n) => hexId(n, 16)))
    for (const r of records) {
      const spans = (protoToJson(r.value, 'TracesData') as ReturnType<typeof tracesJson>).resourceSpans[0]!.scopeSpans[0]!.spans
      expect(spans.every((s) => s.traceId === new TextDecoder().decode(r.key!))).toBe(true)
      expect(spans).toHaveLength(2)
    }
  })

  it('splits a request over maxRecordBytes along resource, scope and trace boundaries, losing nothing', () => {
    const json = tracesJson(3, 400, 20)
    const proto = jsonToProto(json, 'TracesData')
    const limit = 20_000
    const { records, rejected } = toRecords('traces', proto, opts({ maxRecordBytes: limit }))
    expect(rejected).toBe(0)
    expect(records.length).toBeGreaterThan(proto.length / limit)
    for (const r of records) expect(r.value.length).toBeLessThanOrEqual(limit)
    // Every span once, under its own resource, and each trace's spans of a scope together unless a trace alone is too big.
    const seen: string[] = []
    for (const r of records) {
      for (const rs of (protoToJson(r.value, 'TracesData') as ReturnType<typeof tracesJson>).resourceSpans) {
        for (const ss of rs.scopeSpans) for (const s of ss.spans) seen.push(`${rs.resource.attributes[0]!.value.stringValue}/${s.spanId}`)
      }
    }
    const sent = json.resourceSpans.flatMap((rs) => rs.scopeSpans[0]!.spans.map((s) => `${rs.resource.attributes[0]!.value.stringValue}/${s.spanId}`))
    expect(seen.sort()).toEqual(sent.sort())
  })

  it('rejects (partial success) a span that alone is larger than a record may be', () => {
    const json = tracesJson(1, 3)
    json.resourceSpans[0]!.scopeSpans[0]!.spans[1]!.name = 'x'.repeat(5000)
    const { records, rejected, items } = toRecords('traces', jsonToProto(json, 'TracesData'), opts({ maxRecordBytes: 2000 }))
    expect([items, rejected]).toEqual([3, 1])
    const names = records.flatMap((r) => (protoToJson(r.value, 'TracesData') as ReturnType<typeof tracesJson>).resourceSpans[0]!.scopeSpans[0]!.spans.map((s) => s.name))
    expect(names.sort()).toEqual(['op-0', 'op-2'])
  })

  it('otlp_json records hold the OTLP/JSON of the same data and fit the limit', () => {
    const json = tracesJson(2, 200)
    const { records } = toRecords('traces', jsonToProto(json, 'TracesData'), opts({ encoding: 'otlp_json', maxRecordBytes: 30_000 }))
    expect(records.length).toBeGreaterThan(1)
    let spans = 0
    for (const r of records) {
      expect(r.value.length).toBeLessThanOrEqual(30_000)
      spans += (JSON.parse(new TextDecoder().decode(r.value)) as ReturnType<typeof tracesJson>).resourceSpans.reduce((n, rs) => n + rs.scopeSpans[0]!.spans.length, 0)
    }
    expect(spans).toBe(400)
  })

  it('by resource attributes: one record per resource, the key independent of attribute order', () => {
    const a = jsonToProto({ attributes: [{ key: 'a', value: { stringValue: 'x' } }, { key: 'b', value: { intValue: '1' } }] }, 'Resource')
    const b = jsonToProto({ attributes: [{ key: 'b', value: { intValue: '1' } }, { key: 'a', value: { stringValue: 'x' } }] }, 'Resource')
    expect(resourceAttributesHash(a)).toEqual(resourceAttributesHash(b))
    expect(resourceAttributesHash(null)).toEqual(new Uint8Array(16))
    const logs = { resourceLogs: [0, 1, 0].map((n) => ({ resource: { attributes: [{ key: 'service.name', value: { stringValue: `s${n}` } }] }, scopeLogs: [{ logRecords: [{ severityText: 'x' }] }] })) }
    const { records } = toRecords('logs', jsonToProto(logs, 'LogsData'), opts({ partitionLogsByResourceAttributes: true }))
    expect(records).toHaveLength(3)
    expect(records[0]!.key).toEqual(records[2]!.key)
    expect(records[0]!.key).not.toEqual(records[1]!.key)
  })

  it('logs by trace id: no key for records without one', () => {
    const logs = { resourceLogs: [{ scopeLogs: [{ logRecords: [{ traceId: hexId(5, 16) }, { severityText: 'none' }, { traceId: hexId(5, 16) }] }] }] }
    const { records } = toRecords('logs', jsonToProto(logs, 'LogsData'), opts({ partitionLogsByTraceId: true }))
    expect(records.map((r) => (r.key ? new TextDecoder().decode(r.key) : null))).toEqual([hexId(5, 16), null])
  })

  it('metrics count data points', () => {
    const m = { resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'g', gauge: { dataPoints: [{ asInt: '1' }, { asInt: '2' }] } }, { name: 's', sum: { dataPoints: [{ asDouble: 1 }] } }] }] }] }
    expect(toRecords('metrics', jsonToProto(m, 'MetricsData'), opts()).items).toBe(3)
  })
})
