// Faults suite: the idempotence fault schedule (test/kafka/idempotence-faults.test.ts, shared through
// test/helpers/fault-schedule.ts) applied to every peer producer in turn, idempotence on where the peer
// has it, on a 3-node cluster (RF 3, min.insync.replicas 2, 6 partitions):
//   ambiguous  every second the answer of one Produce request is withheld after the broker wrote it,
//              and its connection closed (test/helpers/fault-proxy.ts, which rewrites Metadata so that
//              clients without a resolve hook also connect through it), plus up to 3 ms response jitter
//   kill       kill -9 of the leader of half the partitions 2.5 s into the burst, restart after failover
//   stop       SIGSTOP of the leader of partition 0 for 9 s (past request.timeout.ms, 5 s for every
//              peer, and the broker session timeout), then SIGCONT
// Each peer runs in its own process (Node 22 for the Node peers, the JVM for Java), sends keyed
// records at a fixed rate to the partition of their key, and reports how each send settled. The Java
// consumer then reads the topic back. Counted per peer and scenario: duplicates, acknowledged records
// missing from the log, order violations per partition, sends never settled, and failed sends whose
// records are in the log (split by whether the error claimed they were not written).
//
//   npm run bench -- faults
//   BENCH_IMPLS=kafka-edge,kafkajs-idempotent BENCH_SCENARIOS=ambiguous npm run bench -- faults   (nothing written)
//   BENCH_FAULT_RATE (records/s, default 5000)
//   BENCH_SEND=promise: kafka-edge awaits each send's promise instead of passing a callback
import { spawn, spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { createInterface } from 'node:readline'
import { join } from 'node:path'
import { loadavg } from 'node:os'
import { pathToFileURL } from 'node:url'
import { partitionForKey } from '../src/edge/index.js'
import {
  KEYS, PARTITIONS, VALUE_BYTES, analyzeReadBack, createTopicLedBy, keyName, killLeaderThenRestart, stopLeaderThenContinue,
  valueFor, type SentRecord,
} from '../test/helpers/fault-schedule.js'
import { report, writeReport, type BenchResult, SEND_FORM } from './lib.js'
import type { PlatformaticProducerClass } from './produce.js'

const RATE = Number(process.env.BENCH_FAULT_RATE ?? 5000)
const SETTLE_MS = 150_000
const REQUEST_TIMEOUT_MS = 5000
const DELIVERY_TIMEOUT_MS = 120_000
const AMBIGUOUS_MS = 20_000
const CLUSTER = 'bench-faults'
const IMPLS = process.env.BENCH_IMPLS?.split(',') ?? null
const SCENARIOS = (process.env.BENCH_SCENARIOS ?? 'ambiguous,kill,stop').split(',')
const ALL_PEERS = ['kafka-edge', 'java', 'confluent', 'platformatic-idempotent', 'kafkajs-idempotent']

const enc = new TextEncoder()
const partitionOfKey = Array.from({ length: KEYS }, (_, k) => partitionForKey(enc.encode(keyName(k)), PARTITIONS))

/** How each peer is configured for the fault run (also written to the results). */
const PEER_SETTINGS: Record<string, string> = {
  'kafka-edge': `enable.idempotence=true, acks=all, linger.ms=5, batch.size=8192, request.timeout.ms=${REQUEST_TIMEOUT_MS}, delivery.timeout.ms=${DELIVERY_TIMEOUT_MS}; one send() per record, ${SEND_FORM === 'callback' ? 'with a callback (BENCH_SEND=promise: awaiting its promise)' : 'awaiting its promise'}`,
  java: `KafkaProducer 4.4: enable.idempotence=true, acks=all, linger.ms=5, batch.size=8192, request.timeout.ms=${REQUEST_TIMEOUT_MS}, delivery.timeout.ms=${DELIVERY_TIMEOUT_MS}; one send() per record with a callback`,
  confluent: `KafkaJS-compatible API with librdkafka properties: enable.idempotence=true, acks=all, linger.ms=5, request.timeout.ms=${REQUEST_TIMEOUT_MS}, message.timeout.ms=${DELIVERY_TIMEOUT_MS}; send() of the records generated each 10 ms, calls overlapping`,
  'platformatic-idempotent': `idempotent: true (acks -1, maxInflights 1), timeout ${REQUEST_TIMEOUT_MS} ms, retries 10, retryDelay 1000 ms (defaults 3 and 1000); send() of the records generated each 10 ms, calls overlapping`,
  'kafkajs-idempotent': `idempotent: true, maxInFlightRequests: 1, requestTimeout ${REQUEST_TIMEOUT_MS} ms, retry.retries 10 (default 5); send() of the records generated each 10 ms with acks -1, calls overlapping`,
}

interface ScenarioResult {
  peer: string
  scenario: string
  sent: number
  acked: number
  failed: number
  neverSettled: number
  duplicates: number
  ackedMissing: number
  orderViolations: number
  failedClaimedNotWrittenInLog: number
  failedInLog: number
  foreign: number
  wrongPartition: number
  read: number
  errorSamples: string[]
  examples: Record<string, string[]>
  note?: string
  proxy?: Record<string, number>
}

export default async function faults(args: string[]): Promise<void> {
  if (args[0] === '--child') { await child(args.slice(1)); return }
  const peers = await import('./peers.js')
  peers.ensurePeers()
  const confluent = (IMPLS === null || IMPLS.includes('confluent')) ? peers.ensureConfluent() : null
  const kafka = await import('../test/helpers/kafka.js')
  const harness = await import('../scripts/kafka/kafka.mjs')
  const { FaultProxy } = await import('../test/helpers/fault-proxy.js')
  const cluster = await kafka.ensureCluster({ nodes: 3, name: CLUSTER })
  const javaCp = ALL_PEERS.includes('java') && (IMPLS === null || IMPLS.includes('java')) ? compileJava(harness.classpath()) : ''
  const loadBefore = loadavg()
  const started = Date.now()
  const results: ScenarioResult[] = []
  const unavailable: Record<string, string> = {}
  const peersToRun = ALL_PEERS.filter((p) => IMPLS === null || IMPLS.includes(p))

  // A scenario that failed half-way must not leave a broker dead or stopped for the next one.
  const healCluster = async () => {
    for (const n of cluster.nodes) {
      let alive = true
      try { process.kill(n.pid, 'SIGCONT') } catch { alive = false }
      if (!alive) await kafka.restartNode(cluster, n.id)
    }
  }

  for (const peer of peersToRun) {
    if (peer === 'confluent' && !confluent?.ok) {
      unavailable[peer] = `not installable here: ${confluent?.attempts.map((a) => `${a.what}: ${a.error.slice(0, 3).join(' / ')}`).join('; ')}`
      continue
    }
    for (const scenario of SCENARIOS) {
      await healCluster()
      const topic = kafka.uniqueTopic(`faults-${peer}-${scenario}`)
      let victim = cluster.nodes[0]!.id
      if (scenario === 'kill') await createTopicLedBy(cluster, topic, victim)
      else {
        await kafka.createTopic(cluster, topic, { partitions: PARTITIONS, replicationFactor: 3, minIsr: 2 })
        victim = (await kafka.leaders(cluster, topic))[0]!
      }
      const proxy = scenario === 'ambiguous'
        ? await FaultProxy.start(cluster.nodes, { seed: 7341, advertiseProxy: true, rules: { dropProduceEveryMs: 1000, responseJitterMs: 3 } })
        : null
      const bootstrap = proxy ? proxy.proxyBootstrap : kafka.bs(cluster)
      const t0 = Date.now()
      console.log(`${peer} / ${scenario}: topic ${topic}, victim node ${victim} (load ${loadavg()[0]!.toFixed(2)})`)
      const run = startPeer(peer, bootstrap, topic, javaCp, { BENCH_PLATFORMATIC_ENTRY: peers.PLATFORMATIC_ENTRY, BENCH_CONFLUENT_DIR: peers.CONFLUENT_DIR, NODE22: peers.NODE22 })
      let note: string | undefined
      // The schedule's clock starts when the peer is connected and sending, not when its process starts.
      await run.ready
      try {
        if (scenario === 'ambiguous') await new Promise((r) => setTimeout(r, AMBIGUOUS_MS))
        else if (scenario === 'kill') note = `failover ${await killLeaderThenRestart(cluster, topic, victim)} ms`
        else await stopLeaderThenContinue(cluster, victim)
        await new Promise((r) => setTimeout(r, 2000))
      } catch (e) {
        note = `fault script failed: ${(e as Error).message}`
      } finally {
        run.stop()
      }
      let sent: SentRecord[]
      try { sent = await run.outcome } catch (e) {
        console.log(`  ${peer} / ${scenario}: the peer process failed: ${(e as Error).message.slice(0, 500)}`)
        unavailable[`${peer}/${scenario}`] = (e as Error).message.slice(0, 1000)
        await proxy?.close()
        continue
      }
      await proxy?.close()
      await healCluster()
      const read = await kafka.readTopic(cluster, topic, { isolation: 'read_uncommitted', timeoutMs: 60_000 })
      const a = analyzeReadBack(sent, read)
      const errorCounts = new Map<string, number>()
      for (const s of sent) if (s.error) { const k = `${s.error.name}: ${s.error.message}`.slice(0, 200); errorCounts.set(k, (errorCounts.get(k) ?? 0) + 1) }
      const r: ScenarioResult = {
        peer, scenario, sent: sent.length, acked: a.acked, failed: a.failed, neverSettled: a.pending,
        duplicates: a.duplicates.length, ackedMissing: a.missing.length, orderViolations: a.orderViolations.length,
        failedClaimedNotWrittenInLog: a.phantom.length, failedInLog: a.failedFoundInLog,
        foreign: a.foreign.length, wrongPartition: a.wrongPartition.length, read: a.read,
        errorSamples: [...errorCounts].sort((x, y) => y[1] - x[1]).slice(0, 4).map(([m, c]) => `${c}x ${m}`),
        examples: Object.fromEntries(Object.entries({
          duplicates: a.duplicates, ackedMissing: a.missing, orderViolations: a.orderViolations, failedClaimedNotWrittenInLog: a.phantom,
        })
          .filter(([, xs]) => xs.length > 0).map(([k, xs]) => [k, xs.slice(0, 5)])),
        ...(note ? { note } : {}),
        ...(proxy ? { proxy: { ...proxy.counters } } : {}),
      }
      results.push(r)
      console.log(`  ${((Date.now() - t0) / 1000).toFixed(0)} s: sent ${r.sent}, acked ${r.acked}, failed ${r.failed}, never settled ${r.neverSettled}; ` +
        `duplicates ${r.duplicates}, acked-missing ${r.ackedMissing}, order violations ${r.orderViolations}, failed-but-in-log ${r.failedInLog} ` +
        `(claimed not written: ${r.failedClaimedNotWrittenInLog})${proxy ? `; proxy dropped ${proxy.counters.droppedProduce} answers, metadata rewritten ${proxy.counters.metadataRewritten}/${proxy.counters.metadataRewritten + proxy.counters.metadataRewriteFailed}` : ''}${note ? `; ${note}` : ''}`)
      if (r.errorSamples.length) console.log(`    errors: ${r.errorSamples.join(' | ')}`)
      await kafka.deleteTopic(cluster, topic).catch(() => {})
    }
  }
  if (IMPLS !== null || SCENARIOS.length < 3) return
  const rows: BenchResult[] = []
  for (const r of results) {
    for (const metric of ['sent', 'acked', 'failed', 'neverSettled', 'duplicates', 'ackedMissing', 'orderViolations', 'failedClaimedNotWrittenInLog', 'failedInLog'] as const) {
      rows.push({ impl: r.peer, metric: `${r.scenario}: ${metric}`, unit: 'records', value: r[metric] })
    }
  }
  const versions = peers.peerVersions(confluent?.ok ?? false)
  const file = writeReport({
    ...report('faults', {
      cluster: { nodes: 3, replicationFactor: 3, minInsyncReplicas: 2, partitions: PARTITIONS, kafka: '4.4' },
      workload: `keyed records (${KEYS} keys, ${VALUE_BYTES}-byte values naming the send), ${RATE} records/s, each to its key's partition (murmur2, as Java), sent until the fault script ends + 2 s; then up to ${SETTLE_MS / 1000} s for every send to settle`,
      scenarios: {
        ambiguous: `${AMBIGUOUS_MS / 1000} s through the fault proxy: the answer of one Produce request per second withheld after the broker wrote it, its connection closed; up to 3 ms response jitter`,
        kill: 'kill -9 of the preferred leader of partitions 0-2, 2.5 s in; restart 2 s after every partition has a new leader',
        stop: 'SIGSTOP of the leader of partition 0, 2.5 s in, for 9 s; SIGCONT',
      },
      readBack: 'Java consumer (read_uncommitted), the whole topic after the peer process exits',
      peers: PEER_SETTINGS,
      versions,
      unavailable,
      confluentInstall: confluent,
      loadAverage: { before: loadBefore.map(round3), after: loadavg().map(round3) },
      elapsedMinutes: round3((Date.now() - started) / 60_000),
      scenarioResults: results,
    }, rows),
  })
  console.log(`wrote ${file}`)
}

const round3 = (x: number) => Math.round(x * 1000) / 1000

// ---- the peer process ---------------------------------------------------------------------------

/** javac once per run: source-file mode would compile inside every scenario's JVM start. */
function compileJava(libs: string): string {
  const root = join(import.meta.dirname, '..')
  const out = join(root, '.tmp', 'bench-java')
  const r = spawnSync('javac', ['-nowarn', '-d', out, '-cp', libs, join(root, 'bench', 'java', 'FaultProduce.java')], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`javac FaultProduce.java failed:\n${r.stdout}${r.stderr}`)
  return `${out}:${libs}`
}

interface PeerRun { ready: Promise<void>; stop(): void; outcome: Promise<SentRecord[]> }

function startPeer(peer: string, bootstrap: string, topic: string, cp: string, env: Record<string, string>): PeerRun {
  const root = join(import.meta.dirname, '..')
  const childEnv = { ...process.env, ...env, BENCH_PARTITION_OF_KEY: partitionOfKey.join(',') }
  const proc = peer === 'java'
    ? spawn('java', ['-Xmx512m', `-Dlog4j2.configurationFile=${join(root, 'scripts', 'kafka', 'log4j2-tools.properties')}`, '-cp', cp, 'FaultProduce',
      bootstrap, topic, String(RATE), String(PARTITIONS), String(KEYS), String(VALUE_BYTES),
      'acks=all', 'enable.idempotence=true', 'linger.ms=5', 'batch.size=8192', `request.timeout.ms=${REQUEST_TIMEOUT_MS}`, `delivery.timeout.ms=${DELIVERY_TIMEOUT_MS}`, `settle.ms=${SETTLE_MS}`],
    { cwd: root, env: childEnv, stdio: ['pipe', 'pipe', 'pipe'] })
    : spawn(env.NODE22!, ['--import', 'tsx', join(root, 'bench', 'run.ts'), 'faults', '--child', peer, bootstrap, topic], { cwd: root, env: childEnv, stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  proc.stderr!.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-4000) })
  let onReady: () => void = () => {}
  const ready = new Promise<void>((r) => { onReady = r })
  const outcome = new Promise<SentRecord[]>((resolve, reject) => {
    const sent: SentRecord[] = []
    let done = false
    const lines = createInterface({ input: proc.stdout! })
    lines.on('line', (line) => {
      if (line === 'DONE') { done = true; return }
      if (line === 'READY') { onReady(); return }
      const sp = line.indexOf(' ')
      const kind = line.slice(0, sp)
      if (kind !== 'A' && kind !== 'F' && kind !== 'P') return
      const rest = line.slice(sp + 1)
      const i = Number(rest.split(' ', 1)[0])
      const k = i % KEYS
      const s: SentRecord = { i, key: keyName(k), seq: Math.floor(i / KEYS), partition: partitionOfKey[k]!, state: 'pending' }
      if (kind === 'A') {
        const [, p, o] = rest.split(' ')
        s.state = 'acked'
        s.ack = { partition: Number(p), offset: BigInt(o!) }
      } else if (kind === 'F') {
        const m = /^\d+ (\S+) ([^:]*): ?(.*)$/.exec(rest)
        s.state = 'failed'
        s.claim = (m?.[1] ?? 'none') as SentRecord['claim']
        s.error = { name: m?.[2] ?? '?', message: m?.[3] ?? rest }
      }
      sent[i] = s
    })
    proc.on('close', (code) => {
      onReady()
      if (!done) return reject(new Error(`${peer} exited with ${code} before reporting:\n${stderr}`))
      for (let i = 0; i < sent.length; i++) if (!sent[i]) return reject(new Error(`${peer} reported no outcome for record ${i}`))
      resolve(sent)
    })
  })
  return { ready, stop: () => { proc.stdin!.end('stop\n') }, outcome }
}

/** A record of the workload: i-th send, its key's per-key sequence is i / KEYS. */
interface Rec { i: number; key: Buffer; value: Buffer; partition: number }

interface Driver {
  /** per-record senders call back (or, BENCH_SEND=promise, resolve) each record; batched ones resolve a call */
  sendOne?(r: Rec, done: (md: { partition: number; offset: bigint } | null, e: unknown) => void): void
  sendMany?(rs: Rec[]): Promise<void>
  claimOf?(e: unknown): SentRecord['claim']
  close(): Promise<void>
}

async function driverFor(peer: string, bootstrap: string, topic: string): Promise<Driver> {
  if (peer === 'kafka-edge') {
    const { createProducer, tcp } = await import('../src/edge/node.js')
    const p = createProducer({
      'bootstrap.servers': bootstrap, transport: tcp(), acks: 'all', 'enable.idempotence': true, 'linger.ms': 5, 'batch.size': 8192,
      'request.timeout.ms': REQUEST_TIMEOUT_MS, 'delivery.timeout.ms': DELIVERY_TIMEOUT_MS,
    })
    await p.connect()
    await p.partitionsFor(topic)
    return {
      // As the produce suite's loop: Java's send(record, callback), unless BENCH_SEND=promise.
      sendOne: SEND_FORM === 'callback'
        ? (r, done) => p.send({ topic, partition: r.partition, key: r.key, value: r.value }, done)
        : (r, done) => { p.send({ topic, partition: r.partition, key: r.key, value: r.value }).then((md) => done(md, null), (e) => done(null, e)) },
      claimOf: (e) => ((e as { mayHaveBeenWritten?: boolean }).mayHaveBeenWritten ? 'maybe' : 'not-written'),
      close: () => p.close(),
    }
  }
  if (peer === 'kafkajs-idempotent') {
    const require = createRequire(import.meta.url)
    const { Kafka, logLevel } = require('kafkajs')
    const kafka = new Kafka({ clientId: 'bench-faults-kafkajs', brokers: bootstrap.split(','), logLevel: logLevel.NOTHING, requestTimeout: REQUEST_TIMEOUT_MS, retry: { retries: 10 } })
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    return {
      sendMany: async (rs) => { await producer.send({ topic, acks: -1, messages: rs.map((r) => ({ key: r.key, value: r.value, partition: r.partition })) }) },
      close: () => producer.disconnect(),
    }
  }
  if (peer === 'platformatic-idempotent') {
    const { Producer } = await import(pathToFileURL(process.env.BENCH_PLATFORMATIC_ENTRY!).href) as { Producer: PlatformaticProducerClass }
    const producer = new Producer({ clientId: 'bench-faults-platformatic', bootstrapBrokers: bootstrap.split(','), idempotent: true, timeout: REQUEST_TIMEOUT_MS, retries: 10, retryDelay: 1000 })
    await producer.metadata({ topics: [topic] })
    return {
      sendMany: async (rs) => { await producer.send({ messages: rs.map((r) => ({ topic, key: r.key, value: r.value, partition: r.partition })) }) },
      close: () => producer.close(),
    }
  }
  if (peer === 'confluent') {
    const require = createRequire(join(process.env.BENCH_CONFLUENT_DIR!, 'package.json'))
    const { KafkaJS } = require('@confluentinc/kafka-javascript')
    const producer = new KafkaJS.Kafka({}).producer({
      'bootstrap.servers': bootstrap, 'enable.idempotence': true, acks: 'all', 'linger.ms': 5,
      'request.timeout.ms': REQUEST_TIMEOUT_MS, 'message.timeout.ms': DELIVERY_TIMEOUT_MS, log_level: 3,
    })
    await producer.connect()
    return {
      sendMany: async (rs) => { await producer.send({ topic, messages: rs.map((r) => ({ key: r.key, value: r.value, partition: r.partition })) }) },
      close: () => producer.disconnect(),
    }
  }
  throw new Error(`no fault driver for ${peer}`)
}

/** name: message, with the first inner error of an AggregateError or a cause chain (what the peers wrap the broker's answer in). */
function describeError(e: unknown, depth = 0): string {
  const err = e as Error & { errors?: unknown[]; cause?: unknown; code?: string; type?: string }
  const head = `${err?.name ?? 'Error'}${err?.code ? ` ${err.code}` : err?.type ? ` ${err.type}` : ''}: ${String(err?.message ?? e)}`
  const inner = err?.errors?.[0] ?? err?.cause
  return inner && depth < 3 ? `${head} [${describeError(inner, depth + 1)}]` : head
}

/** The Node peers' side: paced keyed sends until "stop" on stdin, then the outcome lines. */
async function child(args: string[]): Promise<void> {
  const [peer, bootstrap, topic] = args as [string, string, string]
  const partitions = process.env.BENCH_PARTITION_OF_KEY!.split(',').map(Number)
  const d = await driverFor(peer, bootstrap, topic)
  process.stdout.write('READY\n')
  let stop = false
  process.stdin.once('data', () => { stop = true }).once('end', () => { stop = true })
  const outcome: string[] = []
  let pending = 0
  const seqs = new Array<number>(KEYS).fill(0)
  const line = (e: unknown) => describeError(e).replace(/\s+/g, ' ').slice(0, 400)
  let queue: Rec[] = []
  const flushQueue = () => {
    if (queue.length === 0) return
    const rs = queue
    queue = []
    d.sendMany!(rs).then(
      () => { for (const r of rs) { outcome[r.i] = `A ${r.i} ${r.partition} -1`; pending-- } },
      (e) => { const l = line(e); for (const r of rs) { outcome[r.i] = `F ${r.i} none ${l}`; pending-- } },
    )
  }
  const t0 = performance.now()
  let i = 0
  while (!stop) {
    const k = i % KEYS
    const key = keyName(k)
    // seqs has one counter per key: k < KEYS by construction.
    const seq = seqs[k]!
    seqs[k] = seq + 1
    const r: Rec = { i, key: Buffer.from(key), value: Buffer.from(valueFor(i, key, seq)), partition: partitions[k]! }
    pending++
    if (d.sendOne) {
      d.sendOne(r, (md, e) => {
        outcome[r.i] = md ? `A ${r.i} ${md.partition} ${md.offset}` : `F ${r.i} ${d.claimOf?.(e) ?? 'none'} ${line(e)}`
        pending--
      })
    } else queue.push(r)
    i++
    // Paced in 10 ms ticks: a batched peer gets the records of each tick in one send() call.
    const ahead = (i / RATE) * 1000 - (performance.now() - t0)
    if (ahead > 0 || i % 100 === 0) {
      flushQueue()
      await new Promise((res) => setTimeout(res, Math.max(0, Math.min(ahead, 10))))
    }
  }
  flushQueue()
  const deadline = Date.now() + SETTLE_MS
  while (pending > 0 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 100))
  const out: string[] = []
  for (let j = 0; j < i; j++) out.push(outcome[j] ?? `P ${j}`)
  out.push('DONE')
  await new Promise<void>((res) => process.stdout.write(out.join('\n') + '\n', () => res()))
  // A peer still holding unsettled sends may never close cleanly: the outcome is out, so exit anyway.
  setTimeout(() => process.exit(0), 2000).unref()
  await d.close().catch(() => {})
  process.exit(0)
}
