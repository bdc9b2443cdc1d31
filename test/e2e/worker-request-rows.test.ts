// How the durable accept's one-row-per-request storage copes with requests that do not fit it whole.
//
// A request whose JSON, as the app hands it to the object, is longer than one
// requests row may hold (a deployed Durable Object's row holds 2 MB): its events are stored in
// several rows and each reaches Kafka once, in order per key. Quotes in the data double the JSON at
// each level of escaping, so a body under the 1 MiB limit becomes about 2.1 million characters for
// the object. wrangler dev's local SQLite stores such a row whole (the same test passes with the
// split turned off), so this shows that the split rows deliver exactly once, not the limit itself.
import { afterAll, expect, it } from 'vitest'
import { bs, createTopic, ensureCluster, readTopic, uniqueTopic } from '../helpers/kafka.js'
import { shardMetric, startWrangler, type WranglerDev } from './wrangler.js'

let dev: WranglerDev | undefined
afterAll(async () => { await dev?.stop() })

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
