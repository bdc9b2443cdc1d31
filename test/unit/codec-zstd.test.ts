// zstd codec (assembly/codecs/zstd*.ts): round trips, interop with the native libzstd binding,
// the zstd CLI and Kafka's Java ZstdCompression (zstd-jni), ratio against native, wasm size.
import { describe, it, expect, beforeAll } from 'vitest'
import fc from 'fast-check'
import { createRequire } from 'node:module'
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { loadZstd, gzippedSize, jsonEvents, logLines, randomBytes, type Zstd } from '../helpers/zstd-harness.js'

const require = createRequire(import.meta.url)
// The package's JS wrapper drops the level argument; the napi binding honours it.
const native: { compress(b: Buffer, level?: number): Promise<Buffer>, decompress(b: Buffer): Promise<Buffer> } =
  require('@mongodb-js/zstd/bindings')
const root = resolve(import.meta.dirname, '../..')

let z: Zstd
beforeAll(async () => { z = await loadZstd() })

const eq = (a: Uint8Array | number, b: Uint8Array) =>
  typeof a !== 'number' && Buffer.from(a.buffer, a.byteOffset, a.length).equals(Buffer.from(b.buffer, b.byteOffset, b.length))

function roundTrip(input: Uint8Array, level: number, checksum: boolean): Uint8Array {
  const c = z.compress(input, level, checksum)
  expect(c.length).toBeLessThanOrEqual(z.bound(input.length))
  expect(z.sizeHint(c)).toBe(input.length)
  const d = z.decompress(c, input.length)
  if (!eq(d, input)) throw new Error(`round trip failed: level ${level} len ${input.length} -> ${typeof d === 'number' ? d : d.length}`)
  return c
}

const fixed: [string, () => Uint8Array][] = [
  ['empty', () => new Uint8Array(0)],
  ['1 byte', () => Uint8Array.of(0x42)],
  ['7 bytes', () => new TextEncoder().encode('abcabca')],
  ['incompressible 100 KiB', () => randomBytes(100_000, 9)],
  ['long run 300 KB', () => new Uint8Array(300_000).fill(0x61)],
  ['two-byte pattern 200 KB', () => Uint8Array.from({ length: 200_000 }, (_, i) => (i & 1 ? 0x55 : 0xAA))],
  ['JSON 16 KiB', () => jsonEvents(16384)],
  ['JSON 64 KiB', () => jsonEvents(65536)],
  ['log lines 64 KiB', () => logLines(65536)],
  ['JSON 1 MiB', () => jsonEvents(1 << 20)],
  ['JSON 2.5 MiB (windowed frame)', () => jsonEvents(2.5 * (1 << 20), 5)],
  ['block boundary 128 KiB', () => jsonEvents(131072, 13)],
  ['block boundary 128 KiB + 1', () => logLines(131073, 14)],
  ['single-segment limit 1 MiB + 1 (windowed)', () => logLines((1 << 20) + 1, 15)],
  ['mixed 400 KB', () => Buffer.concat([jsonEvents(100_000, 7), randomBytes(100_000, 8), logLines(200_000, 9)])],
]

describe('zstd: tables and hash', () => {
  it('builds the predefined decoding tables of RFC 8878 appendix A', () => {
    // [state, symbol, nbBits, base]
    const cell = (k: number, s: number) => {
      const v = z.predefinedCell(k, s) >>> 0
      return [v & 0xFF, (v >> 8) & 0xFF, v >>> 16]
    }
    const ll: number[][] = [[0, 0, 4, 0], [1, 0, 4, 16], [2, 1, 5, 32], [10, 14, 6, 0], [17, 25, 5, 32], [38, 25, 4, 0], [39, 25, 4, 16], [43, 0, 4, 48], [63, 32, 6, 0]]
    const of: number[][] = [[0, 0, 5, 0], [1, 6, 4, 0], [15, 7, 4, 16], [24, 6, 4, 16], [27, 28, 5, 0], [31, 24, 5, 0]]
    const ml: number[][] = [[0, 0, 6, 0], [1, 1, 4, 0], [2, 2, 5, 32], [22, 1, 4, 16], [43, 1, 4, 32], [44, 1, 4, 48], [45, 2, 4, 16], [57, 52, 6, 0], [63, 46, 6, 0]]
    for (const [s, sym, nb, base] of ll) expect(cell(0, s!)).toEqual([sym, nb, base])
    for (const [s, sym, nb, base] of of) expect(cell(1, s!)).toEqual([sym, nb, base])
    for (const [s, sym, nb, base] of ml) expect(cell(2, s!)).toEqual([sym, nb, base])
  })

  it('xxh64 matches the reference values', () => {
    expect(z.xxh64(new Uint8Array(0))).toBe(0xEF46DB3751D8E999n)
    // Cross-checked below too: native frames with checksums decode (our xxh64 verifies them).
  })
})

describe('zstd: round trip with our decoder', () => {
  for (const [name, make] of fixed) {
    it(name, () => {
      const input = make()
      for (const level of [1, 3, 9]) roundTrip(input, level, level === 3)
    })
  }

  it('compresses real text at level 3 (sanity on ratio)', () => {
    const input = jsonEvents(65536)
    expect(z.compress(input, 3).length).toBeLessThan(input.length / 5)
  })

  it('property: arbitrary bytes, every level, with and without checksum', () => {
    fc.assert(fc.property(
      fc.uint8Array({ minLength: 0, maxLength: 3000 }), fc.integer({ min: -5, max: 22 }), fc.boolean(),
      (input, level, checksum) => { roundTrip(input, level, checksum) },
    ), { numRuns: 300 })
  })

  it('property: repetitive structured inputs (runs, repeats, small alphabets)', () => {
    const chunk = fc.oneof(
      fc.record({ b: fc.integer({ min: 0, max: 255 }), n: fc.integer({ min: 1, max: 3000 }) }).map(({ b, n }) => new Uint8Array(n).fill(b)),
      fc.uint8Array({ minLength: 1, maxLength: 40 }).chain((u) => fc.integer({ min: 1, max: 200 }).map((k) => {
        const out = new Uint8Array(u.length * k)
        for (let i = 0; i < k; i++) out.set(u, i * u.length)
        return out
      })),
      fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 2000 }).map((a) => Uint8Array.from(a, (x) => 97 + x)),
      fc.integer({ min: 1, max: 1 << 30 }).map((seed) => jsonEvents(500 + (seed % 5000), seed)),
      fc.integer({ min: 1, max: 1 << 30 }).map((seed) => logLines(500 + (seed % 5000), seed)),
    )
    fc.assert(fc.property(fc.array(chunk, { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 12 }), (parts, level) => {
      roundTrip(Buffer.concat(parts), level, true)
    }), { numRuns: 200 })
  })

  it('fast levels (1-3) give the same bytes regardless of earlier calls (position-tagged tables)', () => {
    const a = jsonEvents(40000, 31)
    const b = logLines(70000, 32)
    for (const level of [1, 2, 3]) {
      const first = z.compress(a, level)
      z.compress(b, level)                     // same tables, other content
      expect(eq(z.compress(a, level), first)).toBe(true)
      z.compress(b, 9)                         // the chain finder reuses the tables with raw positions
      expect(eq(z.compress(a, level), first)).toBe(true)
      z.compress(randomBytes(300, 33), level)  // small frame: smaller hash logs over the same tables
      expect(eq(z.compress(a, level), first)).toBe(true)
      roundTrip(a, level, false)
    }
    // Matches across block boundaries and beyond the 1 MiB window (multi-block, windowed frame).
    const big = Buffer.concat([logLines(700_000, 34), jsonEvents(600_000, 35), logLines(300_000, 34)])
    for (const level of [1, 2, 3]) roundTrip(big, level, true)
  })

  it('reports dst too small on both sides', () => {
    const input = jsonEvents(20000)
    const c = z.compress(input)
    const x = z.exports
    const inPtr = x.scratch(input.length + 100000)
    new Uint8Array(x.memory.buffer, inPtr, input.length).set(input)
    expect(x.zstdCompressInto(3, inPtr, input.length, inPtr + 40000, c.length - 1)).toBe(-1)
    expect(x.zstdCompressInto(3, inPtr, input.length, inPtr + 40000, 5)).toBe(-1)
    expect(x.zstdCompressInto(3, inPtr, input.length, inPtr + 40000, c.length)).toBe(c.length)
    expect(z.decompress(c, input.length - 1)).toBe(-1)
    expect(z.decompress(z.compress(randomBytes(5000)), 4999)).toBe(-1)
  })

  it('reads concatenated frames, skippable frames, and rejects dictionaries', () => {
    const a = jsonEvents(3000, 11)
    const b = logLines(5000, 12)
    const skip = Buffer.alloc(8 + 10)
    skip.writeUInt32LE(0x184D2A53, 0)
    skip.writeUInt32LE(10, 4)
    const stream = Buffer.concat([skip, z.compress(a), skip, z.compress(b, 1, true)])
    expect(eq(z.decompress(stream), Buffer.concat([a, b]))).toBe(true)
    expect(z.sizeHint(stream)).toBe(a.length + b.length)
    expect(eq(z.decompress(Buffer.from(skip)), new Uint8Array(0))).toBe(true)
    // Frame header with Dictionary_ID_flag = 1 and a nonzero id.
    const dict = Uint8Array.of(0x28, 0xB5, 0x2F, 0xFD, 0x21, 0x07, 0x01, 0x01, 0x00, 0x00, 0x41)
    expect(z.decompress(dict, 100)).toBe(-6)
    // Reserved bit set.
    expect(z.decompress(Uint8Array.of(0x28, 0xB5, 0x2F, 0xFD, 0x28, 0x01, 0x01, 0x00, 0x00), 100)).toBe(-4)
    // Truncated checksum / bad checksum.
    const c = z.compress(a, 3, true)
    expect(z.decompress(c.subarray(0, c.length - 2), a.length)).toBe(-3)
    const bad = c.slice()
    bad[bad.length - 1]! ^= 1
    expect(z.decompress(bad, a.length)).toBe(-5)
    expect(z.decompress(new Uint8Array(0), 10)).toBe(-3)
  })
})

describe('zstd: interop with native libzstd (@mongodb-js/zstd)', () => {
  const corpora: [string, Uint8Array][] = [
    ['json 64K', jsonEvents(65536, 21)], ['logs 64K', logLines(65536, 22)], ['random 20K', randomBytes(20000, 23)],
    ['json 1M', jsonEvents(1 << 20, 24)], ['logs 1M+1', logLines((1 << 20) + 1, 27)], ['mixed', Buffer.concat([logLines(150_000, 25), randomBytes(30_000, 26), new Uint8Array(140_000)])],
    ['tiny', Uint8Array.of(1, 2, 3)], ['empty', new Uint8Array(0)],
  ]

  it('native decodes our output (levels 1, 3, 9, 19; with and without checksum)', async () => {
    for (const [, input] of corpora) {
      for (const level of [1, 3, 9, 19]) {
        for (const checksum of [false, true]) {
          const out = await native.decompress(Buffer.from(z.compress(input, level, checksum)))
          expect(eq(out, input)).toBe(true)
        }
      }
    }
  })

  it('we decode native output at levels 1, 3, 9, 19', async () => {
    for (const [, input] of corpora) {
      for (const level of [1, 3, 9, 19]) {
        const c = await native.compress(Buffer.from(input), level)
        expect(eq(z.decompress(c, input.length), input)).toBe(true)
      }
    }
  })

  it('we decode native output with content checksums (zstd CLI) and long windows', (ctx) => {
    if (spawnSync('zstd', ['--version']).status !== 0) return ctx.skip()
    const dir = mkdtempSync(join(tmpdir(), 'zstd-cli-'))
    try {
      for (const [name, input] of corpora) {
        const f = join(dir, name.replace(/\W/g, '_'))
        writeFileSync(f, input)
        for (const args of [['-1'], ['-3'], ['-9'], ['-19'], ['--ultra', '-22'], ['-3', '--long=24'], ['-1', '--no-check']]) {
          const c = execFileSync('zstd', ['-q', '-c', ...args, f], { maxBuffer: 1 << 26 })
          const d = z.decompress(c, input.length)
          if (!eq(d, input)) throw new Error(`zstd ${args.join(' ')} ${name}: ${typeof d === 'number' ? d : d.length}`)
        }
        // Our frames through the CLI too (it verifies checksums).
        const ours = join(dir, 'ours.zst')
        writeFileSync(ours, z.compress(input, 3, true))
        expect(eq(execFileSync('zstd', ['-q', '-d', '-c', ours], { maxBuffer: 1 << 26 }), input)).toBe(true)
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("zstd: Kafka's Java ZstdCompression (zstd-jni) reads our frames", () => {
  it('decompresses our output at several levels, with and without checksum', (ctx) => {
    const libs = join(root, '.kafka/libs')
    const codec = join(root, 'scripts/kafka/Codec.java')
    if (!existsSync(libs) || !readdirSync(libs).some((f) => f.startsWith('zstd-jni')) || !existsSync(codec)
      || spawnSync('java', ['-version']).status !== 0) return ctx.skip()
    const dir = mkdtempSync(join(tmpdir(), 'zstd-java-'))
    try {
      const cases: { input: Uint8Array, zst: string, out: string }[] = []
      const inputs = [jsonEvents(16384, 31), logLines(65536, 32), jsonEvents(1 << 20, 33), randomBytes(5000, 34), new Uint8Array(0), Uint8Array.of(7)]
      let k = 0
      for (const input of inputs) {
        for (const [level, checksum] of [[1, false], [3, false], [3, true], [19, true]] as const) {
          const zst = join(dir, `c${k}.zst`)
          const out = join(dir, `c${k}.out`)
          writeFileSync(zst, z.compress(input, level, checksum))
          cases.push({ input, zst, out })
          k++
        }
      }
      const script = cases.map((c) => `decompress zstd - ${c.zst} ${c.out}`).join('\n') + '\n'
      const r = spawnSync('java', ['-cp', `${libs}/*`, codec, 'batch'], { input: script, encoding: 'utf8', timeout: 120_000 })
      expect(r.status, r.stderr).toBe(0)
      expect(r.stdout.split('\n').filter((l) => l.startsWith('error'))).toEqual([])
      for (const c of cases) expect(eq(readFileSync(c.out), c.input)).toBe(true)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('zstd: ratio against native', () => {
  it('level 3 is within 10% of native levels 1 and 3 (JSON telemetry, log lines; 16 KiB and 64 KiB)', async () => {
    const rows: string[] = []
    for (const [name, make] of [['json', jsonEvents], ['logs', logLines]] as const) {
      for (const size of [16384, 65536]) {
        for (const seed of [41, 42, 43]) {
          const input = make(size, seed)
          const ours = z.compress(input, 3).length
          const n1 = (await native.compress(Buffer.from(input), 1)).length
          const n3 = (await native.compress(Buffer.from(input), 3)).length
          rows.push(`${name} ${size} seed ${seed}: ours ${ours}, native-1 ${n1}, native-3 ${n3}`)
          expect(ours).toBeLessThanOrEqual(Math.ceil(n1 * 1.10))
          expect(ours).toBeLessThanOrEqual(Math.ceil(n3 * 1.10))
        }
      }
    }
    console.log(rows.join('\n'))
  })

  it('wasm size: encoder only, decoder only, both (gzip -9)', async () => {
    const enc = await gzippedSize('zstd-entry-enc.ts', 'zstd-enc.wasm')
    const dec = await gzippedSize('zstd-entry-dec.ts', 'zstd-dec.wasm')
    const full = await gzippedSize('entry-zstd.ts', 'zstd-full.wasm')
    console.log(`zstd wasm: encoder ${enc.raw} B (${enc.gzip} B gzip), decoder ${dec.raw} B (${dec.gzip} B gzip), both ${full.raw} B (${full.gzip} B gzip)`)
    expect(enc.gzip).toBeLessThan(16 * 1024)
    expect(full.gzip).toBeLessThan(24 * 1024)
  })
})
