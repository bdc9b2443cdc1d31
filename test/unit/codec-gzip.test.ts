// gzip (DEFLATE) in WASM: round trips, Node zlib interop both ways, Kafka's Java GzipCompression
// both ways, and typed errors on bad input.
import { describe, it, expect, beforeAll } from 'vitest'
import { gunzipSync, gzipSync, deflateRawSync, inflateRawSync, constants } from 'node:zlib'
import fc from 'fast-check'
import {
  Codecs, CorruptCompressedDataError, standardCorpora, javaAvailable, javaCodec, jsonEvents, logLines, randomBytes, rng, codecInputs } from '../helpers/codec-harness.js'

let c: Codecs
beforeAll(async () => { c = await Codecs.load() })

const eq = (a: Uint8Array, b: Uint8Array) => expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true)
const corpora = standardCorpora()

describe('gzip encoder', () => {
  it('writes a gzip header and trailer (CRC-32, ISIZE)', () => {
    const src = jsonEvents(5000)
    const z = c.compress('gzip', src)
    expect([z[0], z[1], z[2], z[3]]).toEqual([0x1f, 0x8b, 8, 0])
    const dv = new DataView(z.buffer, z.byteOffset, z.byteLength)
    expect(dv.getUint32(z.length - 4, true)).toBe(src.length)
    expect(c.sizeHint('gzip', z)).toBe(src.length)
  })

  for (const [name, src] of Object.entries(corpora)) {
    it(`round trips ${name} (${src.length} B) at levels 1..9, and zlib inflates it`, () => {
      for (const level of [-1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0]) {
        const z = c.compress('gzip', src, level)
        eq(c.decompress('gzip', z), src)
        eq(gunzipSync(z), src)
      }
    })
  }

  it('compresses within 10% of zlib at the same level on text', () => {
    for (const src of [jsonEvents(65536), logLines(65536), jsonEvents(16384)]) {
      for (const level of [1, 6, 9]) {
        const ours = c.compress('gzip', src, level).length
        const zlib = gzipSync(src, { level }).length
        expect(ours).toBeLessThanOrEqual(zlib * 1.1)
      }
    }
  })

  it('never expands incompressible data by more than the stored overhead', () => {
    const src = randomBytes(200_000)
    const z = c.compress('gzip', src)
    expect(z.length).toBeLessThanOrEqual(src.length + 18 + 5 * Math.ceil(src.length / 16384) + 8)
  })

  it('round trips property-generated inputs (own inflate and zlib)', () => {
    fc.assert(fc.property(
      fc.oneof(
        fc.uint8Array({ maxLength: 3000 }),
        fc.array(fc.constantFrom('a', 'ab', 'abc', 'hello ', '{"k":1}', '\n', 'zzzzzzzzzz'), { maxLength: 600 }).map((a) => new TextEncoder().encode(a.join(''))),
        fc.tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 70000 })).map(([v, n]) => new Uint8Array(n).fill(v)),
      ),
      fc.integer({ min: 1, max: 9 }),
      (src, level) => {
        const z = c.compress('gzip', src, level)
        eq(c.decompress('gzip', z), src)
        eq(gunzipSync(z), src)
      },
    ), { numRuns: 300 })
  })

  it('round trips sizes around the block / fragment boundaries', () => {
    for (const n of [65535, 65536, 65537, 131071, 131072, 131073, 65536 * 3 + 12, 65536 * 3 - 12]) {
      for (const src of [jsonEvents(n, n), randomBytes(n, n), new Uint8Array(n).fill(0x20)]) {
        const z = c.compress('gzip', src)
        eq(c.decompress('gzip', z), src)
        eq(gunzipSync(z), src)
      }
    }
  })

  it('limits Huffman code lengths to 15 bits on Fibonacci-skewed data (and reads zlib\'s long codes)', () => {
    // symbol i occurs fib(i) times, shuffled: an unrestricted Huffman tree would be ~25 deep
    const counts: number[] = [1, 1]
    while (counts.length < 26) counts.push(counts[counts.length - 1]! + counts[counts.length - 2]!)
    const total = counts.reduce((a, b) => a + b, 0)
    const src = new Uint8Array(total)
    let k = 0
    counts.forEach((n, sym) => { src.fill(sym * 7, k, k + n); k += n })
    const r = rng(99)
    for (let i = src.length - 1; i > 0; i--) { const j = Math.floor(r() * (i + 1)); const t = src[i]!; src[i] = src[j]!; src[j] = t }
    for (const level of [1, 6, 9]) {
      const z = c.compress('gzip', src, level)
      eq(gunzipSync(z), src)
      eq(c.decompress('gzip', z), src)
      expect(z.length).toBeLessThanOrEqual(gzipSync(src, { level }).length * 1.05)
      eq(c.decompress('gzip', gzipSync(src, { level })), src)
      eq(c.decompress('gzip', gzipSync(src, { level, strategy: constants.Z_HUFFMAN_ONLY })), src)
    }
  })

  it('returns DST_TOO_SMALL instead of overrunning a short buffer', () => {
    const src = jsonEvents(20000)
    const full = c.compress('gzip', src)
    expect(c.compressRaw('gzip', src, 6, full.length - 20)).toBe(-1)
    expect(c.compressRaw('gzip', src, 6, 10)).toBe(-1)
  })
})

describe('gzip decoder', () => {
  it('reads zlib output for property-generated inputs, levels, strategies, window and memory sizes', () => {
    fc.assert(fc.property(
      codecInputs(),
      fc.integer({ min: 0, max: 9 }), fc.constantFrom(constants.Z_DEFAULT_STRATEGY, constants.Z_FILTERED, constants.Z_FIXED, constants.Z_RLE, constants.Z_HUFFMAN_ONLY),
      fc.integer({ min: 9, max: 15 }), fc.integer({ min: 1, max: 9 }),
      (src, level, strategy, windowBits, memLevel) => {
        eq(c.decompress('gzip', gzipSync(src, { level, strategy, windowBits, memLevel })), src)
      },
    ), { numRuns: 300 })
  })

  for (const [name, src] of Object.entries(corpora)) {
    it(`reads zlib output for ${name} at levels 1, 6, 9 and strategies`, () => {
      for (const level of [1, 6, 9]) eq(c.decompress('gzip', gzipSync(src, { level })), src)
      eq(c.decompress('gzip', gzipSync(src, { level: 0 })), src)
      eq(c.decompress('gzip', gzipSync(src, { strategy: constants.Z_FIXED })), src)
      eq(c.decompress('gzip', gzipSync(src, { strategy: constants.Z_HUFFMAN_ONLY })), src)
      eq(c.decompress('gzip', gzipSync(src, { strategy: constants.Z_RLE })), src)
    })
  }

  it('reads concatenated members and header fields (FNAME, FEXTRA, FCOMMENT, FHCRC)', () => {
    const a = jsonEvents(3000), b = logLines(4000)
    const cat = Buffer.concat([gzipSync(a), gzipSync(b)])
    eq(c.decompress('gzip', cat), Buffer.concat([a, b]))
    // hand-built header with every optional field
    const body = deflateRawSync(a)
    const hdr = Buffer.from([0x1f, 0x8b, 8, 4 | 8 | 16 | 2, 0, 0, 0, 0, 0, 3, 3, 0, 1, 2, 3, 0x61, 0x2e, 0x6a, 0, 0x68, 0x69, 0])
    const crc = crc32(hdr)
    const trailer = Buffer.alloc(8)
    trailer.writeUInt32LE(crc32(a), 0)
    trailer.writeUInt32LE(a.length, 4)
    const full = Buffer.concat([hdr, Buffer.from([crc & 0xff, (crc >>> 8) & 0xff]), body, trailer])
    eq(gunzipSync(full), a)
    eq(c.decompress('gzip', full), a)
    const bad = Buffer.from(full)
    bad[hdr.length]! ^= 1
    expect(() => c.decompress('gzip', bad)).toThrow(CorruptCompressedDataError)
  })

  it('reads raw deflate produced by zlib inside our gzip frame for many sizes', () => {
    for (let n = 0; n < 2000; n += 97) {
      const src = jsonEvents(n, n)
      eq(c.decompress('gzip', gzipSync(src)), src)
      eq(inflateRawSync(Buffer.from(c.compress('gzip', src)).subarray(10, -8)), src)
    }
  })

  it('reports truncation, corruption and checksum errors as CorruptCompressedDataError', () => {
    const src = jsonEvents(30000)
    const z = Buffer.from(c.compress('gzip', src))
    for (const cut of [0, 1, 5, 10, 11, 100, z.length - 9, z.length - 8, z.length - 1]) {
      expect(() => c.decompress('gzip', z.subarray(0, cut))).toThrow(CorruptCompressedDataError)
    }
    const crcBad = Buffer.from(z); crcBad[z.length - 6]! ^= 0x40
    expect(c.decompressRaw('gzip', crcBad, src.length)).toBe(-5)
    const sizeBad = Buffer.from(z); sizeBad[z.length - 3]! ^= 1
    expect(c.decompressRaw('gzip', sizeBad, src.length + 100000)).toBe(-5)
    const magicBad = Buffer.from(z); magicBad[0] = 0
    expect(c.decompressRaw('gzip', magicBad, src.length)).toBe(-4)
    const btype3 = Buffer.from(z); btype3[10]! |= 6
    expect(c.decompressRaw('gzip', btype3, src.length)).toBeLessThan(0)
    try { c.decompress('gzip', z.subarray(0, 50)) } catch (e) {
      expect(e).toBeInstanceOf(CorruptCompressedDataError)
      expect((e as Error).message).toMatch(/^gzip: /)
    }
  })

  it('reports a short output buffer as -1', () => {
    const src = jsonEvents(30000)
    expect(c.decompressRaw('gzip', c.compress('gzip', src), src.length - 1)).toBe(-1)
  })
})

function crc32(b: Uint8Array): number {
  let c = ~0
  for (const x of b) {
    c ^= x
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  }
  return ~c >>> 0
}

describe.skipIf(!javaAvailable())("Kafka's Java GzipCompression", () => {
  const inputs = [new Uint8Array(0), new Uint8Array([7]), jsonEvents(16384), logLines(70000), randomBytes(20000), jsonEvents(1 << 20, 11)]
  it('decompresses our output (levels 1, 6, 9) and we decompress its output (levels 1, 6, 9)', () => {
    const ours = inputs.flatMap((src) => [1, 6, 9].map((level) => c.compress('gzip', src, level)))
    const res = javaCodec([
      ...ours.map((z) => ({ op: 'decompress' as const, codec: 'gzip' as const, input: z })),
      ...inputs.flatMap((src) => [1, 6, 9].map((level) => ({ op: 'compress' as const, codec: 'gzip' as const, level, input: src }))),
    ])
    const expected = inputs.flatMap((src) => [src, src, src])
    for (let i = 0; i < ours.length; i++) {
      const r = res[i]!
      if (r instanceof Error) throw r
      eq(r, expected[i]!)
    }
    for (let i = 0; i < expected.length; i++) {
      const r = res[ours.length + i]!
      if (r instanceof Error) throw r
      eq(c.decompress('gzip', r), expected[i]!)
    }
  })
})
