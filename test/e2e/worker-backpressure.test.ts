// Durable accept when Kafka is out of reach, under wrangler dev: events are stored and answered 202,
// a client's resend of the same ids adds nothing, a full backlog answers 429 with Retry-After (an
// OTLP export too, with its google.rpc.Status), and
// /metrics shows the backlog and the age of its oldest event. Then Kafka comes back (a broker
// started on the port the Worker was given) and the backlog drains into the topic exactly once.
import { afterAll, expect, it } from 'vitest'
import { createTopic, ensureCluster, readTopic, stopCluster, uniqueTopic } from '../helpers/kafka.js'
import { shardMetric, startWrangler, type WranglerDev } from './wrangler.js'
import * as harness from '../../scripts/kafka/kafka.mjs'

let dev: WranglerDev | undefined
afterAll(async () => { await dev?.stop() })

const post = (events: object[]) => fetch(`${dev!.url}/events`, { method: 'POST', body: JSON.stringify(events), headers: { 'content-type': 'application/json' } })

it('stores while Kafka is away, refuses past MAX_BACKLOG with 429 + Retry-After, ignores resent ids, and drains once Kafka is back', async () => {
  // A cluster on a fixed port block that is not started yet: the Worker points at where it will be.
  const name = 'worker-late'
  await stopCluster(name).catch(() => {})
  // Below Linux's ephemeral range (32768-60999): while the cluster is not up, a client's outgoing
  // connection could otherwise take one of its ports as its local port (a CI run lost the block's
  // controller port that way), and the late start would fail.
  const basePort = 22_100 + (process.pid % 40) * 100
  const topic = uniqueTopic('telemetry-bp')
  dev = await startWrangler({ KAFKA_BOOTSTRAP: `127.0.0.1:${basePort}`, TELEMETRY_TOPIC: topic, MAX_BACKLOG: '50' })
  const batch = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ type: 'bp', id: `bp-${from + i}`, key: `k${(from + i) % 3}` }))

  expect((await post(batch(0, 30))).status).toBe(202)
  const again = await post(batch(0, 30))
  expect(again.status).toBe(202)
  const full = await post(batch(30, 30))
  expect(full.status).toBe(429)
  const retryAfter = Number(full.headers.get('retry-after'))
  expect(retryAfter).toBeGreaterThanOrEqual(1)
  expect(retryAfter).toBeLessThanOrEqual(60)
  expect(((await full.json()) as { error: string }).error).toMatch(/backlog full: 30 events wait/)
  expect((await post(batch(30, 20))).status).toBe(202)

  await new Promise((r) => setTimeout(r, 1500))
  const text = await (await fetch(`${dev.url}/metrics`)).text()
  expect(shardMetric(text, 'kafka_edge_backlog_events')).toBe(50)
  expect(shardMetric(text, 'kafka_edge_oldest_event_age_seconds')).toBeGreaterThan(1)
  expect(shardMetric(text, 'kafka_edge_events_rejected_total')).toBe(30)
  expect(shardMetric(text, 'kafka_edge_events_retried_ids_total')).toBe(30)
  expect(shardMetric(text, 'kafka_edge_events_produced_total')).toBe(0)

  // An OTLP export into the same full backlog: 429 with Retry-After and a google.rpc.Status
  // (RESOURCE_EXHAUSTED), as OTLP/HTTP exporters expect before they retry; nothing is stored.
  const logs = { resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'over the backlog' } }] }] }] }
  const otlp = await fetch(`${dev.url}/v1/logs`, { method: 'POST', body: JSON.stringify(logs), headers: { 'content-type': 'application/json' } })
  expect(otlp.status).toBe(429)
  expect(Number(otlp.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  expect(await otlp.json()).toMatchObject({ code: 8, message: expect.stringMatching(/backlog full: 50 records/) })
  expect(shardMetric(await (await fetch(`${dev.url}/metrics`)).text(), 'kafka_edge_backlog_events')).toBe(50)

  const cluster = await harness.up({ name, basePort, owner: process.env.KAFKA_EDGE_RUN_ID })
  try {
    await createTopic(await ensureCluster({ name }), topic, { partitions: 3 })
    const records = await readTopic(cluster, topic, { expected: 50, isolation: 'read_uncommitted', timeoutMs: 90_000 })
    const ids = records.map((r) => (JSON.parse(new TextDecoder().decode(r.value!)) as { id: string }).id)
    expect(ids.length).toBe(50)
    expect(new Set(ids).size).toBe(50)
    for (let k = 0; k < 3; k++) {
      const ofKey = records.filter((r) => new TextDecoder().decode(r.key!) === `k${k}`).map((r) => Number((JSON.parse(new TextDecoder().decode(r.value!)) as { id: string }).id.slice(3)))
      expect(ofKey).toEqual([...ofKey].sort((a, b) => a - b))
    }
    for (;;) {
      const h = await (await fetch(`${dev.url}/healthz`)).json() as { backlog: number }
      if (h.backlog === 0) break
      await new Promise((r) => setTimeout(r, 300))
    }
  } finally {
    await stopCluster(name)
  }
}, 300_000)
