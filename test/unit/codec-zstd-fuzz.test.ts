// zstd decoder fuzz: truncated, bit-flipped, byte-overwritten, spliced and random inputs.
// The decoder must return a negative code (or, for a frame with a content checksum, exactly the
// original bytes), never trap and never hang. 100,000+ cases.
import { describe, it, expect, beforeAll } from 'vitest'
import { createRequire } from 'node:module'
import { loadZstd, jsonEvents, logLines, randomBytes, rng, type Zstd } from '../helpers/zstd-harness.js'

const require = createRequire(import.meta.url)
const native: { compress(b: Buffer, level?: number): Promise<Buffer> } = require('@mongodb-js/zstd/bindings')

interface Seed { frame: Uint8Array, original: Uint8Array, checked: boolean }

let z: Zstd
const seeds: Seed[] = []

beforeAll(async () => {
  z = await loadZstd()
  const inputs = [
    jsonEvents(3000, 101), logLines(6000, 102), jsonEvents(20000, 103), randomBytes(700, 104),
    Buffer.concat([logLines(2000, 105), new Uint8Array(500).fill(9), randomBytes(300, 106)]),
    Uint8Array.from({ length: 4000 }, (_, i) => (i * i) & 0x0F), new TextEncoder().encode('zstd!'),
  ]
  for (const input of inputs) {
    for (const level of [1, 3, 19]) seeds.push({ frame: z.compress(input, level, true), original: input, checked: true })
    seeds.push({ frame: z.compress(input, 3, false), original: input, checked: false })
    for (const level of [1, 3, 19]) seeds.push({ frame: new Uint8Array(await native.compress(Buffer.from(input), level)), original: input, checked: false })
  }
})

describe('zstd decoder fuzz', () => {
  it('survives 100,000+ malformed inputs with only negative codes', () => {
    const x = z.exports
    const CAP = 64 * 1024
    const base = x.scratch(256 * 1024 + CAP)
    const outPtr = base + 256 * 1024
    const r = rng(0xC0FFEE)
    const int = (n: number) => Math.floor(r() * n)
    const counts: Record<string, number> = {}
    let cases = 0
    let decodedOk = 0
    const t0 = performance.now()

    const run = (buf: Uint8Array, seed: Seed | null) => {
      new Uint8Array(x.memory.buffer, base, buf.length).set(buf)
      const n = x.zstdDecompressInto(base, buf.length, outPtr, CAP)
      cases++
      counts[n < 0 ? String(n) : 'ok'] = (counts[n < 0 ? String(n) : 'ok'] ?? 0) + 1
      if (n >= 0) {
        expect(n).toBeLessThanOrEqual(CAP)
        if (seed?.checked) {
          // A checksummed frame that still decodes must give back the original bytes.
          const out = new Uint8Array(x.memory.buffer, outPtr, n)
          expect(Buffer.from(out).equals(Buffer.from(seed.original))).toBe(true)
        }
        decodedOk++
      } else {
        expect([-1, -3, -4, -5, -6]).toContain(n)
      }
    }

    // Truncation at every length for a few seeds, random lengths for the rest.
    for (const s of seeds.slice(0, 6)) for (let len = 0; len < s.frame.length; len++) run(s.frame.subarray(0, len), s)
    for (let i = 0; i < 10000; i++) {
      const s = seeds[int(seeds.length)]!
      run(s.frame.subarray(0, int(s.frame.length)), s)
    }
    // Bit flips (1-4 bits).
    for (let i = 0; i < 40000; i++) {
      const s = seeds[int(seeds.length)]!
      const b = s.frame.slice()
      const flips = 1 + int(4)
      for (let k = 0; k < flips; k++) b[int(b.length)]! ^= 1 << int(8)
      run(b, s)
    }
    // Byte overwrites, biased towards the headers and tables at the front of blocks.
    for (let i = 0; i < 20000; i++) {
      const s = seeds[int(seeds.length)]!
      const b = s.frame.slice()
      const pos = r() < 0.5 ? int(Math.min(64, b.length)) : int(b.length)
      b[pos] = int(256)
      if (r() < 0.3) b[int(b.length)] = int(256)
      run(b, s)
    }
    // Splices: a frame's header + random block bodies; frames glued to random tails.
    for (let i = 0; i < 15000; i++) {
      const s = seeds[int(seeds.length)]!
      const tail = randomBytes(1 + int(300), i + 1)
      let b: Uint8Array
      if (r() < 0.5) {
        const keep = 4 + int(Math.min(40, s.frame.length - 4))
        b = new Uint8Array(keep + tail.length)
        b.set(s.frame.subarray(0, keep))
        b.set(tail, keep)
      } else {
        // a minimal frame header (window 1 MiB) and one compressed block of random content
        const bh = 1 | (2 << 1) | (tail.length << 3)
        b = new Uint8Array(9 + tail.length)
        b.set([0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x50, bh & 0xFF, (bh >> 8) & 0xFF, (bh >> 16) & 0xFF], 0)
        b.set(tail, 9)
        // often start the block with a plausible literals header
        if (r() < 0.5) b[9] = [0x02, 0x06, 0x0A, 0x0E, 0x03, 0x00, 0x01][int(7)]!
      }
      run(b, null)
    }
    // Pure random inputs, with and without a valid magic.
    for (let i = 0; i < 15000; i++) {
      const b = randomBytes(1 + int(200), 1_000_000 + i)
      if (i & 1) b.set([0x28, 0xB5, 0x2F, 0xFD].slice(0, Math.min(4, b.length)), 0)
      run(b, null)
    }
    const ms = performance.now() - t0
    console.log(`zstd fuzz: ${cases} cases in ${ms.toFixed(0)} ms; results ${JSON.stringify(counts)}; decoded ok ${decodedOk}`)
    expect(cases).toBeGreaterThanOrEqual(100_000)
  })
})
