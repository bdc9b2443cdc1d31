// Decoder fuzzing: >= 100,000 mutated streams per codec (bit flips, truncation, random bytes,
// length-field corruption, insert/delete, random tails) must give a byte count or a typed
// negative code, never a trap, a hang or a write outside dst. Half the cases put the input
// flush against the end of wasm memory (an over-read traps), half put dst there (an
// over-write traps); a canary after dst catches writes past dstCap in the other layout.
// Shared file: the zstd engineer adds a `fuzz('zstd', ...)` block with zstd seeds.
import { describe, it, expect, beforeAll } from 'vitest'
import { gzipSync, constants } from 'node:zlib'
import snappy from 'snappy'
import lz4 from 'lz4-napi'
import { createRequire } from 'node:module'
import {
  Codecs, CODEC_IDS, CodecName, rng, jsonEvents, logLines, randomBytes, runs,
} from '../helpers/codec-harness.js'

const CASES = Number(process.env.CODEC_FUZZ_CASES ?? 100_000)
const CAP = 1 << 16
const CANARY = 64

let c: Codecs
beforeAll(async () => { c = await Codecs.load() })

function smallInputs(): Uint8Array[] {
  return [
    new Uint8Array(0), new Uint8Array([1]), jsonEvents(1500, 21), logLines(3000, 22), randomBytes(300, 23),
    runs(4000, 24), new Uint8Array(5000), jsonEvents(200, 25),
  ]
}

interface Stats { ok: number; errors: Record<string, number> }

function fuzz(codec: CodecName, seeds: Uint8Array[], cases = CASES, seed = Number(process.env.CODEC_FUZZ_SEED ?? 12345)): Stats {
  const x = c.x
  const id = CODEC_IDS[codec]
  const r = rng(seed)
  const ri = (n: number) => Math.floor(r() * n)
  const maxSeed = Math.max(...seeds.map((s) => s.length)) + 64
  x.arena(CAP + CANARY + maxSeed + 4096)
  const stats: Stats = { ok: 0, errors: {} }
  const buf = new Uint8Array(maxSeed)
  for (let i = 0; i < cases; i++) {
    const s = seeds[ri(seeds.length)]!
    let len = s.length
    buf.set(s)
    const kind = ri(8)
    switch (kind) {
      case 0: { // bit flips
        const k = 1 + ri(4)
        for (let j = 0; j < k && len > 0; j++) buf[ri(len)]! ^= 1 << ri(8)
        break
      }
      case 1: len = ri(len + 1); break // truncation
      case 2: { // random bytes
        const k = 1 + ri(8)
        for (let j = 0; j < k && len > 0; j++) buf[ri(len)] = ri(256)
        break
      }
      case 3: { // length-field style corruption: a 32-bit window near the start or at a random spot
        if (len >= 4) {
          const at = r() < 0.5 ? ri(Math.min(len - 3, 32)) : ri(len - 3)
          const v = [0xffffffff, 0x7fffffff, 0x80000000, 0x0000ffff, 0x00010000, ri(0x100000), 0][ri(7)]!
          buf[at] = v & 0xff; buf[at + 1] = (v >>> 8) & 0xff; buf[at + 2] = (v >>> 16) & 0xff; buf[at + 3] = v >>> 24
        }
        break
      }
      case 4: { // delete a byte
        if (len > 0) { const at = ri(len); buf.copyWithin(at, at + 1, len); len-- }
        break
      }
      case 5: { // insert a byte
        if (len < buf.length) { const at = ri(len + 1); buf.copyWithin(at + 1, at, len); buf[at] = ri(256); len++ }
        break
      }
      case 6: { // random tail after a valid prefix
        const keep = ri(len + 1)
        for (let j = keep; j < len; j++) buf[j] = ri(256)
        break
      }
      default: { // truncation plus a flip
        len = ri(len + 1)
        if (len > 0) buf[ri(len)]! ^= 1 << ri(8)
      }
    }
    const memEnd = x.memory.buffer.byteLength
    const mem = new Uint8Array(x.memory.buffer)
    const base = x.arena(0)
    let src: number, dst: number
    const cap = (i & 3) === 0 ? ri(CAP) : CAP
    if (i & 1) { // input flush against the end of memory
      src = memEnd - len
      dst = base
      mem.fill(0xa5, dst + cap, dst + cap + CANARY)
    } else { // output flush against the end of memory
      dst = memEnd - cap
      src = base
    }
    mem.set(buf.subarray(0, len), src)
    let res: number
    try {
      res = x.decompressInto(id, src, len, dst, cap)
    } catch (e) {
      throw new Error(`${codec}: trap on case ${i} (kind ${kind}, len ${len}): ${(e as Error).message}\n` +
        Buffer.from(buf.subarray(0, len)).toString('hex'))
    }
    if (!(Number.isInteger(res) && res >= -6 && res <= cap && res !== -2)) {
      throw new Error(`${codec}: bad result ${res} on case ${i}`)
    }
    if (i & 1) {
      for (let j = 0; j < CANARY; j++) {
        if (mem[dst + cap + j] !== 0xa5) throw new Error(`${codec}: wrote past dstCap on case ${i} (kind ${kind})`)
      }
    }
    if (res >= 0) stats.ok++
    else stats.errors[res] = (stats.errors[res] ?? 0) + 1
  }
  return stats
}

function report(codec: string, s: Stats) {
  // one line per codec so runs can be compared
  console.log(`fuzz ${codec}: ${CASES} cases, ${s.ok} decoded, errors ${JSON.stringify(s.errors)}`)
}

describe('decoder fuzzing', () => {
  it(`gzip: ${CASES} mutated streams`, () => {
    const seeds = smallInputs().flatMap((s) => [
      c.compress('gzip', s, 1), c.compress('gzip', s, 6), c.compress('gzip', s, 9),
      gzipSync(s), gzipSync(s, { strategy: constants.Z_FIXED }), gzipSync(s, { level: 0 }),
    ])
    const s = fuzz('gzip', seeds)
    report('gzip', s)
    expect(s.errors[-4] ?? 0).toBeGreaterThan(0)
    expect(s.errors[-3] ?? 0).toBeGreaterThan(0)
    expect(s.errors[-5] ?? 0).toBeGreaterThan(0)
  })

  it(`snappy: ${CASES} mutated streams`, () => {
    const seeds = smallInputs().flatMap((s) => [
      c.compress('snappy', s), snappy.compressSync(Buffer.from(s)) as Buffer,
    ])
    const s = fuzz('snappy', seeds)
    report('snappy', s)
    expect(s.errors[-4] ?? 0).toBeGreaterThan(0)
    expect(s.errors[-3] ?? 0).toBeGreaterThan(0)
  })

  it(`lz4: ${CASES} mutated streams`, () => {
    const seeds = smallInputs().flatMap((s) => [
      c.compress('lz4', s), c.compress('lz4', s, 12), lz4.compressFrameSync(Buffer.from(s)),
    ])
    const s = fuzz('lz4', seeds)
    report('lz4', s)
    expect(s.errors[-4] ?? 0).toBeGreaterThan(0)
    expect(s.errors[-3] ?? 0).toBeGreaterThan(0)
    expect(s.errors[-5] ?? 0).toBeGreaterThan(0)
  })

  it(`zstd: ${CASES} mutated streams`, async () => {
    // our frames at three levels plus libzstd's (levels 1, 3, 19; the binding honours the level)
    const zstdNative = createRequire(import.meta.url)('@mongodb-js/zstd/bindings') as { compress(b: Buffer, level: number): Promise<Buffer> }
    const inputs = smallInputs()
    const seeds = inputs.flatMap((s) => [c.compress('zstd', s, 1), c.compress('zstd', s, 3), c.compress('zstd', s, 19)])
    for (const s of inputs) for (const level of [1, 3, 19]) seeds.push(new Uint8Array(await zstdNative.compress(Buffer.from(s), level)))
    const s = fuzz('zstd', seeds)
    report('zstd', s)
    expect(s.errors[-4] ?? 0).toBeGreaterThan(0)
    expect(s.errors[-3] ?? 0).toBeGreaterThan(0)
  })
})

describe('encoder state across calls', () => {
  it('gives byte-identical output regardless of earlier calls (stale hash entries are never used)', () => {
    const inputs = [jsonEvents(3000, 31), logLines(70000, 32), randomBytes(5000, 33), runs(20000, 34), jsonEvents(200, 35)]
    for (const codec of ['gzip', 'snappy', 'lz4'] as const) {
      for (const level of codec === 'snappy' ? [-1] : codec === 'gzip' ? [1, 6, 9] : [9, 1, 12]) {
        const first = inputs.map((s) => Buffer.from(c.compress(codec, s, level)))
        // interleave other codecs, levels and the inputs in reverse order
        for (const s of [...inputs].reverse()) {
          c.compress('lz4', s, 5); c.compress('gzip', s, 4); c.compress('snappy', s)
        }
        const again = [...inputs].reverse().map((s) => Buffer.from(c.compress(codec, s, level))).reverse()
        for (let i = 0; i < inputs.length; i++) expect(again[i]!.equals(first[i]!)).toBe(true)
      }
    }
  })

  it('survives the hash-table epoch wrapping (tables cleared, output unchanged)', () => {
    const x = c.x as unknown as { lz4SetEpochForTest(e: number): void; deflateSetEpochForTest(e: number): void }
    const inputs = [jsonEvents(20000, 36), jsonEvents(1 << 20, 37), logLines(5000, 38)]
    for (const [codec, level, setEpoch] of [
      ['lz4', 9, x.lz4SetEpochForTest], ['lz4', 3, x.lz4SetEpochForTest], ['gzip', 6, x.deflateSetEpochForTest],
    ] as const) {
      const fresh = inputs.map((s) => Buffer.from(c.compress(codec, s, level)))
      // land just below the wrap point, then cross it with the 1 MiB input, for several offsets
      for (const below of [1, 1000, 30000, 1 << 20, (1 << 20) + 2]) {
        setEpoch(0xf0000000 - below)
        for (let i = 0; i < inputs.length; i++) {
          const z = Buffer.from(c.compress(codec, inputs[i]!, level))
          expect(z.equals(fresh[i]!)).toBe(true)
          expect(Buffer.from(c.decompress(codec, z)).equals(Buffer.from(inputs[i]!))).toBe(true)
        }
      }
    }
  })
})
