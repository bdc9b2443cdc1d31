// The schema registry client and serializers without a registry: the bytes they write (checked
// against the Avro and Protobuf specifications' own examples and Confluent's MessageIndexes rules)
// and the client's HTTP behaviour against a scripted fetch. The real registry is in test/registry.
import { describe, expect, it } from 'vitest'
import {
  IncompatibleSchemaException, InvalidSchemaException, LruCache, SchemaNotFoundException, SchemaRegistryAuthorizationException,
  SchemaRegistryClient, SchemaRegistryUnavailableException, SerializationException, avroSerializer, protobufSerializer, withSerializers,
} from '../../src/edge/schema-registry/index.js'
import { ConfigException } from '../../src/edge/errors.js'
import { encodeAvro, parseAvro } from '../../src/edge/schema-registry/avro.js'
import { encodeProto, findMessage, parseProto, resolveProto } from '../../src/edge/schema-registry/protobuf.js'
import { ByteWriter, writeMessageIndexes } from '../../src/edge/schema-registry/wire.js'

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')
const avro = (schema: unknown, v: unknown): string => { const w = new ByteWriter(); encodeAvro(w, parseAvro(schema as Record<string, unknown>).type, v); return hex(w.take()) }
const proto = (text: string, name: string | undefined, v: unknown): string => {
  const f = parseProto(text); resolveProto([f]); const w = new ByteWriter(); encodeProto(w, findMessage(f, name).message, v); return hex(w.take())
}

describe('Confluent message indexes (MessageIndexes.java)', () => {
  it('[0] is the single byte 0x00; otherwise a zig-zag count then zig-zag indexes', () => {
    const ix = (a: number[]): string => { const w = new ByteWriter(); writeMessageIndexes(w, a); return hex(w.take()) }
    expect(ix([0])).toBe('00')
    expect(ix([1])).toBe('0202')
    expect(ix([1, 1])).toBe('040202')
    expect(ix([0, 0])).toBe('040000')
    expect(ix([70])).toBe('028c01')
  })
})

describe('Avro binary (the specification\'s examples)', () => {
  it('ints and longs are zig-zag varints; strings and bytes carry a length; -64 is 7f, 64 is 8001', () => {
    expect(avro('int', 0)).toBe('00')
    expect(avro('int', -1)).toBe('01')
    expect(avro('int', -64)).toBe('7f')
    expect(avro('int', 64)).toBe('8001')
    expect(avro('long', 2n ** 62n)).toBe('808080808080808080' + '01')
    expect(avro('string', 'foo')).toBe('06666f6f')
    expect(avro('string', 'ü')).toBe('04c3bc')
  })
  it('a record is its fields in order; a union is the branch index then the value; arrays are blocks ended by 0', () => {
    const s = { type: 'record', name: 'R', fields: [{ name: 'a', type: 'long' }, { name: 'b', type: 'string' }] }
    expect(avro(s, { a: 27, b: 'foo' })).toBe('36' + '06666f6f')
    expect(avro(['null', 'string'], null)).toBe('00')
    expect(avro(['null', 'string'], 'a')).toBe('020261')
    expect(avro({ type: 'array', items: 'long' }, [3, 27])).toBe('04' + '06' + '36' + '00')
    expect(avro({ type: 'map', values: 'int' }, {})).toBe('00')
  })
  it('decimal is the unscaled two\'s complement; fixed decimals are sign-extended; date counts days', () => {
    const dec = { type: 'bytes', logicalType: 'decimal', precision: 6, scale: 2 }
    expect(avro(dec, '1.00')).toBe('02' + '64')
    expect(avro(dec, '-1.28')).toBe('02' + '80')
    expect(avro(dec, '1.28')).toBe('04' + '0080')
    expect(avro(dec, 100n)).toBe('02' + '64')
    expect(avro({ type: 'fixed', name: 'F', size: 3, logicalType: 'decimal', precision: 6, scale: 2 }, '-0.01')).toBe('ffffff')
    expect(avro({ type: 'int', logicalType: 'date' }, new Date('1970-01-03T10:00:00Z'))).toBe('04')
    expect(avro({ type: 'long', logicalType: 'timestamp-micros' }, new Date(1))).toBe('d00f')
  })
  it('a value that does not fit is a SerializationException naming the field', () => {
    const s = { type: 'record', name: 'R', fields: [{ name: 'a', type: 'int' }, { name: 'e', type: { type: 'enum', name: 'E', symbols: ['X'] } }] }
    expect(() => avro(s, { a: 2 ** 31, e: 'X' })).toThrow(SerializationException)
    expect(() => avro(s, { a: 1, e: 'Y' })).toThrow(/e: expected one of X/)
    expect(() => avro(s, { a: 1 })).toThrow(/e: missing/)
    expect(() => avro(s, { a: 1, e: 'X', z: 1 })).toThrow(/has no field z/)
    expect(() => parseAvro({ type: 'record', name: 'R', fields: [{ name: 'a', type: 'Nope' }] })).toThrow(InvalidSchemaException)
  })
})

describe('Protobuf binary (the encoding guide\'s examples)', () => {
  const text = `syntax = "proto3";
message Test1 { int32 a = 1; }
message Test2 { string b = 2; }
message Test3 { Test1 c = 3; }
message Test4 { repeated int32 d = 4; map<string, int32> m = 5; message In { sint32 s = 1; } In in = 6; }`
  it('150 is 08 96 01; strings, embedded messages and packed repeated fields are length-delimited', () => {
    expect(proto(text, 'Test1', { a: 150 })).toBe('089601')
    expect(proto(text, 'Test2', { b: 'testing' })).toBe('120774657374696e67')
    expect(proto(text, 'Test3', { c: { a: 150 } })).toBe('1a03089601')
    expect(proto(text, 'Test4', { d: [3, 270, 86942] })).toBe('2206038e029ea705')
    expect(proto(text, 'Test1', { a: -1 })).toBe('08ffffffffffffffffff01')
    expect(proto(text, 'Test1', { a: 0 })).toBe('') // proto3 does not write defaults
    expect(proto(text, 'Test4', { m: { k: 1 } })).toBe('2a050a016b1001')
    expect(proto(text, 'Test4.In', { s: -2 })).toBe('0803')
  })
  it('a map field adds its entry type to the nested messages, so the indexes count it', () => {
    const f = parseProto(text)
    resolveProto([f])
    expect(findMessage(f, 'Test4.In').indexes).toEqual([3, 1])
    expect(f.messages[3]!.nested.map((m) => m.name)).toEqual(['MEntry', 'In'])
  })
  it('a long message length moves the content up and stays correct', () => {
    const long = 'x'.repeat(300)
    expect(proto(text, 'Test2', { b: long })).toBe('12ac02' + Buffer.from(long).toString('hex'))
  })
  it('unknown fields, unknown types and a second oneof member are refused', () => {
    expect(() => proto(text, 'Test1', { z: 1 })).toThrow(/has no field z/)
    expect(() => { const f = parseProto('syntax = "proto3"; message A { B b = 1; }'); resolveProto([f]) }).toThrow(InvalidSchemaException)
    expect(() => proto('syntax = "proto3"; message A { oneof o { int32 x = 1; int32 y = 2; } }', 'A', { x: 1, y: 2 })).toThrow(/oneof o already has x/)
  })
})

/** A scripted fetch: each call takes the next answer (a status and body, or an Error to throw). */
function scripted(answers: Array<[number, unknown] | Error>) {
  const calls: Array<{ url: string; init: RequestInit }> = []
  const f = (async (url: string, init: RequestInit) => {
    calls.push({ url, init })
    const a = answers.shift() ?? [500, { message: 'script ran out' }]
    if (a instanceof Error) throw a
    return new Response(JSON.stringify(a[1]), { status: a[0] })
  }) as unknown as typeof fetch
  return { f, calls }
}

describe('SchemaRegistryClient', () => {
  it('sends the registry content type and Basic credentials; caches the id; concurrent asks share one request', async () => {
    const { f, calls } = scripted([[200, { id: 7 }]])
    const c = new SchemaRegistryClient({ 'schema.registry.url': 'http://r:1/ccompat/', 'basic.auth.credentials.source': 'USER_INFO', 'basic.auth.user.info': 'k:s', fetch: f })
    const schema = { schema: '"string"' }
    const [a, b] = await Promise.all([c.register('t-value', schema), c.register('t-value', schema)])
    expect([a.id, b.id, (await c.register('t-value', schema)).id]).toEqual([7, 7, 7])
    expect(calls).toHaveLength(1)
    expect(calls[0]!.url).toBe('http://r:1/ccompat/subjects/t-value/versions')
    const h = calls[0]!.init.headers as Record<string, string>
    expect(h['Content-Type']).toBe('application/vnd.schemaregistry.v1+json')
    expect(h.Authorization).toBe(`Basic ${Buffer.from('k:s').toString('base64')}`)
  })

  it('fails over to the next URL on a network error or a 5xx, backs off once every URL failed, and gives up after max.retries', async () => {
    const { f, calls } = scripted([new TypeError('fetch failed'), [503, { error_code: 50301, message: 'busy' }], [200, { id: 3 }]])
    const c = new SchemaRegistryClient({ 'schema.registry.url': 'http://a:1,http://b:1', 'retries.wait.ms': 1, fetch: f })
    expect((await c.register('s', { schema: '"int"' })).id).toBe(3)
    expect(calls.map((x) => new URL(x.url).host)).toEqual(['a:1', 'b:1', 'a:1'])
    const down = scripted([new TypeError('x'), new TypeError('y')])
    const d = new SchemaRegistryClient({ 'schema.registry.url': 'http://a:1', 'max.retries': 1, 'retries.wait.ms': 1, fetch: down.f })
    await expect(d.register('s', { schema: '"int"' })).rejects.toBeInstanceOf(SchemaRegistryUnavailableException)
    expect(down.calls).toHaveLength(2)
  })

  it('maps 403, 404, 409 and 422 to their classes with the registry\'s message and the subject, and does not retry them', async () => {
    const cases = [[403, SchemaRegistryAuthorizationException], [404, SchemaNotFoundException], [409, IncompatibleSchemaException], [422, InvalidSchemaException]] as const
    for (const [status, cls] of cases) {
      const { f, calls } = scripted([[status, { error_code: status * 100 + 1, message: `said ${status}` }]])
      const c = new SchemaRegistryClient({ 'schema.registry.url': 'http://a:1', fetch: f })
      const e = await c.register('orders-value', { schema: '"int"' }).catch((x: unknown) => x)
      expect(e).toBeInstanceOf(cls)
      expect(e).toMatchObject({ status, errorCode: status * 100 + 1, subject: 'orders-value' })
      expect((e as Error).message).toContain(`said ${status}`)
      expect((e as Error).message).toContain('orders-value')
      expect(calls).toHaveLength(1)
    }
  })

  it('a bearer token provider is asked for each request; latest is cached for latest.cache.ttl.sec', async () => {
    const { f, calls } = scripted([[200, { id: 1, version: 1, schema: '"int"' }], [200, { id: 2, version: 2, schema: '"long"' }]])
    let n = 0
    const c = new SchemaRegistryClient({ 'schema.registry.url': 'http://a:1', 'bearer.auth.token': () => `t${++n}`, 'latest.cache.ttl.sec': 0, fetch: f })
    expect((await c.getLatest('s')).id).toBe(1)
    expect((await c.getLatest('s')).id).toBe(2)
    expect(calls.map((x) => (x.init.headers as Record<string, string>).Authorization)).toEqual(['Bearer t1', 'Bearer t2'])
  })

  it('settings are checked with Java\'s names', () => {
    expect(() => new SchemaRegistryClient({ 'schema.registry.url': 'ftp://x' })).toThrow(ConfigException)
    expect(() => new SchemaRegistryClient({ 'schema.registry.url': 'http://x', 'basic.auth.user.info': 'a:b' })).toThrow(/basic.auth.credentials.source=USER_INFO/)
    expect(() => new SchemaRegistryClient({ 'schema.registry.url': 'http://x', 'value.subject.name.strategy': 'Nope' as never })).toThrow(/TopicNameStrategy/)
    expect(() => new SchemaRegistryClient({ 'schema.registry.url': 'http://x', 'auto.register.schema': true } as never)).toThrow(/unknown schema registry setting/)
  })

  it('LruCache keeps at most its capacity, dropping the least recently used', () => {
    const c = new LruCache<string, number>(2)
    c.set('a', 1); c.set('b', 2); c.get('a'); c.set('c', 3)
    expect([c.get('a'), c.get('b'), c.get('c'), c.size]).toEqual([1, undefined, 3, 2])
  })
})

describe('serializers without a registry call', () => {
  it('use.schema.id with the schema bundled frames at once: 0x00, the id big-endian, the payload', () => {
    const s = avroSerializer('"string"', { 'use.schema.id': 258 })
    s.configure({ fetch: (() => { throw new Error('no registry call expected') }) as never }, false)
    return Promise.resolve(s.serialize('t', 'hi')).then((b) => expect(hex(b)).toBe('0000000102' + '046869'))
  })
  it('RecordNameStrategy and TopicRecordNameStrategy name the subject after the record or message', async () => {
    const { f, calls } = scripted([[200, { id: 1 }], [200, { id: 2 }]])
    const a = avroSerializer({ type: 'record', name: 'U', namespace: 'n', fields: [] }, { 'value.subject.name.strategy': 'RecordNameStrategy' })
    a.configure({ 'schema.registry.url': 'http://a:1', fetch: f }, false)
    await a.serialize('t', {})
    const p = protobufSerializer('syntax = "proto3"; package p; message M {}', { 'key.subject.name.strategy': 'io.confluent.kafka.serializers.subject.TopicRecordNameStrategy' })
    p.configure({ 'schema.registry.url': 'http://a:1', fetch: f }, true)
    expect(hex(await p.serialize('t', {}))).toBe('000000000200')
    expect(calls.map((c) => c.url)).toEqual(['http://a:1/subjects/n.U/versions', 'http://a:1/subjects/t-p.M/versions'])
  })
  it('a serializer with registry settings of its own uses a client of its own, not the shared one', async () => {
    const { f, calls } = scripted([[200, { id: 1 }]])
    const shared = new SchemaRegistryClient({ 'schema.registry.url': 'http://shared:1', fetch: f })
    const s = avroSerializer('"int"', { 'schema.registry.url': 'http://own:1' })
    s.configure({ 'schema.registry.url': 'http://shared:1', fetch: f }, false, shared)
    await s.serialize('t', 1)
    expect(calls.map((c) => new URL(c.url).host)).toEqual(['own:1'])
  })
})

describe('schema.registry.relay.url: lookups through the relay', () => {
  it('goes to <relay>/registry with the relay token (a string or a fresh one per request), ws(s) as http(s); registering and lookups by text are refused without a request', async () => {
    const { f, calls } = scripted([[200, { schema: '"string"' }], [200, { subject: 't-value', version: 2, id: 9, schema: '"string"' }]])
    let n = 0
    const c = new SchemaRegistryClient({ 'schema.registry.relay.url': 'wss://relay.example/kafka/?broker=b:1', 'schema.registry.relay.token': () => `tok${++n}`, fetch: f })
    await c.getSchemaById(9)
    await c.getLatest('t-value')
    expect(calls.map((x) => x.url)).toEqual(['https://relay.example/kafka/registry/schemas/ids/9', 'https://relay.example/kafka/registry/subjects/t-value/versions/latest'])
    expect(calls.map((x) => (x.init.headers as Record<string, string>).Authorization)).toEqual(['Bearer tok1', 'Bearer tok2'])
    await expect(c.register('t-value', { schema: '"string"' })).rejects.toMatchObject({ name: 'ConfigException', message: expect.stringMatching(/read-only/) })
    await expect(c.lookup('t-value', { schema: '"string"' })).rejects.toMatchObject({ name: 'ConfigException' })
    expect(calls).toHaveLength(2)
    expect(c.config.autoRegister).toBe(false)
    const plain = new SchemaRegistryClient({ 'schema.registry.relay.url': 'http://127.0.0.1:8080/kafka', 'schema.registry.relay.token': 't', fetch: f })
    expect(plain.config.urls).toEqual(['http://127.0.0.1:8080/kafka/registry'])
  })

  it('a registry address, credentials, auto.register.schemas=true or a missing token beside it are ConfigExceptions', () => {
    const base = { 'schema.registry.relay.url': 'wss://relay.example/kafka', 'schema.registry.relay.token': 't' }
    expect(() => new SchemaRegistryClient({ ...base, 'schema.registry.url': 'http://r:1' })).toThrow(/schema\.registry\.url is set beside/)
    expect(() => new SchemaRegistryClient({ ...base, 'basic.auth.user.info': 'k:s' })).toThrow(/basic\.auth\.user\.info is set beside/)
    expect(() => new SchemaRegistryClient({ ...base, 'bearer.auth.token': 'x' })).toThrow(/bearer\.auth\.token is set beside/)
    expect(() => new SchemaRegistryClient({ ...base, 'auto.register.schemas': true })).toThrow(/auto\.register\.schemas must be false/)
    expect(() => new SchemaRegistryClient({ 'schema.registry.relay.url': 'wss://relay.example/kafka' })).toThrow(/schema\.registry\.relay\.token/)
    expect(() => new SchemaRegistryClient({ ...base, 'schema.registry.relay.url': 'ftp://relay.example' })).toThrow(/ws\(s\):\/\/ or http\(s\):\/\//)
  })
})

describe('withSerializers: send(record, callback) as on the producer', () => {
  it('the first send waits for the registry, later ones go straight through, a value that does not fit fails alone: each callback once, in order', async () => {
    const { World } = await import('../sim/harness.js')
    await World.preload()
    const w = new World(11, { model: { brokers: 1, topics: { t: 1 } } })
    const { f, calls } = scripted([[200, { id: 9 }]])
    const p = withSerializers(w.producer, { 'schema.registry.url': 'http://r:1', fetch: f, 'value.serializer': avroSerializer('"int"') })
    const got: string[] = []
    const cb = (n: number) => (md: { offset: bigint } | null, e: Error | null) => { got.push(e ? `${n}: ${e.name}` : `${n}: @${md!.offset}`) }
    p.send({ topic: 't', value: 1 }, cb(1))
    p.send({ topic: 't', value: 2 }, cb(2))
    expect(got).toEqual([])
    await w.clock.run({ until: w.clock.now() + 5000, done: () => got.length === 2 })
    p.send({ topic: 't', value: 'three' }, cb(3))
    p.send({ topic: 't', value: 4 }, cb(4))
    await w.clock.run({ until: w.clock.now() + 5000, done: () => got.length === 4 })
    expect(got).toEqual(['1: @0', '2: @1', '3: SerializationException', '4: @2'])
    expect(calls).toHaveLength(1)
    expect(w.cluster.partition('t', 0).values().map((v) => v.length)).toEqual([6, 6, 6]) // 0x00, the id, one zig-zag byte
    expect(() => p.send({ topic: 't', value: 5 }, 'not a function' as never)).toThrow(ConfigException)
  })
})
