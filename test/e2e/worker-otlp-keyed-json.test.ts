// The Worker's other OTLP record shapes, end to end: OTLP_ENCODING=otlp_json with every partition
// option on (traces by trace id, logs by trace id, metrics by resource attributes). The Java consumer
// reads the keys and checks that each names what its record holds; the real Collector's kafkareceiver,
// told `encoding: otlp_json`, reads the values back to exactly what was sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bs, ensureCluster, readTopic, uniqueTopic, type Cluster, type ReadRecord } from '../helpers/kafka.js'
import { collectorBinary, createOtlpTopics, items, startCollector, type Collector, type Signal } from './otelcol.js'
import { drained, startWrangler, type WranglerDev } from './wrangler.js'

const SIGNALS: Signal[] = ['traces', 'logs', 'metrics']
const hex = (n: number, bytes: number) => n.toString(16).padStart(bytes * 2, '0')
const T1 = hex(0xa1, 16)
const T2 = hex(0xb2, 16)
const T3 = hex(0xc3, 16)
const resource = (service: string) => ({ attributes: [{ key: 'service.name', value: { stringValue: service } }] })
const scope = { name: 'keyed-json', version: '1.0.0' }
const span = (traceId: string, n: number) => ({
  traceId, spanId: hex(n, 8), name: `span-${n}`, kind: 2, startTimeUnixNano: '1764626400000000000', endTimeUnixNano: '1764626400250000000',
  attributes: [{ key: 'n', value: { intValue: String(n) } }],
})
const log = (n: number, traceId?: string) => ({
  timeUnixNano: '1764626400000000000', severityNumber: 9, body: { stringValue: `log-${n}` }, ...(traceId ? { traceId, spanId: hex(n, 8) } : {}),
})
const gauge = (name: string) => ({ name, gauge: { dataPoints: [{ timeUnixNano: '1764626400000000000', asDouble: 1.5 }] } })

/** One request per signal, each spanning several keys: traces and logs across three and two trace ids, metrics across two resources. */
const SENT: Record<Signal, Record<string, unknown>> = {
  traces: { resourceSpans: [
    { resource: resource('checkout'), scopeSpans: [{ scope, spans: [span(T1, 1), span(T2, 2), span(T1, 3)] }] },
    { resource: resource('payments'), scopeSpans: [{ scope, spans: [span(T3, 4), span(T2, 5)] }] },
  ] },
  logs: { resourceLogs: [{ resource: resource('checkout'), scopeLogs: [{ scope, logRecords: [log(1, T1), log(2, T2), log(3, T1), log(4)] }] }] },
  metrics: { resourceMetrics: [
    { resource: resource('checkout'), scopeMetrics: [{ scope, metrics: [gauge('queue.depth'), gauge('queue.age')] }] },
    { resource: resource('payments'), scopeMetrics: [{ scope, metrics: [gauge('queue.depth')] }] },
  ] },
}

let cluster: Cluster
let dev: WranglerDev
let topics: Record<Signal, string>
let records: Record<Signal, ReadRecord[]>

beforeAll(async () => {
  cluster = await ensureCluster()
  topics = await createOtlpTopics(cluster, 'otlp_json')
  dev = await startWrangler({
    KAFKA_BOOTSTRAP: bs(cluster), TELEMETRY_TOPIC: uniqueTopic('unused'),
    OTLP_TRACES_TOPIC: topics.traces, OTLP_LOGS_TOPIC: topics.logs, OTLP_METRICS_TOPIC: topics.metrics,
    OTLP_ENCODING: 'otlp_json', OTLP_PARTITION_TRACES_BY_ID: 'true', OTLP_PARTITION_LOGS_BY_TRACE_ID: 'true',
    OTLP_PARTITION_METRICS_BY_RESOURCE_ATTRIBUTES: 'true',
  })
  for (const s of SIGNALS) {
    const res = await fetch(`${dev.url}/v1/${s}`, { method: 'POST', body: JSON.stringify(SENT[s]), headers: { 'content-type': 'application/json' } })
    expect(res.status, `${s}: ${await res.clone().text()}`).toBe(200)
  }
  await drained(dev)
  records = { traces: [], logs: [], metrics: [] }
  for (const s of SIGNALS) records[s] = await readTopic(cluster, topics[s], { isolation: 'read_uncommitted' })
}, 180_000)

afterAll(async () => { await dev?.stop() })

const valueOf = (r: ReadRecord) => JSON.parse(new TextDecoder().decode(r.value!)) as Record<string, unknown>
const keyHex = (r: ReadRecord) => (r.key === null ? null : new TextDecoder().decode(r.key))
/** Every trace id in an OTLP/JSON value, from its spans or log records. */
function traceIds(signal: 'traces' | 'logs', v: Record<string, unknown>): Array<string | undefined> {
  const [outer, inner, leaf] = signal === 'traces' ? ['resourceSpans', 'scopeSpans', 'spans'] : ['resourceLogs', 'scopeLogs', 'logRecords']
  type Nested = Array<Record<string, Array<Record<string, Array<{ traceId?: string }>>>>>
  return (v[outer] as Nested).flatMap((r) => r[inner]!.flatMap((s) => s[leaf]!.map((x) => x.traceId || undefined)))
}

describe('OTLP_ENCODING=otlp_json, keyed', () => {
  it('traces: one record per trace id in each resource and scope (the exporter\'s split), keyed by its 32 hex characters, each holding only that trace', () => {
    // T2 has spans under both resources: two records, as the kafkaexporter writes it.
    const keys = records.traces.map(keyHex)
    expect(keys.sort()).toEqual([T1, T2, T2, T3].sort())
    for (const r of records.traces) expect(new Set(traceIds('traces', valueOf(r)))).toEqual(new Set([keyHex(r)]))
  })

  it('logs: one record per trace id keyed by it, and the log record without one in a record without a key', () => {
    const keyed = records.logs.filter((r) => r.key !== null)
    expect(keyed.map(keyHex).sort()).toEqual([T1, T2].sort())
    for (const r of keyed) expect(new Set(traceIds('logs', valueOf(r)))).toEqual(new Set([keyHex(r)]))
    const unkeyed = records.logs.filter((r) => r.key === null)
    expect(unkeyed).toHaveLength(1)
    expect(traceIds('logs', valueOf(unkeyed[0]!))).toEqual([undefined])
  })

  it('metrics: one record per resource, keyed by a distinct 16-byte hash of its attributes', () => {
    expect(records.metrics).toHaveLength(2)
    for (const r of records.metrics) expect(r.key).toHaveLength(16)
    expect(new Set(records.metrics.map((r) => Buffer.from(r.key!).toString('hex'))).size).toBe(2)
  })

  it('the values are OTLP/JSON that holds every item sent, once', () => {
    for (const s of SIGNALS) expect(records[s].flatMap((r) => items(s, valueOf(r))).sort(), s).toEqual(items(s, SENT[s]).sort())
  })

  describe('the OpenTelemetry Collector (contrib kafkareceiver, encoding otlp_json -> fileexporter) reads them', () => {
    const built = collectorBinary()
    const missing = 'missing' in built ? built.missing : null
    let collector: Collector | undefined

    afterAll(async () => { await collector?.stop() })

    it.skipIf(missing !== null && !process.env.CI)(`what it writes equals what was sent${missing ? ` (skipped: ${missing})` : ''}`, async () => {
      if (missing) throw new Error(`CI=1 and the Collector cannot be built: ${missing}`)
      collector = await startCollector((built as { bin: string }).bin, { brokers: bs(cluster), topics, encoding: 'otlp_json' })
      const want = Object.fromEntries(SIGNALS.map((s) => [s, items(s, SENT[s]).sort()])) as Record<Signal, string[]>
      const deadline = Date.now() + 90_000
      let got: Record<Signal, string[]> = { traces: [], logs: [], metrics: [] }
      for (;;) {
        got = Object.fromEntries(SIGNALS.map((s) => [s, collector!.read(s).flatMap((line) => items(s, line)).sort()])) as Record<Signal, string[]>
        if (SIGNALS.every((s) => got[s].length >= want[s].length) || Date.now() > deadline) break
        await new Promise((r) => setTimeout(r, 500))
      }
      expect(got, collector.log().slice(-2000)).toEqual(want)
    }, 180_000)
  })
})
