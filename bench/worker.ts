// npm run bench -- worker [--events N] [--requests N] [--skip-load]
//
// The telemetry Worker under `wrangler dev` (real workerd) against real Kafka 4.4:
//   1. the exactly-once harness at full size (test/e2e/worker-load.ts): 100,000 events from 50
//      clients over 4 shards, the wrangler dev process restarted and a broker killed meanwhile;
//   2. per request, sequential 100-event (and 1-event) POSTs: time to the answer (p50/p99) and workerd CPU per
//      request (utime+stime of the workerd processes, from /proc, over all requests until the backlog
//      drained, so the object's produce work is included), for kafka-edge durable, kafka-edge sync,
//      and a Worker using kafkajs under nodejs_compat (connect, send, disconnect per request: a Worker
//      cannot keep a socket across requests without a Durable Object);
//      the 100-event POSTs are then run again under the V8 profiler, through wrangler dev's inspector
//      (bench/inspector.ts): the isolate's busy time per POST and its top frames, for kafka-edge
//      durable (Worker and Durable Object share the isolate) and for kafkajs;
//   3. events/s of one shard: 20,000 events posted by 20 clients to SHARDS=1, first POST to empty backlog.
//   Durable mode is also paced at 25 POSTs/s (the object drains between requests): workerd CPU and
//   checkpoint saves per POST.
// BENCH_WORKER_QUICK=1: only the 100-event POSTs of kafka-edge durable (also paced) and kafkajs, profiled
// (bench/results/worker-quick.json; about a minute).
// BENCH_WORKER_IDS_WINDOW=<seconds>: the objects' ACCEPTED_IDS_WINDOW_SECONDS in the per-request runs
//   (0: no ids remembered, so a resend is stored again and no row is written per event); in the results' config.
// BENCH_WORKER_EVENT_IDS=round|uuid|none: the per-request runs' event ids (bench/lib.ts eventsBody): ids
//   that sort together (default), random UUIDs, or none (the app names the events)
// BENCH_WORKER_COMPRESSION=<codec>, BENCH_WORKER_LINGER_MS=<ms>: the objects' KAFKA_COMPRESSION and KAFKA_LINGER_MS
//   in the per-request runs (unset: the Worker's defaults, none and 20 in durable mode); in the results' config.
// @platformatic/kafka is tried under nodejs_compat too; it fails at module load (recorded below).
import { mkdirSync, symlinkSync, writeFileSync, existsSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { bs, createTopic, ensureCluster, readTopic, stopCluster, uniqueTopic, type Cluster } from '../test/helpers/kafka.js'
import { runWorkerLoad, type LoadResult } from '../test/e2e/worker-load.js'
import { startWrangler, type WranglerDev } from '../test/e2e/wrangler.js'
import { ensurePeers, PEERS_DIR, ROOT } from './peers.js'
import { WORKER_EVENT_IDS, eventsBody, printTable, report, workerdCpu, workerdCpuMs, writeReport, type BenchResult } from './lib.js'
import { Inspector, summarize, type IsolateProfile } from './inspector.js'
import { telemetryApp } from '../src/edge/worker/app.js'
import { decodeRecords, encodeRecords, parseTelemetry } from '../src/edge/worker/validate.js'
import type { DurableObjectNamespace, Env } from '../src/edge/worker/env.js'

/**
 * The app's own share of a 100-event POST (what the Worker isolate does: routing, reading and
 * validating the body, the fan-out to the objects), in V8 under Node with the objects answering
 * 202 at once: a lower bound for the Worker's CPU that workerd's process-wide figure cannot separate.
 */
async function handlerCpu(requests: number): Promise<number> {
  const ns: DurableObjectNamespace = {
    idFromName: (n) => n,
    get: () => ({ fetch: async () => new Response('{"accepted":100,"ids":[]}', { status: 202 }) }),
  }
  const app = telemetryApp({ shards: 4 })
  const env = { PRODUCER: ns, KAFKA_BOOTSTRAP: 'b:1', TELEMETRY_TOPIC: 't' } as Env
  const body = (r: number) => JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ type: 'bench', id: `h-${r}-${i}`, key: `user-${i % 20}`, data: { r, i, path: '/some/page' } })))
  const post = (r: number) => app.request('/events', { method: 'POST', body: body(r), headers: { 'content-type': 'application/json' } }, env)
  for (let r = 0; r < 200; r++) await (await post(r)).arrayBuffer()
  const c0 = process.cpuUsage()
  for (let r = 0; r < requests; r++) await (await post(r)).arrayBuffer()
  const c = process.cpuUsage(c0)
  return (c.user + c.system) / 1000 / requests
}

/**
 * What the hop from the app to its object costs the events of one 100-event request, in V8 under
 * Node: the app's encode plus the object's decode, in the stored line form (validate.ts
 * encodeRecords / decodeRecords) and in the JSON array of records it replaced. µs per request, and
 * the stored text's length.
 */
function storedFormCpu(rounds: number): Record<'lines' | 'json', { us: number; chars: number }> {
  const records = parseTelemetry(JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ type: 'bench', id: `kafka-edge-durable-100-7-${i}`, key: `user-${i % 20}`, data: { r: 7, i, path: '/some/page' } }))))
  const forms = { lines: () => decodeRecords(encodeRecords(records)).length, json: () => (JSON.parse(JSON.stringify(records)) as unknown[]).length }
  const out = {} as Record<'lines' | 'json', { us: number; chars: number }>
  for (const pass of [0, 1]) {
    for (const [name, f] of Object.entries(forms) as Array<['lines' | 'json', () => number]>) {
      let n = 0
      for (let i = 0; i < rounds / 4; i++) n += f()
      const c0 = process.cpuUsage()
      for (let i = 0; i < rounds; i++) n += f()
      const c = process.cpuUsage(c0)
      if (n !== 125 * rounds) throw new Error(`stored form ${name} lost records`)
      if (pass === 1) out[name] = { us: (c.user + c.system) / rounds, chars: name === 'lines' ? encodeRecords(records).length : JSON.stringify(records).length }
    }
  }
  return out
}

const arg = (args: string[], name: string, d: number) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 ? Number(args[i + 1]) : d
}

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? 0

interface PerRequest {
  impl: string; requests: number; p50Ms: number; p99Ms: number; cpuMsPerRequest: number
  /** workerd's process CPU per request, split (bench/lib.ts workerdCpu). */
  cpu: { proxy: number; main: number; otherThreads: number }
  /** kafka-edge's durable mode: SQLite transactions that saved the producer's checkpoint, per request. */
  checkpointSavesPerRequest?: number
  /** kafka-edge: rows SQLite wrote per request (Cloudflare bills a SQLite-backed object per row written). */
  rowsWrittenPerRequest?: number
  /** A second pass of as many requests under the V8 profiler: the isolate's figures, and workerd's CPU meanwhile (the profiler costs some). */
  isolate?: IsolateProfile & { workerdCpuMsPerRequest: number; profile: string }
}

/** `paceMs`: each POST starts that long after the previous one started (0: right after its answer). */
async function perRequest(
  impl: string, dev: WranglerDev, path: string, requests: number, drained: () => Promise<boolean>, events = 100, profile = false, paceMs = 0,
): Promise<PerRequest> {
  const body = (r: number) => eventsBody(r, events, WORKER_EVENT_IDS, `${impl}-${events}`)
  const post = (r: number) => fetch(`${dev.url}${path}`, { method: 'POST', body: body(r), headers: { 'content-type': 'application/json' } })
  const ok = (status: number) => status === 202 || status === 200 || (path === '/no-such-route' && status === 404)
  for (let r = 0; r < 20; r++) { const res = await post(-1 - r); await res.arrayBuffer(); if (!ok(res.status)) throw new Error(`${impl}: ${res.status}`) }
  while (!(await drained())) await new Promise((r) => setTimeout(r, 200))
  const run = async (from: number) => {
    const times: number[] = []
    for (let r = from; r < from + requests; r++) {
      const t0 = performance.now()
      const res = await post(r)
      const text = await res.text()
      if (!ok(res.status)) throw new Error(`${impl}: ${res.status} ${text.slice(0, 300)}`)
      times.push(performance.now() - t0)
      if (paceMs > 0) await new Promise((r) => setTimeout(r, Math.max(0, t0 + paceMs - performance.now())))
    }
    while (!(await drained())) await new Promise((r) => setTimeout(r, 100))
    // The save that drops the last acknowledged batches may come after the backlog reads empty
    // (it waits up to 50 ms to join the next batch's): it belongs to these requests.
    await new Promise((r) => setTimeout(r, 150))
    return times
  }
  const counters0 = await shardCounters(dev)
  const cpu0 = workerdCpu(dev.pgid)
  const times = await run(0)
  const cpu1 = workerdCpu(dev.pgid)
  const counters1 = await shardCounters(dev)
  const perPost = (name: string) => counters0?.has(name) && counters1?.has(name) ? (counters1.get(name)! - counters0.get(name)!) / requests : undefined
  const saves = perPost('kafka_edge_checkpoint_saves_total')
  const rows = perPost('kafka_edge_sqlite_rows_written_total')
  const per = (k: keyof typeof cpu0) => (cpu1[k] - cpu0[k]) / requests
  const result: PerRequest = {
    impl, requests, p50Ms: percentile(times, 0.5), p99Ms: percentile(times, 0.99), cpuMsPerRequest: per('total'),
    cpu: { proxy: per('proxy'), main: per('main'), otherThreads: per('otherThreads') },
    ...(saves === undefined ? {} : { checkpointSavesPerRequest: saves }),
    ...(rows === undefined ? {} : { rowsWrittenPerRequest: rows }),
  }
  if (profile) {
    const inspector = await Inspector.connect(dev.inspectorPort)
    try {
      const c0 = workerdCpuMs(dev.pgid)
      const p = await inspector.profile(async () => { await run(requests) }, PROFILE_INTERVAL_US)
      const cpu = (workerdCpuMs(dev.pgid) - c0) / requests
      const file = join(ROOT, '.tmp', `bench-worker-${impl}.cpuprofile`)
      mkdirSync(join(ROOT, '.tmp'), { recursive: true })
      writeFileSync(file, JSON.stringify(p))
      result.isolate = { ...summarize(p, requests), workerdCpuMsPerRequest: cpu, profile: file }
    } finally { inspector.close() }
  }
  return result
}

/** The shards' counters summed by name, from the app's /metrics (null where the Worker has none). */
async function shardCounters(dev: WranglerDev): Promise<Map<string, number> | null> {
  const res = await fetch(`${dev.url}/metrics`)
  const text = await res.text()
  if (!res.ok) return null
  const sums = new Map<string, number>()
  for (const line of text.split('\n')) {
    const m = /^(kafka_edge_\w+_total)\{.* (\S+)$/.exec(line)
    if (m) sums.set(m[1]!, (sums.get(m[1]!) ?? 0) + Number(m[2]))
  }
  return sums
}

const idsWindow: Record<string, string> = process.env.BENCH_WORKER_IDS_WINDOW === undefined ? {} : { ACCEPTED_IDS_WINDOW_SECONDS: process.env.BENCH_WORKER_IDS_WINDOW }
/** The objects' vars the per-request runs set beyond the defaults, also written into the results' config. */
const objectVars: Record<string, string> = { ...idsWindow }
for (const [bench, worker] of [['BENCH_WORKER_COMPRESSION', 'KAFKA_COMPRESSION'], ['BENCH_WORKER_LINGER_MS', 'KAFKA_LINGER_MS']] as const) {
  const v = process.env[bench]
  if (v) objectVars[worker] = v
}

/** The V8 sampler's requested interval (µs) for the isolate profiles. */
const PROFILE_INTERVAL_US = 100

/** A 100-event POST's figures as results: process CPU (total and split), time to answer, the isolate's profile. */
function perRequestResults(r: PerRequest): BenchResult[] {
  const out: BenchResult[] = [
    { impl: r.impl, metric: 'workerd CPU per 100-event POST', unit: 'ms', value: r.cpuMsPerRequest },
    { impl: r.impl, metric: 'workerd CPU per 100-event POST: dev proxy process', unit: 'ms', value: r.cpu.proxy },
    { impl: r.impl, metric: 'workerd CPU per 100-event POST: Worker process, main thread', unit: 'ms', value: r.cpu.main },
    { impl: r.impl, metric: 'workerd CPU per 100-event POST: Worker process, V8 threads', unit: 'ms', value: r.cpu.otherThreads },
    { impl: r.impl, metric: 'time to answer p50', unit: 'ms', value: r.p50Ms },
    { impl: r.impl, metric: 'time to answer p99', unit: 'ms', value: r.p99Ms },
  ]
  if (r.checkpointSavesPerRequest !== undefined) out.push({ impl: r.impl, metric: 'checkpoint saves per 100-event POST', unit: 'saves', value: r.checkpointSavesPerRequest })
  if (r.rowsWrittenPerRequest !== undefined) out.push({ impl: r.impl, metric: 'SQLite rows written per 100-event POST', unit: 'rows', value: r.rowsWrittenPerRequest })
  if (r.isolate) {
    const i = r.isolate
    out.push(
      { impl: r.impl, metric: 'isolate CPU per 100-event POST (profile, non-idle; upper bound)', unit: 'ms', value: i.nonIdleMs },
      { impl: r.impl, metric: 'isolate CPU per 100-event POST: JavaScript on the stack', unit: 'ms', value: i.jsMs },
      { impl: r.impl, metric: 'isolate CPU per 100-event POST: (program)', unit: 'ms', value: i.programMs },
      { impl: r.impl, metric: 'isolate CPU per 100-event POST: (garbage collector)', unit: 'ms', value: i.gcMs },
      { impl: r.impl, metric: 'workerd CPU per 100-event POST while profiled', unit: 'ms', value: i.workerdCpuMsPerRequest },
    )
    // The app's handlers are named (src/edge/worker/app.ts); a peer's Worker has none of them.
    if (i.appMs > 0) {
      out.push(
        { impl: r.impl, metric: 'isolate CPU per 100-event POST: the app Worker (billed as CPU time)', unit: 'ms', value: i.appMs },
        { impl: r.impl, metric: 'isolate CPU per 100-event POST: JavaScript outside the app (the Durable Object, billed by duration)', unit: 'ms', value: i.jsMs - i.appMs },
      )
    }
  }
  return out
}

const printIsolate = (r: PerRequest) => {
  if (!r.isolate) return
  const { top, ...rest } = r.isolate
  console.log(`${r.impl} isolate: ${JSON.stringify(rest)}`)
  for (const t of top) console.log(`  ${(t.share * 100).toFixed(1).padStart(5)}%  ${t.selfMs.toFixed(3)} ms  ${t.frame}`)
}

const backlogEmpty = (dev: WranglerDev) => async () => {
  const h = await (await fetch(`${dev.url}/healthz`)).json() as { shards: Array<{ backlog: number }> }
  return h.shards.every((s) => s.backlog === 0)
}

/** A Worker project that uses a Node Kafka client under nodejs_compat, in .tmp (wrangler bundles it from there). */
function peerProject(name: 'kafkajs' | 'platformatic'): string {
  const dir = join(ROOT, '.tmp', `bench-worker-${name}`)
  mkdirSync(join(dir, 'src'), { recursive: true })
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(name === 'kafkajs' ? join(ROOT, 'node_modules') : join(PEERS_DIR, 'node_modules'), join(dir, 'node_modules'), 'dir')
  const client = name === 'kafkajs'
    ? `import { Kafka } from 'kafkajs'
const produce = async (env, messages) => {
  const p = new Kafka({ clientId: 'bench', brokers: env.KAFKA_BOOTSTRAP.split(','), logLevel: 0 }).producer({ idempotent: true, maxInFlightRequests: 5 })
  await p.connect()
  await p.send({ topic: env.TELEMETRY_TOPIC, acks: -1, messages })
  await p.disconnect()
}`
    : `import { Producer, stringSerializers } from '@platformatic/kafka'
const produce = async (env, messages) => {
  const p = new Producer({ clientId: 'bench', bootstrapBrokers: env.KAFKA_BOOTSTRAP.split(','), serializers: stringSerializers, idempotent: true })
  await p.send({ messages: messages.map((m) => ({ ...m, topic: env.TELEMETRY_TOPIC })) })
  await p.close()
}`
  writeFileSync(join(dir, 'src', 'index.js'), `${client}
export default {
  async fetch(req, env) {
    const url = new URL(req.url)
    if (url.pathname === '/healthz') return Response.json({ ok: true, shards: [{ backlog: 0 }] })
    const events = await req.json()
    await produce(env, events.map((e) => ({ key: e.key, value: JSON.stringify(e), headers: { 'event-type': e.type } })))
    return Response.json({ accepted: events.length }, { status: 202 })
  },
}
`)
  // The newest date wrangler 4.86.0's workerd accepts (2026-08-04, the nodejs_compat default date, is refused).
  writeFileSync(join(dir, 'wrangler.toml'), `name = "bench-${name}"\nmain = "src/index.js"\ncompatibility_date = "2026-05-03"\ncompatibility_flags = ["nodejs_compat"]\n`)
  return dir
}

export default async function main(args: string[]): Promise<void> {
  const events = arg(args, 'events', 100_000)
  const requests = arg(args, 'requests', 200)
  const skipLoad = args.includes('--skip-load')
  const quick = process.env.BENCH_WORKER_QUICK === '1'
  const loadAtStart = loadavg()
  const results: BenchResult[] = []
  const notes: Record<string, unknown> = {}
  const profiles: Record<string, unknown> = {}
  const handler = await handlerCpu(2000)
  console.log(`app handler, 100-event POST, Node V8, objects stubbed: ${handler.toFixed(3)} ms CPU`)
  results.push({ impl: 'kafka-edge app handler (V8 in Node, objects stubbed)', metric: 'CPU per 100-event POST', unit: 'ms', value: handler })
  const stored = storedFormCpu(20_000)
  console.log(`a 100-event request's events, app encode + object decode, Node V8: lines ${stored.lines.us.toFixed(1)} µs (${stored.lines.chars} chars), JSON array ${stored.json.us.toFixed(1)} µs (${stored.json.chars} chars)`)
  for (const [form, v] of Object.entries(stored)) {
    const impl = `kafka-edge app-to-object hop, ${form === 'lines' ? 'lines (stored form)' : 'JSON array (earlier form)'}`
    results.push({ impl, metric: 'CPU per 100-event request (encode + decode, V8 in Node)', unit: 'µs', value: v.us })
    results.push({ impl, metric: 'stored characters per 100-event request', unit: 'chars', value: v.chars })
  }
  if (args.includes('--handler-only')) { printTable(results, results[0]!.impl); return }
  const single: Cluster = await ensureCluster({ name: 'bench-worker' })
  try {
    // 2. per request
    for (const mode of quick ? ['durable'] as const : ['durable', 'sync'] as const) {
      const topic = uniqueTopic(`bench-worker-${mode}`)
      await createTopic(single, topic, { partitions: 4 })
      const dev = await startWrangler({ KAFKA_BOOTSTRAP: bs(single), TELEMETRY_TOPIC: topic, ACCEPT_MODE: mode, SHARDS: '1', ...objectVars })
      try {
        const r = await perRequest(`kafka-edge-${mode}`, dev, '/events', requests, backlogEmpty(dev), 100, mode === 'durable')
        const { isolate, ...plain } = r
        console.log(JSON.stringify(plain))
        printIsolate(r)
        if (isolate) profiles[r.impl] = isolate
        if (mode === 'durable' && !quick) {
          // The same POST to a route the app answers 404 at once: what workerd under wrangler dev spends
          // on any request (HTTP, the dev proxy, reading the body), so the rest is the Worker's own.
          const base = await perRequest('wrangler-dev-404', dev, '/no-such-route', requests, async () => true, 100, true)
          console.log(JSON.stringify({ ...base, isolate: undefined }))
          printIsolate(base)
          results.push(...perRequestResults(base).filter((x) => !x.metric.startsWith('time to answer')))
        }
        if (!quick) {
          // A 1-event POST: the part of the cost that does not grow with the events.
          const one = await perRequest(`kafka-edge-${mode}`, dev, '/events', requests, backlogEmpty(dev), 1)
          console.log(JSON.stringify({ ...one, events: 1 }))
          results.push({ impl: one.impl, metric: 'workerd CPU per 1-event POST', unit: 'ms', value: one.cpuMsPerRequest })
        }
        results.push(...perRequestResults(r))
        if (mode === 'durable') {
          // Paced at 25 POSTs/s: the object's producer drains between requests, as at a moderate rate in
          // production; back-to-back POSTs (above) overlap the previous one's produce instead.
          const paced = await perRequest(`kafka-edge-${mode}, 25 POSTs/s`, dev, '/events', Math.min(requests, 100), backlogEmpty(dev), 100, false, 40)
          console.log(JSON.stringify(paced))
          results.push(...perRequestResults(paced).filter((x) => !x.metric.includes('dev proxy') && !x.metric.includes('main thread') && !x.metric.includes('V8 threads')))
        }
      } finally { await dev.stop() }
    }
    ensurePeers()
    for (const peer of quick ? ['kafkajs'] as const : ['kafkajs', 'platformatic'] as const) {
      const topic = uniqueTopic(`bench-worker-${peer}`)
      await createTopic(single, topic, { partitions: 4 })
      let dev: WranglerDev | null = null
      try {
        dev = await startWrangler({ KAFKA_BOOTSTRAP: bs(single), TELEMETRY_TOPIC: topic }, { project: peerProject(peer), timeoutMs: 60_000 })
        const r = await perRequest(`${peer}-nodejs_compat`, dev, '/events', requests, async () => true, 100, true)
        const read = await readTopic(single, topic, { expected: (2 * requests + 20) * 100, isolation: 'read_uncommitted' })
        console.log(JSON.stringify({ ...r, isolate: undefined, read: read.length }))
        printIsolate(r)
        if (r.isolate) profiles[r.impl] = r.isolate
        results.push(...perRequestResults(r))
      } catch (e) {
        const msg = (e as Error).message
        const error = /Uncaught [^\n]*/.exec(msg)?.[0] ?? /requires compatibility date[^\n]*/.exec(msg)?.[0] ?? msg.slice(0, 500)
        notes[`${peer} under nodejs_compat`] = error
        console.log(`${peer}: ${error}`)
      } finally { await dev?.stop() }
    }
    const edge = results.find((x) => x.impl === 'kafka-edge-durable' && x.metric.startsWith('isolate CPU per 100-event POST (profile'))
    const peer = results.find((x) => x.impl === 'kafkajs-nodejs_compat' && x.metric === edge?.metric)
    if (edge && peer) results.push({ impl: 'kafka-edge-durable', metric: 'isolate CPU per 100-event POST, ratio to kafkajs', unit: 'x', value: edge.value / peer.value })
    if (quick) {
      printTable(results, 'kafka-edge-durable')
      console.log(`wrote ${writeReport(report('worker-quick', { requests, ...objectVars, wrangler: '4.86.0', load: { start: loadAtStart, end: loadavg() }, profileIntervalUs: PROFILE_INTERVAL_US, profiles, ...notes }, results))}`)
      return
    }

    // 3. one shard's throughput
    {
      const topic = uniqueTopic('bench-worker-shard')
      await createTopic(single, topic, { partitions: 4 })
      const dev = await startWrangler({ KAFKA_BOOTSTRAP: bs(single), TELEMETRY_TOPIC: topic, SHARDS: '1' })
      try {
        const n = 20_000
        const t0 = performance.now()
        await Promise.all(Array.from({ length: 20 }, async (_, c) => {
          for (let r = 0; r < n / 20 / 100; r++) {
            const body = JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ type: 'bench', id: `s${c}-${r}-${i}`, key: `user-${c}-${i % 5}` })))
            const res = await fetch(`${dev.url}/events`, { method: 'POST', body, headers: { 'content-type': 'application/json' } })
            await res.arrayBuffer()
            if (res.status !== 202) throw new Error(`shard run: ${res.status}`)
          }
        }))
        const accepted = performance.now() - t0
        while (!(await backlogEmpty(dev)())) await new Promise((r) => setTimeout(r, 100))
        const total = performance.now() - t0
        results.push({ impl: 'kafka-edge-durable', metric: 'events/s accepted by one shard', unit: 'events/s', value: n / (accepted / 1000) })
        results.push({ impl: 'kafka-edge-durable', metric: 'events/s produced by one shard', unit: 'events/s', value: n / (total / 1000) })
      } finally { await dev.stop() }
    }
  } finally {
    await stopCluster(single)
  }

  // 1. exactly once at full size
  if (!skipLoad) {
    const cluster = await ensureCluster({ nodes: 3, name: 'bench-worker-n3' })
    let r: LoadResult
    try {
      r = await runWorkerLoad(cluster, {
        events, clients: 50, perRequest: 100, shards: 4, partitions: 12, restartAt: 0.3, killBrokerAt: 0.6, brokerDownMs: 10_000,
        log: (m) => console.log(`[load] ${m}`),
      })
    } finally { await stopCluster(cluster) }
    console.log(JSON.stringify({ ...r, duplicates: r.duplicates.length, missing: r.missing.length }))
    notes.exactlyOnce = { ...r, duplicates: r.duplicates.slice(0, 20), missing: r.missing.slice(0, 20) }
    results.push({ impl: 'kafka-edge-durable', metric: `exactly-once run: accepted of ${events}`, unit: 'events', value: r.accepted })
    results.push({ impl: 'kafka-edge-durable', metric: 'exactly-once run: read twice', unit: 'events', value: r.duplicates.length })
    results.push({ impl: 'kafka-edge-durable', metric: 'exactly-once run: missing', unit: 'events', value: r.missing.length })
    results.push({ impl: 'kafka-edge-durable', metric: 'exactly-once run: keys out of order', unit: 'keys', value: r.outOfOrderKeys.length })
    results.push({ impl: 'kafka-edge-durable', metric: 'exactly-once run: events/s per shard (post + drain, faults included)', unit: 'events/s', value: r.accepted / (r.postSeconds + r.drainSeconds) / 4 })
    results.push({ impl: 'kafka-edge-durable', metric: 'exactly-once run: time to 202 p50', unit: 'ms', value: r.acceptP50Ms })
    results.push({ impl: 'kafka-edge-durable', metric: 'exactly-once run: time to 202 p99', unit: 'ms', value: r.acceptP99Ms })
  }
  printTable(results, 'kafka-edge-durable')
  const file = writeReport(report('worker', { events, requests, ...objectVars, wrangler: '4.86.0', load: { start: loadAtStart, end: loadavg() }, profileIntervalUs: PROFILE_INTERVAL_US, profiles, ...notes }, results))
  console.log(`wrote ${file}`)
}
