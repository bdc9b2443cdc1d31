// The telemetry Worker's producer wiring: security settings from env/secrets, and the connection
// counter that wraps cloudflareSockets() without hiding its TLS capability or the open() options.
import { describe, expect, it } from 'vitest'
import { ConfigException, createProducer, websocket } from '../../src/edge/index.js'
import { cloudflareSockets, type CloudflareConnect } from '../../src/edge/transport/cloudflare-sockets.js'
import type { Env } from '../../src/edge/worker/env.js'
import { countingOpens, relayTransport, securitySettings } from '../../src/edge/worker/settings.js'

const env = (extra: Partial<Env>): Env => ({ PRODUCER: undefined as never, KAFKA_BOOTSTRAP: '127.0.0.1:9093', TELEMETRY_TOPIC: 't', ...extra })

describe('securitySettings(env)', () => {
  it('maps the four variables to the producer settings', () => {
    expect(securitySettings(env({
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512', KAFKA_SASL_USERNAME: 'admin', KAFKA_SASL_PASSWORD: 'admin-secret',
    }))).toEqual({ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'SCRAM-SHA-512', 'sasl.username': 'admin', 'sasl.password': 'admin-secret' })
  })

  it('sets nothing when the variables are absent or blank, so the producer keeps its PLAINTEXT default', () => {
    expect(securitySettings(env({}))).toEqual({})
    expect(securitySettings(env({ KAFKA_SECURITY_PROTOCOL: '', KAFKA_SASL_MECHANISM: ' ', KAFKA_SASL_USERNAME: '', KAFKA_SASL_PASSWORD: '  ' }))).toEqual({})
  })

  it('accepts lower-case protocol and mechanism names and keeps the password verbatim', () => {
    expect(securitySettings(env({ KAFKA_SECURITY_PROTOCOL: ' sasl_ssl ', KAFKA_SASL_MECHANISM: 'scram-sha-256', KAFKA_SASL_USERNAME: ' u ', KAFKA_SASL_PASSWORD: ' p w ' })))
      .toEqual({ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'SCRAM-SHA-256', 'sasl.username': 'u', 'sasl.password': ' p w ' })
  })

  it('a bad combination is the producer\'s ConfigException, naming the setting', () => {
    const transport = cloudflareSockets({ connect: (() => { throw new Error('no network in unit tests') }) as CloudflareConnect })
    expect(() => createProducer({ 'bootstrap.servers': 'b:1', transport, ...securitySettings(env({ KAFKA_SASL_MECHANISM: 'PLAIN' })) })).toThrow(ConfigException)
    expect(() => createProducer({ 'bootstrap.servers': 'b:1', transport, ...securitySettings(env({ KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512', KAFKA_SASL_USERNAME: 'admin' })) }))
      .toThrow(/sasl\.password/)
  })
})

describe('countingOpens(transport)', () => {
  it('keeps the TLS capability (SASL_SSL is accepted) and hands the TLS options to the inner transport', async () => {
    const seen: unknown[] = []
    const connect: CloudflareConnect = (_address, options) => {
      seen.push(options)
      return { readable: new ReadableStream(), writable: new WritableStream(), opened: Promise.resolve({}), closed: new Promise(() => {}), close: () => {} }
    }
    let opened = 0
    const transport = countingOpens(cloudflareSockets({ connect }), () => { opened++ })
    expect(transport.tls).toBe('system')
    expect(() => createProducer({
      'bootstrap.servers': 'b:1', transport, ...securitySettings(env({ KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512', KAFKA_SASL_USERNAME: 'admin', KAFKA_SASL_PASSWORD: 'x' })),
    })).not.toThrow()
    const link = await transport.open({ host: 'b', port: 1, nodeId: -1 }, { onFrame: () => {}, onClose: () => {} }, { tls: { verifyHostname: true } })
    const plain = await transport.open({ host: 'b', port: 1, nodeId: -1 }, { onFrame: () => {}, onClose: () => {} })
    expect(seen).toEqual([{ secureTransport: 'on', allowHalfOpen: false }, { secureTransport: 'off', allowHalfOpen: false }])
    expect(opened).toBe(2)
    link.close()
    plain.close()
  })

  it('a transport without TLS stays without it', () => {
    const transport = countingOpens({ name: 'plain', open: () => Promise.reject(new Error('unused')) }, () => {})
    expect('tls' in transport).toBe(false)
    expect(transport.producerIdTicket).toBeUndefined()
  })

  it('the relay transport\'s producer-id ticket stays reachable both ways (the checkpoint keeps it, a resume hands it back)', () => {
    const inner = websocket({ url: 'wss://relay.example/kafka', token: 't' })
    const transport = countingOpens(inner, () => {})
    expect(transport.producerIdTicket).toBeNull()
    transport.producerIdTicket = 'kpt1.abc.def'
    expect(inner.producerIdTicket).toBe('kpt1.abc.def')
    expect(transport.producerIdTicket).toBe('kpt1.abc.def')
    // Not a ticket: ignored, as the transport ignores it.
    transport.producerIdTicket = 'junk'
    expect(transport.producerIdTicket).toBe('kpt1.abc.def')
  })
})

describe('relayTransport(env)', () => {
  it('KAFKA_RELAY_URL with the KAFKA_RELAY_TOKEN secret is the WebSocket transport; without the URL, none', () => {
    expect(relayTransport(env({}))).toBeNull()
    expect(relayTransport(env({ KAFKA_RELAY_URL: ' ' }))).toBeNull()
    const t = relayTransport(env({ KAFKA_RELAY_URL: 'wss://relay.example/kafka', KAFKA_RELAY_TOKEN: 'tok' }))
    expect(t?.name).toBe('websocket')
    expect(t?.producerIdTicket).toBeNull()
  })

  it('a relay URL without a token, or beside broker security settings, is a ConfigException that says which to change', () => {
    expect(() => relayTransport(env({ KAFKA_RELAY_URL: 'wss://relay.example/kafka' }))).toThrow(/without KAFKA_RELAY_TOKEN.*wrangler secret put KAFKA_RELAY_TOKEN/)
    expect(() => relayTransport(env({ KAFKA_RELAY_URL: 'wss://relay.example/kafka', KAFKA_RELAY_TOKEN: 't', KAFKA_SECURITY_PROTOCOL: 'SASL_SSL' })))
      .toThrow(ConfigException)
  })
})
