// lz4 frame in WASM: round trips, native lz4 (lz4-napi) and lz4js read our frames, we read
// theirs, Kafka's Java Lz4Compression both ways, typed errors on bad input.
import { describe, it, expect, beforeAll } from 'vitest'
import lz4 from 'lz4-napi'
import lz4js from 'lz4js'
import fc from 'fast-check'
import {
  Codecs, CorruptCompressedDataError, standardCorpora, javaAvailable, javaCodec, jsonEvents, logLines, randomBytes, codecInputs } from '../helpers/codec-harness.js'

let c: Codecs
beforeAll(async () => { c = await Codecs.load() })

const eq = (a: Uint8Array, b: Uint8Array) => expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true)
const corpora = standardCorpora()
const LEVELS = [-1, 1, 3, 6, 9, 10, 12, 17]

describe('lz4 encoder', () => {
  it('writes the frame header Kafka writes: magic, FLG 0x60, BD 0x40, header checksum without the magic', () => {
    const z = c.compress('lz4', jsonEvents(1000))
    expect([...z.subarray(0, 7)]).toEqual([0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82])
    expect([...z.subarray(z.length - 4)]).toEqual([0, 0, 0, 0])
  })

  for (const [name, src] of Object.entries(corpora)) {
    it(`round trips ${name} (${src.length} B) at levels ${LEVELS.join(',')}; lz4-napi and lz4js decode it`, () => {
      for (const level of LEVELS) {
        const z = c.compress('lz4', src, level)
        eq(c.decompress('lz4', z), src)
        eq(lz4.decompressFrameSync(Buffer.from(z)), src)
        if (src.length <= 100_000) eq(Buffer.from(lz4js.decompress(z)), src)
        expect(c.sizeHint('lz4', z)).toBeGreaterThanOrEqual(src.length)
      }
    })
  }

  it('is within 10% of native lz4 on text at the default level, and HC levels compress more', () => {
    for (const src of [jsonEvents(65536), logLines(65536), jsonEvents(16384), jsonEvents(1024)]) {
      const ours = c.compress('lz4', src).length
      const native = lz4.compressFrameSync(Buffer.from(src)).length
      expect(ours).toBeLessThanOrEqual(native * 1.1)
      expect(c.compress('lz4', src, 12).length).toBeLessThan(ours)
    }
  })

  it('round trips property-generated inputs (own decoder and lz4-napi)', () => {
    fc.assert(fc.property(
      codecInputs(),
      fc.constantFrom(...LEVELS),
      (src, level) => {
        const z = c.compress('lz4', src, level)
        eq(c.decompress('lz4', z), src)
        eq(lz4.decompressFrameSync(Buffer.from(z)), src)
      },
    ), { numRuns: 300 })
  })

  it('round trips sizes around the block / fragment boundaries', () => {
    for (const n of [65535, 65536, 65537, 131071, 131072, 131073, 65536 * 3 + 12, 65536 * 3 - 12]) {
      for (const src of [jsonEvents(n, n), randomBytes(n, n), new Uint8Array(n).fill(0x20)]) {
        const z = c.compress('lz4', src)
        eq(c.decompress('lz4', z), src)
        eq(lz4.decompressFrameSync(Buffer.from(z)), src)
      }
    }
  })

  it('returns DST_TOO_SMALL instead of overrunning a short buffer', () => {
    const src = jsonEvents(20000)
    const full = c.compress('lz4', src)
    expect(c.compressRaw('lz4', src, -1, full.length - 30)).toBe(-1)
    expect(c.compressRaw('lz4', src, -1, 8)).toBe(-1)
  })
})

describe('lz4 decoder', () => {
  it('reads lz4-napi frames for property-generated inputs', () => {
    fc.assert(fc.property(codecInputs(), (src) => {
      eq(c.decompress('lz4', lz4.compressFrameSync(Buffer.from(src))), src)
    }), { numRuns: 300 })
  })

  for (const [name, src] of Object.entries(corpora)) {
    it(`reads lz4-napi and lz4js frames for ${name}`, () => {
      eq(c.decompress('lz4', lz4.compressFrameSync(Buffer.from(src))), src)
      if (src.length <= 100_000) eq(c.decompress('lz4', Buffer.from(lz4js.compress(src))), src)
    })
  }

  it('verifies content checksum, block checksums and content size when present', () => {
    const src = jsonEvents(150_000)
    // content checksum + content size, added to our own frame
    const plain = Buffer.from(c.compress('lz4', src))
    const z = withContentFields(plain, src)
    eq(c.decompress('lz4', z), src)
    expect(c.sizeHint('lz4', z)).toBe(src.length)
    const bad = Buffer.from(z); bad[bad.length - 2]! ^= 1
    expect(c.decompressRaw('lz4', bad, src.length)).toBe(-5)
    const wrongSize = withContentFields(plain, src, src.length + 1)
    expect(c.decompressRaw('lz4', wrongSize, src.length + 10)).toBe(-4)
    // block checksum frame from our own blocks
    const ours = Buffer.from(c.compress('lz4', src))
    const withBc = addBlockChecksums(ours)
    eq(c.decompress('lz4', withBc), src)
    const bad2 = Buffer.from(withBc); bad2[withBc.length - 6]! ^= 1
    expect(c.decompressRaw('lz4', bad2, src.length)).toBe(-5)
  })

  it('rejects a wrong header checksum (including the KAFKA-3160 form computed over the magic)', () => {
    const z = Buffer.from(c.compress('lz4', jsonEvents(5000)))
    const bad = Buffer.from(z); bad[6]! ^= 0xff
    expect(c.decompressRaw('lz4', bad, 10000)).toBe(-5)
    const legacy = Buffer.from(z); legacy[6] = (xxh32(z.subarray(0, 6)) >>> 8) & 0xff
    expect(c.decompressRaw('lz4', legacy, 10000)).toBe(-5)
    expect(() => c.decompress('lz4', bad)).toThrow(CorruptCompressedDataError)
  })

  it('reports truncation and corruption as CorruptCompressedDataError', () => {
    const src = jsonEvents(100_000)
    const z = Buffer.from(c.compress('lz4', src))
    for (const cut of [0, 1, 4, 6, 7, 10, 11, 100, z.length >> 1, z.length - 4, z.length - 1]) {
      expect(() => c.decompress('lz4', z.subarray(0, cut))).toThrow(CorruptCompressedDataError)
    }
    const badMagic = Buffer.from(z); badMagic[0]! ^= 1
    expect(c.decompressRaw('lz4', badMagic, src.length)).toBe(-4)
    const bigBlock = Buffer.from(z); bigBlock.writeUInt32LE(70000, 7)
    expect(c.decompressRaw('lz4', bigBlock, src.length)).toBe(-4)
  })

  it('reports a short output buffer as -1', () => {
    const src = jsonEvents(30000)
    expect(c.decompressRaw('lz4', c.compress('lz4', src), src.length - 1)).toBe(-1)
  })
})

// --- helpers: an independent xxh32 and a block-checksum rewriter
function xxh32(b: Uint8Array, seed = 0): number {
  const P1 = 2654435761, P2 = 2246822519, P3 = 3266489917, P4 = 668265263, P5 = 374761393
  const rotl = (x: number, r: number) => ((x << r) | (x >>> (32 - r))) >>> 0
  const mul = (a: number, b: number) => Math.imul(a, b) >>> 0
  const u32 = (i: number) => (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0
  let p = 0, h: number
  if (b.length >= 16) {
    let v1 = (seed + P1 + P2) >>> 0, v2 = (seed + P2) >>> 0, v3 = seed >>> 0, v4 = (seed - P1) >>> 0
    while (p + 16 <= b.length) {
      v1 = mul(rotl((v1 + mul(u32(p), P2)) >>> 0, 13), P1)
      v2 = mul(rotl((v2 + mul(u32(p + 4), P2)) >>> 0, 13), P1)
      v3 = mul(rotl((v3 + mul(u32(p + 8), P2)) >>> 0, 13), P1)
      v4 = mul(rotl((v4 + mul(u32(p + 12), P2)) >>> 0, 13), P1)
      p += 16
    }
    h = (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) >>> 0
  } else h = (seed + P5) >>> 0
  h = (h + b.length) >>> 0
  while (p + 4 <= b.length) { h = mul(rotl((h + mul(u32(p), P3)) >>> 0, 17), P4); p += 4 }
  while (p < b.length) { h = mul(rotl((h + mul(b[p]!, P5)) >>> 0, 11), P1); p++ }
  h ^= h >>> 15; h = mul(h, P2); h ^= h >>> 13; h = mul(h, P3); h ^= h >>> 16
  return h >>> 0
}

function withContentFields(z: Buffer, content: Uint8Array, size = content.length): Buffer {
  const hdr = Buffer.alloc(15)
  z.copy(hdr, 0, 0, 4)
  hdr[4] = z[4]! | 0x08 | 0x04
  hdr[5] = z[5]!
  hdr.writeBigUInt64LE(BigInt(size), 6)
  hdr[14] = (xxh32(hdr.subarray(4, 14)) >>> 8) & 0xff
  const ck = Buffer.alloc(4); ck.writeUInt32LE(xxh32(content))
  return Buffer.concat([hdr, z.subarray(7), ck])
}

function addBlockChecksums(z: Buffer): Buffer {
  const flg = z[4]! | 0x10
  const hdr = Buffer.from([...z.subarray(0, 4), flg, z[5]!, 0])
  hdr[6] = (xxh32(hdr.subarray(4, 6)) >>> 8) & 0xff
  const parts: Buffer[] = [hdr]
  let p = 7
  for (;;) {
    const w = z.readUInt32LE(p)
    if (w === 0) { parts.push(z.subarray(p, p + 4)); break }
    const n = w & 0x7fffffff
    const data = z.subarray(p + 4, p + 4 + n)
    const ck = Buffer.alloc(4); ck.writeUInt32LE(xxh32(data))
    parts.push(z.subarray(p, p + 4 + n), ck)
    p += 4 + n
  }
  return Buffer.concat(parts)
}

describe.skipIf(!javaAvailable())("Kafka's Java Lz4Compression", () => {
  const inputs = [new Uint8Array(0), new Uint8Array([7]), jsonEvents(16384), logLines(70000), randomBytes(20000), jsonEvents(1 << 20, 11)]
  it('decompresses our output (levels 1, 9, 12, 17) and we decompress its output (levels 1, 9, 17)', () => {
    const ourLevels = [1, 9, 12, 17], javaLevels = [1, 9, 17]
    const ours = inputs.flatMap((src) => ourLevels.map((level) => c.compress('lz4', src, level)))
    const res = javaCodec([
      ...ours.map((z) => ({ op: 'decompress' as const, codec: 'lz4' as const, input: z })),
      ...inputs.flatMap((src) => javaLevels.map((level) => ({ op: 'compress' as const, codec: 'lz4' as const, level, input: src }))),
    ])
    const exp1 = inputs.flatMap((s) => ourLevels.map(() => s))
    for (let i = 0; i < ours.length; i++) {
      const r = res[i]!
      if (r instanceof Error) throw r
      eq(r, exp1[i]!)
    }
    const exp2 = inputs.flatMap((s) => javaLevels.map(() => s))
    for (let i = 0; i < exp2.length; i++) {
      const r = res[ours.length + i]!
      if (r instanceof Error) throw r
      eq(c.decompress('lz4', r), exp2[i]!)
    }
  })
})
