// snappy (xerial framing) in WASM: round trips, native snappy (napi-rs) and snappyjs read our
// chunks, we read theirs, Kafka's Java SnappyCompression both ways, typed errors on bad input.
import { describe, it, expect, beforeAll } from 'vitest'
import snappy from 'snappy'
import snappyjs from 'snappyjs'
import fc from 'fast-check'
import {
  Codecs, CorruptCompressedDataError, standardCorpora, javaAvailable, javaCodec, jsonEvents, logLines, randomBytes, codecInputs } from '../helpers/codec-harness.js'

let c: Codecs
beforeAll(async () => { c = await Codecs.load() })

const eq = (a: Uint8Array, b: Uint8Array) => expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true)
const corpora = standardCorpora()
const MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00])

/** Splits a xerial stream into its raw snappy chunks (checking the header). */
function chunks(z: Uint8Array): Buffer[] {
  const b = Buffer.from(z)
  expect(b.subarray(0, 8).equals(MAGIC)).toBe(true)
  expect(b.readInt32BE(8)).toBe(1)
  expect(b.readInt32BE(12)).toBe(1)
  const out: Buffer[] = []
  let p = 16
  while (p < b.length) {
    const n = b.readInt32BE(p)
    out.push(b.subarray(p + 4, p + 4 + n))
    p += 4 + n
  }
  expect(p).toBe(b.length)
  return out
}

function xerial(...blocks: Uint8Array[]): Buffer {
  const hdr = Buffer.alloc(16)
  MAGIC.copy(hdr)
  hdr.writeInt32BE(1, 8)
  hdr.writeInt32BE(1, 12)
  return Buffer.concat([hdr, ...blocks.flatMap((b) => { const l = Buffer.alloc(4); l.writeInt32BE(b.length); return [l, Buffer.from(b)] })])
}

function nativeDecode(z: Uint8Array): Buffer {
  return Buffer.concat(chunks(z).map((ch) => snappy.uncompressSync(ch) as Buffer))
}
function snappyjsDecode(z: Uint8Array): Buffer {
  return Buffer.concat(chunks(z).map((ch) => Buffer.from(snappyjs.uncompress(new Uint8Array(ch)))))
}

describe('snappy encoder', () => {
  for (const [name, src] of Object.entries(corpora)) {
    it(`round trips ${name} (${src.length} B); native snappy and snappyjs decode every chunk`, () => {
      const z = c.compress('snappy', src)
      eq(c.decompress('snappy', z), src)
      eq(nativeDecode(z), src)
      eq(snappyjsDecode(z), src)
      expect(c.sizeHint('snappy', z)).toBe(src.length)
      for (const ch of chunks(z)) expect((snappy.uncompressSync(ch) as Buffer).length).toBeLessThanOrEqual(65536)
    })
  }

  it('is within 10% of native snappy on text', () => {
    for (const src of [jsonEvents(65536), logLines(65536), jsonEvents(16384), jsonEvents(1024)]) {
      const ours = c.compress('snappy', src).length - 16 - 4
      const native = (snappy.compressSync(Buffer.from(src)) as Buffer).length
      expect(ours).toBeLessThanOrEqual(native * 1.1)
    }
  })

  it('round trips property-generated inputs (own decoder, native, snappyjs)', () => {
    fc.assert(fc.property(
      codecInputs(),
      (src) => {
        const z = c.compress('snappy', src)
        eq(c.decompress('snappy', z), src)
        eq(nativeDecode(z), src)
        eq(snappyjsDecode(z), src)
      },
    ), { numRuns: 300 })
  })

  it('round trips sizes around the block / fragment boundaries', () => {
    for (const n of [65535, 65536, 65537, 131071, 131072, 131073, 65536 * 3 + 12, 65536 * 3 - 12]) {
      for (const src of [jsonEvents(n, n), randomBytes(n, n), new Uint8Array(n).fill(0x20)]) {
        const z = c.compress('snappy', src)
        eq(c.decompress('snappy', z), src)
        eq(nativeDecode(z), src)
      }
    }
  })

  it('returns DST_TOO_SMALL instead of overrunning a short buffer', () => {
    const src = jsonEvents(20000)
    const full = c.compress('snappy', src)
    expect(c.compressRaw('snappy', src, -1, full.length - 30)).toBe(-1)
    expect(c.compressRaw('snappy', src, -1, 8)).toBe(-1)
  })
})

describe('snappy decoder', () => {
  it('reads native snappy blocks for property-generated inputs', () => {
    fc.assert(fc.property(codecInputs(), (src) => {
      eq(c.decompress('snappy', snappy.compressSync(Buffer.from(src)) as Buffer), src)
    }), { numRuns: 300 })
  })

  for (const [name, src] of Object.entries(corpora)) {
    it(`reads native snappy blocks for ${name}: raw, and xerial-framed in 32 KiB chunks`, () => {
      const raw = snappy.compressSync(Buffer.from(src)) as Buffer
      eq(c.decompress('snappy', raw), src)
      const parts: Uint8Array[] = []
      for (let i = 0; i < src.length; i += 32768) parts.push(snappy.compressSync(Buffer.from(src.subarray(i, i + 32768))) as Buffer)
      eq(c.decompress('snappy', xerial(...parts)), src)
      eq(c.decompress('snappy', Buffer.from(snappyjs.compress(new Uint8Array(src)))), src)
    })
  }

  it('reads concatenated xerial streams (as snappy-java does)', () => {
    const a = jsonEvents(40000), b = logLines(30000)
    eq(c.decompress('snappy', Buffer.concat([c.compress('snappy', a), c.compress('snappy', b)])), Buffer.concat([a, b]))
  })

  it('reports truncation and corruption as CorruptCompressedDataError', () => {
    const src = jsonEvents(30000)
    const z = Buffer.from(c.compress('snappy', src))
    for (const cut of [0, 1, 9, 15, 17, 19, 21, 100, z.length - 1]) {
      expect(() => c.decompress('snappy', z.subarray(0, cut))).toThrow(CorruptCompressedDataError)
    }
    // chunk length past the end
    const longLen = Buffer.from(z); longLen.writeInt32BE(z.readInt32BE(16) + 1, 16)
    expect(c.decompressRaw('snappy', longLen, src.length)).toBe(-3)
    // copy offset before the start of the output
    const badOff = xerial(Buffer.from([4, 0x01 | (0 << 2), 0x05]))
    expect(c.decompressRaw('snappy', badOff, 100)).toBe(-4)
    // raw block whose declared length is larger than its elements
    expect(c.decompressRaw('snappy', Buffer.from([10, 0x08, 0x61, 0x62, 0x63]), 100)).toBe(-3)
    const r = c.decompressRaw('snappy', Buffer.from([0x0a]), 100)
    expect(r).toBe(-3)
  })

  it('reports a short output buffer as -1', () => {
    const src = jsonEvents(30000)
    expect(c.decompressRaw('snappy', c.compress('snappy', src), src.length - 1)).toBe(-1)
  })
})

describe.skipIf(!javaAvailable())("Kafka's Java SnappyCompression", () => {
  const inputs = [new Uint8Array(0), new Uint8Array([7]), jsonEvents(16384), logLines(70000), randomBytes(20000), jsonEvents(1 << 20, 11)]
  it('decompresses our output and we decompress its output', () => {
    const ours = inputs.map((src) => c.compress('snappy', src))
    const res = javaCodec([
      ...ours.map((z) => ({ op: 'decompress' as const, codec: 'snappy' as const, input: z })),
      ...inputs.map((src) => ({ op: 'compress' as const, codec: 'snappy' as const, input: src })),
    ])
    for (let i = 0; i < inputs.length; i++) {
      const r = res[i]!
      if (r instanceof Error) throw r
      eq(r, inputs[i]!)
      const j = res[inputs.length + i]!
      if (j instanceof Error) throw j
      eq(c.decompress('snappy', j), inputs[i]!)
    }
  })
})
