// Produce suite: end-to-end producer throughput and producer CPU against one real broker.
//   kafka-edge        createProducer + tcp(), one send() per record, in its own Node process
//   java              org.apache.kafka.tools.ProducerPerformance (the Java client's own perf tool)
//   kafkajs           2.2.4, default (non-idempotent) producer
//   kafkajs-idempotent  idempotent: true, which kafkajs only allows with maxInFlightRequests: 1
//   kafka-edge-sasl-ssl, java-sasl-ssl   the same two over the broker's SASL_SSL listener (TLS 1.3,
//                     SCRAM-SHA-512): what encryption and authentication cost each client
// All: 100-byte values of random A-Z (what ProducerPerformance generates, per record, into one
// reused array: see payloadSource), no key,
// acks=all, linger 5 ms, lz4 (none if the WASM core in this tree lacks it: see results config).
//
// CPU is the producer process's own: kafka-edge and kafkajs read process.cpuUsage() in their child;
// Java is read from the JVM's utime+stime (/proc, via the parent shell's cutime+cstime once it has
// reaped the JVM, so nothing after the last sample is missed). "cpu-us/record" counts the send loop
// only: the Node children measure around it, and Java's is its whole-process CPU minus that of a
// 1-record run (JVM start, class loading, connect, close). "cpu-us/record (whole process)" is
// everything, startup included, for all three.
//
//   npm run bench -- produce                       (BENCH_RECORDS=2000000 by default)
//   BENCH_CPU_PROF=1 npm run bench -- produce      (kafka-edge child under node --cpu-prof)
import { spawn, spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { PerformanceObserver } from 'node:perf_hooks'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { AnyProducerSettings } from '../src/edge/index.js'
import { printTable, report, writeReport, type BenchResult } from './lib.js'

const here = dirname(fileURLToPath(import.meta.url))
const ROOT = join(here, '..')
const RECORDS = Number(process.env.BENCH_RECORDS ?? 2_000_000)
const KAFKAJS_RECORDS = Math.min(RECORDS, Number(process.env.BENCH_KAFKAJS_RECORDS ?? 400_000))
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2)
const PARTITIONS = 6
const VALUE_BYTES = 100
const LINGER_MS = 5
const CLUSTER = 'bench'
// BENCH_IMPLS=kafka-edge (comma-separated) runs only those, for quick iterations; results are not written.
const IMPLS = process.env.BENCH_IMPLS?.split(',') ?? null
const NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean)
const runs = (impl: string) => IMPLS === null || IMPLS.includes(impl)

interface ChildResult { records: number; ms: number; cpuLoopUs: number; cpuTotalUs: number; errors: number; maxOutstanding?: number }

export default async function produce(args: string[]): Promise<void> {
  if (args[0] === '--child') { await child(args.slice(1)); return }

  // The Node children run the JavaScript tsc emits, as the published package is: under tsx every
  // inner arrow function on the hot path would also pay for esbuild's keepNames wrapper.
  // Inside node_modules so the child still resolves kafkajs and lz4-napi from the repo.
  const dist = join(ROOT, 'node_modules', '.cache', `kafka-edge-bench-${process.pid}`)
  const tsc = spawnSync(process.execPath, [
    join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '--outDir', dist, '--rootDir', ROOT, '--target', 'ES2022',
    '--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--skipLibCheck', '--esModuleInterop', '--types', 'node',
    '--lib', 'ES2022,DOM', join(here, 'produce.ts'), join(ROOT, 'src', 'edge', 'node.ts'),
  ], { encoding: 'utf8' })
  const childJs = join(dist, 'bench', 'produce.js')
  if (!existsSync(childJs) || !existsSync(join(dist, 'src', 'edge', 'node.js'))) throw new Error(`tsc emitted no bench child:\n${tsc.stdout}${tsc.stderr}`)
  if (tsc.status !== 0) console.log(`NOTE: tsc reported type errors (emitted anyway):\n${tsc.stdout.split('\n').slice(0, 5).join('\n')}`)
  process.on('exit', () => rmSync(dist, { recursive: true, force: true }))

  const { loadCore } = await import('../src/edge/wasm/core.js')
  const core = await loadCore()
  const compression = process.env.BENCH_COMPRESSION ?? (core.supportsCompression('lz4') ? 'lz4' : 'none')
  if (compression === 'none') console.log('NOTE: the WASM core in this tree has no lz4 yet: every producer runs with compression.type=none')

  // The broker gets C2 and a real heap: the quick-start test flags (C1 only, 320 MB) would make it the bottleneck.
  process.env.KAFKA_EDGE_BROKER_JVM_OPTS ??= '-Xms1g -Xmx1g -XX:+UseParallelGC'
  const kafka = await import('../test/helpers/kafka.js')
  const harness = await import('../scripts/kafka/kafka.mjs')
  const cluster = await kafka.ensureCluster({ name: CLUSTER, nodes: 1, tls: true, sasl: true })
  const bootstrap = kafka.bs(cluster)
  const secure = secureEndpoint(cluster, kafka)
  const topicFor = async (impl: string) => {
    const t = kafka.uniqueTopic(`bench-${impl}`)
    await kafka.createTopic(cluster, t, { partitions: PARTITIONS, replicationFactor: 1 })
    return t
  }
  const dropTopic = (t: string) => kafka.deleteTopic(cluster, t).catch(() => {})

  const runNode = async (impl: 'kafka-edge' | 'kafka-edge-sasl-ssl' | 'kafkajs' | 'kafkajs-idempotent', n: number, profile = false): Promise<ChildResult> => {
    const topic = await topicFor(impl)
    const viaTls = impl === 'kafka-edge-sasl-ssl'
    try {
      return await nodeChild(childJs, impl, viaTls ? secure.bootstrap : bootstrap, topic, n, compression, profile, viaTls ? secure.edge : null)
    } finally { await dropTopic(topic) }
  }
  const runJava = async (n: number, viaTls = false): Promise<ChildResult> => {
    const topic = await topicFor(viaTls ? 'java-sasl-ssl' : 'java')
    try {
      return await javaChild(harness.classpath(), viaTls ? secure.bootstrap : bootstrap, topic, n, compression, viaTls ? secure.java : [])
    } finally { await dropTopic(topic) }
  }

  const loadBefore = loadavg()[0]!
  console.log(`broker ${bootstrap}; ${RECORDS.toLocaleString()} records per run (kafkajs ${KAFKAJS_RECORDS.toLocaleString()}), ${ROUNDS} rounds, best kept`)
  // Warm the broker's JIT so the first measured producer does not pay for it.
  await runNode('kafka-edge', Math.min(RECORDS, 300_000))
  const javaStartup = runs('java') ? await runJava(1) : null
  if (javaStartup) console.log(`java 1-record run: ${(javaStartup.cpuTotalUs / 1000).toFixed(0)} ms CPU (subtracted from the Java runs)`)
  const javaTlsStartup = runs('java-sasl-ssl') ? await runJava(1, true) : null
  if (javaTlsStartup) console.log(`java-sasl-ssl 1-record run: ${(javaTlsStartup.cpuTotalUs / 1000).toFixed(0)} ms CPU (subtracted from its runs)`)

  const best = new Map<string, ChildResult>()
  const keep = (impl: string, r: ChildResult) => {
    const rate = r.records / (r.ms / 1000)
    console.log(`  ${impl}: ${Math.round(rate).toLocaleString()} records/s, ${(r.cpuLoopUs / r.records).toFixed(2)} cpu-us/record (loop), ${(r.cpuTotalUs / r.records).toFixed(2)} (process), ${r.errors} errors${r.maxOutstanding !== undefined ? `, at most ${r.maxOutstanding.toLocaleString()} records unacknowledged` : ''}`)
    if (r.errors > 0) throw new Error(`${impl}: ${r.errors} sends failed`)
    const prev = best.get(impl)
    if (!prev || rate > prev.records / (prev.ms / 1000)) best.set(impl, r)
  }
  for (let round = 0; round < ROUNDS; round++) {
    if (javaStartup) {
      const java = await runJava(RECORDS)
      keep('java', { ...java, cpuLoopUs: Math.max(0, java.cpuTotalUs - javaStartup.cpuTotalUs) })
    }
    if (runs('kafka-edge')) keep('kafka-edge', await runNode('kafka-edge', RECORDS))
    if (javaTlsStartup) {
      const java = await runJava(RECORDS, true)
      keep('java-sasl-ssl', { ...java, cpuLoopUs: Math.max(0, java.cpuTotalUs - javaTlsStartup.cpuTotalUs) })
    }
    if (runs('kafka-edge-sasl-ssl')) keep('kafka-edge-sasl-ssl', await runNode('kafka-edge-sasl-ssl', RECORDS))
  }
  if (runs('kafkajs-idempotent')) keep('kafkajs-idempotent', await runNode('kafkajs-idempotent', KAFKAJS_RECORDS))
  if (runs('kafkajs')) keep('kafkajs', await runNode('kafkajs', KAFKAJS_RECORDS))
  if (IMPLS === null) writeResults(best, compression, loadBefore)
  if (process.env.BENCH_CPU_PROF === '1') {
    const prof = await runNode('kafka-edge', RECORDS, true)
    console.log(`profiled kafka-edge run: ${Math.round(prof.records / (prof.ms / 1000)).toLocaleString()} records/s (profiler overhead included)`)
    console.log(topFunctions(latestProfile(), 25))
  }
}

function writeResults(best: Map<string, ChildResult>, compression: string, loadBefore: number): void {

  const results: BenchResult[] = []
  for (const [impl, r] of best) results.push({ impl, metric: 'records/s', unit: 'records/s', value: Math.round(r.records / (r.ms / 1000)) })
  for (const [impl, r] of best) results.push({ impl, metric: 'cpu-us/record', unit: 'us', value: round3(r.cpuLoopUs / r.records) })
  for (const [impl, r] of best) results.push({ impl, metric: 'cpu-us/record (whole process)', unit: 'us', value: round3(r.cpuTotalUs / r.records) })

  const config = {
    valueBytes: VALUE_BYTES, key: null, acks: 'all', idempotence: 'on (kafkajs: both)', compression,
    lingerMs: LINGER_MS, batchSize: 16384, partitions: PARTITIONS, records: RECORDS, kafkajsRecords: KAFKAJS_RECORDS,
    rounds: ROUNDS, kept: 'best records/s round per impl (2 shared cores, other clusters running)',
    broker: { nodes: 1, jvm: process.env.KAFKA_EDGE_BROKER_JVM_OPTS, cluster: CLUSTER },
    java: 'ProducerPerformance (refills one payload array per record) --throughput -1 --producer-props acks=all enable.idempotence=true linger.ms=5 compression.type=' + compression + ' (JVM -Xmx512M, default JIT)',
    kafkajs: 'send() of 1000 messages per call (a Buffer copy of the payload per message: kafkajs keeps them until sent), lz4 through lz4-napi compressFrame (kafkajs has no lz4 built in); default: 5 calls in flight; idempotent: one call at a time (maxInFlightRequests: 1)',
    kafkaEdge: 'one send() per record (the payload array reused, as Java), a .then per record as an application would, yields to the event loop (setImmediate) every 1024 sends, waits when ~200k records are unacknowledged (never reached: see the logged peak)',
    cpu: 'cpu-us/record: send loop only (Java: whole JVM minus a 1-record run); whole process: everything',
    saslSsl: 'kafka-edge-sasl-ssl and java-sasl-ssl: the same runs against the SASL_SSL listener (TLS via node:tls / the JDK, SCRAM-SHA-512, the test CA)',
    // Other engineers' brokers and tests share the 2 cores: records/s moves with their load, CPU per record far less.
    loadAverage1m: { before: round3(loadBefore), after: round3(loadavg()[0]!) },
  }
  const file = writeReport(report('produce', config, results))
  console.log()
  printTable(results, 'kafka-edge')
  const v = (impl: string, metric: string) => results.find((r) => r.impl === impl && r.metric === metric)?.value ?? NaN
  console.log()
  console.log(`targets: records/s vs java ${ratio(v('kafka-edge', 'records/s'), v('java', 'records/s'))} (>= 1.0x); ` +
    `cpu/record vs java ${ratio(v('kafka-edge', 'cpu-us/record'), v('java', 'cpu-us/record'))} (<= 1.5x); ` +
    `records/s vs kafkajs ${ratio(v('kafka-edge', 'records/s'), v('kafkajs', 'records/s'))}, vs kafkajs-idempotent ${ratio(v('kafka-edge', 'records/s'), v('kafkajs-idempotent', 'records/s'))} (>= 5x); ` +
    `SASL_SSL: records/s vs java ${ratio(v('kafka-edge-sasl-ssl', 'records/s'), v('java-sasl-ssl', 'records/s'))} (>= 1.0x), cpu/record vs java ${ratio(v('kafka-edge-sasl-ssl', 'cpu-us/record'), v('java-sasl-ssl', 'cpu-us/record'))}`)
  console.log(`wrote ${file}`)
}

const round3 = (x: number) => Math.round(x * 1000) / 1000
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`

// ---- children -----------------------------------------------------------------------------------

/** The SASL_SSL listener and the settings both clients use on it: SCRAM-SHA-512 as admin, the test CA. */
function secureEndpoint(cluster: import('../test/helpers/kafka.js').Cluster, kafka: typeof import('../test/helpers/kafka.js')) {
  const java = kafka.javaSecurity(cluster, 'SASL_SSL', 'SCRAM-SHA-512')
  return {
    bootstrap: kafka.bootstrapFor(cluster, 'SASL_SSL'),
    edge: {
      'security.protocol': 'SASL_SSL', 'ssl.ca.pem': readFileSync(cluster.tls!.ca, 'utf8'),
      'sasl.mechanism': 'SCRAM-SHA-512', 'sasl.jaas.config': java['sasl.jaas.config']!,
    },
    java: Object.entries(java).map(([k, v]) => `${k}=${v}`),
  }
}

function nodeChild(childJs: string, impl: string, bootstrap: string, topic: string, n: number, compression: string, profile: boolean, security: Record<string, string> | null): Promise<ChildResult> {
  const profDir = join(tmpdir(), 'kafka-edge-bench-prof')
  if (profile) mkdirSync(profDir, { recursive: true })
  const argv = [...NODE_FLAGS, ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []), childJs, '--child', impl, bootstrap, topic, String(n), compression]
  const env = security ? { ...process.env, BENCH_SECURITY: JSON.stringify(security) } : process.env
  return collect(spawn(process.execPath, argv, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] }), impl, (out) => JSON.parse(lastLine(out)) as ChildResult)
}

function javaChild(cp: string, bootstrap: string, topic: string, n: number, compression: string, securityProps: string[]): Promise<ChildResult> {
  const java = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java'
  const argv = [
    '-Xmx512M', `-Dlog4j2.configurationFile=${join(ROOT, 'scripts', 'kafka', 'log4j2-tools.properties')}`, '-cp', cp,
    'org.apache.kafka.tools.ProducerPerformance', '--topic', topic, '--num-records', String(n), '--record-size', String(VALUE_BYTES),
    '--throughput', '-1', '--producer-props', `bootstrap.servers=${bootstrap}`, 'acks=all', 'enable.idempotence=true',
    `compression.type=${compression}`, `linger.ms=${LINGER_MS}`, ...securityProps,
  ]
  // The shell reaps the JVM, then its own cutime+cstime are exactly the JVM's CPU.
  const script = '"$@"; rc=$?; echo "CPUSTAT $(cat /proc/$$/stat)"; exit $rc'
  return collect(spawn('sh', ['-c', script, 'sh', java, ...argv], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] }), 'java', (out) => {
    const total = /(\d+) records sent, ([\d.]+) records\/sec/.exec(out.split('\n').filter((l) => l.includes('records sent')).pop() ?? '')
    const stat = /CPUSTAT .*\) (.*)/.exec(out)
    if (!total || !stat) throw new Error(`cannot parse ProducerPerformance output:\n${out.slice(-2000)}`)
    const fields = stat[1]!.trim().split(/\s+/)
    // After "(comm)": field 3 (state) is index 0, so cutime (16) and cstime (17) are 13 and 14.
    const ticks = Number(fields[13]) + Number(fields[14])
    const records = Number(total[1])
    return { records, ms: (records / Number(total[2])) * 1000, cpuLoopUs: 0, cpuTotalUs: (ticks * 1e6) / 100, errors: 0 }
  })
}

function collect<T>(proc: ReturnType<typeof spawn>, what: string, parse: (stdout: string) => T): Promise<T> {
  return new Promise((resolve, reject) => {
    let out = ''
    proc.stdout!.on('data', (d: Buffer) => { out += d.toString() })
    proc.on('error', reject)
    proc.on('close', (code) => {
      if (code !== 0) return reject(new Error(`${what} exited with ${code}:\n${out.slice(-2000)}`))
      try { resolve(parse(out)) } catch (e) { reject(e) }
    })
  })
}

const lastLine = (s: string) => s.trim().split('\n').pop()!

/**
 * ProducerPerformance's payload: one array, every byte refilled with a random A-Z per record. Java
 * serializes it inside send(); kafka-edge copies it into its batch inside send() too, so both reuse
 * it. kafkajs keeps the records it is given until the send completes, so it gets a copy.
 */
function payloadSource(): () => Uint8Array {
  let x = 0x9e3779b9
  const v = new Uint8Array(VALUE_BYTES)
  return () => {
    for (let j = 0; j < VALUE_BYTES; j++) {
      x ^= x << 13; x ^= x >>> 17; x ^= x << 5
      v[j] = 65 + ((x >>> 0) % 26)
    }
    return v
  }
}

async function child(args: string[]): Promise<void> {
  const [impl, bootstrap, topic, nText, compression] = args as [string, string, string, string, string]
  const n = Number(nText)
  const next = payloadSource()
  // BENCH_GC=1: the child prints its garbage collections by kind (count, ms) to stderr.
  const gc = new Map<string, { n: number; ms: number }>()
  if (process.env.BENCH_GC === '1') {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        const kind = String((e as { detail?: { kind?: number } }).detail?.kind ?? '?')
        const g = gc.get(kind) ?? { n: 0, ms: 0 }
        g.n++
        g.ms += e.duration
        gc.set(kind, g)
      }
    }).observe({ entryTypes: ['gc'] })
  }
  let result: ChildResult
  if (impl.startsWith('kafka-edge')) result = await childEdge(bootstrap, topic, n, compression, next)
  else result = await childKafkajs(impl === 'kafkajs-idempotent', bootstrap, topic, n, compression, next)
  const total = process.cpuUsage()
  result.cpuTotalUs = total.user + total.system
  // perf_hooks kinds: 1 scavenge (minor), 2 mark-sweep-compact (major), 4 incremental marking, 8 weak callbacks.
  if (gc.size > 0) console.error(`  ${impl} gc: ${[...gc].map(([k, g]) => `kind ${k}: ${g.n}x ${g.ms.toFixed(0)} ms`).join(', ')}`)
  process.stdout.write(JSON.stringify(result) + '\n')
  process.exit(0)
}

async function childEdge(bootstrap: string, topic: string, n: number, compression: string, next: () => Uint8Array): Promise<ChildResult> {
  const { createProducer, tcp } = await import('../src/edge/node.js')
  const p = createProducer({
    'bootstrap.servers': bootstrap, transport: tcp(), acks: 'all', 'enable.idempotence': true,
    'compression.type': compression, 'linger.ms': LINGER_MS,
    ...(process.env.BENCH_SECURITY ? JSON.parse(process.env.BENCH_SECURITY) as Record<string, string> : {}),
  } as AnyProducerSettings)
  await p.connect()
  await p.partitionsFor(topic)
  let acked = 0
  let errors = 0
  const ok = () => { acked++ }
  const fail = () => { errors++ }
  const window: Promise<unknown>[] = []
  let maxOutstanding = 0
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  for (let i = 0; i < n; i++) {
    const sent = p.send({ topic, value: next() }).then(ok, fail)
    if ((i & 1023) === 0) {
      if (i - acked - errors > maxOutstanding) maxOutstanding = i - acked - errors
      window.push(sent)
      // Bounded like the Java producer's buffer.memory: wait for the sends of ~200k records ago.
      if (window.length > Number(process.env.BENCH_WINDOW ?? 200)) await window.shift()
      // One thread: the sender, its linger timers and the socket only run when the loop yields (an
      // await of a settled promise does not). Java's sender has its own thread; a Node service gets
      // its records across event-loop turns anyway.
      await new Promise((r) => setImmediate(r))
    }
  }
  await p.flush()
  const ms = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  await p.close()
  if (acked + errors !== n) throw new Error(`kafka-edge: ${n - acked - errors} sends never settled`)
  return { records: n, ms, cpuLoopUs: cpu.user + cpu.system, cpuTotalUs: 0, errors, maxOutstanding }
}

async function childKafkajs(idempotent: boolean, bootstrap: string, topic: string, n: number, compression: string, next: () => Uint8Array): Promise<ChildResult> {
  const require = createRequire(import.meta.url)
  const { Kafka, CompressionTypes, CompressionCodecs, logLevel } = require('kafkajs')
  const lz4 = require('lz4-napi') as { compressFrame(b: Uint8Array): Promise<Buffer>; decompressFrame(b: Uint8Array): Promise<Buffer> }
  // lz4-napi's frames (64 KiB independent blocks, no checksums) are the form Kafka reads.
  CompressionCodecs[CompressionTypes.LZ4] = () => ({
    compress: (encoder: { buffer: Buffer }) => lz4.compressFrame(encoder.buffer),
    decompress: (buffer: Buffer) => lz4.decompressFrame(buffer),
  })
  const kafka = new Kafka({ clientId: 'bench-kafkajs', brokers: bootstrap.split(','), logLevel: logLevel.NOTHING })
  const producer = kafka.producer(idempotent ? { idempotent: true, maxInFlightRequests: 1 } : {})
  await producer.connect()
  const codec = compression === 'lz4' ? CompressionTypes.LZ4 : CompressionTypes.None
  const PER_CALL = 1000
  const concurrency = idempotent ? 1 : 5
  let errors = 0
  let sent = 0
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const worker = async () => {
    while (sent < n) {
      const count = Math.min(PER_CALL, n - sent)
      sent += count
      const messages = new Array(count)
      for (let j = 0; j < count; j++) messages[j] = { value: Buffer.from(next()) }
      try { await producer.send({ topic, messages, acks: -1, compression: codec }) } catch { errors += count }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  const ms = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  await producer.disconnect()
  return { records: n, ms, cpuLoopUs: cpu.user + cpu.system, cpuTotalUs: 0, errors }
}

// ---- profile summary ----------------------------------------------------------------------------

function latestProfile(): string {
  const dir = join(tmpdir(), 'kafka-edge-bench-prof')
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(dir, f))
  return files.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]!
}

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }

/** Self time per function from a .cpuprofile, top `k`, as a printable table. */
function topFunctions(file: string, k: number): string {
  const prof = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }
  const byId = new Map(prof.nodes.map((nd) => [nd.id, nd]))
  const self = new Map<string, number>()
  let total = 0
  for (let i = 0; i < prof.samples.length; i++) {
    const nd = byId.get(prof.samples[i]!)!
    const dt = prof.timeDeltas[i] ?? 0
    total += dt
    const f = nd.callFrame
    const name = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(src|node_modules)\//, '$1/')}:${f.lineNumber + 1}`
    self.set(name, (self.get(name) ?? 0) + dt)
  }
  const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, k)
  return [`profile ${file} (self time, ${(total / 1000).toFixed(0)} ms sampled)`, ...rows.map(([name, us]) => `${((us / total) * 100).toFixed(1).padStart(5)}%  ${name}`)].join('\n')
}

// Run as a compiled child: `node <dist>/bench/produce.js --child ...`.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await produce(process.argv.slice(2))
