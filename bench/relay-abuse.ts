// npm run bench -- relay-abuse: the relay under the parse abuse of issue 12 (class 8). Fifty
// connections each send one 8 MiB Metadata frame, reconnect and send again, for several rounds,
// while /healthz is polled every 100 ms and the relay's RSS is read from /proc every 50 ms.
//   phase "names-over-cap": ~380,000 names per frame (what once took 680 MB and 7.5 s /healthz
//     answers): refused from the array count.
//   phase "names-at-cap": 10,000 names of 249 characters per frame, each validated and matched
//     against a token pattern that refuses them: the most parsing one accepted count can cost.
// Targets (issue 12): relay RSS < 256 MB, every /healthz answer < 1 s.
//   ABUSE_CONNECTIONS (default 50), ABUSE_ROUNDS (default 5), ABUSE_FRAME_MB (default 8)
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import WebSocket from 'ws'
import { signToken } from '../src/bridge/token.js'
import { Metadata, encodeRequest } from '../src/edge/protocol/index.js'
import { ensureCluster } from '../test/helpers/kafka.js'
import { SECRET, cpuMs, startRelayProcess, type Relay } from './bridge.js'
import { printTable, report, writeReport, type BenchResult } from './lib.js'

const CONNECTIONS = Number(process.env.ABUSE_CONNECTIONS ?? 50)
const ROUNDS = Number(process.env.ABUSE_ROUNDS ?? 5)
const FRAME_BYTES = Number(process.env.ABUSE_FRAME_MB ?? 8) * 1024 * 1024

/** Polls a URL every 100 ms, one JSON line per answer: {ms, status} (status 0 = no answer within 10 s). */
const POLLER = `const url = process.argv[1];
(async () => { for (;;) { const t0 = performance.now(); let status = 0
  try { const r = await fetch(url, { signal: AbortSignal.timeout(10000) }); await r.arrayBuffer(); status = r.status } catch {}
  process.stdout.write(JSON.stringify({ ms: performance.now() - t0, status }) + '\\n'); await new Promise((r) => setTimeout(r, 100)) } })()`

const rssBytes = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024

/** A Metadata v12 frame of `count` names of `nameLength` characters. */
function metadataFrame(count: number, nameLength: number): Uint8Array {
  // Base-36 counters keep every name exactly nameLength long (4 characters: 1.6 million names).
  const topics = Array.from({ length: count }, (_, i) => ({ topicId: new Uint8Array(16), name: i.toString(36).padStart(nameLength < 8 ? nameLength : 4, '0').padEnd(nameLength, 'a') }))
  const frame = encodeRequest(Metadata, 12, 1, 'abuse', { topics, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
  if (frame.length > FRAME_BYTES) throw new Error(`frame of ${frame.length} bytes is over the relay's ${FRAME_BYTES}`)
  return frame
}

/** Names that fill FRAME_BYTES: 16 (topic id) + 1 (compact length) + the name + 1 (tagged fields) bytes per entry in v12. */
function namesFilling(nameLength: number): number {
  return Math.floor((FRAME_BYTES - 64) / (nameLength + 1 + 16 + 1))
}

async function oneConnection(r: Relay, frame: Uint8Array, tok: string): Promise<number> {
  // A zero mask spares this process the masking of 400 MiB per round: the relay's work is what is measured.
  const ws = new WebSocket(r.url, ['kafka-edge.v1', `kafka-edge.bearer.${tok}`], { generateMask: (m) => { m.fill(0) } })
  ws.on('error', () => {})
  const code = new Promise<number>((resolve) => ws.once('close', (c) => resolve(c)))
  await new Promise<void>((resolve) => { ws.once('open', () => resolve()); ws.once('close', () => resolve()) })
  if (ws.readyState === WebSocket.OPEN) ws.send(frame)
  return code
}

async function phase(r: Relay, name: string, frame: Uint8Array, tokenFor: (i: number) => string): Promise<BenchResult[]> {
  // /healthz is timed from its own process, so the load this process generates cannot delay it.
  const poller = spawn(process.execPath, ['-e', POLLER, `${r.http}/healthz`], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  poller.stdout!.on('data', (d: Buffer) => { out += d.toString() })
  await new Promise((res) => setTimeout(res, 300))
  let peakRss = rssBytes(r.pid)
  const rssTimer = setInterval(() => { peakRss = Math.max(peakRss, rssBytes(r.pid)) }, 50)
  const cpu0 = cpuMs(r.pid)
  const t0 = performance.now()
  const codes = new Map<number, number>()
  await Promise.all(Array.from({ length: CONNECTIONS }, async (_, i) => {
    for (let round = 0; round < ROUNDS; round++) {
      const code = await oneConnection(r, frame, tokenFor(i))
      codes.set(code, (codes.get(code) ?? 0) + 1)
    }
  }))
  const ms = performance.now() - t0
  const cpu = cpuMs(r.pid) - cpu0
  clearInterval(rssTimer)
  poller.kill('SIGTERM')
  await new Promise((res) => poller.once('exit', res))
  const polls = out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { ms: number; status: number })
  const health = polls.map((p) => p.ms)
  const healthFailures = polls.filter((p) => p.status !== 200).length
  const sorted = [...health].sort((a, b) => a - b)
  console.log(`${name}: ${CONNECTIONS} x ${ROUNDS} frames of ${(frame.length / 1048576).toFixed(1)} MiB in ${Math.round(ms)} ms, close codes ${JSON.stringify(Object.fromEntries(codes))}, ` +
    `relay RSS peak ${(peakRss / 1e6).toFixed(0)} MB, relay CPU ${cpu} ms, /healthz max ${sorted[sorted.length - 1]!.toFixed(0)} ms over ${health.length} polls (${healthFailures} failed)`)
  const impl = `relay ${name}`
  return [
    { impl, metric: 'frames', unit: 'frames', value: CONNECTIONS * ROUNDS },
    { impl, metric: 'frame size', unit: 'MiB', value: Math.round(frame.length / 104857.6) / 10 },
    { impl, metric: 'refused as expected', unit: 'frames', value: [...codes].filter(([c]) => c === 4400 || c === 4403).reduce((a, [, n]) => a + n, 0) },
    { impl, metric: 'relay RSS peak', unit: 'MB', value: Math.round(peakRss / 1e5) / 10 },
    { impl, metric: 'relay CPU', unit: 'ms', value: cpu },
    { impl, metric: 'wall time', unit: 'ms', value: Math.round(ms) },
    { impl, metric: '/healthz max', unit: 'ms', value: Math.round(sorted[sorted.length - 1]! * 10) / 10 },
    { impl, metric: '/healthz p99', unit: 'ms', value: Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]! * 10) / 10 },
    { impl, metric: '/healthz polls', unit: 'polls', value: health.length },
    { impl, metric: '/healthz failures', unit: 'polls', value: healthFailures },
  ]
}

export default async function relayAbuse(): Promise<void> {
  const cluster = await ensureCluster({ nodes: 1, name: 'relay', sasl: true })
  const relay = await startRelayProcess(cluster, { maxFrameBytes: FRAME_BYTES })
  const exp = Math.floor(Date.now() / 1000) + 3600
  try {
    const idleRss = rssBytes(relay.pid)
    const overCap = metadataFrame(namesFilling(4), 4)
    const atCap = metadataFrame(10_000, 249)
    const results = [
      { impl: 'relay idle', metric: 'relay RSS', unit: 'MB', value: Math.round(idleRss / 1e5) / 10 },
      ...await phase(relay, 'names-over-cap', overCap, (i) => signToken({ sub: `abuser-${i}`, aud: 'bench', exp, topics: ['*'] }, SECRET)),
      // Every name is read, validated and matched (a pattern with several stars), then the grant refuses the frame.
      ...await phase(relay, 'names-at-cap', atCap, (i) => signToken({ sub: `abuser-${i}`, aud: 'bench', exp, topics: ['a*a*a*a*a*b', 'x*'] }, SECRET)),
    ]
    printTable(results, 'relay idle')
    const file = writeReport(report('relay-abuse', {
      connections: CONNECTIONS, rounds: ROUNDS, frameBytes: FRAME_BYTES,
      names: { overCap: namesFilling(4), atCap: 10_000 },
      relay: 'separate process (bin/kafka-edge.js bridge), default limits but maxFrameBytes = frame size; RSS from /proc/<pid>/status every 50 ms',
      healthz: 'GET /healthz every 100 ms from this process during each phase',
      targets: { rssMB: 256, healthzMs: 1000 },
    }, results))
    console.log(`wrote ${file}`)
  } finally {
    relay.child.kill('SIGTERM')
    await new Promise((r) => relay.child.once('exit', r))
  }
}
