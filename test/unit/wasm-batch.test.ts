import { createRequire } from 'node:module'
import { UnsupportedCompressionError, WasmCoreError } from '../../src/edge/errors.js'
import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import fc from 'fast-check'
import { batchHeader, loadCore, NO_PRODUCER, recordBaseSize, recordSize, restamp, type CompressionType, type Core, type DecodedRecord, type ProducerStamp, type RecordInput } from '../../src/edge/wasm/core.js'
import { BatchReadError, readBatch } from '../helpers/batch-reader.js'

let core: Core
beforeAll(async () => {
  core = await loadCore()
})

const bytesArb = (max: number) => fc.uint8Array({ maxLength: max })
const nullableBytes = fc.oneof(
  { weight: 2, arbitrary: fc.constant(null) },
  { weight: 2, arbitrary: fc.constant(new Uint8Array(0)) },
  { weight: 8, arbitrary: bytesArb(200) },
  { weight: 1, arbitrary: bytesArb(20_000) },
)
const headerKey = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 10 }),
  fc.constantFrom('\ud800', 'a\udc00b', 'x'.repeat(100), 'é'.repeat(70)),
)
const headerArb = fc.record({ key: headerKey, value: fc.option(bytesArb(64), { nil: null }) })
const deltaArb = fc.oneof(fc.integer({ min: -1000, max: 1000 }), fc.integer({ min: -(2 ** 40), max: 2 ** 40 }))
const recordsArb = fc.tuple(
  fc.integer({ min: -(2 ** 42), max: 2 ** 42 }),
  fc.array(
    fc.record({
      key: nullableBytes,
      value: nullableBytes,
      headers: fc.option(fc.array(headerArb, { maxLength: 5 }), { nil: undefined }),
      delta: deltaArb,
    }),
    { minLength: 1, maxLength: 40 },
  ),
).map(([base, rs]) => rs.map(({ delta, ...r }): DecodedRecord => ({ ...r, timestamp: base + delta })))

const stampArb: fc.Arbitrary<ProducerStamp> = fc.oneof(
  fc.constant(NO_PRODUCER),
  fc.record({
    producerId: fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }),
    producerEpoch: fc.integer({ min: 0, max: 32767 }),
    baseSequence: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
    transactional: fc.boolean(),
  }),
)

/** What TextEncoder makes of a key: lone surrogates become U+FFFD. */
const wellFormed = (s: string) => new TextDecoder().decode(new TextEncoder().encode(s))

function build(records: RecordInput[], stamp: ProducerStamp): Uint8Array {
  const batch = core.openBatch({ compression: 'none', initialCapacity: 256 })
  for (const r of records) {
    const expected = batch.estimatedSizeWith(r)
    batch.append(r)
    expect(batch.uncompressedBytes).toBe(expected)
  }
  const size = batch.uncompressedBytes
  const out = batch.finish(stamp)
  expect(out.length).toBe(size)
  return out
}

/** toEqual on megabyte arrays is slow (seconds); compare big ones as buffers. */
function expectBytes(got: Uint8Array | null, want: Uint8Array | null): void {
  if (got === null || want === null || want.length < 1024) return void expect(got).toEqual(want)
  expect(got.length).toBe(want.length)
  expect(Buffer.compare(got, want)).toBe(0)
}

function expectBatchMatches(bytes: Uint8Array, records: DecodedRecord[], stamp: ProducerStamp): void {
  const read = readBatch(bytes)
  expect(read.crc).toBe(read.computedCrc)
  expect(read.baseOffset).toBe(0n)
  expect(read.partitionLeaderEpoch).toBe(-1)
  expect(read.magic).toBe(2)
  expect(read.compression).toBe(0)
  expect(read.control).toBe(false)
  expect(read.attributes & 0x08).toBe(0) // CreateTime
  expect(read.transactional).toBe(stamp.transactional)
  expect(read.recordCount).toBe(records.length)
  expect(read.lastOffsetDelta).toBe(records.length - 1)
  expect(read.baseTimestamp).toBe(records[0]!.timestamp)
  expect(read.maxTimestamp).toBe(Math.max(...records.map((r) => r.timestamp)))
  expect(read.producerId).toBe(stamp.producerId)
  expect(read.producerEpoch).toBe(stamp.producerEpoch)
  expect(read.baseSequence).toBe(stamp.baseSequence)
  expect(batchHeader(bytes)).toEqual({
    baseOffset: read.baseOffset, batchLength: read.batchLength, partitionLeaderEpoch: read.partitionLeaderEpoch,
    magic: read.magic, crc: read.crc, attributes: read.attributes, lastOffsetDelta: read.lastOffsetDelta,
    baseTimestamp: read.baseTimestamp, maxTimestamp: read.maxTimestamp, producerId: read.producerId,
    producerEpoch: read.producerEpoch, baseSequence: read.baseSequence, recordCount: read.recordCount,
  })
  records.forEach((r, i) => {
    const got = read.records[i]!
    expect(got.attributes).toBe(0)
    expect(got.offsetDelta).toBe(i)
    expect(got.timestamp).toBe(r.timestamp)
    expectBytes(got.key, r.key)
    expectBytes(got.value, r.value)
    expect(got.headers).toEqual((r.headers ?? []).map((h) => ({ key: wellFormed(h.key), value: h.value })))
  })
}

describe('RecordBatch v2 builder', () => {
  it('round-trips random records through the independent reader', () => {
    fc.assert(
      fc.property(recordsArb, stampArb, (records, stamp) => {
        expectBatchMatches(build(records, stamp), records, stamp)
      }),
      { numRuns: 300 },
    )
  })

  it('writes string keys, values and header values as TextEncoder\'s bytes, byte for byte, at the size recordBaseSize gave', () => {
    const text = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.string({ unit: 'binary', maxLength: 100 }),
      fc.string({ unit: 'grapheme', maxLength: 40 }),
      fc.constantFrom('', '\ud800', 'a\udc00b', '\udbff\udfff', '😀'.repeat(40), 'x'.repeat(65), 'é'.repeat(70), 'a'.repeat(63) + 'é'),
    )
    const field = fc.oneof(fc.constant(null), text, bytesArb(40))
    const enc = new TextEncoder()
    const asBytes = (v: Uint8Array | string | null) => (typeof v === 'string' ? enc.encode(v) : v)
    fc.assert(fc.property(fc.array(fc.record({
      key: field, value: field,
      headers: fc.option(fc.array(fc.record({ key: headerKey, value: field }), { maxLength: 4 }), { nil: undefined }),
    }), { minLength: 1, maxLength: 20 }), stampArb, (rs, stamp) => {
      const strings: RecordInput[] = rs.map((r, i) => ({ ...r, timestamp: 1000 + i }))
      const bytes: DecodedRecord[] = strings.map((r) => ({
        key: asBytes(r.key), value: asBytes(r.value), timestamp: r.timestamp,
        ...(r.headers ? { headers: r.headers.map((h) => ({ key: h.key, value: asBytes(h.value) })) } : {}),
      }))
      strings.forEach((r, i) => expect(recordBaseSize(r)).toBe(recordBaseSize(bytes[i]!)))
      expect(Buffer.compare(build(strings, stamp), build(bytes, stamp))).toBe(0)
    }), { numRuns: 300 })
  })

  it('sizes a staged record from the bytes it wrote exactly as recordBaseSize measures it, and appends it without staging it again', () => {
    const text = fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 100 }), fc.constantFrom('\ud800', 'a\udc00b', '😀'.repeat(40), 'é'.repeat(70)))
    const field = fc.oneof(fc.constant(null), text, bytesArb(300))
    fc.assert(fc.property(fc.array(fc.record({
      key: field, value: field,
      headers: fc.option(fc.array(fc.record({ key: headerKey, value: field }), { maxLength: 4 }), { nil: undefined }),
    }), { minLength: 1, maxLength: 20 }), stampArb, (rs, stamp) => {
      const records: RecordInput[] = rs.map((r, i) => ({ ...r, timestamp: 1000 + i }))
      const batch = core.openBatch({ compression: 'none' })
      for (const r of records) {
        expect(core.stage(r)).toBe(true)
        expect(core.stagedBaseSize).toBe(recordBaseSize(r))
        batch.append(r)
        expect(core.stagedRecord).toBeNull()
      }
      expect(Buffer.compare(batch.finish(stamp), build(records, stamp))).toBe(0)
    }), { numRuns: 200 })
  })

  it('does not stage a record past the room it is given, and forgets the record it held', () => {
    const small: RecordInput = { key: null, value: 'abc', timestamp: 1 }
    expect(core.stage(small)).toBe(true)
    expect(core.stagedRecord).toBe(small)
    expect(core.stage({ key: null, value: 'x'.repeat(1000), timestamp: 1 }, 2999)).toBe(false)
    expect(core.stagedRecord).toBeNull()
  })

  it('writes strings as TextEncoder\'s bytes under workerd too, whose ASCII loop runs to 192 units', async () => {
    // The loop's limit is read from navigator.userAgent when the module loads: load a copy as workerd would.
    vi.stubGlobal('navigator', { userAgent: 'Cloudflare-Workers' })
    vi.resetModules()
    try {
      const { writeUtf8 } = await import('../../src/edge/wasm/batch.js')
      const enc = new TextEncoder()
      const ascii = fc.string({ unit: fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c)), maxLength: 260 })
      const odd = fc.constantFrom('é', '\ud800', '\udc00', '😀', '\u0080', '\uffff')
      const text = fc.oneof(ascii, fc.tuple(ascii, odd, ascii).map(([a, x, b]) => a + x + b), fc.string({ unit: 'binary', maxLength: 200 }))
      fc.assert(fc.property(text, fc.integer({ min: 0, max: 7 }), (s, at) => {
        const out = new Uint8Array(at + 3 * s.length)
        const n = writeUtf8(out, s, at)
        expect(Buffer.from(out.subarray(at, at + n))).toEqual(Buffer.from(enc.encode(s)))
      }), { numRuns: 500 })
    } finally {
      vi.unstubAllGlobals()
      vi.resetModules()
    }
  })

  it('recordSize is the exact encoded size, for any deltas', () => {
    const require = createRequire(import.meta.url)
    const KafkajsRecord = require('kafkajs/src/protocol/recordBatch/record/v0')
    fc.assert(
      fc.property(recordsArb, fc.integer({ min: 0, max: 2 ** 31 - 1 }), deltaArb, (records, offsetDelta, timestampDelta) => {
        const r = records[0]!
        const batch = core.openBatch({ compression: 'none' })
        batch.append({ key: null, value: null, timestamp: 0 })
        const before = batch.uncompressedBytes
        batch.append(r)
        expect(batch.uncompressedBytes - before).toBe(recordSize(r, 1, r.timestamp))
        batch.discard()
        // Offset deltas beyond a batch's reach: compare with kafkajs's record encoder, which takes
        // headers as an object (so: unique keys, non-null values only).
        const headers = (r.headers ?? []).filter((h, i, all) => h.value !== null && all.findIndex((o) => o.key === h.key) === i)
        const plain = { ...r, headers }
        const kafkajs = KafkajsRecord({
          offsetDelta, timestampDelta, key: r.key && Buffer.from(r.key), value: r.value && Buffer.from(r.value),
          headers: Object.fromEntries(headers.map((h) => [h.key, Buffer.from(h.value!)])),
        })
        expect(recordSize(plain, offsetDelta, timestampDelta)).toBe(kafkajs.buffer.length)
      }),
      { numRuns: 300 },
    )
  })

  it('is readable by kafkajs (a second, unrelated decoder)', async () => {
    const require = createRequire(import.meta.url)
    const Decoder = require('kafkajs/src/protocol/decoder')
    const decodeBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder')
    const records: DecodedRecord[] = [
      { key: new TextEncoder().encode('k1'), value: new TextEncoder().encode('v1'), timestamp: 1_700_000_000_000, headers: [{ key: 'h', value: new Uint8Array([1, 2]) }] },
      { key: null, value: new Uint8Array(300).fill(7), timestamp: 1_699_999_999_000 },
    ]
    const stamp = { producerId: 4242n, producerEpoch: 3, baseSequence: 17, transactional: true }
    const decoded = await decodeBatch(new Decoder(Buffer.from(build(records, stamp))))
    expect(decoded.producerId).toBe('4242')
    expect(decoded.firstSequence).toBe(17)
    expect(decoded.inTransaction).toBe(true)
    expect(decoded.maxTimestamp).toBe('1700000000000')
    expect(decoded.records.map((r: { key: Buffer | null; value: Buffer; timestamp: string; offset: string; headers: Record<string, Buffer> }) => [
      r.key?.toString() ?? null, r.value.length, r.timestamp, r.offset, Object.keys(r.headers),
    ])).toEqual([['k1', 2, '1700000000000', '0', ['h']], [null, 300, '1699999999000', '1', []]])
  })

  it('restamp rewrites producer fields and the transactional bit and keeps the CRC valid', () => {
    fc.assert(
      fc.property(recordsArb, stampArb, stampArb, (records, first, second) => {
        const bytes = build(records, first)
        restamp(core, bytes, second)
        expectBatchMatches(bytes, records, second)
      }),
      { numRuns: 100 },
    )
  })

  it('keeps many interleaved open batches separate', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 15 }), recordsArb.map((rs) => rs[0]!)), { minLength: 1, maxLength: 400 }),
        (ops) => {
          const open = Array.from({ length: 16 }, () => core.openBatch({ compression: 'none', initialCapacity: 64 }))
          const expected: DecodedRecord[][] = open.map(() => [])
          for (const [i, r] of ops) {
            open[i]!.append(r)
            expected[i]!.push(r)
          }
          open.forEach((b, i) => {
            if (expected[i]!.length === 0) return b.discard()
            const stamp = { producerId: BigInt(i), producerEpoch: i, baseSequence: i * 1000, transactional: i % 2 === 0 }
            expectBatchMatches(b.finish(stamp), expected[i]!, stamp)
          })
        },
      ),
      { numRuns: 30 },
    )
  })

  it('handles a record far larger than staging and the initial capacity', () => {
    const value = new Uint8Array(3 << 20).map((_, i) => i * 31)
    const records: DecodedRecord[] = [
      { key: new Uint8Array([1]), value: new Uint8Array(10), timestamp: 5 },
      { key: null, value, timestamp: 6, headers: [{ key: 'big', value: value.subarray(0, 100_000) }] },
    ]
    expectBatchMatches(build(records, NO_PRODUCER), records, NO_PRODUCER)
  })

  it('reuses memory: 10,000 open/append/finish-or-discard cycles do not grow it', () => {
    const record: DecodedRecord = { key: new Uint8Array(10), value: new Uint8Array(100), timestamp: 1, headers: [{ key: 'trace', value: null }] }
    const cycle = (i: number) => {
      const batches = [0, 1, 2].map(() => core.openBatch({ compression: 'none' }))
      for (let n = 0; n < 150; n++) batches[n % 3]!.append(record)
      batches[0]!.finish(NO_PRODUCER)
      batches[1]!.discard()
      if (i % 2) batches[2]!.finish(NO_PRODUCER)
      else batches[2]!.discard()
    }
    for (let i = 0; i < 100; i++) cycle(i)
    const settled = core.memoryBytes()
    for (let i = 0; i < 10_000; i++) cycle(i)
    expect(core.memoryBytes()).toBe(settled)
  })

  it('rejects misuse with typed errors', () => {
    const batch = core.openBatch({ compression: 'none' })
    expect(() => batch.finish(NO_PRODUCER)).toThrow(WasmCoreError)
    batch.append({ key: null, value: null, timestamp: 0 })
    batch.finish(NO_PRODUCER)
    expect(() => batch.finish(NO_PRODUCER)).toThrow(/already finished/)
    expect(() => batch.append({ key: null, value: null, timestamp: 0 })).toThrow(WasmCoreError)
    batch.discard() // idempotent
    expect(() => core.openBatch({ compression: 'brotli' as CompressionType })).toThrow(WasmCoreError)
    for (const c of ['gzip', 'snappy', 'lz4', 'zstd'] as const) {
      if (core.supportsCompression(c)) continue
      expect(() => core.openBatch({ compression: c })).toThrow(UnsupportedCompressionError)
    }
  })

  it('sets the codec bits, compresses the records section and keeps the CRC valid for every built codec', () => {
    const records: DecodedRecord[] = Array.from({ length: 50 }, (_, i) => ({ key: null, value: new Uint8Array(100).fill(i), timestamp: i }))
    const plain = build(records, NO_PRODUCER)
    for (const c of ['gzip', 'snappy', 'lz4', 'zstd'] as const) {
      if (!core.supportsCompression(c)) continue
      const batch = core.openBatch({ compression: c })
      for (const r of records) batch.append(r)
      const bytes = batch.finish(NO_PRODUCER)
      const header = batchHeader(bytes)
      expect(header.attributes & 7).toBe({ gzip: 1, snappy: 2, lz4: 3, zstd: 4 }[c])
      expect(header.recordCount).toBe(50)
      expect(header.lastOffsetDelta).toBe(49)
      expect(header.batchLength).toBe(bytes.length - 12)
      expect(bytes.length).toBeLessThan(plain.length)
      expect(core.crc32c(bytes.subarray(21))).toBe(header.crc)
      // gzip can be checked with the platform's own inflater; the other codecs are verified by
      // their own suites and by the Java consumer.
      if (c === 'gzip') expect(Buffer.compare(gunzipSync(bytes.subarray(61)), plain.subarray(61))).toBe(0)
      const stamp = { producerId: 77n, producerEpoch: 2, baseSequence: 500, transactional: true }
      restamp(core, bytes, stamp)
      const restamped = batchHeader(bytes)
      expect(restamped).toMatchObject({ producerId: 77n, producerEpoch: 2, baseSequence: 500, attributes: header.attributes | 0x10 })
      expect(core.crc32c(bytes.subarray(21))).toBe(restamped.crc)
    }
  })

  it('encodes offset deltas past the 1- and 2-byte varint widths', () => {
    const records: DecodedRecord[] = Array.from({ length: 9000 }, (_, i) => ({ key: null, value: new Uint8Array([i & 0xff]), timestamp: 1000 + (i % 7) - 3 }))
    expectBatchMatches(build(records, NO_PRODUCER), records, NO_PRODUCER)
  })
})

describe('batch-reader (test helper)', () => {
  it('reports truncation anywhere instead of misreading', () => {
    const records: DecodedRecord[] = [{ key: new Uint8Array([1, 2]), value: new Uint8Array(20), timestamp: 9, headers: [{ key: 'k', value: null }] }]
    const bytes = build(records, NO_PRODUCER)
    for (let n = 0; n < bytes.length; n++) {
      const cut = bytes.slice(0, n)
      // Keep batchLength consistent so the record parser, not the length check, meets the cut.
      if (n >= 12) new DataView(cut.buffer).setInt32(8, n - 12)
      expect(() => readBatch(cut, { verifyCrc: false })).toThrow(BatchReadError)
    }
    const corrupt = bytes.slice()
    corrupt[70]! ^= 1
    expect(() => readBatch(corrupt)).toThrow(/CRC mismatch/)
  })
})

describe('loadCore', () => {
  it('caches the embedded module and loads from a Module, bytes or a Response', async () => {
    expect(await loadCore()).toBe(core)
    const bytes = readFileSync(new URL('../../build/core.wasm', import.meta.url))
    const module = await WebAssembly.compile(bytes)
    const fromModule = await loadCore(module)
    expect(await loadCore(module)).toBe(fromModule)
    const sources = [
      fromModule,
      await loadCore(bytes),
      await loadCore(new Response(bytes, { headers: { 'content-type': 'application/wasm' } })),
      await loadCore(Promise.resolve(new Response(bytes))),
    ]
    for (const c of sources) {
      expect(c).not.toBe(core)
      expect(c.crc32c(new TextEncoder().encode('123456789'))).toBe(0xe3069283)
    }
  })

  it('reports an unusable source as WasmCoreError', async () => {
    await expect(loadCore(new Uint8Array([0, 97, 115, 109, 9, 9, 9, 9]))).rejects.toThrow(WasmCoreError)
    await expect(loadCore(new Response('nope', { status: 404 }))).rejects.toThrow(/HTTP 404/)
  })
})
