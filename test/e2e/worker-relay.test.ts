// The telemetry Worker through the relay (KAFKA_RELAY_URL + the KAFKA_RELAY_TOKEN secret) under
// wrangler dev: workerd's WebSocket client to the real relay, SCRAM from the relay to Kafka 4.4.
// Then the object is restarted behind another relay instance, which never issued its producer id:
// the checkpoint's ticket must get the resumed id accepted, and the Java consumer must read every
// accepted event once.
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { Bridge } from '../../src/bridge/index.js'
import { relayCluster, startRelay, token } from '../bridge/helpers.js'
import { createTopic, dumpBatches, readTopic, uniqueTopic, waitFor, type Cluster } from '../helpers/kafka.js'
import { startWrangler, type WranglerDev } from './wrangler.js'

let cluster: Cluster
let topic: string
const relays: Bridge[] = []
let dev: WranglerDev | undefined
const state = mkdtempSync(path.join(os.tmpdir(), 'kafka-edge-worker-relay-'))

beforeAll(async () => {
  cluster = await relayCluster()
  topic = uniqueTopic('worker-relay')
  await createTopic(cluster, topic, { partitions: 2 })
})

afterAll(async () => {
  await dev?.stop()
  for (const r of relays) await r.close()
  rmSync(state, { recursive: true, force: true })
})

async function worker(relay: Bridge): Promise<WranglerDev> {
  return startWrangler(
    { KAFKA_BOOTSTRAP: 'relay:443', TELEMETRY_TOPIC: topic, KAFKA_RELAY_URL: relay.url, KAFKA_COMPRESSION: 'lz4' },
    { state, secrets: { KAFKA_RELAY_TOKEN: token({ sub: 'telemetry-worker', topics: [topic] }) } },
  )
}

async function postEvents(from: number, n: number): Promise<void> {
  const events = Array.from({ length: n }, (_, i) => ({ type: 'page_view', id: `w-${from + i}`, key: `user-${(from + i) % 5}` }))
  const res = await fetch(`${dev!.url}/events`, { method: 'POST', body: JSON.stringify(events), headers: { 'content-type': 'application/json' } })
  expect(res.status, await res.clone().text()).toBe(202)
}

const count = async () => (await readTopic(cluster, topic, { isolation: 'read_uncommitted', timeoutMs: 5000 })).length

it('events go out through the relay; restarted behind another relay instance, the object resumes its producer id on the checkpoint\'s ticket', async () => {
  // Workers send no Origin header: a relay in front of them allows requests without one (the default).
  const first = await startRelay(cluster, { allowMissingOrigin: true })
  relays.push(first)
  dev = await worker(first)
  await postEvents(0, 50)
  await waitFor(async () => (await count()) >= 50, { timeoutMs: 60_000, intervalMs: 1000, what: '50 events through the first relay' })

  await dev.stop()
  dev = undefined
  await first.close()
  const second = await startRelay(cluster, { allowMissingOrigin: true })
  relays.push(second)
  dev = await worker(second)
  await postEvents(50, 50)
  await waitFor(async () => (await count()) >= 100, { timeoutMs: 90_000, intervalMs: 1000, what: '100 events after the restart behind the second relay' })
  const health = await (await fetch(`${dev.url}/healthz`)).json() as { resumed: { mode: string } | null }

  const ids = (await readTopic(cluster, topic, { isolation: 'read_uncommitted' })).map((r) => (JSON.parse(new TextDecoder().decode(r.value!)) as { id: string }).id)
  expect(ids).toHaveLength(100)
  expect(new Set(ids).size).toBe(100)
  // One producer id across the restart: the second instance took it on the ticket, not a new InitProducerId.
  const batches = await dumpBatches(cluster, topic)
  expect(new Set(batches.map((b) => String(b.producerId)))).toHaveLength(1)
  expect(second.metrics.get('kafka_edge_bridge_producer_id_tickets_total', { event: 'accepted' })).toBeGreaterThanOrEqual(1)
  expect(health.resumed?.mode).toBe('resumed')
}, 300_000)
