// kafka-edge's serializers byte for byte against a Java reference: Apicurio Registry's Kafka serdes
// (test/registry-java), set for the Confluent framing, against the same Apicurio Registry 3.3.3. kafka-edge
// registers each schema through the Confluent-compatible API; the Java serializer takes the subject's
// latest version through Apicurio's own API, so both must write the same id. Then Apicurio's Java
// deserializers read kafka-edge's bytes back. No Kafka broker is involved: serializers only.
import { beforeAll, afterAll, describe, expect, it } from 'vitest'
import { SchemaRegistryClient, avroSerializer, jsonSchemaSerializer, protobufSerializer } from '../../src/edge/schema-registry/index.js'
import { uniqueTopic } from '../helpers/kafka.js'
import { javaSerde, javaSerdeUnavailable, orderAvroSchema, startRegistry, stopRegistry, type JavaSerdeAnswer, type JavaSerdeRequest, type Registry } from '../helpers/registry.js'

const unavailable = javaSerdeUnavailable()
if (unavailable && process.env.CI) throw new Error(`the Java serde suite cannot run under CI: ${unavailable}`)
// KAFKA_EDGE_KEEP_REGISTRY=1 leaves it running for the next run.
const NAME = 'java-serde-test'

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')
/** Avro's JSON encoding of bytes and fixed: one char per byte. */
const latin1 = (b: number[]): string => String.fromCharCode(...b)
const base64 = (b: number[]): string => Buffer.from(b).toString('base64')
const HEADER = 10 // hex digits: magic byte and the 4-byte id

const avroSchema = orderAvroSchema({
  statusDefault: 'NEW',
  extra: [
    { name: 'ltu', type: { type: 'long', logicalType: 'local-timestamp-micros' } },
    { name: 'when', type: ['null', { type: 'long', logicalType: 'timestamp-millis' }], default: null },
  ],
})

// Each record as kafka-edge takes it (defaults left out, logical types as dates, decimal strings, numbers)
// and in Avro's JSON encoding for Java, written out by hand: unions tagged with the branch's full name,
// decimals as their unscaled two's-complement bytes, dates as days, times and timestamps as numbers.
const avroBase = {
  customer: { name: 'Ada' }, status: 'PAID', lines: [{ sku: 'a-1', qty: 2 }, { sku: 'ü-2', qty: -7 }], attrs: { w: 12, h: -3_000_000_000 },
  price: '1234.56', fee: '-12.345', ref: '6f1c2a56-0f4e-4f0b-9a57-2ad6b7d7c0de', day: new Date('2026-12-01T00:00:00Z'), tm: 3_600_000, tu: 1_500_000,
  tsm: new Date('2026-12-01T22:35:00.123Z'), tsu: 1_764_628_500_123_456, ltm: 1_764_628_500_123, ltu: -1, score: 1.5, ratio: -0.1,
  raw: new Uint8Array([0, 255, 7]), tag: new Uint8Array([1, 2]),
}
const avroJavaBase = {
  customer: { name: 'Ada', vip: false }, previous: null, status: 'PAID', lines: [{ sku: 'a-1', qty: 2 }, { sku: 'ü-2', qty: -7 }], attrs: { w: 12, h: -3_000_000_000 },
  note: 'none',
  price: latin1([0x01, 0xe2, 0x40]), // 123456
  fee: latin1([0xff, 0xff, 0xcf, 0xc7]), // -12345 in 4 bytes
  ref: '6f1c2a56-0f4e-4f0b-9a57-2ad6b7d7c0de', day: Date.UTC(2026, 11, 1) / 86_400_000, tm: 3_600_000, tu: 1_500_000, tsm: Date.parse('2026-12-01T22:35:00.123Z'),
  tsu: 1_764_628_500_123_456, ltm: 1_764_628_500_123, ltu: -1, when: null, score: 1.5, ratio: -0.1, raw: latin1([0, 255, 7]), tag: latin1([1, 2]),
}
const avroRecords: Array<[unknown, unknown]> = [
  [{ ...avroBase, id: 1, choice: 42 }, { ...avroJavaBase, id: 1, choice: { int: 42 } }],
  [
    { ...avroBase, id: 2 ** 40, choice: 'forty-two', previous: { name: 'Bob', vip: true }, note: 'héllo ✓', when: new Date(0), price: '-0.01', fee: '0.001' },
    { ...avroJavaBase, id: 2 ** 40, choice: { string: 'forty-two' }, previous: { 'crm.Customer': { name: 'Bob', vip: true } }, note: 'héllo ✓', when: { long: 0 }, price: latin1([0xff]), fee: latin1([0, 0, 0, 1]) },
  ],
  [
    { ...avroBase, id: -5, choice: { note: 'wrapped' }, lines: [], attrs: {}, price: '99999999.99', status: 'NEW', raw: new Uint8Array([]) },
    { ...avroJavaBase, id: -5, choice: { 'shop.v1.Gift': { note: 'wrapped' } }, lines: [], attrs: {}, price: latin1([0x02, 0x54, 0x0b, 0xe3, 0xff]), status: 'NEW', raw: '' },
  ],
]

const proto = `syntax = "proto3";
package shop;
message Ping { string id = 1; }
message Order {
  message Line {
    string sku = 1;
    uint32 qty = 2;
    message Note { string text = 1; repeated int32 marks = 2; }
    Note note = 3;
  }
  int64 id = 1;
  repeated Line lines = 2;
  Status status = 3;
  enum Status { NEW = 0; PAID = 1; }
  oneof pay { string card = 4; bytes token = 5; }
  repeated sint64 deltas = 6;
  bool gift = 7;
  double weight = 8;
  float ratio = 9;
  fixed32 f32 = 10;
  sfixed64 s64 = 11;
  optional int32 maybe = 12;
  repeated string tags = 13;
}
message Cart {
  map<string, int32> counts = 1;
  message Item { string sku = 1; }
  repeated Item items = 2;
}
`
// [message, kafka-edge's value, protobuf's JSON mapping of it (as protobuf-java prints it), kafka-edge's
// message indexes, Apicurio's]. Apicurio writes every index list in full, [0] too (Confluent and kafka-edge
// write [0] as the single byte 0, which Apicurio reads as [0]), and counts nested messages in the schema's
// text, where a map field declares no message: Confluent counts the map's entry message (it is in the
// descriptor), so Cart.Item is [2, 1] there and in kafka-edge, [2, 0] in Apicurio.
const protoRecords: Array<[string, unknown, unknown, string, string]> = [
  ['shop.Ping', { id: 'p' }, { id: 'p' }, '00', '0200'],
  [
    'shop.Order',
    { id: 2n ** 60n, lines: [{ sku: 'x', qty: 3, note: { text: 'n', marks: [1, -2] } }, { sku: 'y' }], status: 'PAID', card: 'visa', deltas: [-1, 2n], gift: true, weight: 2.5, ratio: 0.5, f32: 7, s64: -9, maybe: 0, tags: ['a', 'ü'] },
    { id: String(2n ** 60n), lines: [{ sku: 'x', qty: 3, note: { text: 'n', marks: [1, -2] } }, { sku: 'y' }], status: 'PAID', card: 'visa', deltas: ['-1', '2'], gift: true, weight: 2.5, ratio: 0.5, f32: 7, s64: '-9', maybe: 0, tags: ['a', 'ü'] },
    '0202', '0202',
  ],
  ['shop.Order', { token: new Uint8Array([9, 8]), id: '-3' }, { token: base64([9, 8]), id: '-3' }, '0202', '0202'],
  ['shop.Order.Line', { sku: 'z', qty: 1 }, { sku: 'z', qty: 1 }, '040200', '040200'],
  ['shop.Order.Line.Note', { text: 'deep', marks: [] }, { text: 'deep' }, '06020000', '06020000'],
  ['shop.Cart', { counts: { a: 1, b: 2 }, items: [{ sku: 'q' }] }, { counts: { a: 1, b: 2 }, items: [{ sku: 'q' }] }, '0204', '0204'],
  ['shop.Cart.Item', { sku: 'i' }, { sku: 'i' }, '040402', '040400'],
]

const jsonSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#', title: 'Event', type: 'object',
  properties: {
    name: { type: 'string' }, n: { type: 'integer' }, x: { type: 'number' }, ok: { type: 'boolean' }, none: { type: 'null' },
    tags: { type: 'array', items: { type: 'string' } }, inner: { type: 'object', properties: { a: { type: 'array' } } },
  },
  required: ['name'],
}
const jsonRecords: unknown[] = [
  { name: 'a', n: 1, x: 2.5, ok: true, none: null, tags: ['x', 'ÿ', '✓ "q"\n'], inner: { a: [1, [2], {}] } },
  { name: 'b' },
  { name: 'c', x: 1e300, n: -9007199254740991 },
]

describe.skipIf(unavailable !== null)(`kafka-edge's bytes against Apicurio's Java serdes (Apicurio Registry 3.3.3)${unavailable ? ` (skipped: ${unavailable})` : ''}`, () => {
  let reg: Registry
  const topics = { avro: uniqueTopic('javaavro'), proto: uniqueTopic('javaproto'), json: uniqueTopic('javajson') }
  const edge: Record<keyof typeof topics, string[]> = { avro: [], proto: [], json: [] }
  let java: JavaSerdeAnswer[]
  let at: Record<keyof typeof topics, { ser: number; de: number }>
  let ids: Record<keyof typeof topics, number>

  beforeAll(async () => {
    reg = await startRegistry(NAME)
    const client = new SchemaRegistryClient({ 'schema.registry.url': reg.url })
    const avro = avroSerializer(avroSchema, { client })
    for (const [v] of avroRecords) edge.avro.push(hex(await avro.serialize(topics.avro, v)))
    for (const [messageName, v] of protoRecords) edge.proto.push(hex(await protobufSerializer(proto, { messageName, client }).serialize(topics.proto, v)))
    const json = jsonSchemaSerializer(jsonSchema, { client, 'json.fail.invalid.schema': true })
    for (const v of jsonRecords) edge.json.push(hex(await json.serialize(topics.json, v)))
    ids = Object.fromEntries(await Promise.all(Object.entries(topics).map(async ([k, t]) => [k, (await client.getLatest(`${t}-value`)).id]))) as typeof ids

    const avroText = JSON.stringify(avroSchema)
    const requests: JavaSerdeRequest[] = []
    const add = (rs: JavaSerdeRequest[]) => { requests.push(...rs); return requests.length - rs.length }
    const ser = {
      avro: add(avroRecords.map(([, value]) => ({ op: 'serialize', format: 'avro', topic: topics.avro, schema: avroText, value }))),
      proto: add(protoRecords.map(([message, , value]) => ({ op: 'serialize', format: 'protobuf', topic: topics.proto, schema: proto, message, value }))),
      json: add(jsonRecords.map((value) => ({ op: 'serialize', format: 'json', topic: topics.json, value }))),
    }
    const de = {
      avro: add(edge.avro.map((h) => ({ op: 'deserialize', format: 'avro', topic: topics.avro, hex: h }))),
      proto: add(edge.proto.map((h, i) => ({ op: 'deserialize', format: 'protobuf', topic: topics.proto, schema: proto, message: protoRecords[i]![0], hex: h }))),
      json: add(edge.json.map((h) => ({ op: 'deserialize', format: 'json', topic: topics.json, hex: h }))),
    }
    at = { avro: { ser: ser.avro, de: de.avro }, proto: { ser: ser.proto, de: de.proto }, json: { ser: ser.json, de: de.json } }
    java = await javaSerde(reg.base, requests)
    expect(java).toHaveLength(requests.length)
  }, 180_000)
  afterAll(async () => { if (!process.env.KAFKA_EDGE_KEEP_REGISTRY) await stopRegistry(NAME) })

  const answers = (k: keyof typeof topics, which: 'ser' | 'de', n: number): JavaSerdeAnswer[] => {
    const got = java.slice(at[k][which], at[k][which] + n)
    for (const a of got) expect(a.error).toBeUndefined()
    return got
  }
  const idHex = (id: number) => `00${id.toString(16).padStart(8, '0')}`

  it('Avro (unions, named types in namespaces, defaults, decimal, uuid, date, time-*, timestamp-*, local-timestamp-*): the same bytes, header included; Java reads kafka-edge\'s bytes back', () => {
    const ser = answers('avro', 'ser', avroRecords.length)
    expect(edge.avro.every((h) => h.startsWith(idHex(ids.avro)))).toBe(true)
    expect(ser.map((a) => a.hex)).toEqual(edge.avro)
    const de = answers('avro', 'de', avroRecords.length)
    expect(de.map((a) => a.value)).toEqual(avroRecords.map(([, j]) => j))
    // Java's own logical-type conversions of what kafka-edge wrote.
    const logical = { ref: '6f1c2a56-0f4e-4f0b-9a57-2ad6b7d7c0de', day: '2026-12-01', tm: '01:00', tu: '00:00:01.500', tsm: '2026-12-01T22:35:00.123Z', tsu: '2025-12-01T22:35:00.123456Z', ltm: '2025-12-01T22:35:00.123', ltu: '1969-12-31T23:59:59.999999' }
    expect(de.map((a) => a.logical)).toEqual([
      { ...logical, price: '1234.56', fee: '-12.345' },
      { ...logical, price: '-0.01', fee: '0.001' },
      { ...logical, price: '99999999.99', fee: '-12.345' },
    ])
  })

  it('Protobuf (top-level and nested messages, a map before a nested message): the same header and payload; the message indexes differ only where Apicurio departs from Confluent; Java reads kafka-edge\'s bytes back', () => {
    const ser = answers('proto', 'ser', protoRecords.length)
    const head = idHex(ids.proto)
    for (const [i, [message, , , edgeIndexes, javaIndexes]] of protoRecords.entries()) {
      const e = edge.proto[i]!
      const j = ser[i]!.hex!
      expect([message, e.slice(0, HEADER + edgeIndexes.length)]).toEqual([message, head + edgeIndexes])
      expect([message, j.slice(0, HEADER + javaIndexes.length)]).toEqual([message, head + javaIndexes])
      expect([message, e.slice(HEADER + edgeIndexes.length)]).toEqual([message, j.slice(HEADER + javaIndexes.length)])
    }
    // Where the index lists agree the whole records do: 5 of the 7.
    expect(ser.map((a, i) => a.hex === edge.proto[i])).toEqual([false, true, true, true, true, true, false])
    const de = answers('proto', 'de', protoRecords.length)
    // Apicurio's deserializer builds its descriptor from the registry's text without proto3 `optional`
    // (its ProtobufSchemaParser gives the field no presence), so the maybe = 0 both serializers wrote
    // (field 12, bytes 60 00, compared above) reads back as unset there.
    const { maybe, ...order } = protoRecords[1]![2] as Record<string, unknown>
    expect(maybe).toBe(0)
    expect(de.map((a) => a.value)).toEqual(protoRecords.map(([, , j], i) => i === 1 ? order : j))
  })

  it('JSON Schema: the same header and the same JSON value (Jackson and kafka-edge write the same bytes except for a number in exponent form); Java reads kafka-edge\'s bytes back', () => {
    const ser = answers('json', 'ser', jsonRecords.length)
    const head = idHex(ids.json)
    const payload = (h: string) => JSON.parse(Buffer.from(h.slice(HEADER), 'hex').toString('utf8')) as unknown
    for (const [i, a] of ser.entries()) {
      expect(a.hex!.slice(0, HEADER)).toBe(head)
      expect(edge.json[i]!.slice(0, HEADER)).toBe(head)
      expect(payload(a.hex!)).toEqual(jsonRecords[i])
      expect(payload(edge.json[i]!)).toEqual(jsonRecords[i])
    }
    // Both write keys in the value's order and no whitespace; 1e300 is "1e+300" in JavaScript, "1.0E300" in Jackson.
    expect(ser.map((a, i) => a.hex === edge.json[i])).toEqual([true, true, false])
    const de = answers('json', 'de', jsonRecords.length)
    expect(de.map((a) => a.value)).toEqual(jsonRecords)
  })
})
