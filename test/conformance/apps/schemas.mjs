// The schemas the 'schema avro' and 'schema protobuf' scenarios write with, the values they send, and
// what the independent reader (test/registry-reader: hamba/avro, protobuf-go's protojson) decodes
// them to. No imports: the test reads this file too, and each app gets a copy beside scenarios.mjs.

export const AVRO_SCHEMA = {
  type: 'record', name: 'Order', namespace: 'conformance',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'note', type: ['null', 'string'], default: null },
    { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'price', type: { type: 'bytes', logicalType: 'decimal', precision: 9, scale: 2 } },
    { name: 'ref', type: ['string', 'long'], default: 'none' },
  ],
}

/** Built per call: a Date is the value a page or a Worker would hand the serializer for timestamp-millis. */
export const avroValues = () => [
  { id: 1, note: 'first ✓', at: new Date('2026-12-01T22:35:00.123Z'), price: '12.34', ref: 'r-1' },
  { id: 2 ** 40, at: new Date('2026-12-02T00:00:00.000Z'), price: '-0.05', ref: 5 },
  { id: -3, note: null, at: 1_764_628_500_001, price: '1234567.89' },
]

export const AVRO_DECODED = [
  // hamba/avro gives a union of primitives bare; that it re-encodes the same bytes (`same`) checks the branch.
  { id: 1, note: 'first ✓', at: '2026-12-01T22:35:00.123Z', price: '12.34', ref: 'r-1' },
  { id: 2 ** 40, note: null, at: '2026-12-02T00:00:00Z', price: '-0.05', ref: 5 },
  { id: -3, note: null, at: '2025-12-01T22:35:00.001Z', price: '1234567.89', ref: 'none' },
]

// Order is the file's second message, so its message indexes are [1], not the [0] a first message gets.
export const PROTO_SCHEMA = `syntax = "proto3";
package conformance;
message Ping { string id = 1; }
message Order {
  message Line { string sku = 1; uint32 qty = 2; }
  int64 id = 1;
  repeated Line lines = 2;
  string note = 3;
}
`
export const PROTO_MESSAGE = 'conformance.Order'
export const PROTO_INDEX = [1]

export const protoValues = () => [
  { id: 7, lines: [{ sku: 'a-1', qty: 2 }, { sku: 'b-2', qty: 0 }], note: 'nested ✓' },
  { id: 2n ** 60n, lines: [] },
  { id: '-3', lines: [{ sku: 'z', qty: 4_000_000_000 }] },
]

export const PROTO_DECODED = [
  { id: '7', lines: [{ sku: 'a-1', qty: 2 }, { sku: 'b-2' }], note: 'nested ✓' },
  { id: String(2n ** 60n) },
  { id: '-3', lines: [{ sku: 'z', qty: 4_000_000_000 }] },
]

/** Avro goes under TopicNameStrategy's `<topic>-value`; Protobuf under the TopicRecordNameStrategy form, so one topic holds both. */
export const avroSubject = (topic) => `${topic}-value`
export const protoSubject = (topic) => `${topic}-${PROTO_MESSAGE}`
export const SCHEMA_COUNTS = { avro: 3, protobuf: 3 }
