// An object whose storage is in the earlier form (the checkpoint one JSON row, batches as base64, in
// the table producer_checkpoint; accepted_ids one rowid table with each id's time; the full events_state index; one events
// row per event, those handed to the producer in state 1, instead of one requests row per request) resumes
// it exactly once under the current layout (a head row and one BLOB row per batch), and still knows
// the ids it accepted. The earlier form is made from a real checkpoint: events are accepted while
// the broker is stopped (SIGSTOP), so the producer saves batches it gets no answer for; wrangler dev
// is stopped, and a Worker that binds the same object class rewrites that checkpoint as the earlier
// code stored it. Then the current Worker starts on the same storage and the broker goes on.
import { rmSync, mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { bs, contNode, createTopic, ensureCluster, readTopic, stopCluster, stopNode, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { snapshotWorkerWithEntry, startWrangler, type WranglerDev } from './wrangler.js'

const CLUSTER = 'worker-migrate'
let cluster: Cluster | undefined
let dev: WranglerDev | undefined
let stopped = false
const state = mkdtempSync(path.join(os.tmpdir(), 'kafka-edge-migrate-state-'))
afterAll(async () => {
  await dev?.stop()
  if (cluster && stopped) await contNode(cluster, cluster.nodes[0]!.id).catch(() => {})
  await stopCluster(CLUSTER)
  rmSync(state, { recursive: true, force: true })
})

/**
 * The repository's Worker with its object class replaced by one that, on POST /downgrade, writes
 * the stored checkpoint in the earlier form and drops the current tables, and whose alarm does
 * nothing (no producer may start and save over it). Same script and class names: same storage.
 */
function downgradeProject(): string {
  return snapshotWorkerWithEntry('downgrade', `
import { KafkaProducerObject, telemetryApp, type Env } from 'kafka-edge/worker'
type Sql = { exec(q: string, ...b: unknown[]): { toArray(): Array<Record<string, any>> } }
type State = { storage: { sql: Sql; transactionSync<T>(f: () => T): T } }
const base64 = (b: ArrayBuffer) => { let s = ''; for (const x of new Uint8Array(b)) s += String.fromCharCode(x); return btoa(s) }
export class ProducerObject extends KafkaProducerObject {
  private readonly state: State
  constructor(ctx: State, env: Env) { super(ctx as never, env); this.state = ctx }
  override async alarm(): Promise<void> {}
  override async fetch(req: Request): Promise<Response> {
    if (new URL(req.url).pathname !== '/downgrade') return super.fetch(req)
    const { sql } = this.state.storage
    const head = sql.exec('SELECT body, handed FROM checkpoint_head WHERE k = 0').toArray()[0]
    if (!head) return Response.json({ batches: 0 })
    const rows = sql.exec('SELECT topic, partition, base_sequence, record_count, bytes FROM checkpoint_batches ORDER BY n').toArray()
    const pending = rows.map((r) => ({ topic: r.topic, partition: r.partition, baseSequence: r.base_sequence, recordCount: r.record_count, bytes: base64(r.bytes) }))
    this.state.storage.transactionSync(() => {
      sql.exec('CREATE TABLE producer_checkpoint (k INTEGER PRIMARY KEY CHECK (k = 0), body TEXT NOT NULL)')
      sql.exec('INSERT INTO producer_checkpoint (k, body) VALUES (0, ?)', JSON.stringify({ ...JSON.parse(head.body), pending }))
      sql.exec('DROP TABLE checkpoint_head')
      sql.exec('DROP TABLE checkpoint_batches')
      // The earlier accepted_ids (one rowid table, each id with its time, an index on the time) and events index.
      sql.exec('CREATE TABLE accepted_ids_rowid (id TEXT PRIMARY KEY, at INTEGER NOT NULL)')
      sql.exec('INSERT INTO accepted_ids_rowid (id, at) SELECT id, ?1 FROM accepted_ids UNION SELECT id, ?1 FROM accepted_ids_old', Date.now())
      sql.exec('DROP TABLE accepted_ids')
      sql.exec('DROP TABLE accepted_ids_old')
      sql.exec('DROP TABLE accepted_window')
      sql.exec('ALTER TABLE accepted_ids_rowid RENAME TO accepted_ids')
      sql.exec('CREATE INDEX accepted_ids_at ON accepted_ids (at)')
      // The earlier code stored a request's events as a JSON array of records, not as lines.
      for (const r of sql.exec('SELECT seq, body FROM requests').toArray()) {
        const events = String(r.body).split('\\n').map((line) => {
          const [id, key, timestamp, type, ...value] = line.split('\\t')
          return { id: JSON.parse(id!), key: key ? JSON.parse(key) : null, value: value.join('\\t'), timestamp: Number(timestamp), type }
        })
        sql.exec('UPDATE requests SET body = ? WHERE seq = ?', JSON.stringify(events), r.seq)
      }
      // The earlier one row per event: handed to the producer (1) up to the head's mark, else waiting (0).
      sql.exec(\`INSERT INTO events (id, key, value, ts, type, state, accepted_at)
        SELECT e.value ->> 'id', e.value ->> 'key', e.value ->> 'value', e.value ->> 'timestamp', e.value ->> 'type', CASE WHEN r.seq <= ? THEN 1 ELSE 0 END, r.accepted_at
        FROM requests AS r, json_each(r.body) AS e WHERE r.done IS NULL OR e.key NOT IN (SELECT value FROM json_each(r.done)) ORDER BY r.seq, e.key\`, head.handed)
      sql.exec('DROP TABLE requests')
      sql.exec('DROP INDEX events_taken')
      sql.exec('CREATE INDEX events_state ON events (state, seq)')
    })
    return Response.json({ batches: rows.length, records: rows.reduce((n, r) => n + r.record_count, 0) })
  }
}
const app = telemetryApp()
export default {
  fetch(req: Request, env: Env & { PRODUCER: any }, ctx: unknown) {
    if (new URL(req.url).pathname === '/downgrade') return env.PRODUCER.get(env.PRODUCER.idFromName('telemetry-shard-0')).fetch('https://producer/downgrade', { method: 'POST' })
    return app.fetch(req, env, ctx as never)
  },
}
`)
}

const post = (events: object[]) => fetch(`${dev!.url}/events`, { method: 'POST', body: JSON.stringify(events), headers: { 'content-type': 'application/json' } })
const batch = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ type: 'mig', id: `mig-${from + i}`, key: `k${(from + i) % 4}` }))
const health = async () => (await fetch(`${dev!.url}/healthz`)).json() as Promise<{ backlog: number; producerId: string | null; resumed: { mode: string; batches: number; records: number } | null }>
async function until<T>(what: string, f: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await f()
    if (v !== undefined) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

it('an object with a checkpoint in the earlier one-JSON-row form resumes it: every accepted event read once', async () => {
  cluster = await ensureCluster({ name: CLUSTER })
  const topic = uniqueTopic('telemetry-migrate')
  await createTopic(cluster, topic, { partitions: 4 })
  const vars = { KAFKA_BOOTSTRAP: bs(cluster), TELEMETRY_TOPIC: topic, SHARDS: '1' }
  dev = await startWrangler(vars, { state })
  for (let r = 0; r < 5; r++) expect((await post(batch(r * 20, 20))).status).toBe(202)
  const before = await until('the first events produced', async () => { const h = await health(); return h.backlog === 0 ? h : undefined })
  expect(before.producerId).not.toBeNull()

  // The broker answers nothing: the producer checkpoints the next batches and waits for acks that do not come.
  await stopNode(cluster, cluster.nodes[0]!.id)
  stopped = true
  for (let r = 5; r < 10; r++) expect((await post(batch(r * 20, 20))).status).toBe(202)
  await new Promise((r) => setTimeout(r, 3000))
  expect((await health()).backlog).toBe(100)
  await dev.stop()

  const project = downgradeProject()
  try {
    dev = await startWrangler(vars, { project, state })
    const down = await (await fetch(`${dev.url}/downgrade`, { method: 'POST' })).json() as { batches: number; records: number }
    expect(down.batches).toBeGreaterThan(0)
    await dev.stop()
  } finally { rmSync(project, { recursive: true, force: true }) }

  await contNode(cluster, cluster.nodes[0]!.id)
  stopped = false
  dev = await startWrangler(vars, { state })
  // A new request (its alarm, if none is due) starts the producer, which loads the earlier-form checkpoint.
  expect((await post(batch(200, 1))).status).toBe(202)
  // A client's resend of requests answered before: known ids (accepted_ids came through), nothing stored.
  const resent = await post(batch(0, 20))
  expect(resent.status).toBe(202)
  expect(await resent.json()).toMatchObject({ accepted: 20 })
  expect((await post(batch(100, 20))).status).toBe(202)
  const after = await until('the backlog drained', async () => { const h = await health(); return h.backlog === 0 ? h : undefined }, 90_000)
  expect(after.producerId).toBe(before.producerId)
  expect(after.resumed?.mode).toBe('resumed')
  expect(after.resumed?.batches).toBeGreaterThan(0)
  const metrics = await (await fetch(`${dev.url}/metrics`)).text()
  expect(metrics).toMatch(/^kafka_edge_events_retried_ids_total\{shard="0"\} 40$/m)

  const records = await readTopic(cluster, topic, { expected: 201, isolation: 'read_uncommitted', timeoutMs: 60_000 })
  const ids = records.map((r) => (JSON.parse(new TextDecoder().decode(r.value!)) as { id: string }).id)
  expect(ids.length).toBe(201)
  expect(new Set(ids).size).toBe(201)
  expect(records.filter((r) => r.headers?.some((h) => h.key === 'kafka-edge.possible-duplicate'))).toEqual([])

  // The first save after the resume wrote the current layout: a second restart resumes from it.
  await dev.stop()
  dev = await startWrangler(vars, { state })
  for (let r = 0; r < 2; r++) expect((await post(batch(300 + r * 20, 20))).status).toBe(202)
  await until('the last events produced', async () => { const h = await health(); return h.backlog === 0 ? h : undefined })
  const all = await readTopic(cluster, topic, { expected: 241, isolation: 'read_uncommitted', timeoutMs: 60_000 })
  expect(new Set(all.map((r) => (JSON.parse(new TextDecoder().decode(r.value!)) as { id: string }).id)).size).toBe(241)
  expect(all.length).toBe(241)
}, 600_000)
