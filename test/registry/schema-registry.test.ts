// Schema Registry end to end: kafka-edge's serializers against Apicurio Registry 3.3.3 (its
// Confluent-compatible API) and Kafka 4.4, each record read back by the Java consumer and decoded by an
// independent reader (franz-go's sr with hamba/avro and protobuf-go, test/registry-reader).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createProducer, type Producer } from '../../src/edge/index.js'
import { tcp } from '../../src/edge/node.js'
import {
  IncompatibleSchemaException, InvalidSchemaException, SchemaRegistryAuthenticationException, SchemaRegistryClient, SchemaRegistryException,
  SchemaRegistryTimeoutException, SchemaRegistryUnavailableException, avroSerializer, jsonSchemaSerializer, protobufSerializer, withSerializers,
  type Serializer,
} from '../../src/edge/schema-registry/index.js'
import { bs, createTopic, ensureCluster, readTopic, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { buildReader, orderAvroSchema, readBack, registryProxy, registryUnavailable, startRegistry, stopRegistry, type Registry } from '../helpers/registry.js'

const unavailable = registryUnavailable()
if (unavailable && process.env.CI) throw new Error(`the schema registry suite cannot run under CI: ${unavailable}`)
// KAFKA_EDGE_KEEP_REGISTRY=1 leaves it running for the next run (it takes 10-60 s to start).
const NAME = 'schema-registry-test'

let cluster: Cluster
let reg: Registry
const producers: Producer[] = []

function producer(extra: Record<string, unknown> = {}): Producer {
  const p = createProducer({ 'bootstrap.servers': bs(cluster), transport: tcp(), ...extra })
  producers.push(p)
  return p
}

async function values(topic: string, expected: number): Promise<Array<Uint8Array | null>> {
  const read = await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected, timeoutMs: 30_000 })
  return read.map((r) => r.value)
}

const idOf = (v: Uint8Array | null): number => new DataView(v!.buffer, v!.byteOffset).getInt32(1)

describe.skipIf(unavailable !== null)(`schema registry: Apicurio 3.3.3 + Kafka 4.4${unavailable ? ` (skipped: ${unavailable})` : ''}`, () => {
  beforeAll(async () => {
    buildReader()
    ;[cluster, reg] = await Promise.all([ensureCluster({ nodes: 1 }), startRegistry(NAME)])
  }, 600_000)
  afterAll(async () => {
    await Promise.all(producers.map((p) => p.close().catch(() => {})))
    if (!process.env.KAFKA_EDGE_KEEP_REGISTRY) await stopRegistry(NAME)
  })

  it('Avro: unions, named types in namespaces, defaults and every logical type read back equal by hamba/avro (which re-encodes the same bytes where no array or map has items); later sends make no registry call', async () => {
    const topic = uniqueTopic('avro')
    await createTopic(cluster, topic)
    const schema = orderAvroSchema()
    const base = {
      customer: { name: 'Ada' }, status: 'PAID', lines: [{ sku: 'a-1', qty: 2 }, { sku: 'ü-2', qty: -7 }], attrs: { w: 12, h: -3_000_000_000 },
      price: '1234.56', fee: '-12.345', ref: '6f1c2a56-0f4e-4f0b-9a57-2ad6b7d7c0de', day: new Date('2026-12-01T00:00:00Z'), tm: 3_600_000, tu: 1_500_000,
      tsm: new Date('2026-12-01T22:35:00.123Z'), tsu: 1_764_628_500_123_456, ltm: 1_764_628_500_123, score: 1.5, ratio: -0.1, raw: new Uint8Array([0, 255, 7]),
      tag: new Uint8Array([1, 2]),
    }
    const records = [
      { ...base, id: 1, choice: 42 },
      { ...base, id: 2 ** 40, choice: 'forty-two', previous: { name: 'Bob', vip: true }, note: 'héllo ✓' },
      { ...base, id: -5, choice: { note: 'wrapped' }, lines: [], attrs: {} },
    ]
    const client = new SchemaRegistryClient({ 'schema.registry.url': reg.url })
    const p = withSerializers(producer(), { 'value.serializer': avroSerializer(schema, { client }) })
    const acks = await Promise.all(records.map((value) => p.send({ topic, value })))
    const afterFirst = client.requests
    expect(afterFirst).toBe(1) // one register call, shared by the three first sends
    for (let i = 0; i < 50; i++) await p.send({ topic, value: records[0] })
    expect(client.requests).toBe(afterFirst) // later sends come from the cache

    const got = await readBack(reg.url, (await values(topic, 53)).slice(0, 3))
    expect(acks.map((a) => a.offset)).toEqual([0n, 1n, 2n])
    for (const g of got) expect(g.error).toBeUndefined()
    // hamba/avro writes arrays and maps as blocks with a negative count and a byte size (the spec allows
    // both forms; kafka-edge, like Java, writes the plain count), so its bytes match where those are empty.
    expect(got[2]!.same).toBe(true)
    const common = {
      customer: { name: 'Ada', vip: false }, status: 'PAID', lines: [{ sku: 'a-1', qty: 2 }, { sku: 'ü-2', qty: -7 }], attrs: { w: 12, h: -3_000_000_000 },
      price: '1234.56', fee: '-12.345', ref: '6f1c2a56-0f4e-4f0b-9a57-2ad6b7d7c0de', day: '2026-12-01T00:00:00Z', tm: 3_600_000_000, tu: 1_500_000,
      tsm: '2026-12-01T22:35:00.123Z', tsu: '2025-12-01T22:35:00.123456Z', ltm: '2025-12-01T22:35:00.123Z', score: 1.5, ratio: -0.1,
      raw: Buffer.from([0, 255, 7]).toString('base64'), tag: [1, 2],
    }
    expect(got.map((g) => g.value)).toEqual([
      { ...common, id: 1, choice: { int: 42 }, previous: null, note: 'none' },
      { ...common, id: 2 ** 40, choice: { string: 'forty-two' }, previous: { 'crm.Customer': { name: 'Bob', vip: true } }, note: 'héllo ✓' },
      { ...common, id: -5, choice: { 'shop.v1.Gift': { note: 'wrapped' } }, lines: [], attrs: {}, previous: null, note: 'none' },
    ])
  }, 120_000)

  it('Protobuf: nested messages (indexes [0], [1], [1,1], [1,1,0], a map entry counted), an import registered as a reference, read back equal by protobuf-go', async () => {
    const topic = uniqueTopic('proto')
    await createTopic(cluster, topic)
    const common = 'syntax = "proto3";\npackage common;\nmessage Money { string currency = 1; int64 units = 2; sint32 nanos = 3; }\nenum Level { LOW = 0; HIGH = 1; }\n'
    const main = `syntax = "proto3";
package shop;
import "common.proto";
// A comment, /* and another */
message Ping { string id = 1; }
message Order {
  map<string, int32> counts = 1;
  message Line {
    string sku = 1;
    uint32 qty = 2;
    message Note { string text = 1; repeated int32 marks = 2; }
    Note note = 3;
  }
  int64 id = 2;
  repeated Line lines = 3;
  common.Money total = 4;
  common.Level level = 5;
  oneof pay { string card = 6; bytes token = 7; }
  repeated sint64 deltas = 8 [packed = true];
  bool gift = 9;
  double weight = 10;
  float ratio = 11;
  fixed32 f32 = 12;
  sfixed64 s64 = 13;
  optional int32 maybe = 14;
  Status status = 15;
  enum Status { NEW = 0; PAID = 1; }
}
`
    const client = new SchemaRegistryClient({ 'schema.registry.url': reg.url })
    const inner = producer()
    const serializer = (messageName: string): Serializer => protobufSerializer(main, { messageName, references: { 'common.proto': common }, client })
    const send = (messageName: string, value: unknown) => withSerializers(inner, { 'value.serializer': serializer(messageName) }).send({ topic, value })
    const order = {
      counts: { a: 1, b: 2 }, id: 2n ** 60n, lines: [{ sku: 'x', qty: 3, note: { text: 'n', marks: [1, -2] } }, { sku: 'y' }],
      total: { currency: 'EUR', units: 12, nanos: -5 }, level: 'HIGH', card: 'visa', deltas: [-1, 2n], gift: true, weight: 2.5, ratio: 0.5,
      f32: 7, s64: -9, maybe: 0, status: 'PAID',
    }
    await send('shop.Ping', { id: 'p' })
    await send('shop.Order', order)
    await send('Order.Line', { sku: 'z', qty: 1 })
    await send('shop.Order.Line.Note', { text: 'deep', marks: [] })
    await send('shop.Order', { token: new Uint8Array([9, 8]), id: '-3' })

    const got = await readBack(reg.url, await values(topic, 5))
    for (const g of got) expect(g.error).toBeUndefined()
    // protobuf-go re-encodes the same bytes, except that it writes a set oneof member after the other
    // fields (kafka-edge, like Java, writes every field in field-number order). Record 1 sets card (6)
    // below fields 8-15; record 4 sets token (7) after its only other field, id (2), so it matches.
    expect(got.map((g) => g.same)).toEqual([true, false, true, true, true])
    expect(got.map((g) => [g.message, g.index])).toEqual([
      ['shop.Ping', [0]], ['shop.Order', [1]], ['shop.Order.Line', [1, 1]], ['shop.Order.Line.Note', [1, 1, 0]], ['shop.Order', [1]],
    ])
    expect(new Set(got.map((g) => g.id)).size).toBe(1)
    expect(got.map((g) => g.value)).toEqual([
      { id: 'p' },
      {
        counts: { a: 1, b: 2 }, id: String(2n ** 60n), lines: [{ sku: 'x', qty: 3, note: { text: 'n', marks: [1, -2] } }, { sku: 'y' }],
        total: { currency: 'EUR', units: '12', nanos: -5 }, level: 'HIGH', card: 'visa', deltas: ['-1', '2'], gift: true, weight: 2.5, ratio: 0.5,
        f32: 7, s64: '-9', maybe: 0, status: 'PAID',
      },
      { sku: 'z', qty: 1 },
      { text: 'deep' },
      { token: Buffer.from([9, 8]).toString('base64'), id: '-3' },
    ])
    // The reference is a subject of its own, named by the import (Java's DefaultReferenceSubjectNameStrategy).
    expect((await client.getLatest('common.proto')).schema).toBe(common)
  }, 120_000)

  it('JSON Schema: UTF-8 JSON read back equal; with json.fail.invalid.schema a value that does not conform is refused and not sent', async () => {
    const topic = uniqueTopic('json')
    await createTopic(cluster, topic)
    const schema = {
      $schema: 'http://json-schema.org/draft-07/schema#', title: 'Event', type: 'object',
      properties: { name: { type: 'string' }, n: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } }, required: ['name'],
    }
    const p = withSerializers(producer(), { 'schema.registry.url': reg.url, 'value.serializer': jsonSchemaSerializer(schema, { 'json.fail.invalid.schema': true }) })
    const sent = [{ name: 'a', n: 1, tags: ['x', 'ÿ'] }, { name: 'b' }]
    await p.send({ topic, value: sent[0] })
    const bad = await p.send({ topic, value: { n: 'not a number' } }).catch((e: unknown) => e)
    expect(bad).toMatchObject({ name: 'SerializationException', mayHaveBeenWritten: false })
    expect(String((bad as Error).message)).toMatch(/subject .*-value/)
    await p.send({ topic, value: sent[1] })
    const got = await readBack(reg.url, await values(topic, 2))
    expect(got.map((g) => g.value)).toEqual(sent)
  }, 120_000)

  it('evolution: a compatible change registers a new version whose id the records carry; an incompatible one is an IncompatibleSchemaException and sends nothing', async () => {
    const topic = uniqueTopic('evolve')
    await createTopic(cluster, topic)
    const subject = `${topic}-value`
    const put = await fetch(`${reg.url}/config/${subject}`, { method: 'PUT', headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' }, body: JSON.stringify({ compatibility: 'BACKWARD' }) })
    expect(put.ok).toBe(true)
    const v1 = { type: 'record', name: 'User', fields: [{ name: 'id', type: 'long' }] }
    const v2 = { ...v1, fields: [...v1.fields, { name: 'email', type: 'string', default: '' }] }
    const v3 = { ...v1, fields: [...v2.fields, { name: 'age', type: 'int' }] }
    const inner = producer()
    const send = (schema: unknown, value: unknown) => withSerializers(inner, { 'schema.registry.url': reg.url, 'value.serializer': avroSerializer(schema as Record<string, unknown>) }).send({ topic, value })
    await send(v1, { id: 1 })
    await send(v2, { id: 2, email: 'a@b' })
    const e = await send(v3, { id: 3, email: '', age: 4 }).catch((x: unknown) => x)
    expect(e).toBeInstanceOf(IncompatibleSchemaException)
    expect(e).toMatchObject({ status: 409, subject, mayHaveBeenWritten: false })
    expect((e as Error).message).toContain(subject)
    await send(v2, { id: 5, email: 'c@d' }) // the producer goes on
    const vals = await values(topic, 3)
    expect(vals).toHaveLength(3)
    const versions = await (await fetch(`${reg.url}/subjects/${subject}/versions`)).json()
    expect(versions).toEqual([1, 2])
    const [id1, id2] = await Promise.all([1, 2].map(async (v) => (await (await fetch(`${reg.url}/subjects/${subject}/versions/${v}`)).json()).id as number))
    expect(id1).not.toBe(id2)
    expect(vals.map(idOf)).toEqual([id1, id2, id2])
    const got = await readBack(reg.url, vals)
    expect(got.map((g) => g.value)).toEqual([{ id: 1 }, { id: 2, email: 'a@b' }, { id: 5, email: 'c@d' }])
  }, 120_000)

  describe('faults: each gives its typed error, nothing is sent for it, every acknowledged record is in the log', () => {
    const schema = { type: 'record', name: 'Ev', fields: [{ name: 'n', type: 'int' }] }

    async function scenario(name: string, failing: Record<string, unknown>, check: (e: unknown) => void, extra: Record<string, unknown> = {}): Promise<void> {
      const topic = uniqueTopic(name)
      await createTopic(cluster, topic)
      const inner = producer(extra)
      const good = withSerializers(inner, { 'schema.registry.url': reg.url, 'value.serializer': avroSerializer(schema) })
      const bad = withSerializers(inner, { 'value.serializer': avroSerializer(schema), ...failing })
      const acked: number[] = []
      const ok = (n: number) => good.send({ topic, value: { n } }).then(() => acked.push(n))
      await ok(1)
      const results = await Promise.allSettled([ok(2), bad.send({ topic, value: { n: -1 } }), ok(3), bad.send({ topic, value: { n: -2 } }), ok(4)])
      const errors = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason)
      expect(errors).toHaveLength(2)
      for (const e of errors) { check(e); expect(e).toBeInstanceOf(SchemaRegistryException); expect((e as { mayHaveBeenWritten: boolean }).mayHaveBeenWritten).toBe(false) }
      await ok(5) // the producer stays usable
      const got = await readBack(reg.url, await values(topic, 5))
      expect(got.map((g) => (g.value as { n: number }).n).sort()).toEqual(acked.sort())
      expect(acked).toHaveLength(5)
    }

    it('registry down (nothing listening, then 503 on every URL): SchemaRegistryUnavailableException after the retries', async () => {
      await scenario('down', { 'schema.registry.url': 'http://127.0.0.1:9', 'max.retries': 2, 'retries.wait.ms': 10 }, (e) => {
        expect(e).toBeInstanceOf(SchemaRegistryUnavailableException)
        expect((e as Error).message).toMatch(/could not be reached to register a schema under subject .*-value/)
      })
      const proxy = await registryProxy(reg.url)
      proxy.down = true
      try {
        await scenario('503', { 'schema.registry.url': proxy.url, 'max.retries': 2, 'retries.wait.ms': 10 }, (e) => {
          expect(e).toMatchObject({ name: 'SchemaRegistryUnavailableException', status: 503, errorCode: 50301 })
        })
        expect(proxy.requests).toBe(3) // the first attempt and two retries; the second send shared them
        // With a second URL the same failure fails over, and the send goes through.
        const topic = uniqueTopic('failover')
        await createTopic(cluster, topic)
        const p = withSerializers(producer(), { 'schema.registry.url': [proxy.url, reg.url], 'value.serializer': avroSerializer(schema) })
        await p.send({ topic, value: { n: 1 } })
        expect(proxy.requests).toBe(4)
      } finally { await proxy.close() }
    })

    it('401 from a registry that wants credentials: SchemaRegistryAuthenticationException with the registry\'s message; the right ones work', async () => {
      const proxy = await registryProxy(reg.url, { user: 'alice:s3cret' })
      try {
        await scenario('auth', { 'schema.registry.url': proxy.url, 'basic.auth.credentials.source': 'USER_INFO', 'basic.auth.user.info': 'alice:wrong' }, (e) => {
          expect(e).toBeInstanceOf(SchemaRegistryAuthenticationException)
          expect((e as Error).message).toMatch(/subject .*-value: 401 .*Unauthorized: bad credentials; check basic.auth.user.info/)
        })
        const topic = uniqueTopic('authok')
        await createTopic(cluster, topic)
        const p = withSerializers(producer(), {
          'schema.registry.url': proxy.url.replace('http://', 'http://alice:s3cret@'), 'value.serializer': avroSerializer(schema), // basic.auth.credentials.source=URL, Java's default
        })
        await p.send({ topic, value: { n: 1 } })
      } finally { await proxy.close() }
    })

    it('422 for a schema the registry cannot accept: InvalidSchemaException', async () => {
      const topic = uniqueTopic('invalid')
      await createTopic(cluster, topic)
      const inner = producer()
      const p = withSerializers(inner, { 'schema.registry.url': reg.url, 'value.serializer': jsonSchemaSerializer({ type: 'object' }) })
      const e = await p.send({ topic, value: { a: 1 } }).catch((x: unknown) => x)
      expect(e).toBeInstanceOf(InvalidSchemaException)
      expect(e).toMatchObject({ status: 422, subject: `${topic}-value`, mayHaveBeenWritten: false })
      const good = withSerializers(inner, { 'schema.registry.url': reg.url, 'value.serializer': avroSerializer(schema) })
      await good.send({ topic, value: { n: 1 } })
      expect(await values(topic, 1)).toHaveLength(1)
    })

    it('a registry slower than max.block.ms: SchemaRegistryTimeoutException', async () => {
      const proxy = await registryProxy(reg.url, { delayMs: 2500 })
      try {
        await scenario('slow', { 'schema.registry.url': proxy.url }, (e) => {
          expect(e).toBeInstanceOf(SchemaRegistryTimeoutException)
          expect((e as Error).message).toMatch(/max.block.ms \(500 ms\) for a record to .* \(subject .*-value\)/)
        }, { 'max.block.ms': 500 })
      } finally { await proxy.close() }
    })
  })
})
