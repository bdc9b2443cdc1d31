// OTLP/HTTP into the telemetry Worker under wrangler dev (workerd), into Kafka 4.4, read back by two
// independent readers: the Java consumer (record bytes, keys, headers) and the real OpenTelemetry
// Collector's kafkareceiver (scripts/otelcol, built from the Go module proxy), whose file exporter
// output must equal what was sent. Senders: hand-made protobuf and JSON bodies (plain and gzip) for
// traces, logs and metrics, the OTel JS SDK's proto and JSON trace exporters, and the Workers
// Observability JSON shape. Bad input gets the spec's answer and stores nothing.
import { gzipSync } from 'node:zlib'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { jsonToProto, protoToJson } from '../../src/edge/otlp/transcode.js'
import { bs, ensureCluster, readTopic, uniqueTopic, type Cluster, type ReadRecord } from '../helpers/kafka.js'
import { collectorBinary, createOtlpTopics, items, pdataBinary, pdataDecode, startCollector, type Collector, type Signal } from './otelcol.js'
import { ROOT, drained, startWrangler, type WranglerDev } from './wrangler.js'

const TOKEN = 'otlp-test-secret'
const MAX_BODY = 256 << 10
const MAX_REQUEST = 64 << 10
const DATA = { traces: 'TracesData', logs: 'LogsData', metrics: 'MetricsData' } as const
const SIGNALS: Signal[] = ['traces', 'logs', 'metrics']
/** Spans the OTel SDK test sends (5 per exporter). */
const SDK_SPANS = 10

let cluster: Cluster
let dev: WranglerDev
let topics: Record<Signal, string>
/** Every request the Worker answered 200, as the OTLP/JSON that was sent, per signal. */
const accepted: Record<Signal, object[]> = { traces: [], logs: [], metrics: [] }
/** Spans left out by a partial success (name), so the readers must not see them. */
const rejectedSpanNames = new Set<string>()

beforeAll(async () => {
  cluster = await ensureCluster()
  topics = await createOtlpTopics(cluster)
  dev = await startWrangler({
    KAFKA_BOOTSTRAP: bs(cluster), TELEMETRY_TOPIC: uniqueTopic('unused'),
    OTLP_TRACES_TOPIC: topics.traces, OTLP_LOGS_TOPIC: topics.logs, OTLP_METRICS_TOPIC: topics.metrics,
    OTLP_INCLUDE_METADATA_KEYS: 'x-tenant', OTLP_MAX_BODY_BYTES: String(MAX_BODY), KAFKA_MAX_REQUEST_SIZE: String(MAX_REQUEST),
  }, { secrets: { OTLP_AUTH_TOKEN: TOKEN } })
})

afterAll(async () => { await dev?.stop() })

interface PostOptions { type?: string; gzip?: boolean; auth?: string | null; headers?: Record<string, string> }
function post(signal: Signal, body: Uint8Array<ArrayBuffer> | string, o: PostOptions = {}) {
  let bytes: Uint8Array<ArrayBuffer> = typeof body === 'string' ? new TextEncoder().encode(body) : body
  const headers: Record<string, string> = { 'content-type': o.type ?? 'application/x-protobuf', 'x-tenant': 'acme', ...o.headers }
  if (o.gzip) { bytes = new Uint8Array(gzipSync(bytes)); headers['content-encoding'] = 'gzip' }
  const auth = o.auth === undefined ? `Bearer ${TOKEN}` : o.auth
  if (auth !== null) headers.authorization = auth
  return fetch(`${dev.url}/v1/${signal}`, { method: 'POST', body: bytes, headers })
}

const id = (n: number, bytes: number) => n.toString(16).padStart(bytes * 2, '0')
function sample(signal: Signal, label: string): object {
  const resource = { attributes: [{ key: 'service.name', value: { stringValue: 'otlp-e2e' } }, { key: 'test.case', value: { stringValue: label } }] }
  const scope = { name: 'e2e', version: '1.2.3' }
  if (signal === 'traces') {
    return { resourceSpans: [{ resource, scopeSpans: [{ scope, spans: [1, 2, 3].map((i) => ({
      traceId: id(i, 16), spanId: id(i, 8), name: `${label}-span-${i}`, kind: 3, startTimeUnixNano: '1764626400000000000', endTimeUnixNano: '1764626400500000000',
      attributes: [{ key: 'n', value: { intValue: String(i) } }, { key: 'big', value: { intValue: '9007199254740993' } }, { key: 'ratio', value: { doubleValue: 0.5 } }],
      events: [{ timeUnixNano: '1764626400100000000', name: 'evt' }], status: { code: 2, message: 'bad' },
    })) }] }] }
  }
  if (signal === 'logs') {
    return { resourceLogs: [{ resource, scopeLogs: [{ scope, logRecords: [1, 2].map((i) => ({
      timeUnixNano: '1764626400000000000', severityNumber: 9, severityText: 'INFO', body: { stringValue: `${label}-log-${i}` },
      attributes: [{ key: 'bytes', value: { bytesValue: 'AAEC' } }], traceId: id(i, 16), spanId: id(i, 8),
    })) }] }] }
  }
  return { resourceMetrics: [{ resource, scopeMetrics: [{ scope, metrics: [
    { name: `${label}-gauge`, unit: '1', gauge: { dataPoints: [{ timeUnixNano: '1764626400000000000', asDouble: 2.5, attributes: [{ key: 'k', value: { stringValue: 'v' } }] }] } },
    { name: `${label}-sum`, sum: { aggregationTemporality: 2, isMonotonic: true, dataPoints: [{ startTimeUnixNano: '1764626300000000000', timeUnixNano: '1764626400000000000', asInt: '42' }] } },
    { name: `${label}-hist`, histogram: { aggregationTemporality: 1, dataPoints: [{ timeUnixNano: '1764626400000000000', count: '3', sum: 6, bucketCounts: ['1', '2'], explicitBounds: [2], min: 1, max: 3 }] } },
  ] }] }] }
}

/** Decodes a google.rpc.Status body in either encoding. */
async function rpcStatus(res: Response): Promise<{ code: number; message: string }> {
  const bytes = new Uint8Array(await res.arrayBuffer())
  if (res.headers.get('content-type')?.includes('json')) return JSON.parse(new TextDecoder().decode(bytes))
  const st = protoToJson(bytes, 'RpcStatus') as { code?: number; message?: string }
  return { code: st.code ?? 0, message: st.message ?? '' }
}

describe('OTLP/HTTP into the Worker', () => {
  it('protobuf and JSON bodies, plain and gzip, for traces, logs and metrics: 200 in the request\'s content type', async () => {
    for (const signal of SIGNALS) {
      for (const type of ['protobuf', 'json'] as const) {
        for (const gzip of [false, true]) {
          const json = sample(signal, `${signal}-${type}-${gzip ? 'gzip' : 'plain'}`)
          const body = type === 'json' ? JSON.stringify(json) : jsonToProto(json, DATA[signal])
          const res = await post(signal, body, { type: type === 'json' ? 'application/json' : 'application/x-protobuf', gzip })
          const text = new Uint8Array(await res.arrayBuffer())
          expect(res.status, new TextDecoder().decode(text)).toBe(200)
          if (type === 'json') {
            expect(res.headers.get('content-type')).toMatch(/^application\/json/)
            expect(JSON.parse(new TextDecoder().decode(text))).toEqual({})
          } else {
            expect(res.headers.get('content-type')).toMatch(/^application\/x-protobuf/)
            expect(text.length).toBe(0) // an Export*ServiceResponse without partial_success
          }
          accepted[signal].push(json)
        }
      }
    }
  }, 120_000)

  it('bad input gets the spec\'s answer: 400 malformed protobuf or JSON (google.rpc.Status), 415, 413 over the cap and for a gzip bomb, 401 without the secret', async () => {
    const cases: Array<{ what: string; res: () => Promise<Response>; status: number; message: RegExp }> = [
      { what: 'malformed protobuf', res: () => post('traces', Uint8Array.of(0x0a, 0xff, 0x01, 0x02)), status: 400, message: /not an OTLP protobuf TracesData/ },
      { what: 'protobuf with a 5-byte trace id', res: () => post('traces', Uint8Array.of(0x0a, 0x0b, 0x12, 0x09, 0x12, 0x07, 0x0a, 0x05, 1, 2, 3, 4, 5)), status: 400, message: /an id has 16/ },
      { what: 'malformed JSON', res: () => post('logs', '{"resourceLogs": [', { type: 'application/json' }), status: 400, message: /not valid JSON/ },
      { what: 'JSON with a base64 trace id', res: () => post('traces', JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'S/kvNXezTaajzpKdDg5HNg==' }] }] }] }), { type: 'application/json' }), status: 400, message: /hex/ },
      { what: 'wrong content type', res: () => post('metrics', 'hello', { type: 'text/plain' }), status: 415, message: /not OTLP/ },
      { what: 'unknown content encoding', res: () => post('metrics', 'x', { headers: { 'content-encoding': 'br' } }), status: 415, message: /Content-Encoding/ },
      { what: 'body over the cap', res: () => post('traces', new Uint8Array(MAX_BODY + 1)), status: 413, message: /at most 262144/ },
      { what: 'gzip bomb', res: () => post('traces', new Uint8Array(64 << 20), { gzip: true }), status: 413, message: /gunzipped body is more than 262144/ },
      { what: 'missing secret', res: () => post('traces', jsonToProto(sample('traces', 'nope'), 'TracesData'), { auth: null }), status: 401, message: /missing authorization/ },
      { what: 'wrong secret', res: () => post('logs', jsonToProto(sample('logs', 'nope'), 'LogsData'), { auth: 'Bearer guess' }), status: 401, message: /wrong authorization/ },
    ]
    for (const c of cases) {
      const res = await c.res()
      expect(res.status, c.what).toBe(c.status)
      const st = await rpcStatus(res)
      expect(st.message, c.what).toMatch(c.message)
      expect(st.code, c.what).toBe(c.status === 401 ? 16 : 3)
    }
  }, 120_000)

  it('a request over max.request.size is split into records that fit; a span too big alone is a partial success', async () => {
    const big = { resourceSpans: [{ resource: { attributes: [{ key: 'test.case', value: { stringValue: 'split' } }] }, scopeSpans: [{ scope: { name: 'split' }, spans: Array.from({ length: 1200 }, (_, i) => ({
      traceId: id(1 + (i % 40), 16), spanId: id(1 + i, 8), name: `split-${i}`, startTimeUnixNano: String(1764626400000000000n + BigInt(i)), attributes: [{ key: 'pad', value: { stringValue: 'x'.repeat(100) } }],
    })) }] }] }
    const proto = jsonToProto(big, 'TracesData')
    expect(proto.length).toBeGreaterThan(2 * MAX_REQUEST)
    expect(proto.length).toBeLessThan(MAX_BODY)
    const res = await post('traces', proto)
    expect(res.status).toBe(200)
    accepted.traces.push(big)

    const huge = sample('traces', 'partial') as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<{ name: string; attributes: unknown[] }> }> }> }
    const span = huge.resourceSpans[0]!.scopeSpans[0]!.spans[1]!
    span.attributes.push({ key: 'blob', value: { stringValue: 'y'.repeat(MAX_REQUEST + 1000) } })
    rejectedSpanNames.add(span.name)
    const partial = await post('traces', JSON.stringify(huge), { type: 'application/json' })
    expect(partial.status).toBe(200)
    const body = await partial.json() as { partialSuccess?: { rejectedSpans?: string; errorMessage?: string } }
    expect(body.partialSuccess?.rejectedSpans).toBe('1')
    expect(body.partialSuccess?.errorMessage).toMatch(/larger than a Kafka record may be/)
    huge.resourceSpans[0]!.scopeSpans[0]!.spans.splice(1, 1)
    accepted.traces.push(huge)
  }, 60_000)

  it('the Workers Observability shape: its test POST gets 200 and stores nothing, its traces and logs (OTLP/JSON) are accepted', async () => {
    for (const test of ['', '{}']) {
      const res = await post('traces', test, { type: 'application/json' })
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({})
    }
    for (const signal of ['traces', 'logs'] as const) {
      const json = JSON.parse(readFileSync(path.join(ROOT, `test/fixtures/otlp/workers-observability-${signal}.json`), 'utf8')) as object
      const res = await post(signal, JSON.stringify(json), { type: 'application/json' })
      expect(res.status).toBe(200)
      accepted[signal].push(json)
    }
  })

  it('the OTel JS SDK\'s proto and JSON trace exporters send to it', async () => {
    for (const [name, Exporter] of [['proto', ProtoTraceExporter], ['json', JsonTraceExporter]] as const) {
      const exporter = new Exporter({ url: `${dev.url}/v1/traces`, headers: { authorization: `Bearer ${TOKEN}`, 'x-tenant': 'sdk' } })
      const results: number[] = []
      const provider = new TracerProvider({
        resource: resourceFromAttributes({ 'service.name': `sdk-${name}` }),
        spanProcessors: [new SimpleSpanProcessor({
          exporter: {
            export: (spans, done) => exporter.export(spans, (r) => { results.push(r.code); done(r) }),
            shutdown: () => exporter.shutdown(), forceFlush: () => exporter.forceFlush(),
          },
        })],
      })
      const tracer = provider.getTracer('sdk-test', '0.0.1')
      for (let i = 0; i < 5; i++) {
        const s = tracer.startSpan(`sdk-${name}-${i}`)
        s.setAttribute('i', i)
        s.end()
      }
      await provider.forceFlush()
      await provider.shutdown()
      expect(results, name).toEqual([0, 0, 0, 0, 0]) // ExportResultCode.SUCCESS for every export
    }
  }, 60_000)
})

describe('what reaches Kafka', () => {
  let records: Record<Signal, ReadRecord[]>

  beforeAll(async () => {
    records = { traces: [], logs: [], metrics: [] }
    await drained(dev)
    for (const s of SIGNALS) records[s] = await readTopic(cluster, topics[s], { isolation: 'read_uncommitted' })
  })

  it('records as the kafkaexporter writes them: no key, the body as otlp_proto, x-tenant copied into the headers; nothing from refused requests', () => {
    for (const s of SIGNALS) {
      for (const r of records[s]) {
        expect(r.key).toBeNull()
        const headers = Object.fromEntries(r.headers.map((h) => [h.key, new TextDecoder().decode(h.value!)]))
        expect(headers['x-tenant']).toMatch(/^(acme|sdk)$/)
        expect(headers['event-id']).toMatch(/^[0-9a-f-]{36}\/\d+$/)
      }
      const labels = records[s].flatMap((r) => items(s, protoToJson(r.value!, DATA[s])))
      expect(labels.some((l) => l.includes('nope')), s).toBe(false)
    }
    // One record per request, except the split one; the protobuf bodies went through byte for byte.
    expect(records.logs).toHaveLength(accepted.logs.length)
    expect(records.metrics).toHaveLength(accepted.metrics.length)
    const values = new Set(records.metrics.map((r) => Buffer.from(r.value!).toString('base64')))
    for (const json of accepted.metrics) expect(values.has(Buffer.from(jsonToProto(json, 'MetricsData')).toString('base64'))).toBe(true)
    const split = records.traces.filter((r) => items('traces', protoToJson(r.value!, 'TracesData')).some((i) => i.includes('"split"')))
    expect(split.length).toBeGreaterThanOrEqual(3)
    for (const r of split) expect(r.value!.length).toBeLessThanOrEqual(MAX_REQUEST)
  })

  /** What a reader decoded equals what was sent: every accepted item once, the SDK's spans, nothing rejected. */
  function expectSent(got: Record<Signal, string[]>): void {
    const want = Object.fromEntries(SIGNALS.map((s) => [s, accepted[s].flatMap((j) => items(s, j as Record<string, unknown>))])) as Record<Signal, string[]>
    const fromSdk = got.traces.filter((i) => i.includes('"sdk-proto"') || i.includes('"sdk-json"'))
    expect(fromSdk).toHaveLength(SDK_SPANS)
    expect(got.traces.filter((i) => !fromSdk.includes(i)).sort()).toEqual(want.traces.sort())
    expect(got.logs.sort()).toEqual(want.logs.sort())
    expect(got.metrics.sort()).toEqual(want.metrics.sort())
    for (const name of rejectedSpanNames) expect(got.traces.some((i) => i.includes(name))).toBe(false)
  }

  describe('pdata, the Collector\'s own decoder (scripts/otelcol/pdata), reads every record', () => {
    const bin = pdataBinary()
    it.skipIf(bin === null && !process.env.CI)(`and the data equals what was sent${bin === null ? ' (skipped: go is not installed)' : ''}`, () => {
      if (bin === null) throw new Error('CI=1 and go is missing: .ci/run installs it')
      expectSent(Object.fromEntries(SIGNALS.map((s) => [s, pdataDecode(bin, s, records[s].map((r) => r.value!)).flatMap((d) => items(s, d))])) as Record<Signal, string[]>)
    }, 600_000)
  })

  describe('the OpenTelemetry Collector (contrib kafkareceiver -> fileexporter) reads them', () => {
    const built = collectorBinary()
    const missing = 'missing' in built ? built.missing : null
    let collector: Collector | undefined

    afterAll(async () => { await collector?.stop() })

    it.skipIf(missing !== null && !process.env.CI)(`what it writes equals what was sent, for every accepted request${missing ? ` (skipped: ${missing})` : ''}`, async () => {
      if (missing) throw new Error(`CI=1 and the Collector cannot be built: ${missing}`)
      collector = await startCollector((built as { bin: string }).bin, { brokers: bs(cluster), topics })
      const expected = Object.fromEntries(SIGNALS.map((s) => [s, accepted[s].flatMap((j) => items(s, j as Record<string, unknown>)).length + (s === 'traces' ? SDK_SPANS : 0)]))
      const deadline = Date.now() + 90_000
      let got: Record<Signal, string[]> = { traces: [], logs: [], metrics: [] }
      for (;;) {
        got = Object.fromEntries(SIGNALS.map((s) => [s, collector!.read(s).flatMap((line) => items(s, line))])) as Record<Signal, string[]>
        if (SIGNALS.every((s) => got[s].length >= expected[s]!) || Date.now() > deadline) break
        await new Promise((r) => setTimeout(r, 500))
      }
      expectSent(got)
    }, 180_000)
  })
})
