// The telemetry Worker's producer wiring: security settings from env/secrets, and the connection
// counter that wraps cloudflareSockets() without hiding its TLS capability or the open() options.
import { describe, expect, it } from 'vitest'
import { ConfigException, createProducer, websocket } from '../../src/edge/index.js'
import { cloudflareSockets, type CloudflareConnect } from '../../src/edge/transport/cloudflare-sockets.js'
import type { Env } from '../../src/edge/worker/env.js'
import { otlpSettings } from '../../src/edge/worker/otlp.js'
import { acceptMode, bootstrapVar, choiceVar, countingOpens, flagVar, intVar, lingerMsVar, locationHintVar, relayTransport, securitySettings, topicVar } from '../../src/edge/worker/settings.js'

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

describe('the Worker\'s vars: a value it cannot read is a ConfigException naming the var, never a quiet default', () => {
  it('whole numbers: unset or blank is the default, TOML numbers count, anything else is refused with the var, the value and the default', () => {
    expect(intVar(env({}), 'SHARDS', 1)).toBe(1)
    expect(intVar(env({ SHARDS: ' ' }), 'SHARDS', 1)).toBe(1)
    expect(intVar(env({ SHARDS: ' 4 ' }), 'SHARDS', 1)).toBe(4)
    // wrangler.toml `SHARDS = 4` arrives as a JSON number, not text.
    expect(intVar(env({ SHARDS: 4 as never }), 'SHARDS', 1)).toBe(4)
    for (const bad of ['two', '4.5', '-1', '0', '1e3', '0x10', '4 shards', '99999999999999999999']) {
      expect(() => intVar(env({ SHARDS: bad }), 'SHARDS', 1)).toThrow(ConfigException)
    }
    expect(() => intVar(env({ MAX_BACKLOG: '100k' }), 'MAX_BACKLOG', 100_000)).toThrow('MAX_BACKLOG="100k" is not a whole number of at least 1: correct it in wrangler.toml [vars], or remove it for the default (100000)')
    // The ids window takes 0 (no ids remembered); a duration with a unit is not seconds.
    expect(intVar(env({ ACCEPTED_IDS_WINDOW_SECONDS: '0' }), 'ACCEPTED_IDS_WINDOW_SECONDS', 3600, 0)).toBe(0)
    expect(() => intVar(env({ ACCEPTED_IDS_WINDOW_SECONDS: '1h' }), 'ACCEPTED_IDS_WINDOW_SECONDS', 3600, 0)).toThrow(/ACCEPTED_IDS_WINDOW_SECONDS="1h" is not a whole number of at least 0/)
  })

  it('linger.ms: 20 in durable mode (the client has its answer before the producer sees the events), 5 in sync mode (the client waits); KAFKA_LINGER_MS sets it, 0 included', () => {
    expect(lingerMsVar(env({}))).toBe(20)
    expect(lingerMsVar(env({ ACCEPT_MODE: 'sync' }))).toBe(5)
    expect(lingerMsVar(env({ KAFKA_LINGER_MS: '0' }))).toBe(0)
    expect(lingerMsVar(env({ ACCEPT_MODE: 'sync', KAFKA_LINGER_MS: '50' }))).toBe(50)
    expect(() => lingerMsVar(env({ KAFKA_LINGER_MS: '20ms' }))).toThrow(/KAFKA_LINGER_MS="20ms" is not a whole number of at least 0.*default \(20\)/)
  })

  it('choices are case-insensitive and default to the first; a typo names the var and the choices', () => {
    expect(acceptMode(env({}))).toBe('durable')
    expect(acceptMode(env({ ACCEPT_MODE: ' SYNC ' }))).toBe('sync')
    expect(() => acceptMode(env({ ACCEPT_MODE: 'synch' }))).toThrow('ACCEPT_MODE="synch": use one of durable, sync (unset: durable)')
    expect(choiceVar(env({ KAFKA_COMPRESSION: 'LZ4' }), 'KAFKA_COMPRESSION', ['none', 'gzip', 'snappy', 'lz4', 'zstd'])).toBe('lz4')
    expect(() => choiceVar(env({ KAFKA_COMPRESSION: 'lz4hc' }), 'KAFKA_COMPRESSION', ['none', 'lz4'])).toThrow(ConfigException)
  })

  it('flags take true/false and their usual spellings; anything else is refused rather than read as false', () => {
    for (const t of ['1', 'true', 'TRUE', 'yes', 'on', true as never]) expect(flagVar(env({ OTLP_PARTITION_TRACES_BY_ID: t }), 'OTLP_PARTITION_TRACES_BY_ID')).toBe(true)
    for (const f of [undefined, '', '0', 'false', 'No', 'off', false as never]) expect(flagVar(env({ OTLP_PARTITION_TRACES_BY_ID: f }), 'OTLP_PARTITION_TRACES_BY_ID')).toBe(false)
    expect(() => flagVar(env({ OTLP_PARTITION_TRACES_BY_ID: 'ture' }), 'OTLP_PARTITION_TRACES_BY_ID')).toThrow('OTLP_PARTITION_TRACES_BY_ID="ture": use true or false (unset: false)')
  })

  it('topics: required unless there is a default, and only names Kafka accepts', () => {
    expect(topicVar(env({ TELEMETRY_TOPIC: ' clicks.v1 ' }), 'TELEMETRY_TOPIC')).toBe('clicks.v1')
    expect(() => topicVar(env({ TELEMETRY_TOPIC: '' }), 'TELEMETRY_TOPIC')).toThrow('TELEMETRY_TOPIC is not set: name the Kafka topic the events go to in wrangler.toml [vars]')
    for (const bad of ['my topic', 'a/b', '.', '..', 'x'.repeat(250), 'événements']) {
      expect(() => topicVar(env({ TELEMETRY_TOPIC: bad }), 'TELEMETRY_TOPIC')).toThrow(/is not a topic name Kafka accepts/)
    }
    expect(topicVar(env({}), 'OTLP_TRACES_TOPIC', 'otlp_spans')).toBe('otlp_spans')
    expect(() => otlpSettings(env({ OTLP_LOGS_TOPIC: 'logs topic' }))).toThrow(/OTLP_LOGS_TOPIC="logs topic"/)
  })

  it('brokers: KAFKA_BOOTSTRAP is required unless the relay carries the connections', () => {
    expect(bootstrapVar(env({ KAFKA_BOOTSTRAP: ' b1:9092,b2:9092 ' }), false)).toBe('b1:9092,b2:9092')
    expect(() => bootstrapVar(env({ KAFKA_BOOTSTRAP: '' }), false)).toThrow(/KAFKA_BOOTSTRAP is not set: list the brokers as host:port/)
    expect(bootstrapVar(env({ KAFKA_BOOTSTRAP: '' }), true)).toBe('relay:443')
  })

  it('LOCATION_HINT: unset lets Cloudflare place the objects; a region off its list is refused, not handed to get()', () => {
    expect(locationHintVar(env({}))).toBeUndefined()
    expect(locationHintVar(env({ LOCATION_HINT: ' ' }))).toBeUndefined()
    expect(locationHintVar(env({ LOCATION_HINT: ' WEUR ' }))).toBe('weur')
    for (const bad of ['eu', 'west-europe', 'weur,enam', 'us-east-1']) expect(() => locationHintVar(env({ LOCATION_HINT: bad }))).toThrow(ConfigException)
    expect(() => locationHintVar(env({ LOCATION_HINT: 'eu' }))).toThrow('LOCATION_HINT="eu" is not a Durable Objects region: use one of wnam, enam, sam, weur, eeur, apac, oc, afr, me, or remove it to let Cloudflare place the objects')
  })

  it('otlpSettings reads its vars the same way', () => {
    expect(otlpSettings(env({ OTLP_ENCODING: 'OTLP_JSON', OTLP_MAX_BODY_BYTES: '1024', OTLP_PARTITION_LOGS_BY_TRACE_ID: 'true' }))).toMatchObject({
      records: { encoding: 'otlp_json', partitionLogsByTraceId: true, partitionTracesById: false }, maxBodyBytes: 1024,
    })
    expect(() => otlpSettings(env({ OTLP_ENCODING: 'protobuf' }))).toThrow(/OTLP_ENCODING="protobuf": use one of otlp_proto, otlp_json/)
    expect(() => otlpSettings(env({ OTLP_MAX_BODY_BYTES: '16MiB' }))).toThrow(ConfigException)
  })
})
