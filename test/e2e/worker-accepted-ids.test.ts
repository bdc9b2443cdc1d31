// How long the telemetry Worker remembers accepted event ids, under wrangler dev (no broker: the
// accept is durable, and what is asserted is what the object stored and counted). Ids live in two
// generations of one window each (ACCEPTED_IDS_WINDOW_SECONDS): a resend within a window of its
// accept is answered and not stored again, also across one rotation; after two rotations the id is
// forgotten and the same event counts as new. An app of the earlier code, which posts the events
// without the ids line in front, is still accepted and deduplicated the same way.
import { rmSync } from 'node:fs'
import { afterAll, expect, it } from 'vitest'
import { shardMetric, snapshotWorkerWithEntry, startWrangler, type WranglerDev } from './wrangler.js'

let dev: WranglerDev | undefined
let project: string | undefined
afterAll(async () => {
  await dev?.stop()
  if (project) rmSync(project, { recursive: true, force: true })
})

const WINDOW_S = 3

/** The repository's Worker plus POST /earlier, which hands the body to shard 0 as the earlier app did: the events alone. */
function projectWithEarlierApp(): string {
  return snapshotWorkerWithEntry('earlier', `
import { KafkaProducerObject, telemetryApp, type Env } from 'kafka-edge/worker'
export class ProducerObject extends KafkaProducerObject {}
const app = telemetryApp()
export default {
  async fetch(req: Request, env: Env & { PRODUCER: any }, ctx: unknown) {
    if (new URL(req.url).pathname !== '/earlier') return app.fetch(req, env, ctx as never)
    const events = (await req.json() as Array<{ id: string; key: string; type: string }>).map((e) => ({ ...e, value: JSON.stringify(e), timestamp: Date.now() }))
    return env.PRODUCER.get(env.PRODUCER.idFromName('telemetry-shard-0')).fetch('https://producer/accept', { method: 'POST', body: JSON.stringify(events), headers: { 'content-type': 'application/json' } })
  },
}
`)
}

const post = (events: object[], route = '/events') => fetch(`${dev!.url}${route}`, { method: 'POST', body: JSON.stringify(events), headers: { 'content-type': 'application/json' } })
const batch = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ type: 'ids', id: `ids-${from + i}`, key: `k${(from + i) % 3}` }))
const counters = async () => {
  const text = await (await fetch(`${dev!.url}/metrics`)).text()
  const read = (name: string) => Number(new RegExp(`^${name}\\{shard="0"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN)
  return { accepted: read('kafka_edge_events_accepted_total'), retried: read('kafka_edge_events_retried_ids_total') }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

it('a resend is matched for one to two windows of its accept, then the id is new again; the earlier body form is accepted and deduplicated', async () => {
  project = projectWithEarlierApp()
  dev = await startWrangler({ KAFKA_BOOTSTRAP: '127.0.0.1:1', TELEMETRY_TOPIC: 'ids', SHARDS: '1', ACCEPTED_IDS_WINDOW_SECONDS: String(WINDOW_S) }, { project })

  expect((await post(batch(0, 10))).status).toBe(202)
  expect(await counters()).toEqual({ accepted: 10, retried: 0 })
  // The same request again (its answer lost), and one that overlaps it by half.
  expect(await (await post(batch(0, 10))).json()).toMatchObject({ accepted: 10 })
  expect((await post(batch(5, 10))).status).toBe(202)
  expect(await counters()).toEqual({ accepted: 15, retried: 15 })

  // One window later the next accept rotates: ids 0-14 are the older generation, still known.
  await sleep(WINDOW_S * 1000 + 300)
  expect((await post(batch(100, 1))).status).toBe(202)
  expect((await post(batch(0, 15))).status).toBe(202)
  expect(await counters()).toEqual({ accepted: 16, retried: 30 })

  // The earlier app's body: new ids stored, known ones (either generation) not.
  expect((await post([...batch(100, 1), ...batch(200, 4)], '/earlier')).status).toBe(202)
  expect(await counters()).toEqual({ accepted: 20, retried: 31 })

  // A second rotation drops the generation that held ids 0-14: they count as new events again.
  await sleep(WINDOW_S * 1000 + 300)
  expect((await post(batch(0, 15))).status).toBe(202)
  expect(await counters()).toEqual({ accepted: 35, retried: 31 })
  // ...and ids 100 and 200-203, accepted in the generation now older, are still known.
  expect((await post([...batch(100, 1), ...batch(200, 4)])).status).toBe(202)
  expect(await counters()).toEqual({ accepted: 35, retried: 36 })
}, 180_000)

it('ACCEPTED_IDS_WINDOW_SECONDS=0 remembers no ids: a resend is stored again, and no row is written per event', async () => {
  await dev?.stop()
  dev = await startWrangler({ KAFKA_BOOTSTRAP: '127.0.0.1:1', TELEMETRY_TOPIC: 'ids', SHARDS: '1', ACCEPTED_IDS_WINDOW_SECONDS: '0' })
  const rowsWritten = async () => shardMetric(await (await fetch(`${dev!.url}/metrics`)).text(), 'kafka_edge_sqlite_rows_written_total')
  const before = await rowsWritten()
  expect((await post(batch(0, 50))).status).toBe(202)
  expect((await post(batch(0, 50))).status).toBe(202)
  // Both copies are stored (the consumer dedupes on the id); the ids cost no rows of their own.
  expect(await counters()).toEqual({ accepted: 100, retried: 0 })
  const written = (await rowsWritten()) - before
  expect(written).toBeGreaterThanOrEqual(2)
  expect(written).toBeLessThan(50)
}, 120_000)

it('ids the app generated (events sent without one) cost no row each; in a request that mixes both, the given ids are still matched', async () => {
  await dev?.stop()
  dev = await startWrangler({ KAFKA_BOOTSTRAP: '127.0.0.1:1', TELEMETRY_TOPIC: 'ids', SHARDS: '1' })
  const rowsWritten = async () => shardMetric(await (await fetch(`${dev!.url}/metrics`)).text(), 'kafka_edge_sqlite_rows_written_total')
  const unnamed = (n: number) => Array.from({ length: n }, (_, i) => ({ type: 'ids', key: `k${i % 3}` }))
  const before = await rowsWritten()
  const res = await post(unnamed(50))
  expect(res.status).toBe(202)
  const answer = await res.json() as { accepted: number; ids: string[] }
  expect(answer.accepted).toBe(50)
  expect(new Set(answer.ids).size).toBe(50)
  // The request's row and a few of the object's own; not one row per event.
  const written = (await rowsWritten()) - before
  expect(written).toBeGreaterThanOrEqual(1)
  expect(written).toBeLessThan(50)
  expect(await counters()).toEqual({ accepted: 50, retried: 0 })

  // Given ids first, generated ones after them in the request: the answer lists the ids in the
  // events' order, and a resend matches the given ones (the others are new events each time).
  const mixed = [...unnamed(3), ...batch(300, 4), ...unnamed(2)]
  const first = await (await post(mixed)).json() as { accepted: number; ids: string[] }
  expect(first.ids.slice(3, 7)).toEqual(['ids-300', 'ids-301', 'ids-302', 'ids-303'])
  expect(first.ids).toHaveLength(9)
  expect(await counters()).toEqual({ accepted: 59, retried: 0 })
  expect((await post(mixed)).status).toBe(202)
  expect(await counters()).toEqual({ accepted: 64, retried: 4 })
}, 120_000)

it('an ids window it cannot read (ACCEPTED_IDS_WINDOW_SECONDS=1h) is a 500 that names the var, and nothing is stored', async () => {
  await dev?.stop()
  dev = await startWrangler({ KAFKA_BOOTSTRAP: '127.0.0.1:1', TELEMETRY_TOPIC: 'ids', SHARDS: '1', ACCEPTED_IDS_WINDOW_SECONDS: '1h' })
  const res = await post(batch(0, 5))
  expect(res.status).toBe(500)
  expect(await res.json()).toMatchObject({ error: 'ConfigException', message: expect.stringContaining('ACCEPTED_IDS_WINDOW_SECONDS="1h" is not a whole number') })
  expect((await counters()).accepted).toBe(0)
}, 120_000)

it('events whose topic is not set are refused before they are stored (500 naming TELEMETRY_TOPIC), not accepted for good', async () => {
  await dev?.stop()
  dev = await startWrangler({ KAFKA_BOOTSTRAP: '127.0.0.1:1', TELEMETRY_TOPIC: '', SHARDS: '1' })
  const res = await post(batch(0, 5))
  expect(res.status).toBe(500)
  expect(await res.json()).toMatchObject({ error: 'ConfigException', message: expect.stringContaining('TELEMETRY_TOPIC is not set') })
  expect((await counters()).accepted).toBe(0)
}, 120_000)
