// The relay in front of the SASL_SSL listener of a real Kafka 4.4 broker: it verifies the broker's
// certificate and authenticates with each mechanism through the shared TLS and SASL code, while the
// producer behind it only speaks WebSocket. The Java consumer reads what went through, over
// PLAINTEXT, and must see every record byte-identical and in send order per partition.
import { writeFileSync, mkdtempSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CloseCode, type Bridge } from '../../src/bridge/index.js'
import { UpstreamError, openUpstream } from '../../src/bridge/upstream.js'
import { SslAuthenticationException, type RecordMetadata } from '../../src/edge/index.js'
import { ApiVersions } from '../../src/edge/protocol/index.js'
import { createTopic, dumpBatches, readTopic, uniqueTopic, unsecuredJwt, type Cluster } from '../helpers/kafka.js'
import { mixedRecords, sameBytes, toProducerRecord } from '../helpers/records.js'
import { rawClient, relayCluster, startRelay, wsProducer } from './helpers.js'

let cluster: Cluster
let caFile: string
let otherCaFile: string
let tokenServer: Server
let tokenUrl = ''
let tokensIssued = 0
const bridges: Bridge[] = []

beforeAll(async () => {
  cluster = await relayCluster()
  caFile = cluster.tls!.ca
  otherCaFile = cluster.tls!.otherCa
  // An OAuth client-credentials endpoint issuing the unsigned JWTs the broker's unsecured validator accepts.
  tokenServer = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      const ok = req.headers.authorization === `Basic ${Buffer.from('relay:relay-client-secret').toString('base64')}`
      tokensIssued += ok ? 1 : 0
      res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' })
      res.end(JSON.stringify(ok ? { access_token: unsecuredJwt('relay', { lifetimeS: 3600 }), token_type: 'Bearer', expires_in: 3600 } : { error: 'invalid_client' }))
    })
  })
  await new Promise<void>((r) => tokenServer.listen(0, '127.0.0.1', () => r()))
  tokenUrl = `http://127.0.0.1:${(tokenServer.address() as { port: number }).port}/oauth2/token`
})
afterAll(async () => {
  await Promise.all(bridges.map((b) => b.close()))
  await new Promise((r) => tokenServer?.close(r))
})

async function saslSslRelay(sasl: Record<string, unknown>, tls: Record<string, unknown> = { caFile }, opts: Parameters<typeof startRelay>[2] = {}): Promise<Bridge> {
  const bridge = await startRelay(cluster, { brokers: [cluster.saslSslBootstrap!], tls, sasl }, opts)
  bridges.push(bridge)
  return bridge
}

const MECHANISMS: Array<[string, () => Record<string, unknown>]> = [
  ['PLAIN', () => ({ mechanism: 'PLAIN', username: 'relay', password: 'relay-secret' })],
  ['SCRAM-SHA-256', () => ({ mechanism: 'SCRAM-SHA-256', username: 'relay', password: 'relay-secret' })],
  ['SCRAM-SHA-512', () => ({ mechanism: 'SCRAM-SHA-512', username: 'relay', passwordEnv: 'RELAY_PASSWORD' })],
  ['OAUTHBEARER', () => ({ mechanism: 'OAUTHBEARER', tokenEndpointUrl: tokenUrl, clientId: 'relay', clientSecretEnv: 'RELAY_CLIENT_SECRET', scope: 'kafka', extensions: { relayName: 'e2e' } })],
]

describe('a producer through the relay to a SASL_SSL listener: 10,000 records, idempotent, read back byte-identical and in order', () => {
  it.each(MECHANISMS)('SASL_SSL with %s', async (name, sasl) => {
    const env = { RELAY_PASSWORD: 'relay-secret', RELAY_CLIENT_SECRET: 'relay-client-secret' }
    const bridge = await saslSslRelay(sasl(), { caFile }, { env })
    const topic = uniqueTopic(`relay-${name.toLowerCase()}`)
    await createTopic(cluster, topic, { partitions: 3 })
    const p = wsProducer(bridge, { 'compression.type': 'lz4', 'linger.ms': 5 })
    const records = mixedRecords(10_000, 11)
    let acks: RecordMetadata[]
    try { acks = await Promise.all(records.map((m) => p.send(toProducerRecord(topic, m)))) } finally { await p.close() }

    const read = await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected: 10_000, timeoutMs: 60_000 })
    expect(read).toHaveLength(10_000)
    const byPosition = new Map(read.map((r) => [`${r.partition}:${r.offset}`, r]))
    const last = new Map<number, number>()
    let mismatched = 0
    let outOfOrder = 0
    for (let i = 0; i < records.length; i++) {
      const a = acks[i]!
      const got = byPosition.get(`${a.partition}:${Number(a.offset)}`)
      const m = records[i]!
      const same = got !== undefined && sameBytes(got.key, m.key) && sameBytes(got.value, m.value) &&
        got.headers.length === m.headers.length && got.headers.every((h, j) => h.key === m.headers[j]!.key && sameBytes(h.value, m.headers[j]!.value))
      if (!same) mismatched++
      if ((last.get(a.partition) ?? -1) >= Number(a.offset)) outOfOrder++
      last.set(a.partition, Number(a.offset))
    }
    expect(mismatched).toBe(0)
    expect(outOfOrder).toBe(0)

    // Idempotent: every batch carries a producer id, and sequences run 0.. without gaps per partition.
    const batches = await dumpBatches(cluster, topic)
    expect(batches.length).toBeGreaterThan(0)
    const nextSeq = new Map<number, number>()
    for (const b of batches) {
      expect(b.producerId).toBeGreaterThanOrEqual(0)
      expect(b.baseSequence).toBe(nextSeq.get(b.partition) ?? 0)
      nextSeq.set(b.partition, b.lastSequence + 1)
    }
    expect(bridge.metrics.get('kafka_edge_bridge_upstream_errors_total', { kind: 'tls' })).toBe(0)
    expect(bridge.metrics.get('kafka_edge_bridge_upstream_errors_total', { kind: 'sasl' })).toBe(0)
    if (name === 'OAUTHBEARER') expect(tokensIssued).toBe(1) // one token for every connection of the run
  }, 180_000)
})

describe('upstream TLS failures', () => {
  it('a relay trusting the wrong CA: UpstreamError kind tls (SslAuthenticationException, unknown CA), the client closed 4502 with the reason, counted in the metrics', async () => {
    const failures: unknown[] = []
    const logs: string[] = []
    const bridge = await saslSslRelay({ mechanism: 'SCRAM-SHA-512', username: 'relay', password: 'relay-secret' }, { caFile: otherCaFile }, {
      logs,
      openUpstream: (...args) => openUpstream(...args).catch((e: unknown) => { failures.push(e); throw e }),
    })
    const c = rawClient(bridge.url)
    const closed = await c.closed
    expect(closed.code).toBe(CloseCode.UPSTREAM_UNAVAILABLE)
    expect(closed.reason).toBe('TLS to the broker failed: unknown CA')
    expect(failures).toHaveLength(1)
    const e = failures[0] as UpstreamError
    expect(e).toBeInstanceOf(UpstreamError)
    expect(e.kind).toBe('tls')
    expect(e.cause).toBeInstanceOf(SslAuthenticationException)
    expect((e.cause as SslAuthenticationException).reason).toBe('unknown CA')
    expect((e.cause as SslAuthenticationException).host).toBe(cluster.saslSslBootstrap!.split(':')[0])
    expect(bridge.metrics.get('kafka_edge_bridge_upstream_errors_total', { kind: 'tls' })).toBe(1)
    const metrics = await (await fetch(`${bridge.httpUrl}/metrics`)).text()
    expect(metrics).toMatch(/kafka_edge_bridge_upstream_errors_total\{kind="tls"\} 1/)
    const logged = logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.event === 'upstream_failed')
    expect(logged).toMatchObject({ level: 'warn', kind: 'tls' })
    expect(String(logged!.error)).toMatch(/unknown CA\. .*tls\.caFile/)
    expect(logs.join('\n')).not.toContain('relay-secret')

    // A producer behind it gets the relay's reason in its timeout, so the page's logs point at the relay.
    const p = wsProducer(bridge, { 'max.block.ms': 1500, 'delivery.timeout.ms': 3000, 'request.timeout.ms': 1000 })
    const err = await p.send({ topic: 'never-reached', value: 'x' }).then(() => null, (x: Error) => x)
    await p.close().catch(() => {})
    expect(err).toBeInstanceOf(Error)
    expect(String(err?.message)).toMatch(/TLS to the broker failed: unknown CA/)
    expect(bridge.metrics.get('kafka_edge_bridge_upstream_errors_total', { kind: 'tls' })).toBeGreaterThan(1)
  })

  it('a relay speaking plaintext to the SASL_SSL port: the broker\'s TLS alert makes it kind tls (broker expects TLS), closed 4502', async () => {
    const failures: unknown[] = []
    const bridge = await startRelay(cluster, { brokers: [cluster.saslSslBootstrap!], sasl: { mechanism: 'SCRAM-SHA-512', username: 'relay', password: 'relay-secret' } }, {
      openUpstream: (...args) => openUpstream(...args).catch((e: unknown) => { failures.push(e); throw e }),
    })
    bridges.push(bridge)
    const closed = await rawClient(bridge.url).closed
    expect(closed.code).toBe(CloseCode.UPSTREAM_UNAVAILABLE)
    const e = failures[0] as UpstreamError
    expect(e).toBeInstanceOf(UpstreamError)
    expect(e.kind).toBe('tls')
    expect((e.cause as SslAuthenticationException).reason).toBe('broker expects TLS')
    expect(e.message).toMatch(/answered with TLS: its listener expects TLS\. Add a "tls" section/)
    expect(closed.reason).toBe('TLS to the broker failed: broker expects TLS')
  })
})

describe('SASL session lifetime: re-authentication in place', () => {
  it('an OAUTHBEARER token that expires in 4 s: the relay renews the session in place with the rotated token; with only an expired one left it closes 4503', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kafka-edge-relay-token-'))
    const tokenFile = path.join(dir, 'token')
    const rotate = () => writeFileSync(tokenFile, unsecuredJwt('relay', { lifetimeS: 4 }))
    rotate()
    const rotator = setInterval(rotate, 500)
    const bridge = await saslSslRelay({ mechanism: 'OAUTHBEARER', tokenFile })
    const c = rawClient(bridge.url)
    const ask = () => c.request(ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })
    expect((await ask()).errorCode).toBe(0)
    // Three sessions of at most 4 s each, asked across all of them: the client sees one connection.
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 500))
      expect((await ask()).errorCode).toBe(0)
    }
    expect(bridge.metrics.get('kafka_edge_bridge_upstream_reauthentications_total', { result: 'ok' })).toBeGreaterThanOrEqual(2)
    // No fresh token any more: the renewal after the last one's exp fails, and the client is told to reconnect.
    clearInterval(rotator)
    const closed = await c.closed
    expect(closed.code).toBe(CloseCode.UPSTREAM_SESSION_END)
    expect(closed.reason).toMatch(/re-authenticate/)
    await new Promise((r) => setTimeout(r, 100))
    expect(bridge.metrics.get('kafka_edge_bridge_upstream_reauthentications_total', { result: 'failed' })).toBe(1)
  }, 60_000)
})
