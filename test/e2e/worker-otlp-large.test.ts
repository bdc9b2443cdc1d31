// An OTLP record larger than one Durable Object row holds, under wrangler dev with Kafka 4.4 at the
// default max.request.size (1 MiB): the object stores its value in rows of event_chunks
// (CHUNK_BYTES each), reads them back to produce it, and deletes them once Kafka acknowledged it
// (which is what takes the record off the backlog).
// The record in the log is the request's protobuf body, byte for byte.
import { afterAll, beforeAll, expect, it } from 'vitest'
import { jsonToProto } from '../../src/edge/otlp/transcode.js'
import { bs, createTopic, ensureCluster, readTopic, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { startWrangler, type WranglerDev } from './wrangler.js'

let cluster: Cluster
let dev: WranglerDev | undefined
let topic: string
/** producer-object.ts's CHUNK_BYTES (that module loads the WASM core, which vitest does not import). */
const CHUNK_BYTES = 1_000_000

beforeAll(async () => {
  cluster = await ensureCluster()
  topic = uniqueTopic('otlp_spans_large')
  await createTopic(cluster, topic, { partitions: 1 })
  dev = await startWrangler({ KAFKA_BOOTSTRAP: bs(cluster), TELEMETRY_TOPIC: uniqueTopic('unused'), OTLP_TRACES_TOPIC: topic })
})
afterAll(async () => { await dev?.stop() })

it('a span of about 1 MB, more than a row holds, is accepted, produced byte for byte, and leaves the backlog once acknowledged', async () => {
  const blob = Array.from({ length: CHUNK_BYTES + 20_000 }, (_, i) => String.fromCharCode(97 + ((i * 7) % 26))).join('')
  const traces = { resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'large' } }] }, scopeSpans: [{ scope: { name: 'large' }, spans: [{
    traceId: '0102030405060708090a0b0c0d0e0f10', spanId: '0102030405060708', name: 'large-span', startTimeUnixNano: '1764626400000000000',
    attributes: [{ key: 'blob', value: { stringValue: blob } }],
  }] }] }] }
  const body = jsonToProto(traces, 'TracesData')
  expect(body.length).toBeGreaterThan(CHUNK_BYTES)
  const res = await fetch(`${dev!.url}/v1/traces`, { method: 'POST', body, headers: { 'content-type': 'application/x-protobuf' } })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toBe('application/x-protobuf')
  // An empty ExportTraceServiceResponse: nothing rejected.
  expect((await res.arrayBuffer()).byteLength).toBe(0)

  const [record, ...more] = await readTopic(cluster, topic, { expected: 1, isolation: 'read_uncommitted', timeoutMs: 60_000 })
  expect(more).toEqual([])
  expect(Buffer.from(record!.value!).equals(Buffer.from(body))).toBe(true)

  // Acknowledged: the row and its chunks are gone, and the backlog (records and bytes) is empty.
  const deadline = Date.now() + 30_000
  let health: { backlog: number } = { backlog: -1 }
  while (Date.now() < deadline) {
    health = await (await fetch(`${dev!.url}/healthz`)).json() as { backlog: number }
    if (health.backlog === 0) break
    await new Promise((r) => setTimeout(r, 200))
  }
  expect(health.backlog).toBe(0)
}, 180_000)
