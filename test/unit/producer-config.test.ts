import type { AnyProducerSettings, ProducerSettings } from '../../src/edge/producer/config.js'
import { describe, expect, it } from 'vitest'
import { ConfigException } from '../../src/edge/errors.js'
import { extensions } from '../../src/edge/extensions.js'
import { parseConfig } from '../../src/edge/producer/config.js'
import '../../src/edge/producer/install.js'
import { installBrokerSecurity } from '../../src/edge/security.js'
import type { Transport } from '../../src/edge/transport/transport.js'

const transport: Transport = { name: 'none', open: () => Promise.reject(new Error('unused')) }
const base = { 'bootstrap.servers': 'b:9092', transport }

describe('producer config (reference section 5)', () => {
  it('has the Java 4.x defaults', () => {
    const c = parseConfig(base)
    expect(c).toMatchObject({
      acks: -1, idempotence: true, lingerMs: 5, batchSize: 16384, maxInFlight: 5, retries: 2147483647,
      deliveryTimeoutMs: 120000, requestTimeoutMs: 30000, retryBackoffMs: 100, retryBackoffMaxMs: 1000,
      maxRequestSize: 1048576, bufferMemory: 33554432, maxBlockMs: 60000, compressionType: 'none', transactionTimeoutMs: 60000,
    })
  })

  it.each([
    [{ 'enable.idempotence': true, acks: 1 }, /acks must be all/],
    [{ 'enable.idempotence': true, retries: 0 }, /retries must be greater than 0/],
    [{ 'enable.idempotence': true, 'max.in.flight.requests.per.connection': 6 }, /at most 5/],
    [{ 'transactional.id': 'x', 'enable.idempotence': false }, /requires enable.idempotence/],
    [{ 'transactional.id': 'x', acks: 0 }, /requires idempotence/],
    [{ 'delivery.timeout.ms': 1000, 'linger.ms': 5, 'request.timeout.ms': 30000 }, /at least linger.ms \+ request.timeout.ms/],
    [{ acks: 2 }, /acks must be all, -1, 0 or 1/],
    [{ 'linger.ms': -1 }, /linger.ms/],
    [{ 'no.such.setting': 1 }, /unknown producer setting/],
  ])('rejects %j', (extra, message) => {
    // Wrong types and unknown keys on purpose: the run-time checks are what is tested.
    expect(() => parseConfig({ ...base, ...extra } as AnyProducerSettings)).toThrow(ConfigException)
    expect(() => parseConfig({ ...base, ...extra } as AnyProducerSettings)).toThrow(message)
  })

  it('idempotence left at its default yields silently to conflicting settings', () => {
    expect(parseConfig({ ...base, acks: 1 }).idempotence).toBe(false)
    expect(parseConfig({ ...base, 'max.in.flight.requests.per.connection': 10 }).idempotence).toBe(false)
  })

  it('delivery.timeout.ms left at its default is raised to linger.ms + request.timeout.ms', () => {
    expect(parseConfig({ ...base, 'request.timeout.ms': 200000 }).deliveryTimeoutMs).toBe(200005)
  })
})

describe('typed settings (checked by tsc in npm test)', () => {
  it('a misspelt key or a value outside its enumeration does not compile; camelCase aliases do', () => {
    const transport = base.transport
    // @ts-expect-error a typo in a key is caught before run time
    const typo: ProducerSettings = { 'linger.msx': 5, transport }
    // @ts-expect-error compression.type is an enumeration
    const codec: ProducerSettings = { 'compression.type': 'brotli', transport }
    const aliases: ProducerSettings = { bootstrapServers: 'b:9092', lingerMs: 5, 'compression.type': 'zstd', saslMechanism: 'SCRAM-SHA-512', transport }
    expect(() => parseConfig(typo as AnyProducerSettings)).toThrow(/unknown producer setting "linger.msx"/)
    expect(() => parseConfig({ ...codec, 'bootstrap.servers': 'b:9092' })).toThrow(/compression.type must be one of/)
    const tlsTransport: Transport = { ...transport, tls: 'full' }
    installBrokerSecurity()
    const c = parseConfig({ ...aliases, transport: tlsTransport, securityProtocol: 'SASL_SSL', saslUsername: 'u', saslPassword: 'p' })
    expect([c.lingerMs, c.compressionType, c.security.sasl?.name]).toEqual([5, 'zstd', 'SCRAM-SHA-512'])
  })
})

describe('security settings before a transport that carries TLS is created (security.ts not installed)', () => {
  it('only PLAINTEXT: any ssl.* or sasl.* setting is a ConfigException that says where they belong', () => {
    const saved = { security: extensions.security, sasl: extensions.sasl }
    delete extensions.security
    delete extensions.sasl
    try {
      const ws: Transport = { name: 'websocket', open: transport.open }
      expect(parseConfig({ ...base, transport: ws }).security).toEqual({ protocol: 'PLAINTEXT', tls: null, sasl: null })
      expect(() => parseConfig({ ...base, transport: ws, 'security.protocol': 'SASL_SSL' })).toThrow(ConfigException)
      expect(() => parseConfig({ ...base, transport: ws, 'security.protocol': 'SSL' }))
        .toThrow(/^security.protocol SSL: the websocket transport carries no TLS or SASL to brokers: through the relay they are the relay's settings/)
      expect(() => parseConfig({ ...base, transport: ws, 'sasl.username': 'u', 'ssl.ca.pem': '-----BEGIN CERTIFICATE-----' }))
        .toThrow(/^sasl.username, ssl.ca.pem: the websocket transport carries no TLS or SASL/)
      // A transport of one's own that does TLS gets the settings by being built on tcp() or cloudflareSockets().
      const own: Transport = { name: 'own-tls', tls: 'full', open: transport.open }
      expect(() => parseConfig({ ...base, transport: own, 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'PLAIN', 'sasl.username': 'u', 'sasl.password': 'p' }))
        .toThrow(/^security.protocol SASL_SSL: TLS and SASL settings come with the tcp\(\) and cloudflareSockets\(\) transports/)
    } finally {
      Object.assign(extensions, saved)
    }
  })
})
