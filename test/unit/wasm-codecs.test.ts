// The shipped core modules (build/core*.wasm from scripts/build-wasm.mjs), not the codec test wasm:
// every codec compresses a batch through openBatch and Core.decompress gives the records back;
// the per-codec variants contain exactly their codec; corrupt input is a typed error, never a trap.
import { readFileSync } from 'node:fs'
import { CorruptCompressedDataError, DecompressedSizeLimitError, UnsupportedCompressionError, WasmCoreError } from '../../src/edge/errors.js'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { loadCore, type CompressionType, type Core, type ProducerStamp, type DecodedRecord } from '../../src/edge/wasm/core.js'
import { CORE_WASM_BASE64 } from '../../src/edge/wasm/core.generated.js'
import { createProducer } from '../../src/edge/producer/producer.js'
import type { Transport } from '../../src/edge/transport/transport.js'
import { crc32cBitwise, readBatch } from '../helpers/batch-reader.js'
import { jsonEvents, logLines, randomBytes } from '../helpers/codec-harness.js'

const ROOT = join(import.meta.dirname, '../..')
const CODECS = ['gzip', 'snappy', 'lz4', 'zstd'] as const
const VARIANTS = ['core', 'core-none', 'core-gzip', 'core-snappy', 'core-lz4', 'core-zstd', 'core-encoders'] as const
type Variant = (typeof VARIANTS)[number]
const wasmBytes = (v: Variant) => new Uint8Array(readFileSync(join(ROOT, `build/${v}.wasm`)))

const STAMP: ProducerStamp = { producerId: 4242n, producerEpoch: 3, baseSequence: 100, transactional: false }
const enc = new TextEncoder()

/** Records like the Worker's telemetry: JSON values, some keys, some headers, a null value, a binary value. */
function telemetryRecords(n: number): DecodedRecord[] {
  const json = jsonEvents(n * 200, 11)
  const records: DecodedRecord[] = []
  for (let i = 0; i < n; i++) {
    records.push({
      key: i % 3 === 0 ? null : enc.encode(`user-${i % 17}`),
      value: i === 5 ? null : i === 7 ? randomBytes(300, i) : json.subarray(i * 200, i * 200 + 150 + (i % 50)),
      headers: i % 4 === 0 ? [{ key: 'trace', value: enc.encode(`t-${i}`) }, { key: 'empty', value: null }] : undefined,
      timestamp: 1764500000000 + i * 3,
    })
  }
  return records
}

function build(core: Core, compression: CompressionType, records: DecodedRecord[]): { bytes: Uint8Array; uncompressed: number } {
  const batch = core.openBatch({ compression })
  for (const r of records) batch.append(r)
  const uncompressed = batch.uncompressedBytes
  return { bytes: batch.finish(STAMP), uncompressed }
}

/** The compressed batch with its records section replaced by `records` and the codec bits cleared. */
function reconstruct(batch: Uint8Array, records: Uint8Array): Uint8Array {
  const out = new Uint8Array(61 + records.length)
  out.set(batch.subarray(0, 61))
  out.set(records, 61)
  const dv = new DataView(out.buffer)
  dv.setInt32(8, out.length - 12)
  dv.setInt16(21, dv.getInt16(21) & ~7)
  dv.setUint32(17, crc32cBitwise(out.subarray(21)))
  return out
}

function expectRecords(read: ReturnType<typeof readBatch>, records: DecodedRecord[]): void {
  expect(read.records.length).toBe(records.length)
  read.records.forEach((r, i) => {
    const want = records[i]!
    expect(r.key).toEqual(want.key === null ? null : new Uint8Array(want.key))
    expect(r.value).toEqual(want.value === null ? null : new Uint8Array(want.value))
    expect(r.timestamp).toBe(want.timestamp)
    expect(r.offsetDelta).toBe(i)
    expect(r.headers).toEqual((want.headers ?? []).map((h) => ({ key: h.key, value: h.value === null ? null : new Uint8Array(h.value) })))
  })
}

/** The outcome of a decompress call: bytes, or the error's class name; a trap would surface as WasmCoreError. */
function attempt(core: Core, codec: CompressionType, bytes: Uint8Array, maxBytes?: number): Uint8Array | string {
  try {
    return core.decompress(codec, bytes, undefined, maxBytes)
  } catch (e) {
    return (e as Error).constructor.name
  }
}

let core: Core
beforeAll(async () => {
  core = await loadCore(wasmBytes('core'))
})

describe('build/core.wasm (all codecs, encoders and decoders)', () => {
  it('is the module kafka-edge/inline embeds as base64', () => {
    expect(Buffer.from(CORE_WASM_BASE64, 'base64').equals(Buffer.from(wasmBytes('core')))).toBe(true)
  })

  it('reports every codec as encoder and decoder', () => {
    expect(core.codecs()).toEqual({ encoders: ['none', ...CODECS], decoders: ['none', ...CODECS] })
  })

  for (const codec of CODECS) {
    it(`${codec}: a batch compressed by openBatch decompresses to the records it was built from`, () => {
      const records = telemetryRecords(120)
      const plain = build(core, 'none', records).bytes
      const { bytes, uncompressed } = build(core, codec, records)
      expect(bytes.length).toBeLessThan(plain.length)
      expect(new DataView(bytes.buffer, bytes.byteOffset).getInt16(21) & 7).toBe({ gzip: 1, snappy: 2, lz4: 3, zstd: 4 }[codec])

      const section = bytes.subarray(61)
      const exact = core.decompress(codec, section, uncompressed - 61)
      expect(Buffer.from(exact).equals(Buffer.from(plain.subarray(61)))).toBe(true)
      // Without a hint (the stream's own size, or 4x the input, grown on demand) and with a hint far too small.
      expect(core.decompress(codec, section)).toEqual(exact)
      expect(core.decompress(codec, section, 1)).toEqual(exact)

      const read = readBatch(reconstruct(bytes, exact))
      expect(read.recordCount).toBe(records.length)
      expect(read.producerId).toBe(STAMP.producerId)
      expectRecords(read, records)
    })

    it(`${codec}: large batch (~1 MiB of logs, several codec blocks) round-trips`, () => {
      const logs = logLines(1 << 20, 21)
      const records: DecodedRecord[] = []
      for (let off = 0, i = 0; off < logs.length; off += 4000, i++) {
        records.push({ key: null, value: logs.subarray(off, off + 4000), timestamp: 1764500000000 + i })
      }
      const plain = build(core, 'none', records).bytes
      const { bytes } = build(core, codec, records)
      const out = core.decompress(codec, bytes.subarray(61), 1000)
      expect(Buffer.from(out).equals(Buffer.from(plain.subarray(61)))).toBe(true)
    })

    it(`${codec}: truncated input is CorruptCompressedDataError, corrupted input never traps`, () => {
      const { bytes } = build(core, codec, telemetryRecords(60))
      const z = bytes.subarray(61)
      const cuts = new Set([0, 1, 2, 3, 4, 5, 7, 9, 10, 11, 12, 13, 15, 17, 18, 19, 21, 25, 33, 64, z.length >> 1, z.length - 4, z.length - 2, z.length - 1])
      for (const cut of cuts) {
        if (cut >= z.length) continue
        // xerial snappy: just the 16-byte stream header is a valid empty stream.
        if (codec === 'snappy' && cut === 16) continue
        const r = attempt(core, codec, z.slice(0, cut))
        expect(r, `${codec} cut at ${cut} of ${z.length}`).toBe('CorruptCompressedDataError')
      }
      // Byte flips: codecs without a checksum may decode garbage, but only as bytes or a typed error.
      for (let i = 0; i < z.length; i += Math.max(1, z.length >> 6)) {
        for (const flip of [0x01, 0x80, 0xff]) {
          const bad = z.slice()
          bad[i]! ^= flip
          const r = attempt(core, codec, bad, 1 << 20)
          if (typeof r === 'string') expect(['CorruptCompressedDataError', 'DecompressedSizeLimitError'], `${codec} flip ${flip} at ${i}`).toContain(r)
        }
      }
      // Garbage that is not a stream at all (a lone 0x00 is a valid empty raw snappy block).
      for (const junk of [new Uint8Array(1), new Uint8Array(64).fill(0xff), randomBytes(1000, 5)]) {
        const r = attempt(core, codec, junk, 1 << 20)
        if (typeof r === 'string') expect(['CorruptCompressedDataError', 'DecompressedSizeLimitError'], `${codec} junk`).toContain(r)
      }
      expect(attempt(core, codec, randomBytes(1000, 5), 1 << 20)).toBe('CorruptCompressedDataError')
      // The module still works afterwards.
      expect(core.decompress(codec, z).length).toBeGreaterThan(0)
    })
  }

  it('carries the codec name and status code on CorruptCompressedDataError', () => {
    const { bytes } = build(core, 'gzip', telemetryRecords(20))
    const bad = bytes.slice(61)
    bad[bad.length - 5]! ^= 0xff // CRC-32 trailer
    try {
      core.decompress('gzip', bad)
      expect.unreachable()
    } catch (e) {
      expect(e).toBeInstanceOf(CorruptCompressedDataError)
      expect(e).toBeInstanceOf(WasmCoreError)
      expect((e as CorruptCompressedDataError).codec).toBe('gzip')
      expect((e as CorruptCompressedDataError).status).toBe(-5)
      expect((e as Error).message).toMatch(/gzip: checksum mismatch/)
    }
  })

  it('bounds the output: stops at maxBytes with DecompressedSizeLimitError', () => {
    const zeros = new Uint8Array(4 << 20)
    for (const codec of CODECS) {
      const batch = core.openBatch({ compression: codec, initialCapacity: zeros.length + 100 })
      batch.append({ key: null, value: zeros, timestamp: 0 })
      const bytes = batch.finish(STAMP)
      const z = bytes.subarray(61)
      expect(z.length).toBeLessThan(1 << 18)
      expect(() => core.decompress(codec, z, 1024, 1 << 20)).toThrow(DecompressedSizeLimitError)
      expect(() => core.decompress(codec, z, undefined, 1 << 20)).toThrow(DecompressedSizeLimitError)
      expect(core.decompress(codec, z, undefined, 8 << 20).length).toBeGreaterThan(zeros.length)
    }
    const before = core.memoryBytes()
    // A gzip trailer claiming 2 GiB of output is capped, not allocated.
    const { bytes } = build(core, 'gzip', telemetryRecords(5))
    const lying = bytes.slice(61)
    new DataView(lying.buffer).setUint32(lying.length - 4, 0x7fffffff, true)
    expect(attempt(core, 'gzip', lying, 1 << 20)).toMatch(/^(CorruptCompressedDataError|DecompressedSizeLimitError)$/)
    expect(core.memoryBytes() - before).toBeLessThan(8 << 20)
  })

  it('rejects an unknown codec name', () => {
    expect(() => core.decompress('brotli' as CompressionType, new Uint8Array(4))).toThrow(WasmCoreError)
  })
})

describe('variants', () => {
  const cores = new Map<Variant, Core>()
  beforeAll(async () => {
    for (const v of VARIANTS) cores.set(v, await loadCore(wasmBytes(v)))
  })

  const expected: Record<Variant, { encoders: string[]; decoders: string[] }> = {
    'core': { encoders: [...CODECS], decoders: [...CODECS] },
    'core-none': { encoders: [], decoders: [] },
    'core-gzip': { encoders: ['gzip'], decoders: ['gzip'] },
    'core-snappy': { encoders: ['snappy'], decoders: ['snappy'] },
    'core-lz4': { encoders: ['lz4'], decoders: ['lz4'] },
    'core-zstd': { encoders: ['zstd'], decoders: ['zstd'] },
    'core-encoders': { encoders: [...CODECS], decoders: [] },
  }

  it('each variant reports exactly its codec set and has the same exports', () => {
    const exportsOf = (v: Variant) => WebAssembly.Module.exports(new WebAssembly.Module(wasmBytes(v))).map((e) => e.name).sort()
    for (const v of VARIANTS) {
      const c = cores.get(v)!
      expect(c.codecs(), v).toEqual({ encoders: ['none', ...expected[v].encoders], decoders: ['none', ...expected[v].decoders] })
      expect(exportsOf(v), v).toEqual(exportsOf('core'))
    }
  })

  it('the lz4-only core compresses and decompresses lz4 and refuses zstd with UnsupportedCompressionError', () => {
    const lz4 = cores.get('core-lz4')!
    expect(lz4.supportsCompression('lz4')).toBe(true)
    expect(lz4.supportsCompression('zstd')).toBe(false)
    const records = telemetryRecords(50)
    const { bytes } = build(lz4, 'lz4', records)
    expectRecords(readBatch(reconstruct(bytes, lz4.decompress('lz4', bytes.subarray(61)))), records)
    // Its lz4 output is byte-identical to the full core's.
    expect(build(core, 'lz4', records).bytes).toEqual(bytes)
    expect(() => lz4.openBatch({ compression: 'zstd' })).toThrow(UnsupportedCompressionError)
    const zstdSection = build(core, 'zstd', records).bytes.subarray(61)
    expect(() => lz4.decompress('zstd', zstdSection)).toThrow(UnsupportedCompressionError)
    for (const c of ['gzip', 'snappy'] as const) expect(() => lz4.openBatch({ compression: c })).toThrow(UnsupportedCompressionError)
  })

  it('every single-codec variant builds batches identical to the full core', () => {
    const records = telemetryRecords(40)
    for (const codec of CODECS) {
      const one = cores.get(`core-${codec}`)!
      const { bytes } = build(one, codec, records)
      expect(bytes, codec).toEqual(build(core, codec, records).bytes)
      expect(one.decompress(codec, bytes.subarray(61)), codec).toEqual(core.decompress(codec, bytes.subarray(61)))
    }
    const none = cores.get('core-none')!
    expect(build(none, 'none', records).bytes).toEqual(build(core, 'none', records).bytes)
    for (const codec of CODECS) expect(() => none.openBatch({ compression: codec })).toThrow(UnsupportedCompressionError)
  })

  it('the encoders-only core compresses every codec but has no decoders', () => {
    const e = cores.get('core-encoders')!
    const records = telemetryRecords(30)
    for (const codec of CODECS) {
      const { bytes } = build(e, codec, records)
      expect(bytes, codec).toEqual(build(core, codec, records).bytes)
      expect(() => e.decompress(codec, bytes.subarray(61)), codec).toThrow(UnsupportedCompressionError)
    }
  })

  it('a left-out codec leaves no code and no static tables in the module', () => {
    // Static tables that only the zstd and the deflate modules hold (little-endian, as memory.data stores them).
    const zstdTable = new Uint8Array(new Int16Array([4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1, -1, -1, -1, -1]).buffer)
    const deflateTable = new Uint8Array(new Uint16Array([3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115]).buffer)
    const has = (v: Variant, t: Uint8Array) => Buffer.from(wasmBytes(v)).includes(Buffer.from(t))
    for (const v of VARIANTS) {
      expect(has(v, zstdTable), `zstd table in ${v}`).toBe(['core', 'core-zstd', 'core-encoders'].includes(v))
      expect(has(v, deflateTable), `deflate table in ${v}`).toBe(['core', 'core-gzip', 'core-encoders'].includes(v))
    }
    const size = (v: Variant) => wasmBytes(v).length
    for (const codec of CODECS) {
      expect(size(`core-${codec}`)).toBeGreaterThan(size('core-none'))
      expect(size(`core-${codec}`)).toBeLessThan(size('core'))
    }
    // The zstd codec alone is over 15 KB of code: the lz4 variant must not carry any of it.
    expect(size('core-lz4') - size('core-none')).toBeLessThan(size('core-zstd') - size('core-none') - 15_000)
    expect(size('core-encoders')).toBeLessThan(size('core'))
  })
})

describe('producer with a variant core', () => {
  it("loadCore(lz4-only bytes, { compression: 'zstd' }) fails with UnsupportedCompressionError", async () => {
    const bytes = wasmBytes('core-lz4')
    await expect(loadCore(bytes, { compression: 'zstd' })).rejects.toThrow(UnsupportedCompressionError)
    await expect(loadCore(bytes, { compression: 'zstd' })).rejects.toThrow(/kafka-edge\/core-zstd\.wasm/)
    expect((await loadCore(bytes, { compression: 'lz4' })).supportsCompression('lz4')).toBe(true)
    expect(await loadCore(bytes, { compression: 'none' })).toBe(await loadCore(bytes))
  })

  // Needs src/edge/producer/producer.ts doConnect() to pass its codec: loadCore(c.wasm, { compression: c.compressionType }).
  it("compression.type 'zstd' with the lz4-only core fails at connect() with UnsupportedCompressionError", async () => {
    let opened = 0
    const transport: Transport = {
      name: 'never',
      open: () => {
        opened++
        return new Promise(() => {})
      },
    }
    const producer = createProducer({
      'bootstrap.servers': '127.0.0.1:9092', transport, 'compression.type': 'zstd', wasm: wasmBytes('core-lz4'), 'max.block.ms': 2000,
    })
    const err = await producer.connect().then(() => null, (e: unknown) => e)
    expect(err).toBeInstanceOf(UnsupportedCompressionError)
    expect((err as UnsupportedCompressionError).compression).toBe('zstd')
    expect(opened).toBe(0)
  })
})
