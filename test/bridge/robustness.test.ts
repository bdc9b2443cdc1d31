// The relay serves every tenant from one process: no single request may end it, and every message a
// client sends, whatever its kind, draws on that client's budgets. Each case here is a class a
// red-team run got through; the relay runs as its own process where the question is whether it lives.
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Bridge } from '../../src/bridge/index.js'
import { CloseCode } from '../../src/bridge/codes.js'
import { ApiVersions, InitProducerId } from '../../src/edge/protocol/index.js'
import type { Cluster } from '../helpers/kafka.js'
import { rawClient, relayBase, relayCluster, startRelay, token } from './helpers.js'
import { spawnRelay, type RelayProcess } from './relay-process.js'

/** Sends raw bytes on a fresh TCP connection; resolves with what came back once the relay closed it. */
function exchange(port: number, write: (s: ReturnType<typeof connect>) => void, timeoutMs = 8000): Promise<{ text: string; closedByRelay: boolean }> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1')
    const got: Buffer[] = []
    const t = setTimeout(() => { s.destroy(); resolve({ text: Buffer.concat(got).toString('latin1'), closedByRelay: false }) }, timeoutMs)
    s.on('connect', () => write(s))
    s.on('data', (d) => got.push(d))
    s.on('error', () => {})
    s.on('close', () => { clearTimeout(t); resolve({ text: Buffer.concat(got).toString('latin1'), closedByRelay: true }) })
  })
}

const chunked = (bytes: number, chunk = 16 * 1024): string => {
  let out = ''
  for (let sent = 0; sent < bytes; sent += chunk) out += `${chunk.toString(16)}\r\n${'a'.repeat(chunk)}\r\n`
  return `${out}0\r\n\r\n`
}

describe('relay: one request never ends the process', () => {
  let relay: RelayProcess
  let cluster: Cluster

  beforeAll(async () => {
    cluster = await relayCluster()
    relay = await spawnRelay({
      ...relayBase(cluster),
      path: '/kafka',
      limits: { upgradeTimeoutMs: 1500 },
    })
  })
  afterAll(async () => { await relay?.stop() })

  const healthy = async () => {
    expect(relay.alive()).toBe(true)
    expect((await fetch(`${relay.httpUrl}/healthz`)).status).toBe(200)
  }

  it('a chunked beacon over the cap, with no token and no Origin, is answered 413 and the relay lives on', async () => {
    // The red-team request: the 413's Connection: close detached req.socket, and the keep-alive
    // hook then read .destroyed of null outside any handler.
    const r = await exchange(relay.port, (s) => s.end(`POST /kafka/beacon HTTP/1.1\r\nHost: relay\r\nTransfer-Encoding: chunked\r\n\r\n${chunked(96 * 1024)}`))
    expect(r.text).toMatch(/^HTTP\/1\.1 413 /)
    expect(r.closedByRelay).toBe(true)
    await new Promise((res) => setTimeout(res, 300))
    await healthy()
  })

  it('the same after a keep-alive request on the connection, and with the body still arriving when the 413 goes out', async () => {
    const r = await exchange(relay.port, (s) => {
      s.write('GET /healthz HTTP/1.1\r\nHost: relay\r\n\r\n')
      s.write(`POST /kafka/beacon HTTP/1.1\r\nHost: relay\r\nTransfer-Encoding: chunked\r\n\r\n`)
      const big = chunked(200 * 1024)
      // Slowly, so the relay answers while the body is still coming.
      let at = 0
      const step = () => { if (s.destroyed) return; s.write(big.slice(at, at += 8192)); if (at < big.length) setTimeout(step, 5) }
      step()
    })
    expect(r.text).toMatch(/^HTTP\/1\.1 200 /)
    expect(r.text).toMatch(/HTTP\/1\.1 413 /)
    await new Promise((res) => setTimeout(res, 300))
    await healthy()
  })

  it('a connection that never finishes its request headers is told 408 before it is closed', async () => {
    const r = await exchange(relay.port, (s) => s.write('POST /kafka/beacon HTTP/1.1\r\nHost: re'))
    expect(r.closedByRelay).toBe(true)
    expect(r.text).toMatch(/^HTTP\/1\.1 408 /)
    await healthy()
  })

  it('a beacon whose body stalls, pipelined behind an answered request, is told 408 and gives its slot back', async () => {
    // Found by the fuzzer (KAFKA_EDGE_FUZZ_REPLAY=175621229:21): the body's chunk never completed, the
    // connection stayed open past Node's own checks, and the beacon slot it held was never freed.
    const r = await exchange(relay.port, (s) => s.write(
      'GET /healthz HTTP/1.1\r\nHost: relay\r\n\r\nPOST /kafka/beacon HTTP/1.1\r\nHost: relay\r\nTransfer-Encoding: chunked\r\n\r\n101c7\r\nbbbb'))
    expect(r.closedByRelay).toBe(true)
    expect(r.text).toMatch(/^HTTP\/1\.1 200 /)
    expect(r.text).toMatch(/HTTP\/1\.1 408 [^]*did not arrive within 1500 ms/)
    const metrics = await (await fetch(`${relay.httpUrl}/metrics`)).text()
    expect(metrics).toMatch(/^kafka_edge_bridge_beacons_active 0$/m)
    expect(metrics).toMatch(/^kafka_edge_bridge_rejects_total\{reason="body_timeout"\} [1-9]/m)
    await healthy()
  })

  it('malformed HTTP of each kind gets a status line, not a silent close', async () => {
    const cases = [
      'GARBAGE\r\n\r\n',
      'POST /kafka/beacon HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      'POST /kafka/beacon HTTP/1.1\r\nHost: r\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello',
      'POST /kafka/beacon HTTP/1.1\r\nHost: r\r\nContent-Length: -1\r\n\r\n',
      `GET /kafka HTTP/1.1\r\nHost: r\r\nX-Big: ${'x'.repeat(20_000)}\r\n\r\n`,
      'GET /kafka HTTP/1.1\r\nHost: r\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
      'GET /nope HTTP/1.1\r\nHost: r\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
    ]
    for (const c of cases) {
      const r = await exchange(relay.port, (s) => s.write(c))
      expect(r.text, JSON.stringify(c.slice(0, 60))).toMatch(/^HTTP\/1\.1 [45]\d\d /)
    }
    await healthy()
  })
})

describe('relay: every message a client sends draws on its budgets', () => {
  let cluster: Cluster
  let bridge: Bridge
  const accepted = () => Number(/kafka_edge_bridge_producer_id_tickets_total\{event="accepted"\} (\d+)/.exec(bridge.metrics.render())?.[1] ?? 0)

  beforeAll(async () => {
    cluster = await relayCluster()
    bridge = await startRelay(cluster, { path: '/kafka', limits: { framesPerSec: 200, maxThrottleMs: 500 } })
  })
  afterAll(async () => { await bridge?.close() })

  it('its own ticket sent back as text messages is throttled like frames, and a flood closes it with 4429', async () => {
    // Before: 67,967 ticket messages a second on one connection, an HMAC each, and the connection stayed open.
    const c = rawClient(bridge.url, { origin: 'https://app.example', protocols: ['kafka-edge.v1', `kafka-edge.bearer.${token()}`, 'kafka-edge.tickets.v1'] })
    // A broker started moments ago may still be loading its coordinator (COORDINATOR_LOAD_IN_PROGRESS).
    let init = await c.request(InitProducerId, 4, { transactionalId: null, transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 })
    for (let i = 0; i < 20 && init.errorCode !== 0; i++) {
      await new Promise((r) => setTimeout(r, 500))
      init = await c.request(InitProducerId, 4, { transactionalId: null, transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 })
    }
    expect(init.errorCode).toBe(0)
    const ticket = (JSON.parse(c.texts[0]!) as { ticket: string }).ticket
    const before = accepted()
    const message = JSON.stringify({ type: 'producer-id-ticket', ticket })
    for (let i = 0; i < 5000; i++) c.ws.send(message)
    const closed = await c.closed
    expect(closed.code).toBe(CloseCode.RATE_LIMITED)
    // The budget is 200 a second with half a second of throttling: a few hundred at most, not 5,000.
    expect(accepted() - before).toBeLessThan(600)
  })

  it('pings are control frames the relay answers: a flood of them closes the connection with 4429 too', async () => {
    const c = rawClient(bridge.url, { origin: 'https://app.example' })
    expect(await c.opened).toBe(true)
    // Let the token check finish: before it, nothing is read.
    await new Promise((r) => setTimeout(r, 200))
    for (let i = 0; i < 5000; i++) c.ws.ping()
    expect((await c.closed).code).toBe(CloseCode.RATE_LIMITED)
  })

  it('a client within its budget is not disturbed by the accounting', async () => {
    const c = rawClient(bridge.url, { origin: 'https://app.example' })
    for (let i = 0; i < 20; i++) {
      const r = await c.request(ApiVersions, 3, { clientSoftwareName: 'tests', clientSoftwareVersion: '1' })
      expect(r.errorCode).toBe(0)
    }
    c.ws.ping()
    await new Promise((r) => setTimeout(r, 100))
    expect(c.ws.readyState).toBe(c.ws.OPEN)
    c.ws.close()
  })
})

describe('relay: an error in one connection\'s asynchronous setup stays in that connection', () => {
  let cluster: Cluster
  let bridge: Bridge
  const unhandled: unknown[] = []
  const onUnhandled = (e: unknown) => { unhandled.push(e) }

  beforeAll(async () => {
    cluster = await relayCluster()
    bridge = await startRelay(cluster, { path: '/kafka' })
    // In the relay's own process an unhandled rejection ends it (Node's default): this one records them.
    process.on('unhandledRejection', onUnhandled)
  })
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled)
    await bridge?.close()
  })

  it('a broker lookup that throws closes that client with 1011, and the next client is served', async () => {
    // Stands for any bug past the setup's first await: the broker connection is set up asynchronously,
    // after the handler that contains synchronous errors has returned.
    const destinations = bridge.destinations as { resolve: (p: string | null) => Promise<unknown> }
    const resolve = destinations.resolve.bind(destinations)
    let thrown = 0
    destinations.resolve = async (p) => {
      if (thrown++ === 0) throw new TypeError('injected: a bug in the broker lookup')
      return resolve(p)
    }
    try {
      const failing = rawClient(bridge.url, { origin: 'https://app.example' })
      expect(await failing.opened).toBe(true)
      expect((await failing.closed).code).toBe(CloseCode.INTERNAL)
      const next = rawClient(bridge.url, { origin: 'https://app.example' })
      const r = await next.request(ApiVersions, 3, { clientSoftwareName: 'tests', clientSoftwareVersion: '1' })
      expect(r.errorCode).toBe(0)
      next.ws.close()
      await new Promise((r) => setImmediate(r))
      expect(unhandled).toEqual([])
      expect(bridge.metrics.render()).toMatch(/kafka_edge_bridge_rejects_total\{reason="internal_error"\} 1/)
    } finally {
      destinations.resolve = resolve
    }
  })
})
