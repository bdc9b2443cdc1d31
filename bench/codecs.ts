// npm run bench -- codecs [--quick] [--no-sizes] [--sizes-only]
// BENCH_CODECS=zstd,lz4 and BENCH_SIZES=16384 (bytes) measure only those codecs and batch sizes.
// Compression ratio and compress speed (MB/s of input) of the WASM codecs at their default
// level against native (Node zlib, snappy napi-rs, lz4-napi) and pure-JS peers (fflate, pako,
// snappyjs, lz4js) on JSON telemetry events, log lines and random bytes at 1, 16 and 64 KiB
// batches; also decompress speed on JSON, and the sizes (raw and gzip -9) of the shipped core
// variants (scripts/build-wasm.mjs: all codecs, none, one codec each, encoders only) and of
// wasm modules holding only one codec (no CRC / builder).
// zstd: append an entry to CODECS below (id 4, its peers) and a size entry to SIZE_ENTRIES.
import { gzipSync, gunzipSync } from 'node:zlib'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { gzipSync as fflateGzip } from 'fflate'
import * as pako from 'pako'
import snappy from 'snappy'
import snappyjs from 'snappyjs'
import lz4 from 'lz4-napi'
import { bestRate, report, writeReport, printTable, type BenchResult } from './lib.js'
import {
  Codecs, CODEC_IDS, type CodecName, buildWasm, ROOT, CODECS_DIR, jsonEvents, logLines, randomBytes,
} from '../test/helpers/codec-harness.js'

const require = createRequire(import.meta.url)
const lz4js = require('lz4js') as { compress(b: Uint8Array): Uint8Array; decompress(b: Uint8Array): Uint8Array }
// zstd peers: zstd-napi (libzstd, synchronous) and zstd-codec (libzstd compiled by Emscripten).
const zstdNative = require('zstd-napi') as {
  compress(b: Uint8Array, p?: { compressionLevel?: number }): Buffer; decompress(b: Uint8Array): Buffer
}
const zstdCodec = await new Promise<{ compress(b: Uint8Array, level: number): Uint8Array }>((res) => {
  (require('zstd-codec') as { ZstdCodec: { run(cb: (z: { Simple: new () => { compress(b: Uint8Array, level: number): Uint8Array } }) => void): void } }).ZstdCodec.run((z) => res(new z.Simple()))
})

type Fn = (src: Uint8Array) => Uint8Array
interface Peer { impl: string; kind: 'native' | 'js'; compress: Fn; decompress?: Fn }
interface CodecEntry { codec: CodecName; level: number; peers: Peer[] }

export const CODECS: CodecEntry[] = [
  {
    codec: 'gzip', level: 6,
    peers: [
      { impl: 'native', kind: 'native', compress: (s) => gzipSync(s, { level: 6 }), decompress: (z) => gunzipSync(z) },
      { impl: 'fflate', kind: 'js', compress: (s) => fflateGzip(s, { level: 6 }) },
      { impl: 'pako', kind: 'js', compress: (s) => pako.gzip(s, { level: 6 }) },
    ],
  },
  {
    codec: 'snappy', level: -1,
    peers: [
      { impl: 'native', kind: 'native', compress: (s) => snappy.compressSync(Buffer.from(s.buffer, s.byteOffset, s.length)) as Buffer, decompress: (z) => snappy.uncompressSync(Buffer.from(z.buffer, z.byteOffset, z.length)) as Buffer },
      { impl: 'snappyjs', kind: 'js', compress: (s) => new Uint8Array(snappyjs.compress(s)) },
    ],
  },
  {
    codec: 'lz4', level: 9,
    peers: [
      { impl: 'native', kind: 'native', compress: (s) => lz4.compressFrameSync(Buffer.from(s.buffer, s.byteOffset, s.length)), decompress: (z) => lz4.decompressFrameSync(Buffer.from(z.buffer, z.byteOffset, z.length)) },
      { impl: 'lz4js', kind: 'js', compress: (s) => lz4js.compress(s) },
    ],
  },
  {
    codec: 'zstd', level: 3,
    peers: [
      { impl: 'native', kind: 'native', compress: (s) => zstdNative.compress(s, { compressionLevel: 3 }), decompress: (z) => zstdNative.decompress(z) },
      { impl: 'native-level-1', kind: 'native', compress: (s) => zstdNative.compress(s, { compressionLevel: 1 }) },
      { impl: 'zstd-codec', kind: 'js', compress: (s) => zstdCodec.compress(s, 3) },
    ],
  },
]

const SIZE_ENTRIES: { codec: string; entry: string }[] = [
  { codec: 'gzip', entry: 'entry-gzip.ts' },
  { codec: 'snappy', entry: 'entry-snappy.ts' },
  { codec: 'lz4', entry: 'entry-lz4.ts' },
  { codec: 'zstd', entry: 'entry-zstd.ts' },
]

/** The core builds of scripts/build-wasm.mjs (its TARGETS), smallest codec set first. */
const CORE_VARIANTS: { name: string; contents: string }[] = [
  { name: 'core-none', contents: 'CRC + builder, no codecs' },
  { name: 'core-snappy', contents: 'CRC + builder + snappy enc+dec' },
  { name: 'core-lz4', contents: 'CRC + builder + lz4 enc+dec' },
  { name: 'core-gzip', contents: 'CRC + builder + gzip enc+dec' },
  { name: 'core-zstd', contents: 'CRC + builder + zstd enc+dec' },
  { name: 'core-encoders', contents: 'CRC + builder + 4 encoders' },
  { name: 'core', contents: 'CRC + builder + 4 codecs enc+dec (default, embedded)' },
]
/** Target for the encoders-only build (CRC + builder + four encoders), gzip -9. */
const ENCODERS_ONLY_GZ_TARGET = 60_000

const CORPORA: Record<string, (n: number) => Uint8Array> = {
  json: (n) => jsonEvents(n, 101),
  logs: (n) => logLines(n, 102),
  random: (n) => randomBytes(n, 103),
}
const SIZES = process.env.BENCH_SIZES ? process.env.BENCH_SIZES.split(',').map(Number) : [1024, 16384, 65536]
const CODEC_FILTER = process.env.BENCH_CODECS?.split(',')
const kib = (n: number) => `${n >> 10}KiB`

/** A WASM compressor with its input already in linear memory (as the batch builder has it). */
function wasmCompressor(c: Codecs, codec: CodecName, level: number, src: Uint8Array) {
  const x = c.x
  const cap = x.compressBound(CODEC_IDS[codec], src.length)
  const base = x.arena(src.length + cap + 64)
  const dst = base + ((src.length + 15) & ~15)
  new Uint8Array(x.memory.buffer, base, src.length).set(src)
  const id = CODEC_IDS[codec]
  return () => {
    const n = x.compressInto(id, level, base, src.length, dst, cap)
    if (n < 0) throw new Error(`${codec} compressInto ${n}`)
    return n
  }
}

function wasmDecompressor(c: Codecs, codec: CodecName, z: Uint8Array, outLen: number) {
  const x = c.x
  const base = x.arena(z.length + outLen + 64)
  const dst = base + ((z.length + 15) & ~15)
  new Uint8Array(x.memory.buffer, base, z.length).set(z)
  const id = CODEC_IDS[codec]
  return () => {
    const n = x.decompressInto(id, base, z.length, dst, outLen)
    if (n !== outLen) throw new Error(`${codec} decompressInto ${n}`)
    return n
  }
}

interface SizeRow { module: string; contents: string; bytes: number; gzipped: number }

/** Sizes of the shipped core variants and the codec-only modules; adds them to `results`. */
async function measureSizes(results: BenchResult[]): Promise<SizeRow[]> {
  // Builds the variants if their sources changed (a no-op otherwise).
  execFileSync(process.execPath, [join(ROOT, 'scripts/build-wasm.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] })
  const rows: SizeRow[] = []
  const add = (module: string, contents: string, wasm: Uint8Array) => {
    const gz = gzipSync(wasm, { level: 9 }).length
    rows.push({ module, contents, bytes: wasm.length, gzipped: gz })
    results.push({ impl: 'kafka-edge-wasm', metric: `${module} wasm`, unit: 'bytes', value: wasm.length })
    results.push({ impl: 'kafka-edge-wasm', metric: `${module} wasm gzipped`, unit: 'bytes', value: gz })
  }
  for (const v of CORE_VARIANTS) add(v.name, v.contents, readFileSync(join(ROOT, `build/${v.name}.wasm`)))
  for (const { codec, entry } of SIZE_ENTRIES) {
    add(`${codec}-only`, `${codec} enc+dec alone (no CRC/builder, stub runtime)`, await buildWasm(join(CODECS_DIR, entry), join(ROOT, `build/codec-${codec}.wasm`)))
  }
  return rows
}

function printSizes(rows: SizeRow[]): void {
  const none = rows.find((r) => r.module === 'core-none')!
  const head = ['module', 'bytes', 'gzip -9', '+gz vs core-none', 'contents']
  const cells = rows.map((r) => [
    r.module, String(r.bytes), String(r.gzipped), r.module.startsWith('core') ? (r.module === 'core-none' ? '' : `+${r.gzipped - none.gzipped}`) : '', r.contents,
  ])
  const w = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)))
  console.log('\nwasm sizes (gzip -9 via zlib)')
  console.log(head.map((h, i) => (i === 0 || i === 4 ? h.padEnd(w[i]!) : h.padStart(w[i]!))).join('  ').trimEnd())
  for (const c of cells) console.log(c.map((v, i) => (i === 0 || i === 4 ? v.padEnd(w[i]!) : v.padStart(w[i]!))).join('  ').trimEnd())
  const enc = rows.find((r) => r.module === 'core-encoders')!
  console.log(`encoders-only core: ${enc.gzipped} bytes gzipped (target <= ${ENCODERS_ONLY_GZ_TARGET}: ${enc.gzipped <= ENCODERS_ONLY_GZ_TARGET ? 'met' : 'MISSED'})`)
}

export default async function codecs(args: string[]): Promise<void> {
  const load = loadavg()
  if (args.includes('--sizes-only')) {
    const results: BenchResult[] = []
    const rows = await measureSizes(results)
    printSizes(rows)
    const file = writeReport(report('codecs-sizes', { loadavg: load }, results))
    console.log(`\nwrote ${file}`)
    return
  }
  const quick = args.includes('--quick')
  const opts = quick ? { rounds: 2, minMs: 80 } : { rounds: 3, minMs: 200 }
  const c = await Codecs.load()
  const results: BenchResult[] = []
  const summary: string[][] = []
  const MB = 1e6

  for (const { codec, level, peers } of CODECS.filter((e) => !CODEC_FILTER || CODEC_FILTER.includes(e.codec))) {
    for (const [cname, gen] of Object.entries(CORPORA)) {
      for (const size of SIZES) {
        const src = gen(size)
        const tag = `${codec} ${cname} ${kib(size)}`
        const oursLen = c.compress(codec, src, level).length
        const ours = await bestRate(wasmCompressor(c, codec, level, src), size, opts)
        results.push({ impl: 'kafka-edge-wasm', metric: `${tag} compress`, unit: 'MB/s', value: ours / MB })
        results.push({ impl: 'kafka-edge-wasm', metric: `${tag} ratio`, unit: 'ratio', value: size / oursLen })
        const row: Record<string, number> = { ours: ours / MB, oursRatio: size / oursLen }
        for (const p of peers) {
          const z = p.compress(src)
          const rate = await bestRate(() => p.compress(src), size, opts)
          results.push({ impl: p.impl, metric: `${tag} compress`, unit: 'MB/s', value: rate / MB })
          results.push({ impl: p.impl, metric: `${tag} ratio`, unit: 'ratio', value: size / z.length })
          row[`${p.impl}`] = rate / MB
          row[`${p.impl}Ratio`] = size / z.length
        }
        const native = peers.find((p) => p.kind === 'native')!
        const bestJs = Math.max(...peers.filter((p) => p.kind === 'js').map((p) => row[p.impl]!))
        summary.push([
          tag,
          row.oursRatio!.toFixed(3), row.nativeRatio!.toFixed(3), (row.oursRatio! / row.nativeRatio!).toFixed(2),
          row.ours!.toFixed(1), row[native.impl]!.toFixed(1), (row.ours! / row[native.impl]!).toFixed(2),
          bestJs.toFixed(1), (row.ours! / bestJs).toFixed(2),
        ])
      }
    }
    // decompress speed on JSON
    for (const size of SIZES) {
      const src = CORPORA.json!(size)
      const z = c.compress(codec, src, level)
      const tag = `${codec} json ${kib(size)} decompress`
      results.push({ impl: 'kafka-edge-wasm', metric: tag, unit: 'MB/s', value: (await bestRate(wasmDecompressor(c, codec, z, size), size, opts)) / MB })
      const native = peers.find((p) => p.kind === 'native')!
      if (native.decompress) {
        const nz = native.compress(src)
        results.push({ impl: 'native', metric: tag, unit: 'MB/s', value: (await bestRate(() => native.decompress!(nz), size, opts)) / MB })
      }
    }
  }

  const sizeRows = args.includes('--no-sizes') ? [] : await measureSizes(results)

  printTable(results, 'kafka-edge-wasm')
  console.log('\nsummary (ratio = input/output; speed = MB/s of input; targets: ratio >= 0.9x native, speed >= 0.5x native and >= 2x best pure-JS)')
  const head = ['batch', 'ratio', 'native', 'x', 'MB/s', 'native', 'x', 'best JS', 'x']
  const w = head.map((h, i) => Math.max(h.length, ...summary.map((r) => r[i]!.length)))
  console.log(head.map((h, i) => h.padStart(w[i]!)).join('  '))
  for (const r of summary) console.log(r.map((v, i) => (i === 0 ? v.padEnd(w[i]!) : v.padStart(w[i]!))).join('  '))
  if (sizeRows.length) printSizes(sizeRows)
  const loadEnd = loadavg()
  console.log(`\nload average ${load.map((x) => x.toFixed(2)).join(' ')} at start, ${loadEnd.map((x) => x.toFixed(2)).join(' ')} at end (${cpus().length} cpus): speed figures on a loaded box are noisy`)
  // A filtered run gets its own file, so it does not replace the full one.
  const name = CODEC_FILTER || process.env.BENCH_SIZES ? ['codecs', ...(CODEC_FILTER ?? []), ...(process.env.BENCH_SIZES ? SIZES.map(kib) : [])].join('-') : 'codecs'
  const file = writeReport(report(name, {
    levels: Object.fromEntries(CODECS.map((e) => [e.codec, e.level])), sizes: SIZES, corpora: Object.keys(CORPORA), codecs: CODEC_FILTER ?? 'all',
    loadavg: { start: load, end: loadEnd },
  }, results))
  console.log(`\nwrote ${file}`)
}
