// The relay is the security boundary: every refusal has a documented close code (or, before the
// upgrade, an HTTP status), and after each one the relay is still healthy for good clients.
import { createServer, type Server } from 'node:net'
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CloseCode, type Bridge } from '../../src/bridge/index.js'
import { openUpstream } from '../../src/bridge/upstream.js'
import { compilePatterns } from '../../src/bridge/token.js'
import {
  AddOffsetsToTxn, AddPartitionsToTxn, ApiVersions, EndTxn, FindCoordinator, InitProducerId, Metadata, Produce, SaslHandshake, TxnOffsetCommit, Writer,
  decodeResponse, encodeRequest,
} from '../../src/edge/protocol/index.js'
import WebSocket from 'ws'
import {
  AuthorizationException, ClusterAuthorizationException, ConfigException, InvalidTopicException, PolicyViolationException, createProducer, memoryCheckpointStore,
  websocket, type ProducerIdTicket,
} from '../../src/edge/index.js'
import { closeError } from '../../src/edge/transport/websocket.js'
import { TsBatchBuilder } from '../../bench/ts-batch-builder.js'
import { createTopic, readTopic, uniqueTopic, waitFor, type Cluster } from '../helpers/kafka.js'
import { assertHealthy, rawClient, relayCluster, startRelay, token, wsProducer, type RawClient } from './helpers.js'

let cluster: Cluster
let bridge: Bridge
const dialed: string[] = []
let trap: Server
let trapPort = 0
let trapConnections = 0

beforeAll(async () => {
  cluster = await relayCluster()
  bridge = await startRelay(cluster, {
    limits: { maxFrameBytes: 1024 * 1024, upgradeTimeoutMs: 1000, connectionsPerPrincipal: 5 },
  }, {
    openUpstream: (target, ...rest) => { dialed.push(`${target.host}:${target.port}`); return openUpstream(target, ...rest) },
  })
  // A listener the relay must never be talked into dialing.
  trap = createServer((s) => { trapConnections++; s.destroy() })
  await new Promise<void>((r) => trap.listen(0, '127.0.0.1', () => r()))
  trapPort = (trap.address() as { port: number }).port
})
afterAll(async () => {
  await bridge?.close()
  trap?.close()
})

async function expectHealthy(): Promise<void> {
  const h = await assertHealthy(bridge)
  expect(h.health).toBe(200)
  expect(h.brokers).toBeGreaterThanOrEqual(1)
  expect(h.apis).toBeGreaterThan(10)
}

/** A request header (v1) + arbitrary body for APIs the codec does not model. */
function rawRequest(apiKey: number, version: number, body: Uint8Array = new Uint8Array(16)): Uint8Array {
  const w = new Writer(64)
  w.int32(0).int16(apiKey).int16(version).int32(77).string('evil', false).raw(body)
  w.setInt32At(0, w.pos - 4)
  return w.finish()
}

async function refusedWith(c: ReturnType<typeof rawClient>, frame: Uint8Array): Promise<{ code: number; reason: string }> {
  expect(await c.opened).toBe(true)
  c.send(frame)
  return c.closed
}

describe('upgrade checks', () => {
  it('a wrong Origin is closed with 4403 and a reason a page can read, before any broker connection', async () => {
    const before = dialed.length
    const c = rawClient(bridge.url, { origin: 'https://evil.example' })
    const closed = await c.closed
    expect(closed.code).toBe(CloseCode.FORBIDDEN)
    expect(closed.reason).toContain('Origin https://evil.example is not allowed')
    expect(dialed.length).toBe(before)
    expect(bridge.metrics.get('kafka_edge_bridge_rejects_total', { reason: 'origin' })).toBeGreaterThanOrEqual(1)
    await expectHealthy()
  })

  it('no token: closed with 4401', async () => {
    const c = rawClient(bridge.url, { token: null })
    expect((await c.closed).code).toBe(CloseCode.UNAUTHENTICATED)
    await expectHealthy()
  })

  it('an expired token: closed with 4402', async () => {
    const c = rawClient(bridge.url, { token: token({ exp: Math.floor(Date.now() / 1000) - 5 }) })
    const closed = await c.closed
    expect(closed.code).toBe(CloseCode.TOKEN_EXPIRED)
    await expectHealthy()
  })

  it('a forged token (signed with another key): closed with 4401', async () => {
    const c = rawClient(bridge.url, { token: token({}, 'another-secret-another-secret-another-secret') })
    const closed = await c.closed
    expect(closed.code).toBe(CloseCode.UNAUTHENTICATED)
    expect(closed.reason).toMatch(/signature/)
    await expectHealthy()
  })

  it('an alg=none token with the right claims: closed with 4401', async () => {
    const good = token().split('.')
    const none = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${good[1]}.`
    const c = rawClient(bridge.url, { token: none })
    expect((await c.closed).code).toBe(CloseCode.UNAUTHENTICATED)
    await expectHealthy()
  })

  it('a token for another audience: closed with 4401', async () => {
    const c = rawClient(bridge.url, { token: token({ aud: 'some-other-service' }) })
    const closed = await c.closed
    expect(closed.code).toBe(CloseCode.UNAUTHENTICATED)
    expect(closed.reason).toMatch(/audience/)
    await expectHealthy()
  })

  it('a token in ?token= works; the same token in a cookie is ignored (4401)', async () => {
    const q = rawClient(bridge.url, { token: null, query: { token: token() } })
    const av = await q.request(ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })
    expect(av.errorCode).toBe(0)
    q.ws.close()
    const WebSocket = (await import('ws')).default
    const ws = new WebSocket(bridge.url, ['kafka-edge.v1'], { headers: { cookie: `token=${token()}` } })
    const code = await new Promise<number>((r) => ws.on('close', (c) => r(c)))
    expect(code).toBe(CloseCode.UNAUTHENTICATED)
    await expectHealthy()
  })

  it('a slow upgrade (headers trickled, slowloris) is cut off at upgradeTimeoutMs', async () => {
    const t0 = Date.now()
    const s = connect({ host: '127.0.0.1', port: bridge.port })
    // The relay may cut the socket while a trickled header is in flight: a reset is one way of being cut off.
    s.on('error', () => {})
    await new Promise<void>((r) => s.once('connect', () => r()))
    s.write('GET /kafka HTTP/1.1\r\nHost: relay\r\n')
    const trickle = setInterval(() => { if (!s.destroyed) s.write('X-Slow: a\r\n') }, 200)
    await new Promise<void>((r) => s.once('close', () => r()))
    clearInterval(trickle)
    const took = Date.now() - t0
    expect(took).toBeGreaterThanOrEqual(900)
    expect(took).toBeLessThan(3000)
    await expectHealthy()
  })

  it('more connections than connectionsPerPrincipal: the extra one is closed with 4429', async () => {
    const tok = token({ sub: 'greedy' })
    const clients = Array.from({ length: 5 }, () => rawClient(bridge.url, { token: tok }))
    for (const c of clients) await c.request(ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })
    const extra = rawClient(bridge.url, { token: tok })
    expect((await extra.closed).code).toBe(CloseCode.RATE_LIMITED)
    for (const c of clients) c.ws.close()
    await expectHealthy()
  })
})

describe('API firewall', () => {
  it.each([
    ['Fetch', 1, 12],
    ['DeleteTopics', 20, 4],
    ['CreateTopics', 19, 4],
    ['DescribeConfigs', 32, 1],
  ])('%s is refused with 4403 and never reaches the broker', async (name, key, version) => {
    const c = rawClient(bridge.url)
    const closed = await refusedWith(c, rawRequest(key, version))
    expect(closed.code).toBe(CloseCode.FORBIDDEN)
    expect(closed.reason).toContain(name)
    await expectHealthy()
  })

  it('client SASL frames are refused (the relay authenticates, clients never see credentials)', async () => {
    const c = rawClient(bridge.url)
    const closed = await refusedWith(c, encodeRequest(SaslHandshake, 1, 1, 'evil', { mechanism: 'PLAIN' }))
    expect(closed.code).toBe(CloseCode.FORBIDDEN)
    expect(closed.reason).toContain('SaslHandshake')
    const c2 = rawClient(bridge.url)
    expect((await refusedWith(c2, rawRequest(36, 1))).code).toBe(CloseCode.FORBIDDEN)
    await expectHealthy()
  })

  it('Metadata for all topics (null list) is refused with 4403', async () => {
    const c = rawClient(bridge.url)
    const closed = await refusedWith(c, encodeRequest(Metadata, 12, 1, 'x', { topics: null, allowAutoTopicCreation: false }))
    expect(closed.code).toBe(CloseCode.FORBIDDEN)
    await expectHealthy()
  })

  it('Produce to a topic outside the token is refused with 4403: the transport reports a non-retriable AuthorizationException', async () => {
    const tok = token({ topics: ['allowed-*'] })
    const c = rawClient(bridge.url, { token: tok })
    const frame = encodeRequest(Produce, 9, 1, 'x', { transactionalId: null, acks: -1, timeoutMs: 1000, topicData: [{ name: 'payments', partitionData: [{ index: 0, records: null }] }] })
    const closed = await refusedWith(c, frame)
    expect(closed.code).toBe(CloseCode.FORBIDDEN)
    expect(closed.reason).toContain('topic payments')

    // Through the transport the refusal arrives as a typed, non-retriable error on the link.
    const closeErr = await new Promise<Error | undefined>((resolve, reject) => {
      websocket({ url: bridge.url, token: tok, WebSocket: WebSocket as never })
        .open({ host: 'relay', port: 443, nodeId: -1 }, { onFrame: () => {}, onClose: resolve })
        .then((link) => link.write(frame), reject)
    })
    expect(closeErr).toBeInstanceOf(AuthorizationException)
    expect((closeErr as AuthorizationException).retriable).toBe(false)

    // The producer's send() fails at once with the relay's refusal, not after max.block.ms.
    const topic = uniqueTopic('forbidden')
    await createTopic(cluster, topic)
    const p = wsProducer(bridge, { 'max.block.ms': 2000, 'delivery.timeout.ms': 3000, 'request.timeout.ms': 1000, 'linger.ms': 0 }, tok)
    const err = await p.send({ topic, value: 'x' }).then(() => null, (e: unknown) => e)
    await p.close().catch(() => {})
    expect(err).toBeInstanceOf(AuthorizationException)
    expect((err as AuthorizationException).retriable).toBe(false)
    await expectHealthy()
  })

  it('a transactional id outside the token is refused with 4403 (InitProducerId and FindCoordinator)', async () => {
    const tok = token({ transactional_ids: ['shop-*'] })
    const c = rawClient(bridge.url, { token: tok })
    const closed = await refusedWith(c, encodeRequest(InitProducerId, 4, 1, 'x', { transactionalId: 'bank-1', transactionTimeoutMs: 60000 }))
    expect(closed.code).toBe(CloseCode.FORBIDDEN)
    expect(closed.reason).toContain('transactional id bank-1')
    const c2 = rawClient(bridge.url, { token: tok })
    const closed2 = await refusedWith(c2, encodeRequest(FindCoordinator, 4, 1, 'x', { keyType: 1, coordinatorKeys: ['shop-1', 'bank-1'] }))
    expect(closed2.code).toBe(CloseCode.FORBIDDEN)
    // The allowed one passes.
    const ok = rawClient(bridge.url, { token: tok })
    const res = await ok.request(FindCoordinator, 4, { keyType: 1, coordinatorKeys: ['shop-1'] })
    expect((res.coordinators as unknown[]).length).toBe(1)
    ok.ws.close()
    await expectHealthy()
  })
})

describe('destinations (no SSRF)', () => {
  const refused = async (broker: string) => {
    const before = dialed.length
    const c = rawClient(bridge.url, { broker })
    const closed = await c.closed
    expect(closed.code).toBe(CloseCode.DESTINATION_REFUSED)
    // The relay dialed nothing for this client (a metadata refresh goes to the bootstrap server only).
    expect(dialed.slice(before).filter((d) => d !== cluster.saslBootstrap)).toEqual([])
    expect(dialed.slice(before)).not.toContain(broker)
  }

  it('127.0.0.1:22 is refused with 4404 without a TCP connect', async () => {
    await refused('127.0.0.1:22')
    await expectHealthy()
  })

  it('169.254.169.254:80 (cloud metadata) is refused with 4404 without a TCP connect', async () => {
    await refused('169.254.169.254:80')
    await expectHealthy()
  })

  it('a broker id that does not exist is refused with 4404', async () => {
    await refused('4242')
    await expectHealthy()
  })

  it('a host:port not learned from Metadata is refused with 4404 and the listener there sees no connection', async () => {
    await refused(`127.0.0.1:${trapPort}`)
    await refused(`localhost:${trapPort}`)
    await new Promise((r) => setTimeout(r, 200))
    expect(trapConnections).toBe(0)
    await expectHealthy()
  })

  it('a learned broker is reachable by node id and by host:port', async () => {
    const byId = rawClient(bridge.url, { broker: String(cluster.nodes[0]!.id) })
    expect((await byId.request(ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })).errorCode).toBe(0)
    byId.ws.close()
    const byAddr = rawClient(bridge.url, { broker: cluster.saslBootstrap! })
    expect((await byAddr.request(ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })).errorCode).toBe(0)
    byAddr.ws.close()
  })
})

describe('framing', () => {
  it('an oversized frame is closed with 1009', async () => {
    const c = rawClient(bridge.url)
    const big = new Uint8Array(2 * 1024 * 1024)
    new DataView(big.buffer).setInt32(0, big.length - 4)
    const closed = await refusedWith(c, big)
    expect(closed.code).toBe(CloseCode.TOO_BIG)
    await expectHealthy()
  })

  it('a malformed size prefix (negative, or not the message length) is closed with 4400', async () => {
    const frame = encodeRequest(ApiVersions, 3, 1, 'x', { clientSoftwareName: 't', clientSoftwareVersion: '1' }).slice()
    new DataView(frame.buffer).setInt32(0, -7)
    expect((await refusedWith(rawClient(bridge.url), frame)).code).toBe(CloseCode.BAD_FRAME)
    const short = encodeRequest(ApiVersions, 3, 1, 'x', { clientSoftwareName: 't', clientSoftwareVersion: '1' }).slice()
    new DataView(short.buffer).setInt32(0, 3)
    expect((await refusedWith(rawClient(bridge.url), short)).code).toBe(CloseCode.BAD_FRAME)
    expect((await refusedWith(rawClient(bridge.url), new Uint8Array([0, 0]))).code).toBe(CloseCode.BAD_FRAME)
    await expectHealthy()
  })

  it('a frame split across two messages is closed with 4400 (one frame per message)', async () => {
    const frame = encodeRequest(ApiVersions, 3, 1, 'x', { clientSoftwareName: 't', clientSoftwareVersion: '1' })
    const c = rawClient(bridge.url)
    expect(await c.opened).toBe(true)
    c.send(frame.subarray(0, 10))
    c.send(frame.subarray(10))
    const closed = await c.closed
    expect(closed.code).toBe(CloseCode.BAD_FRAME)
    expect(closed.reason).toMatch(/split/)
    await expectHealthy()
  })

  it('two frames in one message are closed with 4400', async () => {
    const a = encodeRequest(ApiVersions, 3, 1, 'x', { clientSoftwareName: 't', clientSoftwareVersion: '1' })
    const both = new Uint8Array(a.length * 2)
    both.set(a); both.set(a, a.length)
    expect((await refusedWith(rawClient(bridge.url), both)).code).toBe(CloseCode.BAD_FRAME)
    await expectHealthy()
  })

  it('a text message is closed with 4400', async () => {
    const c = rawClient(bridge.url)
    expect(await c.opened).toBe(true)
    c.ws.send('hello')
    expect((await c.closed).code).toBe(CloseCode.BAD_FRAME)
    await expectHealthy()
  })
})

describe('token lifetime', () => {
  it('a token expiring mid-connection closes the connection with 4402 at expiry', async () => {
    const exp = Math.floor(Date.now() / 1000) + 2
    const c = rawClient(bridge.url, { token: token({ exp }) })
    const av = await c.request(ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })
    expect(av.errorCode).toBe(0)
    const closed = await c.closed
    const at = Date.now()
    expect(closed.code).toBe(CloseCode.TOKEN_EXPIRED)
    expect(at).toBeGreaterThanOrEqual(exp * 1000 - 50)
    expect(at).toBeLessThan(exp * 1000 + 1500)
    await expectHealthy()
  })
})

describe('ops endpoints', () => {
  it('/metrics counts the refusals above by reason; /readyz is 200', async () => {
    const text = await (await fetch(`${bridge.httpUrl}/metrics`)).text()
    expect(text).toMatch(/kafka_edge_bridge_rejects_total\{reason="api"\} [1-9]/)
    expect(text).toMatch(/kafka_edge_bridge_rejects_total\{reason="destination"\} [1-9]/)
    expect(text).toMatch(/kafka_edge_bridge_request_duration_seconds_bucket\{api="ApiVersions",le="\+Inf"\} [1-9]/)
    expect((await fetch(`${bridge.httpUrl}/readyz`)).status).toBe(200)
  })
})

describe('connection limits', () => {
  it('over connectionsPerIp the upgrade gets HTTP 429; a connection idle past idleTimeoutMs is closed with 4408', async () => {
    const small = await startRelay(cluster, { limits: { connectionsPerIp: 2, idleTimeoutMs: 400, pingIntervalMs: 100 } })
    try {
      const a = rawClient(small.url)
      const b = rawClient(small.url)
      expect(await a.opened).toBe(true)
      expect(await b.opened).toBe(true)
      const c = rawClient(small.url)
      expect((await c.closed).status).toBe(429)
      // a and b send nothing: both are closed as idle (pings answered by ws do not count as traffic).
      expect((await a.closed).code).toBe(CloseCode.IDLE)
      expect((await b.closed).code).toBe(CloseCode.IDLE)
      const h = await assertHealthy(small)
      expect(h.health).toBe(200)
    } finally { await small.close() }
  })
})

// ---------------------------------------------------------------------------------------------
// Round two: the classes an attacker got through with (issue 12). Each refusal is checked for its
// close code, for the broker having seen nothing (the relay forwarded no frame: frames_total{in}
// unchanged), and for the relay staying healthy.

const framesIn = (b: Bridge = bridge) => b.metrics.get('kafka_edge_bridge_frames_total', { direction: 'in' })
const TICKETS = 'kafka-edge.tickets.v1'

/** One uncompressed record batch under a chosen producer id, epoch and sequence. */
function forgedBatch(value: string, stamp: { producerId: bigint; producerEpoch: number; baseSequence: number; transactional?: boolean }): Uint8Array {
  const b = new TsBatchBuilder()
  b.append({ key: null, value: new TextEncoder().encode(value), timestamp: Date.now(), headers: [] })
  return b.finish({ transactional: false, ...stamp })
}

function produceFrame(topic: string, records: Uint8Array, transactionalId: string | null = null, correlationId = 9): Uint8Array {
  return encodeRequest(Produce, 9, correlationId, 'x', { transactionalId, acks: -1, timeoutMs: 5000, topicData: [{ name: topic, partitionData: [{ index: 0, records }] }] })
}

/** A relay's ticket message, as a client that offered kafka-edge.tickets.v1 receives it. */
async function ticketFrom(c: RawClient): Promise<{ ticket: string; producerId: string; producerEpoch: number }> {
  for (let i = 0; i < 100 && c.texts.length === 0; i++) await new Promise((r) => setTimeout(r, 20))
  expect(c.texts.length).toBeGreaterThan(0)
  return JSON.parse(c.texts[c.texts.length - 1]!)
}

/** A refusal that must not reach the broker: the close code, the reason, and no frame forwarded. */
async function refusedBeforeBroker(c: RawClient, frame: Uint8Array, code: number, reason?: RegExp, b: Bridge = bridge): Promise<void> {
  expect(await c.opened).toBe(true)
  const before = framesIn(b)
  c.send(frame)
  const closed = await c.closed
  expect(closed.code).toBe(code)
  if (reason) expect(closed.reason).toMatch(reason)
  expect(framesIn(b)).toBe(before)
}

describe('producer ids belong to the principal they were issued to (4409)', () => {
  it('a second principal cannot make the first one\'s acknowledged record vanish (end to end, Java reader as judge)', async () => {
    const topic = uniqueTopic('tenancy')
    await createTopic(cluster, topic, { partitions: 1 })
    const tickets: ProducerIdTicket[] = []
    const victim = createProducer({
      'bootstrap.servers': 'relay:443', 'linger.ms': 0,
      transport: websocket({ url: bridge.url, token: token({ sub: 'victim', topics: [topic] }), WebSocket: WebSocket as never, onProducerIdTicket: (t) => tickets.push(t) }),
    })
    try {
      const first = await victim.send({ topic, partition: 0, value: 'victim-1' })
      expect(tickets.length).toBe(1)
      const { producerId, producerEpoch } = tickets[0]!
      // The attacker holds a token for the same topic and the victim's id, epoch and next sequence.
      const attacker = rawClient(bridge.url, { token: token({ sub: 'attacker', topics: [topic] }) })
      await refusedBeforeBroker(attacker, produceFrame(topic, forgedBatch('attacker', { producerId, producerEpoch, baseSequence: 1 })),
        CloseCode.FOREIGN_PRODUCER_ID, /producer id \d+ was not issued to this principal/)
      expect(bridge.metrics.get('kafka_edge_bridge_rejects_total', { reason: 'foreign_producer_id' })).toBeGreaterThanOrEqual(1)
      const second = await victim.send({ topic, partition: 0, value: 'victim-2' })
      expect(second.offset).toBe(first.offset + 1n)
      const log = await readTopic(cluster, topic, { expected: 2, isolation: 'read_uncommitted' })
      expect(log.map((r) => new TextDecoder().decode(r.value!))).toEqual(['victim-1', 'victim-2'])
      expect(log.map((r) => BigInt(r.offset))).toEqual([first.offset, second.offset])
    } finally { await victim.close() }
    await expectHealthy()
  })

  it('a foreign id is refused in InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn', async () => {
    // The owner gets an id for a transactional id both tokens allow; the other principal never did.
    const owner = rawClient(bridge.url, { token: token({ sub: 'owner' }) })
    const init = await owner.request(InitProducerId, 4, { transactionalId: null, transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 })
    expect(init.errorCode).toBe(0)
    owner.ws.close()
    const pid = init.producerId as bigint
    const other = () => rawClient(bridge.url, { token: token({ sub: 'intruder' }) })
    const frames = [
      encodeRequest(InitProducerId, 4, 2, 'x', { transactionalId: null, transactionTimeoutMs: 60000, producerId: pid, producerEpoch: 0 }),
      encodeRequest(AddPartitionsToTxn, 3, 2, 'x', { transactionalId: 'shop-1', producerId: pid, producerEpoch: 0, topics: [{ name: 'orders', partitions: [0] }] }),
      encodeRequest(AddOffsetsToTxn, 3, 2, 'x', { transactionalId: 'shop-1', producerId: pid, producerEpoch: 0, groupId: 'g' }),
      encodeRequest(TxnOffsetCommit, 3, 2, 'x', { transactionalId: 'shop-1', groupId: 'g', producerId: pid, producerEpoch: 0, generationId: -1, memberId: '', groupInstanceId: null, topics: [] }),
      encodeRequest(EndTxn, 3, 2, 'x', { transactionalId: 'shop-1', producerId: pid, producerEpoch: 0, committed: true }),
    ]
    for (const f of frames) await refusedBeforeBroker(other(), f, CloseCode.FOREIGN_PRODUCER_ID)
    await expectHealthy()
  })

  it('a ticket carries the binding to another relay instance (load balancer, page reload); a foreign or forged ticket is refused', async () => {
    const topic = uniqueTopic('ticket')
    await createTopic(cluster, topic, { partitions: 1 })
    // A second instance: same token and ticket keys, no memory of the first.
    const other = await startRelay(cluster)
    try {
      const a = rawClient(bridge.url, { token: token({ sub: 'alice' }), protocols: ['kafka-edge.v1', TICKETS, `kafka-edge.bearer.${token({ sub: 'alice' })}`] })
      const init = await a.request(InitProducerId, 4, { transactionalId: null, transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 })
      const t = await ticketFrom(a)
      // The ticket arrives before the answer it is about.
      expect(t.producerId).toBe(String(init.producerId))
      expect(t.ticket).toMatch(/^kpt1\.[\w-]+\.[\w-]+$/)
      a.ws.close()
      const batch = forgedBatch('resumed', { producerId: init.producerId as bigint, producerEpoch: init.producerEpoch as number, baseSequence: 0 })

      // Without the ticket the other instance does not know the id.
      await refusedBeforeBroker(rawClient(other.url, { token: token({ sub: 'alice' }) }), produceFrame(topic, batch), CloseCode.FOREIGN_PRODUCER_ID, undefined, other)
      // With it (presented at the upgrade), the id is alice's there too and the broker takes the batch.
      const resumed = rawClient(other.url, { protocols: ['kafka-edge.v1', `kafka-edge.bearer.${token({ sub: 'alice' })}`, `kafka-edge.ticket.${t.ticket}`] })
      expect(await resumed.opened).toBe(true)
      resumed.send(produceFrame(topic, batch, null, 41))
      const res = decodeResponse(Produce, 9, (await resumed.next()).subarray(4))
      expect((res.responses as Array<{ partitionResponses: Array<{ errorCode: number }> }>)[0]!.partitionResponses[0]!.errorCode).toBe(0)
      resumed.ws.close()
      // Presented on an open connection (a text message), as the transport does for links opened before the ticket.
      const late = rawClient(other.url, { token: token({ sub: 'alice' }) })
      expect(await late.opened).toBe(true)
      late.ws.send(JSON.stringify({ type: 'producer-id-ticket', ticket: t.ticket }))
      late.send(produceFrame(topic, forgedBatch('late', { producerId: init.producerId as bigint, producerEpoch: init.producerEpoch as number, baseSequence: 1 }), null, 42))
      const res2 = decodeResponse(Produce, 9, (await late.next()).subarray(4))
      expect((res2.responses as Array<{ partitionResponses: Array<{ errorCode: number }> }>)[0]!.partitionResponses[0]!.errorCode).toBe(0)
      late.ws.close()

      // Another principal presenting alice's ticket, and a ticket with a flipped byte, are refused at once.
      const bob = rawClient(other.url, { protocols: ['kafka-edge.v1', `kafka-edge.bearer.${token({ sub: 'bob' })}`, `kafka-edge.ticket.${t.ticket}`] })
      const bobClosed = await bob.closed
      expect(bobClosed.code).toBe(CloseCode.FOREIGN_PRODUCER_ID)
      expect(bobClosed.reason).toMatch(/another principal/)
      const forged = t.ticket.slice(0, -2) + (t.ticket.endsWith('A') ? 'BB' : 'AA')
      const f = rawClient(other.url, { protocols: ['kafka-edge.v1', `kafka-edge.bearer.${token({ sub: 'alice' })}`, `kafka-edge.ticket.${forged}`] })
      expect((await f.closed).code).toBe(CloseCode.FOREIGN_PRODUCER_ID)
      expect(other.metrics.get('kafka_edge_bridge_producer_id_tickets_total', { event: 'refused' })).toBe(2)
      const log = await readTopic(cluster, topic, { expected: 2, isolation: 'read_uncommitted' })
      expect(log.map((r) => new TextDecoder().decode(r.value!))).toEqual(['resumed', 'late'])
    } finally { await other.close() }
    await expectHealthy()
  })

  it('the WebSocket transport keeps the latest ticket and presents a saved one on a new relay instance', async () => {
    const topic = uniqueTopic('ticket-transport')
    await createTopic(cluster, topic, { partitions: 1 })
    const got: ProducerIdTicket[] = []
    const tok = token({ sub: 'carol', topics: [topic] })
    const p = createProducer({ 'bootstrap.servers': 'relay:443', transport: websocket({ url: bridge.url, token: tok, WebSocket: WebSocket as never, onProducerIdTicket: (t) => got.push(t) }) })
    await p.send({ topic, partition: 0, value: 'page-1' })
    await p.close()
    expect(got.length).toBe(1)
    const saved = got[0]!
    // "Reload": a fresh transport, the saved ticket, another relay instance.
    const other = await startRelay(cluster)
    try {
      const t = websocket({ url: other.url, token: tok, WebSocket: WebSocket as never, producerIdTicket: saved.ticket })
      expect(t.producerIdTicket).toBe(saved.ticket)
      const frames: Uint8Array[] = []
      const link = await t.open({ host: 'relay', port: 443, nodeId: -1 }, { onFrame: (f) => frames.push(f), onClose: () => {} })
      await link.write(produceFrame(topic, forgedBatch('page-2', { producerId: saved.producerId, producerEpoch: saved.producerEpoch, baseSequence: 1 }), null, 77))
      for (let i = 0; i < 200 && frames.length === 0; i++) await new Promise((r) => setTimeout(r, 20))
      const res = decodeResponse(Produce, 9, frames[0]!)
      expect((res.responses as Array<{ partitionResponses: Array<{ errorCode: number }> }>)[0]!.partitionResponses[0]!.errorCode).toBe(0)
      link.close()
      expect(other.metrics.get('kafka_edge_bridge_producer_id_tickets_total', { event: 'accepted' })).toBe(1)
    } finally { await other.close() }
    expect(() => websocket({ url: bridge.url, token: tok, producerIdTicket: 'not-a-ticket' })).toThrow(ConfigException)
  })

  it('a producer with a checkpoint keeps the relay\'s ticket in it, and resumed through another instance presents it by itself', async () => {
    // What a Worker's Durable Object or a server process does: no ticket plumbing in the application.
    const topic = uniqueTopic('ticket-checkpoint')
    await createTopic(cluster, topic, { partitions: 1 })
    const tok = token({ sub: 'dan', topics: [topic] })
    const store = memoryCheckpointStore()
    const first = createProducer({ 'bootstrap.servers': 'relay:443', transport: websocket({ url: bridge.url, token: tok, WebSocket: WebSocket as never }), checkpoint: store })
    await first.send({ topic, partition: 0, value: 'before' })
    await first.flush()
    await first.close()
    expect(store.current?.ticket).toMatch(/^kpt1\./)
    const other = await startRelay(cluster)
    try {
      const transport = websocket({ url: other.url, token: tok, WebSocket: WebSocket as never })
      const resumed = createProducer({ 'bootstrap.servers': 'relay:443', transport, checkpoint: store })
      await resumed.send({ topic, partition: 0, value: 'after' })
      expect(resumed.resumeOutcome?.mode).toBe('resumed')
      expect(transport.producerIdTicket).toBe(store.current?.ticket)
      await resumed.close()
      // Presented on each link it opened (bootstrap and leader).
      expect(other.metrics.get('kafka_edge_bridge_producer_id_tickets_total', { event: 'accepted' })).toBeGreaterThanOrEqual(1)
    } finally { await other.close() }
    const read = await readTopic(cluster, topic, { isolation: 'read_uncommitted' })
    expect(read.map((r) => new TextDecoder().decode(r.value!))).toEqual(['before', 'after'])
  })

  it('InitProducerId is capped per principal and per address: 4430, a metric, a typed client error', async () => {
    const small = await startRelay(cluster, { limits: { initProducerIdsPerMinutePerPrincipal: 3, initProducerIdsPerMinutePerIp: 5 } })
    try {
      const init = (c: RawClient) => c.request(InitProducerId, 4, { transactionalId: null, transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 })
      const dave = rawClient(small.url, { token: token({ sub: 'dave' }) })
      for (let i = 0; i < 3; i++) expect((await init(dave)).errorCode).toBe(0)
      await refusedBeforeBroker(dave, encodeRequest(InitProducerId, 4, 99, 'x', { transactionalId: null, transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 }),
        CloseCode.PRODUCER_ID_RATE_LIMITED, /InitProducerId/, small)
      // Reconnecting does not refill the principal's allowance.
      const again = rawClient(small.url, { token: token({ sub: 'dave' }) })
      await refusedBeforeBroker(again, encodeRequest(InitProducerId, 4, 1, 'x', { transactionalId: null, transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 }),
        CloseCode.PRODUCER_ID_RATE_LIMITED, undefined, small)
      // The address cap (5) holds across principals: 3 spent by dave, 2 more by erin, then refused.
      const erin = rawClient(small.url, { token: token({ sub: 'erin' }) })
      for (let i = 0; i < 2; i++) expect((await init(erin)).errorCode).toBe(0)
      await refusedBeforeBroker(erin, encodeRequest(InitProducerId, 4, 99, 'x', { transactionalId: null, transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 }),
        CloseCode.PRODUCER_ID_RATE_LIMITED, undefined, small)
      expect(small.metrics.get('kafka_edge_bridge_rejects_total', { reason: 'init_producer_id_rate' })).toBe(3)
      const e = closeError(4430, 'too many', 'relay', true)
      expect(e).toBeInstanceOf(PolicyViolationException)
      expect(e.retriable).toBe(false)
      expect(closeError(4409, 'x', 'relay', true)).toBeInstanceOf(ClusterAuthorizationException)
      expect(closeError(4409, 'x', 'relay', true).retriable).toBe(false)
      expect(closeError(4422, 'x', 'relay', true)).toBeInstanceOf(InvalidTopicException)
      expect((await assertHealthy(small)).health).toBe(200)
    } finally { await small.close() }
  })
})

describe('names are compared as the broker reads them (4422 for names Kafka refuses)', () => {
  it('a transactional id or group with a byte-order mark is not the granted id (4403); the broker registers nothing', async () => {
    const tok = token({ transactional_ids: ['shop-1'], groups: ['orders'] })
    await refusedBeforeBroker(rawClient(bridge.url, { token: tok }),
      encodeRequest(InitProducerId, 4, 1, 'x', { transactionalId: '\uFEFFshop-1', transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 }), CloseCode.FORBIDDEN, /transactional id/)
    await refusedBeforeBroker(rawClient(bridge.url, { token: tok }),
      encodeRequest(FindCoordinator, 4, 1, 'x', { keyType: 1, coordinatorKeys: ['\uFEFFshop-1'] }), CloseCode.FORBIDDEN)
    await refusedBeforeBroker(rawClient(bridge.url, { token: tok }),
      encodeRequest(FindCoordinator, 4, 1, 'x', { keyType: 0, coordinatorKeys: ['orders\uFEFF'] }), CloseCode.FORBIDDEN, /group/)
    // Unicode look-alikes and normalization forms are different bytes, so different names.
    await refusedBeforeBroker(rawClient(bridge.url, { token: token({ transactional_ids: ['caf\u00e9'] }) }),
      encodeRequest(InitProducerId, 4, 1, 'x', { transactionalId: 'cafe\u0301', transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 }), CloseCode.FORBIDDEN)
    // The exact granted id still passes.
    const ok = rawClient(bridge.url, { token: tok })
    expect((await ok.request(FindCoordinator, 4, { keyType: 1, coordinatorKeys: ['shop-1'] })).coordinators).toHaveLength(1)
    ok.ws.close()
    await expectHealthy()
  })

  it('topic names Kafka refuses are refused before any grant is looked at: BOM, > 249 chars, illegal characters, "." and ".."', async () => {
    const all = token({ topics: ['*'] })
    for (const name of ['\uFEFFclicks', 'a'.repeat(250), 'a b', 'clicks/eu', '.', '..', 'caf\u00e9', '']) {
      await refusedBeforeBroker(rawClient(bridge.url, { token: all }),
        encodeRequest(Metadata, 12, 1, 'x', { topics: [{ topicId: new Uint8Array(16), name }], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false }), CloseCode.INVALID_NAME)
    }
    await refusedBeforeBroker(rawClient(bridge.url, { token: all }), produceFrame('\uFEFFclicks', forgedBatch('x', { producerId: -1n, producerEpoch: -1, baseSequence: -1 })), CloseCode.INVALID_NAME)
    // 249 characters is legal and passes to the broker.
    const ok = rawClient(bridge.url, { token: all })
    const md = await ok.request(Metadata, 12, { topics: [{ topicId: new Uint8Array(16), name: 'a'.repeat(249) }], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
    expect((md.topics as Array<{ name: string }>)[0]!.name).toBe('a'.repeat(249))
    ok.ws.close()
    await expectHealthy()
  })
})

describe('Metadata by topic id is refused in every version that has the field (10-12)', () => {
  it.each([10, 11, 12])('v%i: an allowed name next to another topic\'s id, and an id alone, are refused with 4403', async (version) => {
    const secret = uniqueTopic('secret')
    await createTopic(cluster, secret)
    const tok = token({ topics: ['allowed-*'] })
    const id = new Uint8Array(16).fill(7)
    await refusedBeforeBroker(rawClient(bridge.url, { token: tok }), encodeRequest(Metadata, version, 1, 'x', {
      topics: [{ topicId: new Uint8Array(16), name: 'allowed-a' }, { topicId: id, name: 'allowed-b' }], allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false,
    }), CloseCode.FORBIDDEN, /topic id/)
    await refusedBeforeBroker(rawClient(bridge.url, { token: tok }), encodeRequest(Metadata, version, 1, 'x', {
      topics: [{ topicId: id, name: null }], allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false,
    }), CloseCode.FORBIDDEN, /topic id/)
    await expectHealthy()
  })
})

describe('TxnOffsetCommit topics are checked like Produce topics', () => {
  it('offsets for a topic outside the token are refused with 4403 inside an allowed group and transactional id', async () => {
    const tok = token({ topics: ['allowed-*'], groups: ['g-1'], transactional_ids: ['shop-*'] })
    await refusedBeforeBroker(rawClient(bridge.url, { token: tok }), encodeRequest(TxnOffsetCommit, 3, 1, 'x', {
      transactionalId: 'shop-1', groupId: 'g-1', producerId: -1n, producerEpoch: -1, generationId: -1, memberId: '', groupInstanceId: null,
      topics: [{ name: 'payments', partitions: [{ partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: -1, committedMetadata: null }] }],
    }), CloseCode.FORBIDDEN, /topic payments/)
    await expectHealthy()
  })
})

/** Writes raw HTTP on a fresh TCP connection and resolves with what came back when it closes. */
function rawHttp(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port })
    let got = ''
    s.on('data', (d) => { got += d.toString() })
    s.on('close', () => resolve(got))
    s.on('error', () => {})
    s.write(text)
  })
}

describe('HTTP and upgrade accounting', () => {
  it('upgrades the WebSocket layer refuses (no Sec-WebSocket-Key) hold no per-address slot', async () => {
    const small = await startRelay(cluster, { limits: { connectionsPerIp: 3 } })
    try {
      for (let i = 0; i < 20; i++) {
        const res = await rawHttp(small.port, `GET /kafka HTTP/1.1\r\nHost: relay\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: kafka-edge.v1\r\n\r\n`)
        expect(res).toMatch(/^HTTP\/1.1 400/)
      }
      const good = Array.from({ length: 3 }, () => rawClient(small.url))
      for (const c of good) expect((await c.request(ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })).errorCode).toBe(0)
      // The cap itself still holds for accepted connections.
      expect((await rawClient(small.url).closed).status).toBe(429)
      for (const c of good) c.ws.close()
    } finally { await small.close() }
  })

  it('keep-alive slowloris: after one fast request, the next request\'s headers get the same deadline', async () => {
    const s = connect({ host: '127.0.0.1', port: bridge.port })
    s.on('error', () => {})
    await new Promise<void>((r) => s.once('connect', () => r()))
    let got = ''
    s.on('data', (d) => { got += d.toString() })
    s.write('GET /healthz HTTP/1.1\r\nHost: relay\r\nConnection: keep-alive\r\n\r\n')
    for (let i = 0; i < 100 && !got.includes('"ok"'); i++) await new Promise((r) => setTimeout(r, 10))
    expect(got).toMatch(/^HTTP\/1.1 200/)
    const t0 = Date.now()
    s.write('GET /healthz HTTP/1.1\r\nHost: relay\r\n')
    const trickle = setInterval(() => { if (!s.destroyed) s.write('X-Slow: a\r\n') }, 100)
    await new Promise<void>((r) => s.once('close', () => r()))
    clearInterval(trickle)
    // upgradeTimeoutMs is 1 s in this suite; Node's own check would have let it run for a minute.
    expect(Date.now() - t0).toBeLessThan(5000)
    await expectHealthy()
  })
})

describe('topic patterns match in linear time', () => {
  it('patterns that make a backtracking matcher explode decide 32 KiB names at once, and mean what they say', () => {
    const evil = compilePatterns(['a*a*a*a*a*a*a*a*a*a*a*a*b', '*x*y*z*'])
    const long = 'a'.repeat(32 * 1024)
    // A regex built from these patterns takes longer than the suite's timeout on each of these.
    for (let i = 0; i < 200; i++) expect(evil(long)).toBe(false)
    expect(evil(`${long}b`)).toBe(true)
    expect(evil('-x-y-z-')).toBe(true)
    expect(evil('-x-z-y-')).toBe(false)
    const m = compilePatterns(['ab*ab', 'pre*mid*suf'])
    expect(m('abab')).toBe(true)
    expect(m('aba')).toBe(false)
    expect(m('ab-x-ab')).toBe(true)
    expect(m('premidsuf')).toBe(true)
    expect(m('presuf')).toBe(false)
    expect(m('pre-suf-mid-suf')).toBe(true)
  })

  it('over the wire: ten connections naming a crafted 249-character topic are refused and the relay answers', async () => {
    const name = 'a'.repeat(249)
    await Promise.all(Array.from({ length: 10 }, (_, i) => refusedBeforeBroker(rawClient(bridge.url, { token: token({ sub: `crafter-${i}`, topics: ['a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b'] }) }),
      encodeRequest(Metadata, 12, 1, 'x', { topics: Array.from({ length: 50 }, () => ({ topicId: new Uint8Array(16), name })), allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false }),
      CloseCode.FORBIDDEN)))
    await expectHealthy()
  })
})

describe('parsing has a shared budget', () => {
  it('more names than maxNamesPerRequest are refused from the array count (4400); the limit itself passes', async () => {
    const small = await startRelay(cluster, { limits: { maxNamesPerRequest: 100 } })
    try {
      const md = (n: number) => encodeRequest(Metadata, 12, 1, 'x', { topics: Array.from({ length: n }, (_, i) => ({ topicId: new Uint8Array(16), name: `t-${i}` })), allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
      await refusedBeforeBroker(rawClient(small.url), md(101), CloseCode.BAD_FRAME, /at most 100 names/, small)
      const ok = rawClient(small.url)
      expect(await ok.opened).toBe(true)
      ok.send(md(100))
      await ok.next()
      ok.ws.close()
      expect(small.metrics.get('kafka_edge_bridge_rejects_total', { reason: 'too_many_names' })).toBe(1)
    } finally { await small.close() }
  })

  it('many connections sending large frames at once are read a few at a time; every one is answered and /healthz stays up', async () => {
    // Budget for one 1 MiB message at a time; twelve 900 KiB Metadata frames of 30,000 names each.
    const small = await startRelay(cluster, { limits: { maxFrameBytes: 1024 * 1024, parseBudgetBytes: 1024 * 1024 } })
    try {
      const names = Array.from({ length: 30_000 }, (_, i) => ({ topicId: new Uint8Array(16), name: `n${i}`.padEnd(12, 'x') }))
      const frame = encodeRequest(Metadata, 12, 1, 'x', { topics: names, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
      expect(frame.length).toBeGreaterThan(800 * 1024)
      const clients = Array.from({ length: 12 }, (_, i) => rawClient(small.url, { token: token({ sub: `bulk-${i}` }) }))
      await Promise.all(clients.map((c) => c.opened))
      // Every client first sends 60% of its message as a WebSocket fragment, so twelve large messages are
      // in reception at once whatever the machine's speed: the budget must make some of them wait.
      const cut = Math.floor(frame.length * 0.6)
      for (const c of clients) c.ws.send(frame.subarray(0, cut), { binary: true, fin: false })
      await waitFor(() => small.metrics.get('kafka_edge_bridge_parse_budget_waits_total') > 0, { what: 'a connection waiting for the parse budget' })
      const health = await fetch(`${small.httpUrl}/healthz`)
      expect(health.status).toBe(200)
      for (const c of clients) c.ws.send(frame.subarray(cut), { binary: true, fin: true })
      const closed = await Promise.all(clients.map((c) => c.closed))
      for (const c of closed) expect(c.code).toBe(CloseCode.BAD_FRAME)
      expect(small.metrics.get('kafka_edge_bridge_parse_budget_waits_total')).toBeGreaterThan(0)
      expect(/kafka_edge_bridge_parse_budget_bytes (\d+)/.exec(small.metrics.render())![1]).toBe('0')
      expect((await assertHealthy(small)).health).toBe(200)
    } finally { await small.close() }
  })
})
