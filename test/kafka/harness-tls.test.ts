// The harness's TLS listeners and certificates, against real Apache Kafka 4.4 and the Java clients
// only (no kafka-edge code): a failure here is a harness (or environment) problem.
import { X509Certificate } from 'node:crypto'
import fs from 'node:fs'
import { describe, it, expect, beforeAll } from 'vitest'
import * as harness from '../../scripts/kafka/kafka.mjs'
import {
  ensureCluster, createTopic, produceJava, readTopic, javaSecurity, bootstrapFor, unsecuredJwt, uniqueTopic, type Cluster,
} from '../helpers/kafka.js'

const text = (b: Uint8Array | null) => new TextDecoder().decode(b!)
const pem = (f: string) => new X509Certificate(fs.readFileSync(f))

describe('TLS + SASL cluster', () => {
  let c: Cluster
  beforeAll(async () => { c = await ensureCluster({ sasl: true, tls: true }) })

  it('serves certificates that chain to the test CA, and an expired one for negative tests', () => {
    expect(c.name).toBe('n1-sasl-tls')
    expect(c.sslBootstrap).toBe(`127.0.0.1:${c.nodes[0]!.sslPort}`)
    expect(bootstrapFor(c, 'SASL_SSL')).toBe(c.saslSslBootstrap)
    const t = c.tls!
    const ca = pem(t.ca)
    const broker = pem(t.cert)
    expect(broker.verify(ca.publicKey)).toBe(true)
    expect(broker.verify(pem(t.otherCa).publicKey)).toBe(false)
    expect(broker.checkIP('127.0.0.1')).toBe('127.0.0.1')
    expect(broker.checkHost('localhost')).toBe('localhost')
    expect(pem(t.clientCert).verify(ca.publicKey)).toBe(true)
    const expired = pem(t.expiredCert)
    expect(expired.verify(ca.publicKey)).toBe(true)
    expect(Date.parse(expired.validTo)).toBeLessThan(Date.now())
    expect(Date.parse(expired.validFrom)).toBeLessThan(Date.parse(expired.validTo))
  })

  it('requires a client certificate on the SSL listener', async () => {
    const ca = fs.readFileSync(c.tls!.ca)
    const port = c.nodes[0]!.sslPort!
    const withCert = await harness.probe('127.0.0.1', port, 5000, { tls: { ca, cert: fs.readFileSync(c.tls!.clientCert), key: fs.readFileSync(c.tls!.clientKey) } })
    expect(withCert.brokers).toEqual([{ id: 1, host: '127.0.0.1', port, rack: null }])
    // TLS 1.3: the handshake completes for the client; the refusal is an alert on the first read
    await expect(harness.probe('127.0.0.1', port, 5000, { tls: { ca } })).rejects.toThrow(/alert/)
  })

  it('round-trips records with the Java clients over SSL (mTLS) and SASL_SSL/SCRAM-SHA-512', async () => {
    // one JVM per helper: Admin and Produce over SSL, Reader over SASL_SSL
    const ssl = javaSecurity(c, 'SSL')
    const topic = uniqueTopic('harness-tls')
    await createTopic(c, topic, { security: ssl })
    await produceJava(c, topic, [{ key: 'k', value: 'over-ssl' }], { security: ssl })
    const recs = await readTopic(c, topic, { expected: 1, security: javaSecurity(c, 'SASL_SSL', 'SCRAM-SHA-512', 'relay') })
    expect(recs.map((r) => [text(r.key), text(r.value)])).toEqual([['k', 'over-ssl']])
  })

  it('accepts an unsecured OAUTHBEARER token and refuses an expired one', async () => {
    const tls = { ca: fs.readFileSync(c.tls!.ca) }
    const port = c.nodes[0]!.saslSslPort!
    const first = (jwt: string) => `n,,\x01auth=Bearer ${jwt}\x01\x01`
    const ok = await harness.saslProbe('127.0.0.1', port, 'OAUTHBEARER', [first(unsecuredJwt('admin', { lifetimeS: 600 }))], { tls })
    expect(ok.mechanisms).toContain('OAUTHBEARER')
    expect(ok.rounds[0]!.errorCode).toBe(0)
    // the session ends with the token even without connections.max.reauth.ms
    expect(ok.rounds[0]!.sessionLifetimeMs).toBeGreaterThan(590_000)
    expect(ok.rounds[0]!.sessionLifetimeMs).toBeLessThanOrEqual(600_000)
    const now = Math.floor(Date.now() / 1000)
    // RFC 7628: the error comes as a challenge first; the client answers with a lone 0x01
    const bad = await harness.saslProbe('127.0.0.1', port, 'OAUTHBEARER', [first(unsecuredJwt('admin', { iat: now - 120, exp: now - 60 })), '\x01'], { tls })
    expect(bad.rounds.map((r) => r.errorCode)).toEqual([0, 58])
    expect(JSON.parse(bad.rounds[0]!.authBytes!.toString())).toEqual({ status: 'invalid_token' })
  })
})
