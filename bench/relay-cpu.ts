// npm run bench -- relay-cpu: the relay's own cost, without a broker or a producer on the same cores.
// The relay process (`bin/kafka-edge.js bridge`, as operators run it) sits between a ws client that
// replays one Produce v11 request (6 partitions of 14 KB incompressible batches, 84 KB in all, about
// what the full-speed producer of `bench -- bridge` sends per request) and a stub broker that answers
// each at once. Reported:
//   - relay CPU (user+system, /proc) per request and per MB with 5 requests in flight (saturated), and
//     with requests paced at BENCH_RATE per second (default 170, the request rate of `bench -- bridge`
//     on this machine): the same work costs more per request when every request wakes the process;
//   - with BENCH_CALLGRIND=1, user-space instructions per request under callgrind: the relay's run with
//     1,200 requests minus its run with 200, divided by 1,000, saturated; and the same paced at
//     BENCH_CALLGRIND_RATE per second (default 50: under callgrind the relay runs some 50 times slower,
//     and at 50/s it still sleeps between requests, as it does at 170/s natively), 600 minus 100
//     requests. The neighbours cannot move these figures. BENCH_WARMUP=<n> (default 4,000) sends n
//     requests first in every run, native and callgrind, so that the code compiled while the relay warms up drops out too.
//   - read and write system calls, context switches and system (kernel) CPU per request (/proc, no tracer) in the same rounds;
//   - the same for bench/relay-pipe.mjs (the floor: a pipe on the relay's Node, ws and node:net
//     that forwards the bytes and nothing else), callgrind counts included, so the relay's own work is the difference.
// BENCH_RELAY_BIN=<path to kafka-edge.js> measures another build (e.g. a checkout of main) the same way.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import WebSocket from 'ws'
import { signToken } from '../src/bridge/token.js'
import { Produce, encodeRequest, encodeResponse } from '../src/edge/protocol/index.js'
import { RELAY_NODE, RELAY_NODE_FLAGS, SECRET, cpuMs, cpuSplitMs, listeningUrl, relayNodeVersion, startPipe } from './bridge.js'
import { printTable, report, writeReport, type BenchResult } from './lib.js'

const VERSION = 11
const PARTITIONS = 6
const BATCH_BYTES = 14_000
const RATE = Number(process.env.BENCH_RATE ?? 170)
const CALLGRIND_RATE = Number(process.env.BENCH_CALLGRIND_RATE ?? 50)
// Node 22's V8 has Maglev off and moves a function to TurboFan after 3,000 calls
// (--invocation-count-for-turbofan): with fewer warm-up requests, the relay's per-request functions
// still run as baseline code in the counted window and the count is mostly their tier-up.
const WARMUP = Number(process.env.BENCH_WARMUP ?? process.env.BENCH_CALLGRIND_WARMUP ?? 4000)
const BIN = process.env.BENCH_RELAY_BIN ?? 'bin/kafka-edge.js'

/** The broker's answer to every request: a 6-partition success (its correlation id patched in per request). */
const ANSWER = Buffer.from(encodeResponse(Produce, VERSION, 0, {
  responses: [{ name: 'relay-cpu', partitionResponses: Array.from({ length: PARTITIONS }, (_, index) => ({ index, errorCode: 0, baseOffset: 0n, logAppendTimeMs: -1n, logStartOffset: 0n, recordErrors: [], errorMessage: null, currentLeader: null })) }],
  throttleTimeMs: 0, nodeEndpoints: [],
}))

function stubBroker(): Promise<Server> {
  const server = createServer((s) => {
    // A relay stopped mid-run may reset its connection; that ends this socket, not the bench.
    s.on('error', () => s.destroy())
    let buf: Buffer = Buffer.alloc(0)
    s.on('data', (chunk: Buffer) => {
      buf = buf.length > 0 ? Buffer.concat([buf, chunk]) : chunk
      const out: Buffer[] = []
      while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
        const a = Buffer.from(ANSWER)
        a.writeInt32BE(buf.readInt32BE(8), 4)
        out.push(a)
        buf = buf.subarray(4 + buf.readInt32BE(0))
      }
      if (out.length > 0) s.write(Buffer.concat(out))
    })
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}

/** The relay, pointed at the stub; under callgrind when `callgrindOut` names the output file. */
async function startRelay(brokerPort: number, callgrindOut?: string): Promise<{ child: ChildProcess; url: string }> {
  const config = join(mkdtempSync(join(tmpdir(), 'kafka-edge-relay-cpu-')), 'bridge.json')
  writeFileSync(config, JSON.stringify({
    listen: '127.0.0.1:0', brokers: [`127.0.0.1:${brokerPort}`], auth: { secretEnv: 'KAFKA_EDGE_BRIDGE_SECRET', audience: 'bench' },
    limits: { framesPerSec: 0, bytesPerSec: 0, principalFramesPerSec: 0, principalBytesPerSec: 0 }, log: { level: 'info' },
  }))
  const argv = [BIN, 'bridge', '--config', config]
  const env = { ...process.env, KAFKA_EDGE_BRIDGE_SECRET: SECRET }
  // --predictable: V8's background threads off, so two runs count the same instructions.
  const child = callgrindOut
    ? spawn('valgrind', ['--tool=callgrind', '--smc-check=all-non-file', `--callgrind-out-file=${callgrindOut}`, RELAY_NODE, ...RELAY_NODE_FLAGS, '--predictable', ...argv], { env, stdio: ['ignore', 'pipe', 'ignore'] })
    : spawn(RELAY_NODE, [...RELAY_NODE_FLAGS, ...argv], { env, stdio: ['ignore', 'pipe', 'inherit'] })
  return { child, url: await listeningUrl(child) }
}

async function stopRelay(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r))
  child.kill('SIGTERM')
  await exited
}

interface Client { frameBytes: number; run(n: number, pacedPerSec: number): Promise<void>; close(): void }

async function client(url: string): Promise<Client> {
  const batch = () => {
    const b = randomBytes(BATCH_BYTES)
    b.fill(0, 0, 61)
    b.writeInt32BE(BATCH_BYTES - 12, 8)
    b[16] = 2 // magic; producer id -1 (non-idempotent): nothing to bind
    b.writeBigInt64BE(-1n, 43)
    return b
  }
  const frame = Buffer.from(encodeRequest(Produce, VERSION, 0, 'relay-cpu', {
    transactionalId: null, acks: -1, timeoutMs: 30_000,
    topicData: [{ name: 'relay-cpu', partitionData: Array.from({ length: PARTITIONS }, (_, index) => ({ index, records: batch() })) }],
  }))
  const token = signToken({ sub: 'relay-cpu', aud: 'bench', exp: Math.floor(Date.now() / 1000) + 3600, topics: ['*'] }, SECRET)
  const ws = new WebSocket(url, ['kafka-edge.v1', `kafka-edge.bearer.${token}`])
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject) })
  let correlationId = 1
  const sendOne = () => {
    const f = Buffer.from(frame)
    f.writeInt32BE(correlationId++, 8)
    ws.send(f)
  }
  return {
    frameBytes: frame.length,
    close: () => ws.close(),
    run: (n, pacedPerSec) => new Promise<void>((resolve) => {
      let sent = 0
      let answered = 0
      const onMessage = () => {
        if (++answered === n) { ws.off('message', onMessage); resolve(); return }
        if (pacedPerSec === 0 && sent < n) { sendOne(); sent++ }
      }
      ws.on('message', onMessage)
      if (pacedPerSec > 0) {
        const timer = setInterval(() => { if (sent < n) { sendOne(); sent++ } else clearInterval(timer) }, 1000 / pacedPerSec)
      } else for (; sent < Math.min(5, n); sent++) sendOne()
    }),
  }
}

/**
 * The kernel's side of a process, from /proc without a tracer: read and write system calls
 * (/proc/<pid>/io syscr and syscw, readv and writev included) and context switches (voluntary: it
 * slept waiting for I/O; involuntary: it was preempted), and its CPU time in the kernel (stat's stime).
 */
function kernelCounters(pid: number): { reads: number; writes: number; switches: number; systemMs: number } {
  const field = (text: string, name: string) => Number(new RegExp(`^${name}:\\s*(\\d+)`, 'm').exec(text)?.[1] ?? NaN)
  const io = readFileSync(`/proc/${pid}/io`, 'utf8')
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return { reads: field(io, 'syscr'), writes: field(io, 'syscw'), switches: field(status, 'voluntary_ctxt_switches') + field(status, 'nonvoluntary_ctxt_switches'), systemMs: cpuSplitMs(pid).system }
}

/** The kernel counters per request; systemUs is the request's system CPU in µs. */
interface Kernel { reads: number; writes: number; switches: number; systemUs: number }

interface Measured { us: number; frameBytes: number; load: number; kernel: Kernel }
/** Relay CPU over `n` requests after a warm-up, best of `rounds`; the kernel counters per request of that round. */
async function cpuPerRequest(brokerPort: number, n: number, pacedPerSec: number, rounds: number, pipe = false): Promise<Measured> {
  const relay = pipe ? await startPipe(`127.0.0.1:${brokerPort}`) : await startRelay(brokerPort)
  try {
    const c = await client(relay.url)
    // Past V8's 3,000-call tier-up (WARMUP's comment): paced, fewer requests measured the relay's baseline code.
    await c.run(WARMUP, pacedPerSec)
    let best = Infinity
    let kernel: Kernel = { reads: NaN, writes: NaN, switches: NaN, systemUs: NaN }
    const load = loadavg()[0]!
    const pid = relay.child.pid!
    for (let i = 0; i < rounds; i++) {
      const cpu0 = cpuMs(pid)
      const k0 = kernelCounters(pid)
      await c.run(n, pacedPerSec)
      const us = ((cpuMs(pid) - cpu0) * 1000) / n
      const k1 = kernelCounters(pid)
      if (us < best) {
        best = us
        const per = (a: number, b: number) => (b - a) / n
        kernel = { reads: per(k0.reads, k1.reads), writes: per(k0.writes, k1.writes), switches: per(k0.switches, k1.switches), systemUs: per(k0.systemMs, k1.systemMs) * 1000 }
      }
    }
    c.close()
    return { us: best, frameBytes: c.frameBytes, load, kernel }
  } finally { await stopRelay(relay.child) }
}

/** The pipe under callgrind, with the relay's flags and --predictable. */
async function startPipeCallgrind(brokerPort: number, callgrindOut: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn('valgrind', ['--tool=callgrind', '--smc-check=all-non-file', `--callgrind-out-file=${callgrindOut}`, RELAY_NODE, ...RELAY_NODE_FLAGS, '--predictable',
    join('bench', 'relay-pipe.mjs'), `127.0.0.1:${brokerPort}`], { stdio: ['ignore', 'pipe', 'ignore'] })
  return { child, url: await listeningUrl(child) }
}

/**
 * (Ir(long) - Ir(short)) / (long - short) of the relay, or of the pipe. The long run's callgrind file
 * is kept and its path printed: `callgrind_annotate` of the relay's and the pipe's says in which of
 * V8's, Node's and libc's functions the relay spends what the pipe does not.
 */
async function callgrindPerRequest(brokerPort: number, pacedPerSec: number, short: number, long: number, pipe = false): Promise<number> {
  const total = async (n: number): Promise<number> => {
    const out = join(mkdtempSync(join(tmpdir(), 'kafka-edge-relay-callgrind-')), 'callgrind.out')
    const relay = pipe ? await startPipeCallgrind(brokerPort, out) : await startRelay(brokerPort, out)
    try {
      const c = await client(relay.url)
      if (WARMUP > 0) await c.run(WARMUP, pacedPerSec)
      await c.run(n, pacedPerSec)
      c.close()
    } finally { await stopRelay(relay.child) }
    const m = /^(?:summary|totals): (\d+)/m.exec(readFileSync(out, 'utf8'))
    if (!m) throw new Error(`no instruction total in ${out}`)
    if (n === long) console.log(`${pipe ? 'pipe' : 'relay'}${pacedPerSec > 0 ? ` paced ${pacedPerSec}/s` : ' saturated'}, ${n} requests: ${out}`)
    return Number(m[1])
  }
  return (await total(long) - await total(short)) / (long - short)
}

export default async function relayCpu(): Promise<void> {
  const broker = await stubBroker()
  const port = (broker.address() as { port: number }).port
  try {
    const loadBefore = loadavg()
    const saturated = await cpuPerRequest(port, 5000, 0, 3)
    const paced = await cpuPerRequest(port, 1000, RATE, 2)
    const pipeSaturated = await cpuPerRequest(port, 5000, 0, 3, true)
    const pipePaced = await cpuPerRequest(port, 1000, RATE, 2, true)
    // Bytes on the WebSocket side, as kafka_edge_bridge_bytes_total counts them: request and answer frames.
    const mbPerRequest = (saturated.frameBytes + ANSWER.length) / 1e6
    const results: BenchResult[] = [
      { impl: 'relay-saturated', metric: 'relay cpu-us/request', unit: 'us', value: saturated.us },
      { impl: 'relay-saturated', metric: 'relay cpu-ms/MB', unit: 'cpu-ms/MB', value: saturated.us / 1000 / mbPerRequest },
      { impl: `relay-paced-${RATE}`, metric: 'relay cpu-us/request', unit: 'us', value: paced.us },
      { impl: `relay-paced-${RATE}`, metric: 'relay cpu-ms/MB', unit: 'cpu-ms/MB', value: paced.us / 1000 / mbPerRequest },
      { impl: 'pipe-saturated (floor)', metric: 'relay cpu-us/request', unit: 'us', value: pipeSaturated.us },
      { impl: 'pipe-saturated (floor)', metric: 'relay cpu-ms/MB', unit: 'cpu-ms/MB', value: pipeSaturated.us / 1000 / mbPerRequest },
      { impl: `pipe-paced-${RATE} (floor)`, metric: 'relay cpu-us/request', unit: 'us', value: pipePaced.us },
      { impl: `pipe-paced-${RATE} (floor)`, metric: 'relay cpu-ms/MB', unit: 'cpu-ms/MB', value: pipePaced.us / 1000 / mbPerRequest },
    ]
    const runs = [['relay-saturated', saturated], [`relay-paced-${RATE}`, paced], ['pipe-saturated (floor)', pipeSaturated], [`pipe-paced-${RATE} (floor)`, pipePaced]] as const
    for (const [impl, r] of runs) {
      results.push({ impl, metric: 'read system calls/request', unit: 'calls', value: r.kernel.reads })
      results.push({ impl, metric: 'write system calls/request', unit: 'calls', value: r.kernel.writes })
      results.push({ impl, metric: 'context switches/request', unit: 'switches', value: r.kernel.switches })
      results.push({ impl, metric: 'system cpu-us/request', unit: 'us', value: r.kernel.systemUs })
    }
    if (process.env.BENCH_CALLGRIND === '1') {
      if (spawnSync('valgrind', ['--version']).status !== 0) throw new Error('BENCH_CALLGRIND=1 needs valgrind (apt-get install valgrind)')
      const metric = 'relay instructions/request (callgrind, user space)'
      results.push({ impl: 'relay-saturated', metric, unit: 'instructions', value: Math.round(await callgrindPerRequest(port, 0, 200, 1200)) })
      results.push({ impl: `relay-paced-${CALLGRIND_RATE}-callgrind`, metric, unit: 'instructions', value: Math.round(await callgrindPerRequest(port, CALLGRIND_RATE, 100, 600)) })
      results.push({ impl: 'pipe-saturated (floor)', metric, unit: 'instructions', value: Math.round(await callgrindPerRequest(port, 0, 200, 1200, true)) })
      results.push({ impl: `pipe-paced-${CALLGRIND_RATE}-callgrind (floor)`, metric, unit: 'instructions', value: Math.round(await callgrindPerRequest(port, CALLGRIND_RATE, 100, 600, true)) })
    }
    printTable(results, 'relay-saturated')
    const file = writeReport(report('relay-cpu', {
      relay: BIN, relayNode: relayNodeVersion(), request: `Produce v${VERSION}, ${PARTITIONS} partitions of ${BATCH_BYTES} B batches, ${saturated.frameBytes} B framed, acks=-1`,
      floor: 'bench/relay-pipe.mjs on the same Node and flags, measured the same way: each message written to the stub broker, its stream split into one message per frame, nothing else (no token, inspection, limits or backpressure)',
      saturated: `5 requests in flight, 5,000 requests per round, best of 3 rounds after ${WARMUP} warm-up`, paced: `${RATE} requests/s, 1,000 per round, best of 2 after ${WARMUP} warm-up`,
      ...(process.env.BENCH_CALLGRIND === '1' ? { callgrind: `saturated: 1,200 minus 200 requests; paced at ${CALLGRIND_RATE}/s: 600 minus 100; ${WARMUP} warm-up requests in each run` } : {}),
      loadAverage: { before: loadBefore, saturated: saturated.load, paced: paced.load, after: loadavg() },
    }, results))
    console.log(`wrote ${file}`)
  } finally {
    await new Promise((r) => broker.close(r))
  }
}
