// How the durable accept's one-row-per-request storage copes with requests that do not fit it whole.
//
// A request whose events, as the app hands them to the object, are longer than one
// requests row may hold (a deployed Durable Object's row holds 2 MB): its events are stored in
// several rows and each reaches Kafka once, in order per key. Quotes in the data double the event's
// JSON, so a body just under the 1 MiB limit is about 1.04 million characters for the object, over
// the 600,000 of a row. wrangler dev's local SQLite stores such a row whole (the same test passes with the
// split turned off), so this shows that the split rows deliver exactly once, not the limit itself.
import { rmSync } from 'node:fs'
import { afterAll, expect, it } from 'vitest'
import { bs, createTopic, ensureCluster, readTopic, uniqueTopic } from '../helpers/kafka.js'
import { shardMetric, snapshotWorkerWithEntry, startWrangler, type WranglerDev } from './wrangler.js'

let dev: WranglerDev | undefined
let project: string | undefined
afterAll(async () => {
  await dev?.stop()
  if (project) rmSync(project, { recursive: true, force: true })
})

const health = async () => (await (await fetch(`${dev!.url}/healthz`)).json()) as { backlog: number }

it('a request too long for one storage row is stored in several and produced exactly once', async () => {
  const cluster = await ensureCluster()
  const topic = uniqueTopic('telemetry-large')
  await createTopic(cluster, topic, { partitions: 2 })
  dev = await startWrangler({ KAFKA_BOOTSTRAP: bs(cluster), TELEMETRY_TOPIC: topic, SHARDS: '1' })
  const events = Array.from({ length: 16 }, (_, i) => ({ type: 'large', id: `large-${i}`, key: `k${i % 2}`, data: { i, quotes: '"'.repeat(32_500) } }))
  const body = JSON.stringify(events)
  expect(body.length).toBeLessThan(1 << 20)
  const res = await fetch(`${dev.url}/events`, { method: 'POST', body, headers: { 'content-type': 'application/json' } })
  expect(res.status).toBe(202)
  expect(await res.json()).toMatchObject({ accepted: 16 })
  // A resend of the same ids (its answer lost) adds nothing.
  const again = await fetch(`${dev.url}/events`, { method: 'POST', body, headers: { 'content-type': 'application/json' } })
  expect(again.status).toBe(202)

  const records = await readTopic(cluster, topic, { expected: 16, isolation: 'read_uncommitted', timeoutMs: 60_000 })
  const values = records.map((r) => JSON.parse(new TextDecoder().decode(r.value!)) as { id: string; key: string; data: { i: number; quotes: string } })
  expect(values.map((v) => v.id).sort()).toEqual(events.map((e) => e.id).sort())
  for (const v of values) expect(v.data.quotes).toBe(events[v.data.i]!.data.quotes)
  for (const k of ['k0', 'k1']) {
    const order = values.filter((v) => v.key === k).map((v) => v.data.i)
    expect(order).toEqual([...order].sort((a, b) => a - b))
  }
  while ((await health()).backlog !== 0) await new Promise((r) => setTimeout(r, 300))
  const metrics = await (await fetch(`${dev.url}/metrics`)).text()
  expect(metrics).toMatch(/^kafka_edge_events_retried_ids_total\{shard="0"\} 16$/m)
  // Rows written, what Cloudflare bills the object for: the 16 ids, the request's rows (two or more:
  // the split) and their deletes, the checkpoint's batch rows.
  expect(shardMetric(metrics, 'kafka_edge_sqlite_rows_written_total')).toBeGreaterThanOrEqual(16 + 2 * 2)
  // The batches were saved before they went out and dropped by a later save (the removal waits up to
  // 50 ms for company, and none comes here): two saves at least, the second after the backlog read 0.
  const saves = async () => shardMetric(await (await fetch(`${dev!.url}/metrics`)).text(), 'kafka_edge_checkpoint_saves_total')
  await expect.poll(saves, { timeout: 5000 }).toBeGreaterThanOrEqual(2)
}, 180_000)

// A request one of whose events the producer refuses (larger than max.request.size, so never
// written): the request's other events reach Kafka once, and the refused one stays stored, as an
// events row of its own, retried by every alarm (until the limit is raised).
it('a request with an event the producer refuses: the others are produced once, the refused one waits', async () => {
  await dev?.stop()
  const cluster = await ensureCluster()
  const topic = uniqueTopic('telemetry-refused')
  await createTopic(cluster, topic, { partitions: 2 })
  dev = await startWrangler({ KAFKA_BOOTSTRAP: bs(cluster), TELEMETRY_TOPIC: topic, SHARDS: '1', KAFKA_MAX_REQUEST_SIZE: '4096' })
  const events = Array.from({ length: 10 }, (_, i) => ({ type: 'refused', id: `refused-${i}`, key: `k${i % 2}`, data: { i, pad: i === 4 ? 'x'.repeat(8000) : '' } }))
  const res = await fetch(`${dev.url}/events`, { method: 'POST', body: JSON.stringify(events), headers: { 'content-type': 'application/json' } })
  expect(res.status).toBe(202)
  const records = await readTopic(cluster, topic, { expected: 9, isolation: 'read_uncommitted', timeoutMs: 60_000 })
  const ids = records.map((r) => (JSON.parse(new TextDecoder().decode(r.value!)) as { id: string }).id)
  expect(ids.sort()).toEqual(events.filter((e) => e.data.i !== 4).map((e) => e.id).sort())
  // Two more alarms' retries of the refused event add nothing to the topic.
  await new Promise((r) => setTimeout(r, 2500))
  expect((await health()).backlog).toBe(1)
  const again = await readTopic(cluster, topic, { expected: 9, isolation: 'read_uncommitted', timeoutMs: 10_000 })
  expect(again.length).toBe(9)
}, 180_000)

/**
 * The repository's Worker plus POST /previous, which hands shard 0 a request as the app before the
 * line form did: the ids line, then the records as a JSON array. The object stores it as it came,
 * as rows stored before a deploy are.
 */
function projectWithPreviousApp(): string {
  return snapshotWorkerWithEntry('previous', `
import { KafkaProducerObject, telemetryApp, type Env } from 'kafka-edge/worker'
export class ProducerObject extends KafkaProducerObject {}
const app = telemetryApp()
export default {
  async fetch(req: Request, env: Env & { PRODUCER: any }, ctx: unknown) {
    if (new URL(req.url).pathname !== '/previous') return app.fetch(req, env, ctx as never)
    const records = (await req.json() as Array<{ id: string; key: string | null; type: string }>).map((e) => ({ ...e, value: JSON.stringify(e), timestamp: 1760000000000 }))
    const body = JSON.stringify(records.map((r) => r.id)) + '\\n' + JSON.stringify(records)
    return env.PRODUCER.get(env.PRODUCER.idFromName('telemetry-shard-0')).fetch('https://producer/accept', { method: 'POST', body, headers: { 'content-type': 'text/plain' } })
  },
}
`)
}

// Requests stored by the code before the line form hold their events as a JSON array: an object of
// the current code produces them (beside requests in the line form) once each, with their keys,
// values, timestamps and headers, ids and keys that need escaping included.
it('requests rows in the earlier JSON form are produced once, beside rows in the line form', async () => {
  await dev?.stop()
  const cluster = await ensureCluster()
  const topic = uniqueTopic('telemetry-rowform')
  // The earlier rows carry a fixed timestamp from 2025, past the broker's default 7-day retention:
  // a retention check (every 5 minutes on the shared cluster) that caught a segment holding only
  // those records deleted them before the reader got there (a CI run read 10 of the 12).
  await createTopic(cluster, topic, { partitions: 2, configs: { 'retention.ms': '-1' } })
  project = projectWithPreviousApp()
  dev = await startWrangler({ KAFKA_BOOTSTRAP: bs(cluster), TELEMETRY_TOPIC: topic, SHARDS: '1' }, { project })
  const earlier = Array.from({ length: 6 }, (_, i) => ({ type: 'rowform', id: `earlier-${i}\t"q"`, key: i % 3 === 0 ? null : `k\n${i % 2}` }))
  const current = Array.from({ length: 6 }, (_, i) => ({ type: 'rowform', id: `current-${i}\\`, key: `k\n${i % 2}`, data: { tab: '\t', nl: '\n' } }))
  const post = (route: string, events: object[]) => fetch(`${dev!.url}${route}`, { method: 'POST', body: JSON.stringify(events), headers: { 'content-type': 'application/json' } })
  expect((await post('/previous', earlier.slice(0, 3))).status).toBe(202)
  expect((await post('/events', current.slice(0, 3))).status).toBe(202)
  expect((await post('/previous', earlier.slice(3))).status).toBe(202)
  expect((await post('/events', current.slice(3))).status).toBe(202)

  const records = await readTopic(cluster, topic, { expected: 12, isolation: 'read_uncommitted', timeoutMs: 60_000 })
  expect(records.length).toBe(12)
  const text = (b: Uint8Array | null | undefined) => (b ? new TextDecoder().decode(b) : null)
  const byId = new Map(records.map((r) => [text(r.headers!.find((h) => h.key === 'event-id')!.value), r]))
  expect([...byId.keys()].sort()).toEqual([...earlier, ...current].map((e) => e.id).sort())
  for (const e of earlier) {
    const r = byId.get(e.id)!
    expect(text(r.key)).toBe(e.key)
    expect(JSON.parse(text(r.value)!)).toEqual(e)
    expect(r.timestamp).toBe(1760000000000)
    expect(text(r.headers!.find((h) => h.key === 'event-type')!.value)).toBe('rowform')
  }
  for (const e of current) {
    const r = byId.get(e.id)!
    expect(text(r.key)).toBe(e.key)
    expect(JSON.parse(text(r.value)!)).toMatchObject({ id: e.id, key: e.key, type: 'rowform', data: e.data })
  }
}, 180_000)
