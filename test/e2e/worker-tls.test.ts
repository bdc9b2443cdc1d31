// The telemetry Worker over TLS + SASL: real workerd (wrangler dev) whose Durable Object's producer
// reaches the SASL_SSL listener of a real Kafka 4.4 broker with cloudflare:sockets (secureTransport
// 'on') and SCRAM-SHA-512, the credentials coming from secrets (.dev.vars, as `wrangler secret put`
// sets them when deployed). workerd trusts the test CA only through NODE_EXTRA_CA_CERTS in the
// wrangler process's environment; without it the same POST fails at once with an
// SslAuthenticationException that names the likely causes. The Java consumer reads the events back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bootstrapFor, createTopic, ensureCluster, readTopic, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { startWrangler, type WranglerDev } from './wrangler.js'

const PARTITIONS = 3
const REQUESTS = 12
const PER_REQUEST = 100

interface Accepted { accepted: number; producerId: string; events: { id: string; partition: number; offset: string }[] }
interface Refused { error: string; accepted: number; failed: { id: string; error: string; message: string; retriable: boolean; mayHaveBeenWritten: boolean }[] }

let cluster: Cluster
const running: WranglerDev[] = []

beforeAll(async () => {
  cluster = await ensureCluster({ tls: true, sasl: true })
})

afterAll(async () => {
  await Promise.all(running.map((d) => d.stop()))
})

async function worker(topic: string, env: Record<string, string | undefined>): Promise<WranglerDev> {
  const dev = await startWrangler({
    ACCEPT_MODE: 'sync',
    KAFKA_BOOTSTRAP: bootstrapFor(cluster, 'SASL_SSL'),
    TELEMETRY_TOPIC: topic,
    KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
    KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
  }, { env, secrets: { KAFKA_SASL_USERNAME: 'admin', KAFKA_SASL_PASSWORD: 'admin-secret' } })
  running.push(dev)
  return dev
}

const post = (dev: WranglerDev, events: object[]) => fetch(`${dev.url}/events`, { method: 'POST', body: JSON.stringify(events), headers: { 'content-type': 'application/json' } })

describe('telemetry Worker -> SASL_SSL (SCRAM-SHA-512) over cloudflare:sockets TLS', () => {
  it(`with NODE_EXTRA_CA_CERTS naming the test CA: ${REQUESTS * PER_REQUEST} events over ${REQUESTS} requests, all read back by the Java consumer`, async () => {
    const topic = uniqueTopic('telemetry-tls')
    await createTopic(cluster, topic, { partitions: PARTITIONS })
    const dev = await worker(topic, { NODE_EXTRA_CA_CERTS: cluster.tls!.ca })

    const sent = new Map<string, { type: string; key: string; data: unknown }>()
    const acked = new Map<string, { partition: number; offset: string }>()
    const producerIds = new Set<string>()
    const send = async (r: number) => {
      const events = Array.from({ length: PER_REQUEST }, (_, i) => ({ type: 'tls_check', id: `r${r}-${i}`, key: `user-${(r * PER_REQUEST + i) % 17}`, data: { r, i, note: 'ünïcödé ✓' } }))
      for (const e of events) sent.set(e.id, e)
      const res = await post(dev, events)
      const body = await res.json() as Accepted & Partial<Refused>
      expect(res.status, `${JSON.stringify(body).slice(0, 2000)}\n${dev.log().slice(-3000)}`).toBe(202)
      expect(body.accepted).toBe(PER_REQUEST)
      producerIds.add(body.producerId)
      for (const e of body.events) acked.set(e.id, { partition: e.partition, offset: e.offset })
    }
    // one request alone (connects and authenticates), then the rest four at a time on the same connections
    await send(0)
    for (let r = 1; r < REQUESTS; r += 4) await Promise.all([r, r + 1, r + 2, r + 3].filter((x) => x < REQUESTS).map(send))
    expect(acked.size).toBe(REQUESTS * PER_REQUEST)
    expect(producerIds.size).toBe(1)

    const health = await (await fetch(`${dev.url}/healthz`)).json() as Record<string, unknown>
    expect(health).toMatchObject({ ok: true, producer: 'open', securityProtocol: 'SASL_SSL' })
    expect(JSON.stringify(health)).not.toContain('admin-secret')
    // one connection to the one broker (the bootstrap connection may be reused or replaced by the node's)
    expect(health.connectionsOpened).toBeGreaterThan(0)
    expect(health.connectionsOpened).toBeLessThanOrEqual(2)

    const records = await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected: acked.size, timeoutMs: 60_000 })
    expect(records).toHaveLength(acked.size)
    const seen = new Set<string>()
    for (const rec of records) {
      const v = JSON.parse(new TextDecoder().decode(rec.value!)) as { id: string; type: string; key?: string; data?: unknown }
      const want = sent.get(v.id)
      expect(want, `unexpected event ${v.id}`).toBeDefined()
      expect(seen.has(v.id), `duplicate ${v.id}`).toBe(false)
      seen.add(v.id)
      expect(acked.get(v.id)).toEqual({ partition: rec.partition, offset: String(rec.offset) })
      expect(v.type).toBe(want!.type)
      expect(v.data).toEqual(want!.data)
      expect(new TextDecoder().decode(rec.key!)).toBe(want!.key)
    }
    expect(seen.size).toBe(sent.size)
    await dev.stop()
  })

  it('without NODE_EXTRA_CA_CERTS workerd does not trust the broker: the POST fails fast with SslAuthenticationException naming the likely causes', async () => {
    const topic = uniqueTopic('telemetry-untrusted')
    await createTopic(cluster, topic, { partitions: 1 })
    const dev = await worker(topic, { NODE_EXTRA_CA_CERTS: undefined })

    const started = Date.now()
    const res = await post(dev, [{ type: 'x', id: 'untrusted-1' }, { type: 'x', id: 'untrusted-2' }])
    const ms = Date.now() - started
    const body = await res.json() as Refused
    console.log(`untrusted CA: ${res.status} after ${ms} ms: ${body.failed?.[0]?.message}`)
    expect(res.status, `${JSON.stringify(body)}\n${dev.log().slice(-3000)}`).toBe(500)
    expect(body.accepted).toBe(0)
    expect(body.failed.map((f) => f.id)).toEqual(['untrusted-1', 'untrusted-2'])
    for (const f of body.failed) {
      expect(f.error).toBe('SslAuthenticationException')
      expect(f.retriable).toBe(false)
      expect(f.mayHaveBeenWritten).toBe(false)
      expect(f.message).toMatch(/TLS to 127\.0\.0\.1:\d+ failed/)
      expect(f.message).toMatch(/not trusted by workerd/)
      expect(f.message).toMatch(/NODE_EXTRA_CA_CERTS/)
      expect(f.message).toMatch(/unreachable/)
    }
    // the producer's max.block.ms in the Worker is 15 s: a certificate problem must not wait that out
    expect(ms).toBeLessThan(5_000)
    // and nothing reached the topic
    expect(await readTopic(cluster, topic, { isolation: 'read_uncommitted' })).toHaveLength(0)
    await dev.stop()
  })
})
