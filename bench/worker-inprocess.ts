// The telemetry Worker in one Node process, for counting its instructions (bench -- instructions,
// BENCH_WORKLOADS=worker): the app (telemetryApp) and its Durable Object (KafkaProducerObject) as
// wrangler bundles them, with workerd's parts replaced by what Node has:
//   - the object's SQLite storage by node:sqlite (Node 22), the same SQL engine workerd embeds,
//     statements cached by text as workerd caches them, transactionSync as a savepoint;
//   - the stub's fetch by a direct call of the object's fetch (workerd copies the Request between
//     isolates; here it crosses no boundary, so the hop's serialization is not counted);
//   - the alarm by a call of the object's alarm() once it is set to now;
//   - the producer's clock and link by the instructions suite's virtual clock and stub link.
// So the count covers the app's parsing and validation, the object's accept, its pump and the producer,
// and SQLite's own work; not workerd's request routing, its storage layer under SQLite, or the
// isolate crossing. It is a repeatable figure for changes to the Worker's code, not what Cloudflare bills.
import { DatabaseSync, type StatementSync } from 'node:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { register } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Clock } from '../src/edge/clock.js'
import type { Transport } from '../src/edge/transport/transport.js'

type SqlValue = string | number | null | ArrayBuffer

/** workerd's SqlStorage over node:sqlite: blobs in and out as ArrayBuffer, as workerd gives them. */
class NodeSqlStorage {
  private readonly statements = new Map<string, StatementSync>()
  constructor(private readonly db: DatabaseSync) {}

  exec<T>(query: string, ...bindings: SqlValue[]) {
    let st = this.statements.get(query)
    if (!st) this.statements.set(query, st = this.db.prepare(query))
    const rows = st.all(...bindings.map((b) => (b instanceof ArrayBuffer ? new Uint8Array(b) : b))) as Array<Record<string, unknown>>
    for (const r of rows) {
      for (const k in r) {
        const v = r[k]
        if (v instanceof Uint8Array) r[k] = v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength)
      }
    }
    return {
      toArray: () => rows as T[],
      one: () => {
        if (rows.length !== 1) throw new Error(`expected exactly one row, got ${rows.length}: ${query}`)
        return rows[0] as T
      },
      [Symbol.iterator]: () => (rows as T[])[Symbol.iterator](),
      rowsWritten: 0,
    }
  }
}

/** One object's state: its storage, and the alarm the harness runs when it is due. */
class NodeObjectState {
  readonly id = 'telemetry-shard-0'
  readonly storage
  alarmAt: number | null = null
  private depth = 0

  constructor(db: DatabaseSync) {
    const sql = new NodeSqlStorage(db)
    this.storage = {
      sql,
      transactionSync: <T>(fn: () => T): T => {
        const name = `t${this.depth++}`
        db.exec(`SAVEPOINT ${name}`)
        try {
          const r = fn()
          db.exec(`RELEASE ${name}`)
          return r
        } catch (e) {
          db.exec(`ROLLBACK TO ${name}`)
          db.exec(`RELEASE ${name}`)
          throw e
        } finally {
          this.depth--
        }
      },
      getAlarm: () => Promise.resolve(this.alarmAt),
      setAlarm: (at: number | Date) => { this.alarmAt = typeof at === 'number' ? at : at.getTime(); return Promise.resolve() },
      sync: () => Promise.resolve(),
    }
  }

  blockConcurrencyWhile<T>(fn: () => Promise<T>): Promise<T> { return fn() }
}

// workerd hands a module's `import x from './core.wasm'` over as a compiled WebAssembly.Module.
const WASM_HOOKS = `export async function load(url, context, next) {
  if (!url.endsWith('.wasm')) return next(url, context)
  return { format: 'module', shortCircuit: true, source: 'import { readFileSync } from "node:fs"; export default new WebAssembly.Module(readFileSync(new URL(' + JSON.stringify(url) + ')))' }
}`

export interface WorkerHarness {
  /** One POST /events; resolves with its status once the object has produced its events. */
  post(body: string): Promise<number>
  /** Events the object reported produced (acknowledged by the stub link). */
  produced(): Promise<number>
  close(): Promise<void>
}

/**
 * The app and one object (SHARDS 1, durable accept, the ids window on), producing to `topic` through
 * `transport` on `clock`. `settle` runs the clock until the object's pump and checkpoint saves are done.
 */
export async function startWorker(opts: { topic: string; transport: Transport; clock: Clock; settle: (done: () => boolean) => Promise<void> }): Promise<WorkerHarness> {
  register(`data:text/javascript,${encodeURIComponent(WASM_HOOKS)}`)
  const { telemetryApp, KafkaProducerObject } = await import('../src/edge/worker/index.js')
  const dir = mkdtempSync(join(tmpdir(), 'kafka-edge-worker-sqlite-'))
  const db = new DatabaseSync(join(dir, 'object.sqlite'))
  db.exec('PRAGMA journal_mode = WAL')
  const state = new NodeObjectState(db)
  class BenchObject extends KafkaProducerObject {
    protected override producerSettings() {
      return { ...super.producerSettings(), transport: opts.transport, clock: opts.clock, random: () => 0.5 }
    }
  }
  const env = {
    KAFKA_BOOTSTRAP: 'broker0.sim:9092', TELEMETRY_TOPIC: opts.topic,
    PRODUCER: { idFromName: (name: string) => name, get: () => ({ fetch: (input: string | Request, init?: RequestInit) => object.fetch(new Request(input, init)) }) },
  }
  const object = new BenchObject(state as never, env as never)
  const app = telemetryApp()
  const runAlarm = async () => {
    while (state.alarmAt !== null && state.alarmAt <= Date.now()) {
      state.alarmAt = null
      let done = false
      void object.alarm().finally(() => { done = true })
      await opts.settle(() => done)
    }
  }
  const metric = async (name: string) => {
    const samples = (await (await object.fetch(new Request('https://producer/metrics'))).json()) as Array<{ name: string; value: number }>
    return samples.find((m) => m.name === name)?.value ?? NaN
  }
  return {
    async post(body) {
      const res = await app.fetch(new Request('https://worker/events', { method: 'POST', body, headers: { 'content-type': 'application/json', 'content-length': String(body.length) } }), env, {} as never)
      await res.arrayBuffer()
      await runAlarm()
      return res.status
    },
    produced: () => metric('kafka_edge_events_produced_total'),
    async close() {
      db.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
