// npm run bench -- bridge: the relay's cost. Producer throughput through the relay vs straight TCP
// to the same broker in the same run, at full speed and the `bench -- produce` settings (its child,
// under the same Node 22: 100-byte values, acks=all, idempotent, lz4, linger 5 ms, one send() per
// record), the relay's CPU per MB and per record at that rate, the latency the relay adds per
// Produce request at that speed, and 1,000 concurrent WebSocket connections producing through one relay (its RSS and errors).
//
// The relay runs as its own process (`bin/kafka-edge.js bridge`), as operators run it, so its CPU
// and RSS are its own; the full-speed producers are children, the others run here.
//   BENCH_RECORDS (full-speed run, default 1,000,000), BENCH_ROUNDS (default 3), BENCH_CONNECTIONS (default 1000;
//   0 skips the load part, for quick full-speed runs while working on the relay), BENCH_RELAY_WARMUP
//   (full-speed runs through the relay before the measured rounds, default 1: an operator's relay
//   runs for hours, and V8 optimizes its per-request code only after a few thousand requests; 0 measures it cold),
//   BENCH_RELAY_NODE (the Node binary that runs the relay, here and in `bench -- relay-cpu`; default: the bench's own),
//   BENCH_RELAY_NODE_FLAGS (flags for it, space-separated, e.g. `--initial-old-space-size=64`: docs/relay.md#production),
//   BENCH_CPU_PROF=1 (after the rounds, one more producer run direct and one through the relay under
//   node --cpu-prof, and the top self-time frames of each: where the producer's extra CPU per record
//   through a WebSocket goes)
// Each round also runs the producer through bench/relay-pipe.mjs (the relay's Node and flags), right
// after the relay: the floor, what moving the bytes over ws and node:net costs with no relay logic.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { writeFileSync, mkdtempSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import WebSocket from 'ws'
import { signToken } from '../src/bridge/token.js'
import { createProducer, websocket, type Producer } from '../src/edge/index.js'
import { createTopic, ensureCluster, uniqueTopic, type Cluster } from '../test/helpers/kafka.js'
import { printTable, report, writeReport, type BenchResult, procStat } from './lib.js'

export const SECRET = 'bench-secret-0123456789-abcdefghijklmnop'
const RECORDS = Number(process.env.BENCH_RECORDS ?? 1_000_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const VALUE_BYTES = 100
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 1000)
const RELAY_WARMUP = Number(process.env.BENCH_RELAY_WARMUP ?? 1)
export const RELAY_NODE = process.env.BENCH_RELAY_NODE ?? process.execPath
export const RELAY_NODE_FLAGS = (process.env.BENCH_RELAY_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean)
export const relayNodeVersion = () => [spawnSync(RELAY_NODE, ['--version'], { encoding: 'utf8' }).stdout.trim(), ...RELAY_NODE_FLAGS].join(' ')

export interface Relay { child: ChildProcess; url: string; http: string; pid: number }

/** The relay as operators run it: its own process, `bin/kafka-edge.js bridge --config`. */
export async function startRelayProcess(cluster: Cluster, limits: Record<string, number> = {}): Promise<Relay> {
  const dir = mkdtempSync(join(tmpdir(), 'kafka-edge-bench-'))
  const config = join(dir, 'bridge.json')
  writeFileSync(config, JSON.stringify({
    listen: '127.0.0.1:0', brokers: [cluster.saslBootstrap],
    sasl: { mechanism: 'SCRAM-SHA-512', username: 'relay', passwordEnv: 'BENCH_SASL_PASSWORD' },
    auth: { secretEnv: 'KAFKA_EDGE_BRIDGE_SECRET', audience: 'bench' },
    limits: {
      connectionsPerIp: 10_000, connectionsPerPrincipal: 10_000, framesPerSec: 0, bytesPerSec: 0, principalFramesPerSec: 0, principalBytesPerSec: 0,
      initProducerIdsPerMinutePerIp: 0, ...limits,
    },
    log: { level: 'info' },
  }))
  // BENCH_RELAY_PROFILE=<dir>: the relay writes a V8 CPU profile there when it exits.
  const profile = process.env.BENCH_RELAY_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_RELAY_PROFILE] : []
  const child = spawn(RELAY_NODE, [...RELAY_NODE_FLAGS, ...profile, 'bin/kafka-edge.js', 'bridge', '--config', config], {
    env: { ...process.env, KAFKA_EDGE_BRIDGE_SECRET: SECRET, BENCH_SASL_PASSWORD: 'relay-secret' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const url = await listeningUrl(child)
  return { child, url, http: url.replace(/^ws/, 'http').replace(/\/kafka$/, ''), pid: child.pid! }
}

/** The URL a relay (or bench/relay-pipe.mjs) logs once it listens; its later output keeps draining. */
export function listeningUrl(child: ChildProcess): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let buf = ''
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString()
      const m = /"event":"listening".*?"url":"([^"]+)"/.exec(buf)
      if (m) resolve(m[1]!)
      if (buf.length > 100_000) buf = buf.slice(-10_000)
    })
    child.once('exit', (code) => reject(new Error(`${child.spawnargs.slice(-3).join(' ')} exited ${code}`)))
  })
}

/** bench/relay-pipe.mjs on the relay's Node and flags: the floor, a pipe on the relay's stack that does nothing a relay could skip. */
export async function startPipe(broker: string): Promise<{ child: ChildProcess; url: string; pid: number }> {
  const child = spawn(RELAY_NODE, [...RELAY_NODE_FLAGS, join('bench', 'relay-pipe.mjs'), broker], { stdio: ['ignore', 'pipe', 'inherit'] })
  return { child, url: await listeningUrl(child), pid: child.pid! }
}

/** A process's user and system CPU in ms (Linux /proc). */
export function cpuSplitMs(pid: number): { user: number; system: number } {
  const p = procStat(`/proc/${pid}/stat`)
  return { user: p.userUs / 1000, system: p.systemUs / 1000 }
}

/** user+system CPU of a process in ms. */
export function cpuMs(pid: number): number {
  const { user, system } = cpuSplitMs(pid)
  return user + system
}

async function relayMetric(r: Relay, name: string): Promise<number> {
  const text = await (await fetch(`${r.http}/metrics`)).text()
  let sum = 0
  for (const line of text.split('\n')) if (line.startsWith(name) && !line.startsWith('#')) sum += Number(line.split(' ').pop())
  return sum
}

const tokenFor = (sub: string) => signToken({ sub, aud: 'bench', exp: Math.floor(Date.now() / 1000) + 3600, topics: ['*'] }, SECRET)

function viaRelay(r: Relay, extra: Record<string, unknown> = {}, sub = 'bench'): Producer {
  return createProducer({ 'bootstrap.servers': 'relay:443', transport: websocket({ url: r.url, token: tokenFor(sub), WebSocket: WebSocket as never }), ...extra })
}

async function load(r: Relay, topic: string): Promise<BenchResult[]> {
  // One WebSocket per producer: the bootstrap link serves metadata and, on a 1-node cluster, the
  // leader link is a second one; CONNECTIONS/2 producers give CONNECTIONS concurrent WebSockets.
  const producers = Array.from({ length: CONNECTIONS / 2 }, (_, i) => viaRelay(r, { 'linger.ms': 20 }, `load-${i}`))
  let peakRss = 0
  let peakConns = 0
  const sample = setInterval(() => {
    void relayMetric(r, 'kafka_edge_bridge_process_resident_memory_bytes').then((v) => { peakRss = Math.max(peakRss, v) })
    void relayMetric(r, 'kafka_edge_bridge_connections_active').then((v) => { peakConns = Math.max(peakConns, v) })
  }, 100)
  const t0 = performance.now()
  const PER = 50
  const results = await Promise.allSettled(producers.flatMap((p, i) => Array.from({ length: PER }, (_, j) => p.send({ topic, value: `${i}:${j}` }))))
  const ms = performance.now() - t0
  // Hold every connection open while the sampler catches the peak.
  await new Promise((res) => setTimeout(res, 300))
  clearInterval(sample)
  await Promise.all(producers.map((p) => p.close()))
  const errors = results.filter((x) => x.status === 'rejected').length
  console.log(`load: ${producers.length} producers, ${peakConns} peak relay connections, ${results.length} records in ${Math.round(ms)} ms, ${errors} errors, relay RSS peak ${(peakRss / 1e6).toFixed(0)} MB`)
  return [
    { impl: 'kafka-edge-relay', metric: 'load: peak concurrent connections', unit: 'connections', value: peakConns },
    { impl: 'kafka-edge-relay', metric: 'load: send errors', unit: 'errors', value: errors },
    { impl: 'kafka-edge-relay', metric: 'load: relay RSS peak', unit: 'MB', value: Math.round(peakRss / 1e5) / 10 },
    { impl: 'kafka-edge-relay', metric: 'load: records/s', unit: 'records/s', value: results.length / (ms / 1000) },
  ]
}

export default async function bridge(): Promise<void> {
  const peers = await import('./peers.js')
  peers.ensurePeers()
  const { compileChild, latestProfile, nodeChild, topFunctions } = await import('./produce.js')
  const childJs = compileChild()
  // As in the produce suite: the broker must not be the bottleneck.
  process.env.KAFKA_EDGE_BROKER_JVM_OPTS ??= '-Xms1g -Xmx1g -XX:+UseParallelGC'
  const cluster = await ensureCluster({ nodes: 1, name: 'relay', sasl: true })
  const relay = await startRelayProcess(cluster)
  const pipe = await startPipe(cluster.bootstrap)
  const loadBefore = loadavg()
  try {
    const topic = uniqueTopic('bench-relay')
    await createTopic(cluster, topic, { partitions: 6 })
    const settings = { valueBytes: VALUE_BYTES, compression: 'lz4' }
    const full = (impl: string, bootstrap: string, env: Record<string, string>) =>
      nodeChild(peers.NODE22, childJs, impl, bootstrap, topic, RECORDS, settings, false, { BENCH_REQUEST_LATENCY: '1', ...env })
    await full('kafka-edge', cluster.bootstrap, {}) // warms the broker
    const viaRelayEnv = { BENCH_RELAY_URL: relay.url, BENCH_RELAY_TOKEN: tokenFor('bench') }
    const viaPipeEnv = { BENCH_RELAY_URL: pipe.url, BENCH_RELAY_TOKEN: tokenFor('bench') }
    // Each round reads the relay's byte counter over HTTP. After a relay's first plain HTTP request
    // (this scrape, as a Prometheus scrape soon after start) V8 drops and recompiles some sixty
    // optimized functions of the WebSocket path: once in the relay's life, so before the warm-up,
    // not inside the first measured round (docs/benchmarks.md).
    await relayMetric(relay, 'kafka_edge_bridge_bytes_total')
    for (let i = 0; i < RELAY_WARMUP; i++) {
      const cpu0 = cpuMs(relay.pid)
      const w = await full('kafka-edge-relay', 'relay:443', viaRelayEnv)
      console.log(`relay warm-up ${i + 1}: ${Math.round(w.records / (w.ms / 1000)).toLocaleString()} records/s, relay ${((cpuMs(relay.pid) - cpu0) * 1000 / w.records).toFixed(2)} cpu-us/record (not counted)`)
      await full('kafka-edge-relay', 'relay:443', viaPipeEnv)
    }
    let direct = { rate: 0, cpu: 0 }
    let viaWs = { rate: 0, cpu: 0 }
    let relayCpu = 0
    let relaySystem = 0
    let relayBytes = 0
    let relayRecords = 0
    const floor = { rate: 0, cpuMs: 0, systemMs: 0, records: 0, rounds: [] as number[] }
    // Per round, each path's Produce round trips at full speed (p50, p99): what the relay adds is
    // judged on the median round, so one noisy round on this shared machine decides nothing. The
    // pipe's round trips in the same round tell what the WebSocket hop itself adds (a second
    // process and ws on both ends, on the same 2 cores), which no relay logic could remove.
    type Latency = { p50: number; p99: number }
    const added: Array<{ p50: number; p99: number; direct: Latency; relay: Latency; pipe: Latency; relayCpuUsPerRecord: number }> = []
    for (let i = 0; i < ROUNDS; i++) {
      const d = await full('kafka-edge', cluster.bootstrap, {})
      const dRate = d.records / (d.ms / 1000)
      if (dRate > direct.rate) direct = { rate: dRate, cpu: d.cpuLoopUs / d.records }
      const cpu0 = cpuSplitMs(relay.pid)
      const b0 = await relayMetric(relay, 'kafka_edge_bridge_bytes_total')
      const r = await full('kafka-edge-relay', 'relay:443', viaRelayEnv)
      const cpu1 = cpuSplitMs(relay.pid)
      const roundCpu = cpu1.user + cpu1.system - cpu0.user - cpu0.system
      relayCpu += roundCpu
      relaySystem += cpu1.system - cpu0.system
      relayBytes += (await relayMetric(relay, 'kafka_edge_bridge_bytes_total')) - b0
      relayRecords += r.records
      const rRate = r.records / (r.ms / 1000)
      if (rRate > viaWs.rate) viaWs = { rate: rRate, cpu: r.cpuLoopUs / r.records }
      const dL = d.produceLatencyMs!
      const rL = r.produceLatencyMs!
      const relayCpuUsPerRecord = (roundCpu * 1000) / r.records
      // The floor in the same round, right after the relay: the same run through the pipe.
      const pipeCpu0 = cpuSplitMs(pipe.pid)
      const f = await full('kafka-edge-relay', 'relay:443', viaPipeEnv)
      const pipeCpu1 = cpuSplitMs(pipe.pid)
      const pipeCpu = pipeCpu1.user + pipeCpu1.system - pipeCpu0.user - pipeCpu0.system
      floor.cpuMs += pipeCpu
      floor.systemMs += pipeCpu1.system - pipeCpu0.system
      floor.records += f.records
      floor.rate = Math.max(floor.rate, f.records / (f.ms / 1000))
      floor.rounds.push(Math.round(pipeCpu * 1000 / f.records * 1000) / 1000)
      const fL = f.produceLatencyMs!
      added.push({ p50: rL.p50 - dL.p50, p99: rL.p99 - dL.p99, direct: dL, relay: rL, pipe: fL, relayCpuUsPerRecord })
      console.log(`round ${i + 1}: direct ${Math.round(dRate).toLocaleString()} records/s, relay ${Math.round(rRate).toLocaleString()} records/s (${(rRate / dRate).toFixed(2)}x); `
        + `Produce p50/p99 direct ${dL.p50.toFixed(2)}/${dL.p99.toFixed(2)} ms, relay ${rL.p50.toFixed(2)}/${rL.p99.toFixed(2)} ms, pipe ${fL.p50.toFixed(2)}/${fL.p99.toFixed(2)} ms; `
        + `relay ${relayCpuUsPerRecord.toFixed(2)} cpu-us/record (${((cpu1.system - cpu0.system) * 1000 / r.records).toFixed(2)} system); `
        + `floor (relay-pipe) ${Math.round(f.records / (f.ms / 1000)).toLocaleString()} records/s, ${(pipeCpu * 1000 / f.records).toFixed(2)} cpu-us/record (${((pipeCpu1.system - pipeCpu0.system) * 1000 / f.records).toFixed(2)} system)`)
    }
    const median = added.sort((x, y) => x.p99 - y.p99)[Math.floor(added.length / 2)]!
    if (process.env.BENCH_CPU_PROF === '1') {
      for (const [path, impl, bootstrap, env] of [['direct', 'kafka-edge', cluster.bootstrap, {}], ['through the relay', 'kafka-edge-relay', 'relay:443', viaRelayEnv]] as const) {
        const p = await nodeChild(peers.NODE22, childJs, impl, bootstrap, topic, RECORDS, settings, true, { BENCH_REQUEST_LATENCY: '1', ...env })
        console.log(`profiled producer, ${path}: ${Math.round(p.records / (p.ms / 1000)).toLocaleString()} records/s, ${(p.cpuLoopUs / p.records).toFixed(2)} cpu-us/record (profiler included)`)
        console.log(topFunctions(latestProfile(), 25))
      }
    }
    const bytesPerRecord = relayBytes / relayRecords
    const results: BenchResult[] = [
      { impl: 'kafka-edge-direct', metric: 'records/s', unit: 'records/s', value: Math.round(direct.rate) },
      { impl: 'kafka-edge-relay', metric: 'records/s', unit: 'records/s', value: Math.round(viaWs.rate) },
      { impl: 'kafka-edge-relay', metric: 'relay/direct throughput', unit: 'ratio', value: viaWs.rate / direct.rate },
      { impl: 'kafka-edge-direct', metric: 'producer cpu-us/record', unit: 'us', value: direct.cpu },
      { impl: 'kafka-edge-relay', metric: 'producer cpu-us/record', unit: 'us', value: viaWs.cpu },
      { impl: 'kafka-edge-relay', metric: 'relay cpu-us/record', unit: 'us', value: (relayCpu * 1000) / relayRecords },
      { impl: 'kafka-edge-relay', metric: 'relay system cpu-us/record', unit: 'us', value: (relaySystem * 1000) / relayRecords },
      { impl: 'kafka-edge-direct', metric: 'p50-ms', unit: 'ms', value: median.direct.p50 },
      { impl: 'kafka-edge-relay', metric: 'p50-ms', unit: 'ms', value: median.relay.p50 },
      { impl: 'kafka-edge-direct', metric: 'p99-ms', unit: 'ms', value: median.direct.p99 },
      { impl: 'kafka-edge-relay', metric: 'p99-ms', unit: 'ms', value: median.relay.p99 },
      { impl: 'kafka-edge-relay', metric: 'added p50-ms', unit: 'ms', value: median.p50 },
      { impl: 'kafka-edge-relay', metric: 'added p99-ms', unit: 'ms', value: median.p99 },
      { impl: 'relay-pipe (floor)', metric: 'p50-ms', unit: 'ms', value: median.pipe.p50 },
      { impl: 'relay-pipe (floor)', metric: 'p99-ms', unit: 'ms', value: median.pipe.p99 },
      { impl: 'relay-pipe (floor)', metric: 'added p99-ms', unit: 'ms', value: median.pipe.p99 - median.direct.p99 },
      { impl: 'kafka-edge-relay', metric: 'relay cpu-ms/MB', unit: 'cpu-ms/MB', value: relayCpu / (relayBytes / 1e6) },
      { impl: 'relay-pipe (floor)', metric: 'records/s', unit: 'records/s', value: Math.round(floor.rate) },
      { impl: 'relay-pipe (floor)', metric: 'relay cpu-us/record', unit: 'us', value: (floor.cpuMs * 1000) / floor.records },
      { impl: 'relay-pipe (floor)', metric: 'relay system cpu-us/record', unit: 'us', value: (floor.systemMs * 1000) / floor.records },
      { impl: 'relay-pipe (floor)', metric: 'relay cpu-ms/MB', unit: 'cpu-ms/MB', value: floor.cpuMs / (floor.records * bytesPerRecord / 1e6) },
      ...(CONNECTIONS > 0 ? await load(relay, topic) : []),
    ]
    printTable(results, 'kafka-edge-direct')
    const file = writeReport(report('bridge', {
      records: RECORDS, rounds: ROUNDS, kept: 'best records/s round per path; relay CPU summed over all relay rounds',
      fullSpeed: 'the produce suite\'s kafka-edge child under Node 22 (bench/peers): 100-byte random A-Z values, acks=all, enable.idempotence=true, compression lz4, linger.ms 5, one send() per record; the relay path uses websocket() over the ws package, with bufferutil (native masking) installed as for the relay',
      relayCpuPerMB: 'relay process user+system CPU during the relay runs / kafka_edge_bridge_bytes_total over them (bytes on the WebSocket side, lz4-compressed batches); the system (kernel) part of the relay\'s and the pipe\'s CPU per record is reported apart',
      latency: 'each Produce request of the full-speed runs, from its write to the transport to its response (matched by correlation id); p50/p99 per path and round; the added p50/p99 are the relay\'s minus the direct path\'s in the same round, and the round reported is the median by added p99; the pipe\'s (the same WebSocket hop with no relay logic, right after the relay in each round) in the same round, its added p99 against the same direct run',
      latencyRounds: added.map((x) => ({
        direct: x.direct, relay: x.relay, pipe: x.pipe, addedP50: x.p50, addedP99: x.p99, pipeAddedP99: x.pipe.p99 - x.direct.p99, relayCpuUsPerRecord: x.relayCpuUsPerRecord,
      })),
      relayWarmup: `${RELAY_WARMUP} full-speed run(s) through the relay before the measured rounds, not counted`,
      floor: `bench/relay-pipe.mjs on the relay's Node and flags: each WebSocket message written to the broker's PLAINTEXT listener, the broker's stream split into one message per frame, nothing else (no token, inspection, limits, SASL or backpressure); a warm-up run after each of the relay's, then in every round right after the relay's run, CPU summed over the rounds; its ms/MB uses the relay rounds' bytes per record`,
      floorRounds: floor.rounds,
      loadConnections: CONNECTIONS, relay: 'separate process, SCRAM-SHA-512 to the SASL listener; direct = PLAINTEXT listener of the same broker',
      node: spawnSync(peers.NODE22, ['--version'], { encoding: 'utf8' }).stdout.trim(),
      relayNode: relayNodeVersion(),
      loadAverage: { before: loadBefore, after: loadavg() },
    }, results))
    console.log(`wrote ${file}`)
  } finally {
    for (const p of [relay.child, pipe.child]) {
      const exited = new Promise((r) => p.once('exit', r))
      p.kill('SIGTERM')
      await exited
    }
  }
}
