// The relay is the security boundary: every refusal has a documented close code (or, before the
// upgrade, an HTTP status), and after each one the relay is still healthy for good clients.
import { createServer, type Server } from 'node:net'
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CloseCode, type Bridge } from '../../src/bridge/index.js'
import { openUpstream } from '../../src/bridge/upstream.js'
import { ApiVersions, FindCoordinator, InitProducerId, Metadata, Produce, SaslHandshake, Writer, encodeRequest } from '../../src/edge/protocol/index.js'
import WebSocket from 'ws'
import { AuthorizationException, websocket } from '../../src/edge/index.js'
import { createTopic, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { assertHealthy, rawClient, relayCluster, startRelay, token, wsProducer } from './helpers.js'

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
  it('a wrong Origin gets HTTP 403 before any WebSocket exists', async () => {
    const c = rawClient(bridge.url, { origin: 'https://evil.example' })
    expect(await c.opened).toBe(false)
    expect((await c.closed).status).toBe(403)
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
