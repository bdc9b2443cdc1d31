// Many concurrent clients through one relay, and a graceful shutdown with requests in flight.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Bridge } from '../../src/bridge/index.js'
import { CloseCode } from '../../src/bridge/codes.js'
import { ApiVersions } from '../../src/edge/protocol/index.js'
import { createTopic, readTopic, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { rawClient, relayCluster, startRelay, token, wsProducer } from './helpers.js'

let cluster: Cluster
beforeAll(async () => { cluster = await relayCluster() })

describe('load', () => {
  let bridge: Bridge
  afterAll(async () => { await bridge?.close() })

  it('150 producers (one principal each) produce concurrently through one relay: no errors, RSS bounded', async () => {
    bridge = await startRelay(cluster, { limits: { connectionsPerIp: 2000 } })
    const topic = uniqueTopic('relay-load')
    await createTopic(cluster, topic, { partitions: 4 })
    const N = 150
    const PER = 100
    const rss0 = process.memoryUsage().rss
    const producers = Array.from({ length: N }, (_, i) => wsProducer(bridge, { 'linger.ms': 10 }, token({ sub: `client-${i}`, topics: [topic] })))
    let peakConnections = 0
    const watch = setInterval(() => { peakConnections = Math.max(peakConnections, bridge.connectionCount) }, 20)
    const t0 = Date.now()
    const results = await Promise.allSettled(producers.flatMap((p, i) =>
      Array.from({ length: PER }, (_, j) => p.send({ topic, value: `${i}:${j}` }))))
    const ms = Date.now() - t0
    clearInterval(watch)
    const rssPeak = process.memoryUsage().rss
    await Promise.all(producers.map((p) => p.close()))
    const failed = results.filter((r) => r.status === 'rejected')
    console.log(JSON.stringify({ producers: N, records: N * PER, ms, peakConnections, failed: failed.length, rssGrowthMB: Math.round((rssPeak - rss0) / 1e6) }))
    expect(failed).toEqual([])
    expect(peakConnections).toBeGreaterThanOrEqual(N)
    const read = await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected: N * PER, timeoutMs: 60_000 })
    expect(new Set(read.map((r) => new TextDecoder().decode(r.value!))).size).toBe(N * PER)
    // Relay + 150 producers in one process; the relay holds no per-record state.
    expect(rssPeak - rss0).toBeLessThan(600 * 1024 * 1024)
    expect(bridge.metrics.render()).not.toMatch(/rejects_total\{reason="(?!throttled)/)
  }, 180_000)
})

describe('graceful shutdown', () => {
  it('stops accepting, answers what is in flight, then closes clients with 1001', async () => {
    const bridge = await startRelay(cluster, { faults: { enabled: true, delayMs: 300 } }, { env: { KAFKA_EDGE_BRIDGE_FAULTS: '1' } })
    const c = rawClient(bridge.url)
    expect(await c.opened).toBe(true)
    // Answered 300 ms late (fault delay): the answer must still arrive before the close.
    const pending = c.request(ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })
    await new Promise((r) => setTimeout(r, 100))
    const closing = bridge.close({ drainTimeoutMs: 5000 })
    const ready = await fetch(`${bridge.httpUrl}/readyz`).then((r) => r.status, () => 'refused')
    expect(ready === 503 || ready === 'refused').toBe(true)
    const late = rawClient(bridge.url)
    expect(await late.opened).toBe(false)
    expect((await pending).errorCode).toBe(0)
    expect((await c.closed).code).toBe(CloseCode.GOING_AWAY)
    await closing
  })

  it('a client that never gets its answer is closed at the drain bound', async () => {
    const bridge = await startRelay(cluster, { faults: { enabled: true, delayMs: 5000 } }, { env: { KAFKA_EDGE_BRIDGE_FAULTS: '1' } })
    const c = rawClient(bridge.url)
    void c.request(ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' }).catch(() => {})
    await new Promise((r) => setTimeout(r, 200))
    const t0 = Date.now()
    await bridge.close({ drainTimeoutMs: 500 })
    expect((await c.closed).code).toBe(CloseCode.GOING_AWAY)
    expect(Date.now() - t0).toBeGreaterThanOrEqual(450)
    expect(Date.now() - t0).toBeLessThan(2500)
  })
})
