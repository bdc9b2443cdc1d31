// TLS and SASL against real Kafka 4.4 listeners (SSL with mutual TLS, SASL_SSL with PLAIN, SCRAM and
// OAUTHBEARER), read back by the Java consumer over the same kind of listener with the same identity.
import fs from 'node:fs'
import tls from 'node:tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ConfigException, SaslAuthenticationException, SslAuthenticationException, TimeoutException, UnsupportedSaslMechanismException,
  createProducer, type Producer, type ProducerSettings, type RecordMetadata,
} from '../../src/edge/index.js'
import { tcp } from '../../src/edge/node.js'
import type { Link, Transport } from '../../src/edge/transport/transport.js'
import { bootstrapFor, createTopic, ensureCluster, javaSecurity, readTopic, uniqueTopic, unsecuredJwt, type Cluster, type SaslMechanism } from '../helpers/kafka.js'
import { mixedRecords, sameBytes, toProducerRecord } from '../helpers/records.js'

let cluster: Cluster
let pem: { ca: string; clientCert: string; clientKey: string; otherCa: string; expiredCert: string; expiredKey: string }
beforeAll(async () => {
  cluster = await ensureCluster({ tls: true, sasl: true })
  const t = cluster.tls!
  const read = (f: string) => fs.readFileSync(f, 'utf8')
  pem = { ca: read(t.ca), clientCert: read(t.clientCert), clientKey: read(t.clientKey), otherCa: read(t.otherCa), expiredCert: read(t.expiredCert), expiredKey: read(t.expiredKey) }
})

const producers: Producer[] = []
afterAll(async () => { await Promise.all(producers.map((p) => p.close())) })

function producer(settings: ProducerSettings): Producer {
  const p = createProducer({ transport: tcp(), ...settings })
  producers.push(p)
  return p
}

const oauthToken = (sub = 'admin', lifetimeS = 3600) => async () => ({ token: unsecuredJwt(sub, { lifetimeS }), lifetimeMs: lifetimeS * 1000 })

function saslSettings(mechanism: SaslMechanism): ProducerSettings {
  const base = { 'bootstrap.servers': bootstrapFor(cluster, 'SASL_SSL'), 'security.protocol': 'SASL_SSL', 'ssl.ca.pem': pem.ca, 'sasl.mechanism': mechanism } as const
  if (mechanism === 'OAUTHBEARER') return { ...base, 'sasl.oauthbearer.token.provider': oauthToken() }
  if (mechanism === 'PLAIN') return { ...base, 'sasl.username': 'admin', 'sasl.password': 'admin-secret' }
  return { ...base, 'sasl.jaas.config': 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";' }
}

async function sendAndVerify(settings: ProducerSettings, security: Record<string, string>): Promise<void> {
  const topic = uniqueTopic('sec')
  await createTopic(cluster, topic, { partitions: 3 })
  const p = producer({ ...settings, 'compression.type': 'lz4' })
  const records = mixedRecords(10_000, 7)
  const acks: RecordMetadata[] = await Promise.all(records.map((m) => p.send(toProducerRecord(topic, m))))
  const read = await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected: 10_000, timeoutMs: 60_000, security })
  expect(read).toHaveLength(10_000)
  const byPosition = new Map(read.map((r) => [`${r.partition}:${r.offset}`, r]))
  const lastOffset = new Map<number, bigint>()
  for (let i = 0; i < records.length; i++) {
    const got = byPosition.get(`${acks[i]!.partition}:${acks[i]!.offset}`)
    expect(got, `record ${i}`).toBeDefined()
    expect(sameBytes(got!.key, records[i]!.key) && sameBytes(got!.value, records[i]!.value), `bytes of record ${i}`).toBe(true)
    const prev = lastOffset.get(acks[i]!.partition)
    if (prev !== undefined) expect(acks[i]!.offset > prev).toBe(true)
    lastOffset.set(acks[i]!.partition, acks[i]!.offset)
  }
}

describe('an idempotent producer over TLS sends 10,000 records that the Java reader reads back byte-identical', () => {
  it('SSL with a client certificate (the listener requires mutual TLS)', async () => {
    await sendAndVerify({
      'bootstrap.servers': bootstrapFor(cluster, 'SSL'), 'security.protocol': 'SSL',
      'ssl.ca.pem': pem.ca, 'ssl.certificate.pem': pem.clientCert, 'ssl.key.pem': pem.clientKey,
    }, javaSecurity(cluster, 'SSL'))
  })

  it.each(['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER'] as const)('SASL_SSL with %s', async (mechanism) => {
    await sendAndVerify(saslSettings(mechanism), javaSecurity(cluster, 'SASL_SSL', mechanism))
  })
})

/** A send's typed failure, and how long it took; the producer is closed afterwards with nothing pending. */
async function failure(settings: ProducerSettings): Promise<{ error: Error & { mayHaveBeenWritten?: boolean }; ms: number }> {
  const p = producer({ 'max.block.ms': 8_000, ...settings })
  const started = Date.now()
  const error = await p.send({ topic: 'never-created', value: 'x' }).then(() => { throw new Error('send succeeded') }, (e: Error) => e)
  const ms = Date.now() - started
  await p.close()
  return { error, ms }
}

describe('bad security settings fail fast with a typed error that names the cause', () => {
  it('a wrong password is a SaslAuthenticationException with the broker message, at once', async () => {
    const { error, ms } = await failure({ ...saslSettings('SCRAM-SHA-512'), 'sasl.jaas.config': undefined, 'sasl.username': 'admin', 'sasl.password': 'wrong' })
    expect(error).toBeInstanceOf(SaslAuthenticationException)
    expect(error.message).toMatch(/SCRAM-SHA-512 authentication to 127\.0\.0\.1:\d+ failed: .*Authentication failed/)
    expect(error.mayHaveBeenWritten).toBe(false)
    expect(ms).toBeLessThan(5_000)
  })

  it('a mechanism the broker does not enable names the ones it does', async () => {
    const { error } = await failure({
      'bootstrap.servers': bootstrapFor(cluster, 'SASL_SSL'), 'security.protocol': 'SASL_SSL', 'ssl.ca.pem': pem.ca,
      'sasl.mechanism': 'AWS_MSK_IAM', 'sasl.aws.region': 'eu-west-1', 'sasl.aws.credentials.provider': () => ({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' }),
    })
    expect(error).toBeInstanceOf(UnsupportedSaslMechanismException)
    expect(error.message).toMatch(/AWS_MSK_IAM.*it offers: .*SCRAM-SHA-512/)
  })

  it('a mechanism kafka-edge does not know is a ConfigException at construction', () => {
    // A value the types rule out, as a JavaScript caller or a JSON config could still pass it.
    expect(() => createProducer({ ...saslSettings('PLAIN'), 'sasl.mechanism': 'GSSAPI' } as unknown as ProducerSettings)).toThrow(ConfigException)
  })

  it('an expired OAuth token is refused with the validator\'s reason', async () => {
    const expired = async () => ({ token: unsecuredJwt('admin', { iat: Math.floor(Date.now() / 1000) - 7200, exp: Math.floor(Date.now() / 1000) - 3600 }), lifetimeMs: 1000 })
    const { error, ms } = await failure({ ...saslSettings('OAUTHBEARER'), 'sasl.oauthbearer.token.provider': expired })
    expect(error).toBeInstanceOf(SaslAuthenticationException)
    expect(error.message).toMatch(/OAUTHBEARER.*(invalid_token|expired)/i)
    expect(ms).toBeLessThan(5_000)
  })

  it('a CA that did not sign the broker certificate is an SslAuthenticationException: unknown CA', async () => {
    const { error, ms } = await failure({ ...saslSettings('PLAIN'), 'ssl.ca.pem': pem.otherCa })
    expect(error).toBeInstanceOf(SslAuthenticationException)
    expect((error as SslAuthenticationException).reason).toBe('unknown CA')
    expect((error as SslAuthenticationException).host).toBe('127.0.0.1')
    expect(error.message).toMatch(/ssl\.ca\.pem/)
    expect(ms).toBeLessThan(5_000)
  })

  it('mutual TLS without a client certificate names the missing certificate', async () => {
    const { error, ms } = await failure({ 'bootstrap.servers': bootstrapFor(cluster, 'SSL'), 'security.protocol': 'SSL', 'ssl.ca.pem': pem.ca })
    expect(error).toBeInstanceOf(SslAuthenticationException)
    expect((error as SslAuthenticationException).reason).toBe('client certificate refused')
    expect(error.message).toMatch(/ssl\.certificate\.pem/)
    expect(ms).toBeLessThan(5_000)
  })

  it('a host name the certificate does not list is a hostname mismatch (and verification can be switched off)', async () => {
    const port = Number(bootstrapFor(cluster, 'SASL_SSL').split(',')[0]!.split(':')[1])
    const viaAlias = { ...saslSettings('PLAIN'), 'bootstrap.servers': `kafka.wrong-name.test:${port}`, transport: tcp({ resolve: (a) => ({ host: a.host === 'kafka.wrong-name.test' ? '127.0.0.1' : a.host, port: a.port }) }) }
    const { error } = await failure(viaAlias)
    expect(error).toBeInstanceOf(SslAuthenticationException)
    expect((error as SslAuthenticationException).reason).toBe('hostname mismatch')
    expect(error.message).toContain('kafka.wrong-name.test')
    // ssl.endpoint.identification.algorithm='' (Java's switch) lets the same name through.
    const topic = uniqueTopic('sec-noverify')
    await createTopic(cluster, topic, { partitions: 1 })
    const unverified = producer({ ...viaAlias, 'ssl.endpoint.identification.algorithm': '' })
    expect((await unverified.send({ topic, value: 'x' })).offset).toBe(0n)
  })

  it('an expired broker certificate is named as expired', async () => {
    const server = tls.createServer({ cert: pem.expiredCert, key: pem.expiredKey }, (s) => s.destroy())
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    try {
      const { port } = server.address() as { port: number }
      const { error } = await failure({ 'bootstrap.servers': `127.0.0.1:${port}`, 'security.protocol': 'SSL', 'ssl.ca.pem': pem.ca })
      expect(error).toBeInstanceOf(SslAuthenticationException)
      expect((error as SslAuthenticationException).reason).toBe('expired certificate')
    } finally { server.close() }
  })

  it('TLS to a plaintext port, and plaintext to a TLS port, are each told apart from a down broker', async () => {
    const tlsToPlain = await failure({ 'bootstrap.servers': bootstrapFor(cluster, 'PLAINTEXT'), 'security.protocol': 'SSL', 'ssl.ca.pem': pem.ca })
    expect(tlsToPlain.error).toBeInstanceOf(SslAuthenticationException)
    expect(tlsToPlain.error.message).toMatch(/plaintext listener/)
    expect(tlsToPlain.ms).toBeLessThan(5_000)

    const plainToTls = await failure({ 'bootstrap.servers': bootstrapFor(cluster, 'SSL') })
    expect(plainToTls.ms).toBeLessThan(9_000)
    if (plainToTls.error instanceof TimeoutException) {
      // The broker may drop the connection without a TLS alert; then the timeout names that cause.
      expect(plainToTls.error.message).toMatch(/last error: .*closed/)
    } else {
      expect(plainToTls.error).toBeInstanceOf(SslAuthenticationException)
      expect(plainToTls.error.message).toMatch(/expects TLS.*security.protocol/)
    }
  })

  it('no broker at all: the timeout says the connection was refused', async () => {
    const { error, ms } = await failure({ 'bootstrap.servers': '127.0.0.1:1', 'max.block.ms': 2_000 })
    expect(error).toBeInstanceOf(TimeoutException)
    expect(error.message).toMatch(/refused/)
    expect((error as Error & { cause?: unknown }).cause).toBeInstanceOf(Error)
    expect(ms).toBeLessThan(4_000)
  })
})

/** Counts connections opened and SaslHandshake requests written (API key 17), from the transport's side. */
function countingTransport(): { transport: Transport; opens: number; handshakes: number } {
  const inner = tcp()
  const counts = { opens: 0, handshakes: 0 }
  const transport: Transport = {
    name: 'counting-tcp', tls: 'full',
    open: async (address, handlers, options) => {
      counts.opens++
      const link = await inner.open(address, handlers, options)
      const counted: Link = {
        write: (frame) => { if (frame.length >= 6 && ((frame[4]! << 8) | frame[5]!) === 17) counts.handshakes++; return link.write(frame) },
        close: () => link.close(),
      }
      return counted
    },
  }
  return Object.assign(counts, { transport })
}

describe('KIP-368 re-authentication', () => {
  it('a producer sending for 3x connections.max.reauth.ms re-authenticates in place: no failed send, no reconnects', async () => {
    const reauthMs = 3_000
    const short = await ensureCluster({ tls: true, sasl: true, reauthMs })
    const topic = uniqueTopic('reauth')
    await createTopic(short, topic, { partitions: 2 })
    const counting = countingTransport()
    const p = producer({ ...saslSettings('SCRAM-SHA-256'), 'bootstrap.servers': bootstrapFor(short, 'SASL_SSL'), transport: counting.transport, 'linger.ms': 20 })
    const sends: Array<Promise<RecordMetadata>> = []
    const until = Date.now() + 3 * reauthMs
    let i = 0
    while (Date.now() < until) {
      for (let k = 0; k < 50; k++) sends.push(p.send({ topic, key: `k${i % 10}`, value: `v${i++}` }))
      await new Promise((r) => setTimeout(r, 20))
    }
    const results = await Promise.allSettled(sends)
    expect(results.filter((r) => r.status === 'rejected')).toEqual([])
    // One bootstrap connection plus one per broker (a single node here); every handshake after the
    // first on a connection is a re-authentication of a live connection.
    expect(counting.opens).toBeLessThanOrEqual(2)
    expect(counting.handshakes - counting.opens).toBeGreaterThanOrEqual(2)
    const read = await readTopic(short, topic, { isolation: 'read_uncommitted', expected: i, timeoutMs: 60_000 })
    expect(read).toHaveLength(i)
  })
})
