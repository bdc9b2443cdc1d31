// The exactly-once harness for the telemetry Worker in durable mode (shared by
// test/e2e/worker-exactly-once.test.ts at 10,000 events and bench/worker.ts at 100,000):
// `clients` concurrent HTTP clients post keyed events to `wrangler dev` with SHARDS objects; while
// they arrive the harness restarts the wrangler dev process (the objects lose memory, connections
// and their alarm's work in progress) and kills a broker (restarting it later). A client resends a
// request until it gets 202, with the same event ids. Then the Java consumer, with no dedupe, must
// read every accepted event exactly once, each key's events in the order they were sent.
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { POSSIBLE_DUPLICATE_HEADER } from '../../src/edge/index.js'
import { bs, createTopic, killNode, leaders, readTopic, restartNode, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { freePort, startWrangler, type WranglerDev } from './wrangler.js'

/** restartAt and killBrokerAt are shares of the events accepted. */
export interface LoadOptions extends FaultPlan {
  events: number
  clients: number
  perRequest: number
  shards: number
  partitions: number
  log?: (msg: string) => void
}

export interface LoadResult {
  topic: string
  accepted: number
  read: number
  /** Accepted ids read more than once / not at all, ids read that no 202 named (their answer was lost). */
  duplicates: string[]
  missing: string[]
  unconfirmed: number
  outOfOrderKeys: string[]
  labelled: number
  postSeconds: number
  drainSeconds: number
  requests: number
  retries: Record<string, number>
  /** Per request (ms): time to 202, p50 and p99. */
  acceptP50Ms: number
  acceptP99Ms: number
  faults: string[]
  /** Per shard after the run: what its producer did with the checkpoint it found at start. */
  resumed: Array<{ mode: string; batches: number; records: number } | null>
  /** Per shard, whether its producer had a producer id when wrangler dev was restarted (it had started sending). */
  hadProducerAtRestart: boolean[]
}

const dec = new TextDecoder()
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))]! : 0
}

export async function runWorkerLoad(cluster: Cluster, o: LoadOptions): Promise<LoadResult> {
  const log = o.log ?? (() => {})
  const topic = uniqueTopic('telemetry-eo')
  await createTopic(cluster, topic, { partitions: o.partitions, minIsr: Math.min(2, cluster.nodes.length) })
  const state = mkdtempSync(path.join(os.tmpdir(), 'kafka-edge-eo-state-'))
  const port = await freePort()
  const vars = { KAFKA_BOOTSTRAP: bs(cluster), TELEMETRY_TOPIC: topic, SHARDS: String(o.shards), MAX_EVENTS: String(Math.max(1000, o.perRequest)) }
  let dev: WranglerDev | null = await startWrangler(vars, { port, state })
  const url = dev.url
  const accepted = new Set<string>()
  const attempted = new Set<string>()
  const retries: Record<string, number> = {}
  const latencies: number[] = []
  let requests = 0
  const perClient = Math.ceil(o.events / o.clients)
  const keysPerClient = 5
  const t0 = Date.now()

  const client = async (c: number) => {
    const seq = new Array<number>(keysPerClient).fill(0)
    for (let n = 0; n < perClient; n += o.perRequest) {
      const events = []
      for (let i = n; i < Math.min(n + o.perRequest, perClient); i++) {
        const k = i % keysPerClient
        events.push({ type: 'load', id: `c${c}-${i}`, key: `c${c}-k${k}`, data: { seq: seq[k]!++ } })
      }
      for (const e of events) attempted.add(e.id)
      const body = JSON.stringify(events)
      for (;;) {
        const started = Date.now()
        let status = 0
        let retryAfter = 0
        try {
          requests++
          const res = await fetch(`${url}/events`, { method: 'POST', body, headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(30_000) })
          status = res.status
          retryAfter = Number(res.headers.get('retry-after') ?? 0)
          await res.arrayBuffer()
        } catch (e) {
          retries[(e as Error).name] = (retries[(e as Error).name] ?? 0) + 1
        }
        if (status === 202) {
          latencies.push(Date.now() - started)
          for (const e of events) accepted.add(e.id)
          break
        }
        if (status) retries[String(status)] = (retries[String(status)] ?? 0) + 1
        await sleep(retryAfter > 0 ? retryAfter * 1000 : 250)
      }
    }
  }

  const hadProducerAtRestart: boolean[] = []
  const faultRun = scheduleFaults(cluster, topic, o, () => accepted.size / o.events, async () => {
    const before = await (await fetch(`${url}/healthz`)).json() as { shards: Array<{ producerId: string | null }> }
    hadProducerAtRestart.push(...before.shards.map((x) => x.producerId !== null))
    await dev!.stop()
    dev = null
    dev = await startWrangler(vars, { port, state })
  }, () => `${accepted.size} accepted`, log)
  const { faults } = faultRun

  try {
    await Promise.all([...Array.from({ length: o.clients }, (_, c) => client(c)), faultRun.done])
    const postSeconds = (Date.now() - t0) / 1000
    log(`${accepted.size} events accepted in ${postSeconds.toFixed(1)} s; waiting for the backlog to drain`)
    const drainSeconds = await drainBacklog(url)
    // The cluster is whole again before it is read (and before a caller stops it).
    await faultRun.brokerBack()
    const health = await (await fetch(`${url}/healthz`)).json() as { shards: Array<{ resumed: LoadResult['resumed'][number] }> }
    const records = await readTopic(cluster, topic, { expected: accepted.size, isolation: 'read_uncommitted', timeoutMs: 120_000 })
    const seen = new Map<string, number>()
    const lastSeq = new Map<string, number>()
    const outOfOrder = new Set<string>()
    let labelled = 0
    for (const r of records) {
      const v = JSON.parse(dec.decode(r.value!)) as { id: string; data: { seq: number } }
      seen.set(v.id, (seen.get(v.id) ?? 0) + 1)
      if (r.headers.some((h) => h.key === POSSIBLE_DUPLICATE_HEADER)) labelled++
      const key = dec.decode(r.key!)
      if ((lastSeq.get(key) ?? -1) >= v.data.seq) outOfOrder.add(key)
      lastSeq.set(key, v.data.seq)
    }
    return {
      topic, accepted: accepted.size, read: records.length,
      duplicates: [...seen].filter(([, n]) => n > 1).map(([id]) => id),
      missing: [...accepted].filter((id) => !seen.has(id)),
      unconfirmed: [...seen.keys()].filter((id) => !accepted.has(id) && attempted.has(id)).length,
      outOfOrderKeys: [...outOfOrder], labelled, postSeconds, drainSeconds, requests, retries,
      acceptP50Ms: percentile(latencies, 0.5), acceptP99Ms: percentile(latencies, 0.99), faults, resumed: health.shards.map((s) => s.resumed), hadProducerAtRestart,
    }
  } finally {
    await dev?.stop()
    rmSync(state, { recursive: true, force: true })
  }
}

export interface FaultPlan {
  /** Restart wrangler dev once progress() reaches this share (0..1); none when undefined. */
  restartAt?: number
  /** Kill the leader of partition 0 of the topic at this share, restart it `brokerDownMs` later. */
  killBrokerAt?: number
  brokerDownMs?: number
}

/**
 * The faults of a load run, driven by its progress (0..1): a wrangler dev restart (`restart`, which
 * the caller does since it owns the process) and a kill -9 of partition 0's leader. `done` resolves
 * once both have been started; `brokerBack()` once the broker is up again.
 */
export function scheduleFaults(cluster: Cluster, topic: string, plan: FaultPlan, progress: () => number, restart: () => Promise<void>,
  where: () => string, log: (msg: string) => void = () => {}): { faults: string[]; done: Promise<void>; brokerBack: () => Promise<void> } {
  const faults: string[] = []
  let back: Promise<void> = Promise.resolve()
  // Each fault watches the progress on its own: a restart still under way does not hold back a kill
  // planned for later (one loop for both put a kill planned at 60% at 90% behind a slow restart).
  const at = async (share: number | undefined, fault: () => Promise<void>) => {
    if (share === undefined) return
    while (progress() < share) await sleep(50)
    await fault()
  }
  const done = Promise.all([
    at(plan.restartAt, async () => {
      faults.push(`wrangler dev restarted at ${where()}`)
      log(faults.at(-1)!)
      await restart()
    }),
    at(plan.killBrokerAt, async () => {
      const leader = (await leaders(cluster, topic))[0]!
      faults.push(`broker ${leader} killed at ${where()}`)
      log(faults.at(-1)!)
      await killNode(cluster, leader)
      back = sleep(plan.brokerDownMs ?? 5000).then(async () => {
        await restartNode(cluster, leader)
        faults.push(`broker ${leader} restarted`)
        log(faults.at(-1)!)
      })
    }),
  ]).then(() => {})
  return { faults, done, brokerBack: () => back }
}

/** Waits until every shard's backlog is empty (10 minutes at most); the seconds it took. */
export async function drainBacklog(url: string): Promise<number> {
  const start = Date.now()
  for (;;) {
    const h = await (await fetch(`${url}/healthz`)).json() as { shards: Array<{ backlog: number }> }
    if (h.shards.every((s) => s.backlog === 0)) return (Date.now() - start) / 1000
    if (Date.now() - start > 600_000) throw new Error(`backlog not drained after 10 minutes: ${JSON.stringify(h)}`)
    await sleep(500)
  }
}
