// A fuzzer for everything the relay reads from a client: HTTP requests on every route (methods,
// headers, fixed and chunked bodies, pipelining, upgrades), WebSocket frames (opcodes, flags, masks,
// length encodings, fragments) and Kafka frames inside them (mutated real requests under a valid
// token). The relay runs as its own process in front of real Kafka 4.4, and fast-check drives
// batches of concurrent connections at it. Properties:
//   - the process survives every batch and still serves;
//   - every connection is answered (an HTTP status line, or after a 101 a WebSocket close frame or
//     data) and closed by the relay within a deadline: nothing hangs, nothing is dropped unanswered;
//   - its memory stays bounded, and every connection it counted is released.
// npm test runs it for KAFKA_EDGE_FUZZ_SECONDS (default 45); `npm run fuzz:relay` runs it longer.
import { randomBytes } from 'node:crypto'
import { connect, type Socket } from 'node:net'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ApiVersions, FindCoordinator, InitProducerId, Metadata, Produce, encodeRequest, type ApiSchema, type Message,
} from '../../src/edge/protocol/index.js'
import type { Cluster } from '../helpers/kafka.js'
import { relayBase, relayCluster, token } from './helpers.js'
import { spawnRelay, type RelayProcess } from './relay-process.js'

const SECONDS = Number(process.env.KAFKA_EDGE_FUZZ_SECONDS ?? 45)
const SEED = process.env.KAFKA_EDGE_FUZZ_SEED ? Number(process.env.KAFKA_EDGE_FUZZ_SEED) : undefined
const CHUNK = 50
const CONCURRENCY = 48
const ORIGIN = 'https://app.example'
const IDLE_MS = 1500
const HEADER_MS = 1000
/**
 * Not a speed target: long enough past the header deadline or idle timeout (and one sweep tick) that
 * only a connection the relay forgot is still open, on a machine loaded by other work.
 */
const DEADLINE_MS = 15_000

// ---- what a connection sends ----------------------------------------------------------------------

type Part = Uint8Array
interface Case { kind: string; parts: Part[]; halfClose: boolean }

const enc = (s: string) => new TextEncoder().encode(s)

/** One WebSocket frame as a client writes it; the fields a fuzzer bends are all parameters. */
function wsFrame(o: { opcode: number; payload: Uint8Array; fin: boolean; rsv: number; masked: boolean; lengthForm: 'min' | '16' | '64' | 'lie'; lie: number }): Uint8Array {
  const n = o.payload.length
  const form = o.lengthForm === 'min' ? (n < 126 ? 'short' : n < 65536 ? '16' : '64') : o.lengthForm
  const head: number[] = [(o.fin ? 0x80 : 0) | ((o.rsv & 7) << 4) | (o.opcode & 15)]
  const m = o.masked ? 0x80 : 0
  if (form === 'short') head.push(m | n)
  else if (form === '16') head.push(m | 126, (n >> 8) & 255, n & 255)
  else if (form === '64') head.push(m | 127, 0, 0, 0, 0, (n >>> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255)
  // A length the payload does not have: up to 2^63 - 1, or one that sets the forbidden top bit.
  else head.push(m | 127, o.lie & 1 ? 0x7f : 0x80, 0xff, 0xff, 0xff, (o.lie >>> 24) & 255, (o.lie >> 16) & 255, (o.lie >> 8) & 255, o.lie & 255)
  const key = o.masked ? randomBytes(4) : null
  const body = Uint8Array.from(o.payload)
  if (key) for (let i = 0; i < body.length; i++) body[i]! ^= key[i & 3]!
  const out = new Uint8Array(head.length + (key ? 4 : 0) + body.length)
  out.set(head)
  if (key) out.set(key, head.length)
  out.set(body, head.length + (key ? 4 : 0))
  return out
}

const SEEDS: Array<[ApiSchema, number, Message]> = [
  [ApiVersions, 3, { clientSoftwareName: 'fuzz', clientSoftwareVersion: '1' }],
  [Metadata, 12, { topics: [{ topicId: new Uint8Array(16), name: 'fuzz-a' }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false }],
  [Metadata, 4, { topics: null, allowAutoTopicCreation: false }],
  [FindCoordinator, 4, { keyType: 1, coordinatorKeys: ['fuzz-tx'] }],
  [InitProducerId, 4, { transactionalId: null, transactionTimeoutMs: 60_000, producerId: -1n, producerEpoch: -1 }],
  [Produce, 9, { transactionalId: null, acks: -1, timeoutMs: 1000, topicData: [{ name: 'fuzz-a', partitionData: [{ index: 0, records: new Uint8Array(70) }] }] }],
]
const seedFrames = SEEDS.map(([api, v, body], i) => encodeRequest(api, v, 100 + i, 'fuzz', body).slice())

/** A Kafka frame: a real request, left whole or bent (bit flips, overwrites, truncation, growth, size prefix). */
const kafkaFrame: fc.Arbitrary<Uint8Array> = fc.tuple(
  fc.nat(seedFrames.length - 1),
  fc.array(fc.tuple(fc.nat(), fc.nat(255)), { maxLength: 4 }),
  fc.constantFrom('whole', 'flip', 'truncate', 'grow', 'prefix', 'prefixed-flip'),
  fc.integer({ min: -5, max: 1 << 20 }),
).map(([i, edits, how, size]) => {
  let f = Uint8Array.from(seedFrames[i]!)
  if (how === 'flip' || how === 'prefixed-flip') for (const [at, b] of edits) f[4 + (at % (f.length - 4))] = b
  if (how === 'truncate') f = f.subarray(0, edits.length ? edits[0]![0] % f.length : 3)
  if (how === 'grow') { const g = new Uint8Array(f.length + 1 + (size & 63)); g.set(f); f = g }
  if (how === 'prefix') new DataView(f.buffer, f.byteOffset).setInt32(0, size)
  else if (how !== 'truncate') new DataView(f.buffer, f.byteOffset).setInt32(0, f.length - 4)
  return f
})

const wsFrameArb: fc.Arbitrary<Uint8Array> = fc.record({
  opcode: fc.oneof({ weight: 6, arbitrary: fc.constant(2) }, { weight: 2, arbitrary: fc.constantFrom(0, 1, 8, 9, 10) }, { weight: 1, arbitrary: fc.nat(15) }),
  payload: fc.oneof({ weight: 5, arbitrary: kafkaFrame }, { weight: 2, arbitrary: fc.uint8Array({ maxLength: 300 }) },
    { weight: 1, arbitrary: fc.constantFrom(enc(JSON.stringify({ type: 'producer-id-ticket', ticket: 'kpt1.x.y' })), enc('{"type":1}'), enc('\u00ff')) }),
  fin: fc.oneof({ weight: 8, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  rsv: fc.oneof({ weight: 8, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(7) }),
  masked: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  lengthForm: fc.oneof({ weight: 8, arbitrary: fc.constant('min' as const) }, { weight: 1, arbitrary: fc.constantFrom('16' as const, '64' as const, 'lie' as const) }),
  lie: fc.nat(),
}).map(wsFrame)

const headerValue = fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('', ' ', 'chunked', 'gzip, chunked', 'keep-alive', 'Upgrade', 'websocket', '0', '-1', '99999999999999999999'))
const headerName = fc.oneof({ weight: 3, arbitrary: fc.constantFrom('Content-Length', 'Transfer-Encoding', 'Connection', 'Upgrade', 'Origin', 'Host', 'Expect', 'Sec-WebSocket-Version', 'Sec-WebSocket-Protocol', 'Sec-WebSocket-Key', 'Content-Type') },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z-]{1,20}$/) }, { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 12 }) })
const path = fc.constantFrom('/', '/healthz', '/readyz', '/metrics', '/kafka', '/kafka/beacon', '/kafka/beacon?x=1', '/kafka?broker=127.0.0.1:1', '//kafka', '/kafka/../kafka', '*', 'http://relay/kafka', '/%zz')
const method = fc.constantFrom('GET', 'POST', 'HEAD', 'PUT', 'OPTIONS', 'DELETE', 'CONNECT', 'PATCH', 'GE T', 'PRI')

/** A body: none, fixed bytes (its Content-Length right, wrong or missing), or chunks (well formed or not). */
const body = fc.oneof(
  fc.constant({ headers: '', bytes: new Uint8Array(0) }),
  fc.tuple(fc.uint8Array({ maxLength: 2048 }), fc.constantFrom('right', 'short', 'long', 'none')).map(([b, cl]) => ({
    headers: cl === 'none' ? '' : `Content-Length: ${cl === 'right' ? b.length : cl === 'short' ? Math.max(0, b.length - 3) : b.length + 50}\r\n`, bytes: b,
  })),
  fc.tuple(fc.array(fc.tuple(fc.nat(70 * 1024), fc.constantFrom('hex', 'bad', 'ext', 'huge')), { minLength: 1, maxLength: 4 }), fc.boolean()).map(([chunks, end]) => {
    let s = ''
    for (const [n, form] of chunks) {
      const size = form === 'bad' ? 'zz' : form === 'huge' ? 'ffffffffffffffff' : n.toString(16) + (form === 'ext' ? ';a=b' : '')
      s += `${size}\r\n${'b'.repeat(form === 'hex' || form === 'ext' ? n : 8)}\r\n`
    }
    return { headers: 'Transfer-Encoding: chunked\r\n', bytes: enc(s + (end ? '0\r\n\r\n' : '')) }
  }),
)

/** A beacon body a relay reads far: a JSON line (token valid or not) and Kafka frames. */
const beaconBody = fc.tuple(fc.boolean(), fc.array(kafkaFrame, { minLength: 1, maxLength: 3 })).map(([valid, frames]) => {
  const head = enc(`${JSON.stringify({ token: valid ? token({ sub: 'fuzz', topics: ['fuzz-*'] }) : 'x.y.z', broker: '127.0.0.1:1' })}\n`)
  const all = new Uint8Array(head.length + frames.reduce((n, f) => n + f.length, 0))
  let at = 0
  for (const p of [head, ...frames]) { all.set(p, at); at += p.length }
  return all
})

const headers = fc.array(fc.tuple(headerName, headerValue), { maxLength: 6 })
const httpRequest: fc.Arbitrary<Uint8Array> = fc.tuple(method, path, headers, body, fc.boolean(), fc.option(beaconBody, { freq: 3 }))
  .map(([m, p, hs, b, origin, beacon]) => {
    const bytes = beacon ?? b.bytes
    const lengths = beacon ? `Content-Length: ${beacon.length}\r\n` : b.headers
    const head = `${m} ${p} HTTP/1.1\r\nHost: relay\r\n${origin ? `Origin: ${ORIGIN}\r\n` : ''}${hs.map(([k, v]) => `${k}: ${v}`).join('\r\n')}${hs.length ? '\r\n' : ''}${lengths}\r\n`
    const out = new Uint8Array(head.length * 3 + bytes.length)
    const h = enc(head)
    out.set(h)
    out.set(bytes, h.length)
    return out.subarray(0, h.length + bytes.length)
  })

function upgradeRequest(o: { token: string | null; origin: boolean; extraProtocols: string[]; path: string; version: string }): Uint8Array {
  const protocols = ['kafka-edge.v1', ...(o.token ? [`kafka-edge.bearer.${o.token}`] : []), ...o.extraProtocols]
  return enc(`GET ${o.path} HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n` +
    `Sec-WebSocket-Version: ${o.version}\r\nSec-WebSocket-Protocol: ${protocols.join(', ')}\r\n${o.origin ? `Origin: ${ORIGIN}\r\n` : ''}\r\n`)
}

const upgrade = fc.record({
  token: fc.oneof({ weight: 6, arbitrary: fc.constant('valid') }, { weight: 1, arbitrary: fc.constantFrom(null, 'x.y.z', 'expired') }),
  origin: fc.oneof({ weight: 5, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  extraProtocols: fc.array(fc.constantFrom('kafka-edge.tickets.v1', 'kafka-edge.ticket.kpt1.a.b', 'other'), { maxLength: 2 }),
  path: fc.oneof({ weight: 8, arbitrary: fc.constant('/kafka') }, { weight: 1, arbitrary: fc.constantFrom('/kafka?broker=127.0.0.1:1', '/kafka/beacon', '/nope') }),
  version: fc.oneof({ weight: 8, arbitrary: fc.constant('13') }, { weight: 1, arbitrary: fc.constantFrom('8', 'x', '') }),
}).map((u) => upgradeRequest({
  ...u,
  token: u.token === 'valid' ? token({ sub: 'fuzz', topics: ['fuzz-*'], transactional_ids: ['fuzz-*'] })
    : u.token === 'expired' ? token({ sub: 'fuzz', exp: Math.floor(Date.now() / 1000) - 3600 }) : u.token,
}))

/** Splits the bytes at arbitrary points, so frames and headers arrive in pieces. */
const pieces = (arb: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Part[]> => fc.tuple(arb, fc.array(fc.nat(), { maxLength: 3 })).map(([b, cuts]) => {
  const at = [...new Set(cuts.map((c) => c % (b.length + 1)))].sort((x, y) => x - y)
  const out: Part[] = []
  let prev = 0
  for (const c of [...at, b.length]) { if (c > prev) out.push(b.subarray(prev, c)); prev = c }
  return out.length ? out : [b]
})

const concat = (parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) { out.set(p, at); at += p.length }
  return out
}

const CLIENT_CLOSE = wsFrame({ opcode: 8, payload: Uint8Array.of(0x03, 0xe8), fin: true, rsv: 0, masked: true, lengthForm: 'min', lie: 0 })

const caseArb: fc.Arbitrary<Case> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('http'), parts: pieces(fc.array(httpRequest, { minLength: 1, maxLength: 3 }).map(concat)), halfClose: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('bytes'), parts: pieces(fc.uint8Array({ minLength: 1, maxLength: 512 })), halfClose: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({
    kind: fc.constant('websocket'),
    // Half the connections end with the client's own close frame, which the relay must answer in kind.
    parts: pieces(fc.tuple(upgrade, fc.array(wsFrameArb, { maxLength: 6 }), fc.boolean()).map(([u, fs, bye]) => concat([u, ...fs, ...(bye ? [CLIENT_CLOSE] : [])]))),
    halfClose: fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  }) },
)

// ---- what a connection must get back --------------------------------------------------------------

interface Outcome { text: string; bytes: Uint8Array; closedByRelay: boolean; ms: number }

function run(port: number, c: Case): Promise<Outcome> {
  return new Promise((resolve) => {
    const t0 = performance.now()
    const s: Socket = connect(port, '127.0.0.1')
    const got: Buffer[] = []
    let done = false
    const finish = (closedByRelay: boolean) => {
      if (done) return
      done = true
      clearTimeout(timer)
      s.destroy()
      const bytes = new Uint8Array(Buffer.concat(got))
      resolve({ text: Buffer.from(bytes).toString('latin1'), bytes, closedByRelay, ms: performance.now() - t0 })
    }
    const timer = setTimeout(() => finish(false), DEADLINE_MS)
    s.on('connect', async () => {
      for (const p of c.parts) {
        if (s.destroyed) return
        s.write(p)
        if (c.parts.length > 1) await new Promise((r) => setTimeout(r, 5))
      }
      if (c.halfClose && !s.destroyed) s.end()
    })
    s.on('data', (d) => { if (got.length < 256) got.push(d) })
    s.on('error', () => {})
    s.on('close', () => finish(true))
  })
}

/** The server's WebSocket frames after the 101 (unmasked): their opcodes, up to the first incomplete one. */
function serverOpcodes(bytes: Uint8Array, from: number): number[] {
  const ops: number[] = []
  let at = from
  while (at + 2 <= bytes.length) {
    let n = bytes[at + 1]! & 0x7f
    let head = 2
    if (n === 126) { if (at + 4 > bytes.length) break; n = (bytes[at + 2]! << 8) | bytes[at + 3]!; head = 4 } else if (n === 127) {
      if (at + 10 > bytes.length) break
      n = Number(new DataView(bytes.buffer, bytes.byteOffset + at + 2, 8).getBigUint64(0)); head = 10
    }
    ops.push(bytes[at]! & 0x0f)
    at += head + n
  }
  return ops
}

/** Why this outcome breaks the properties, or null. */
function violation(c: Case, o: Outcome): string | null {
  if (!o.closedByRelay) return `still open after ${DEADLINE_MS} ms without being closed (got ${o.bytes.length} bytes)`
  if (!/^HTTP\/1\.[01] \d{3} /.test(o.text)) {
    // A client that half-closed before its request was whole has said it will send nothing more.
    return c.halfClose ? null : `closed without an HTTP status line (got ${JSON.stringify(o.text.slice(0, 40))})`
  }
  if (o.text.startsWith('HTTP/1.1 101 ')) {
    const end = o.text.indexOf('\r\n\r\n')
    const ops = serverOpcodes(o.bytes, end + 4)
    if (!ops.includes(8) && ops.length === 0 && !c.halfClose) return 'upgraded, then closed with neither a close frame nor any answer'
    if (!ops.includes(8) && !c.halfClose) return `upgraded and answered (opcodes ${ops.join(',')}), then closed without a close frame`
  }
  return null
}

const metric = async (relay: RelayProcess, name: string): Promise<number> => {
  const text = await (await fetch(`${relay.httpUrl}/metrics`)).text()
  return Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? NaN)
}

describe(`relay fuzzer (${SECONDS} s)`, () => {
  let cluster: Cluster
  let relay: RelayProcess

  beforeAll(async () => {
    cluster = await relayCluster()
    relay = await spawnRelay({
      ...relayBase(cluster),
      path: '/kafka',
      origins: [ORIGIN],
      log: { level: 'warn' },
      limits: { upgradeTimeoutMs: HEADER_MS, idleTimeoutMs: IDLE_MS, upstreamTimeoutMs: 3000 },
    })
  })
  afterAll(async () => { await relay?.stop() })

  it('the process survives, every connection is answered and closed, memory stays bounded', async () => {
    const started = performance.now()
    const tally = { connections: 0, kinds: {} as Record<string, number>, statuses: {} as Record<string, number>, slowestMs: 0 }
    const rss: number[] = [relay.rss()]
    const failures: string[] = []
    // Cases come in chunks of CHUNK, chunk k drawn with seed SEED + k, so any case replays alone
    // (KAFKA_EDGE_FUZZ_REPLAY=<seed>:<index>); CONCURRENCY connections are in flight at all times.
    const replay = process.env.KAFKA_EDGE_FUZZ_REPLAY?.split(':').map(Number)
    const base = replay?.[0] ?? SEED ?? (Date.now() % 1_000_000_000)
    let chunk = 0
    let queue: Array<{ c: Case; id: string }> = []
    const next = (): { c: Case; id: string } | null => {
      if (replay) return chunk++ === 0 ? { c: fc.sample(caseArb, { numRuns: replay[1]! + 1, seed: replay[0]! })[replay[1]!]!, id: `${replay[0]}:${replay[1]}` } : null
      if (performance.now() - started > SECONDS * 1000 || failures.length > 0) return null
      if (queue.length === 0) {
        const seed = base + chunk++
        queue = fc.sample(caseArb, { numRuns: CHUNK, seed }).map((c, i) => ({ c, id: `${seed}:${i}` }))
      }
      return queue.shift()!
    }
    const worker = async () => {
      for (let job = next(); job; job = next()) {
        const o = await run(relay.port, job.c)
        tally.connections++
        tally.kinds[job.c.kind] = (tally.kinds[job.c.kind] ?? 0) + 1
        const status = /^HTTP\/1\.[01] (\d{3})/.exec(o.text)?.[1] ?? 'none'
        tally.statuses[status] = (tally.statuses[status] ?? 0) + 1
        tally.slowestMs = Math.max(tally.slowestMs, Math.round(o.ms))
        const why = violation(job.c, o)
        if (why) failures.push(`${job.c.kind} connection (KAFKA_EDGE_FUZZ_REPLAY=${job.id}): ${why}; sent ${JSON.stringify(Buffer.from(concat(job.c.parts)).toString('latin1').slice(0, 400))}`)
        if (!relay.alive()) failures.push(`the relay process exited after case ${job.id}:\n${relay.output.slice(-20).join('\n')}`)
        if (tally.connections % 200 === 0) rss.push(relay.rss())
      }
    }
    await Promise.all(Array.from({ length: CONCURRENCY }, worker))
    expect(failures.slice(0, 3)).toEqual([])

    expect(relay.alive()).toBe(true)
    expect((await fetch(`${relay.httpUrl}/healthz`)).status).toBe(200)
    // Everything the relay counted for those connections is released.
    await new Promise((r) => setTimeout(r, 3000))
    expect(await metric(relay, 'kafka_edge_bridge_connections_active')).toBe(0)
    expect(await metric(relay, 'kafka_edge_bridge_beacons_active')).toBe(0)
    expect(await metric(relay, 'kafka_edge_bridge_parse_budget_bytes')).toBe(0)
    rss.push(relay.rss())
    const warm = rss[Math.min(rss.length - 1, Math.max(1, Math.floor(rss.length / 4)))]!
    const peak = Math.max(...rss)
    const mb = (b: number) => Math.round(b / 1e6)
    const seconds = Math.round((performance.now() - started) / 1000)
    const rssMB = { start: mb(rss[0]!), warm: mb(warm), peak: mb(peak), end: mb(rss.at(-1)!) }
    console.log(JSON.stringify({ relayFuzz: { seed: base, chunks: chunk, seconds, ...tally, rssMB } }))
    if (replay) return
    expect(tally.connections).toBeGreaterThan(100)
    expect(tally.kinds.websocket ?? 0).toBeGreaterThan(20)
    // Bounded: past warm-up the relay does not grow with the connections it has served.
    expect(peak - warm).toBeLessThan(96 * 1024 * 1024)
  }, SECONDS * 1000 + 120_000)
})
