// Compiles and loads a codecs wasm (assembly/codecs/entry-test.ts -> build/codecs-test.wasm) so
// tests and benches can call the codec contract with Uint8Arrays. The product build
// (build/core.wasm via scripts/build-wasm.mjs) exports the same four functions.
import { readFileSync, statSync, readdirSync, mkdirSync, existsSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
import { CompressionCodecError, CorruptCompressedDataError } from '../../src/edge/errors.js'

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
export const CODECS_DIR = join(ROOT, 'assembly/codecs')

export const CODEC_IDS = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 } as const
export type CodecName = keyof typeof CODEC_IDS
const NAMES = Object.fromEntries(Object.entries(CODEC_IDS).map(([k, v]) => [v, k])) as Record<number, CodecName>

export const ERR = { DST_TOO_SMALL: -1, NOT_BUILT: -2, TRUNCATED: -3, CORRUPT: -4, CHECKSUM: -5, UNSUPPORTED: -6 } as const

// The typed codec errors live in src/edge/errors.ts (Core.decompress throws them); re-exported
// here so the codec tests and this harness throw the same classes as the product.
export { CompressionCodecError, CorruptCompressedDataError } from '../../src/edge/errors.js'

/** The test wasm's "codec not built" (-2); the product reports it as UnsupportedCompressionError. */
export class CodecNotBuiltError extends CompressionCodecError {
  constructor(codec: CodecName) {
    super(codec, -2, `${codec}: codec not built into this wasm module`)
  }
}

export function codecError(codec: CodecName, code: number): CompressionCodecError {
  if (code === -2) return new CodecNotBuiltError(codec)
  if (code <= -3) return new CorruptCompressedDataError(codec, code)
  return new CompressionCodecError(codec, code)
}

function newestMtime(dir: string): number {
  let t = 0
  for (const f of readdirSync(dir)) if (f.endsWith('.ts')) t = Math.max(t, statSync(join(dir, f)).mtimeMs)
  return t
}

/** Compiles an AssemblyScript entry with the asc API (optimized, stub runtime). */
export async function buildWasm(entry: string, outFile: string, extra: string[] = []): Promise<Uint8Array> {
  const asc = (await import('assemblyscript/asc')).default
  mkdirSync(dirname(outFile), { recursive: true })
  const args = [entry, '--outFile', outFile, '-O3', '--runtime', 'stub', '--noAssert', ...extra]
  const stderr: string[] = []
  const { error } = await asc.main(args, {
    stdout: { write: () => true } as never,
    stderr: { write: (s: string) => (stderr.push(String(s)), true) } as never,
  })
  if (error) throw new Error(`asc failed for ${entry}: ${error.message}\n${stderr.join('')}`)
  return readFileSync(outFile)
}

export const TEST_WASM = join(ROOT, 'build/codecs-test.wasm')

/** build/codecs-test.wasm, rebuilt when any assembly/codecs/*.ts is newer. */
export async function ensureTestWasm(): Promise<Uint8Array> {
  if (!existsSync(TEST_WASM) || statSync(TEST_WASM).mtimeMs < newestMtime(CODECS_DIR)) {
    return buildWasm(join(CODECS_DIR, 'entry-test.ts'), TEST_WASM)
  }
  return readFileSync(TEST_WASM)
}

interface Exports {
  memory: WebAssembly.Memory
  compressInto(codec: number, level: number, src: number, srcLen: number, dst: number, dstCap: number): number
  compressBound(codec: number, srcLen: number): number
  decompressInto(codec: number, src: number, srcLen: number, dst: number, dstCap: number): number
  decompressedSizeHint(codec: number, src: number, srcLen: number): number
  arena(bytes: number): number
}

const align = (n: number) => (n + 15) & ~15

export class Codecs {
  constructor(readonly x: Exports) {}

  static async load(bytes?: Uint8Array): Promise<Codecs> {
    const mod = await WebAssembly.compile((bytes ?? (await ensureTestWasm())) as Uint8Array<ArrayBuffer>)
    const inst = await WebAssembly.instantiate(mod, {
      env: { abort: (_m: number, _f: number, line: number, col: number) => { throw new Error(`wasm abort at ${line}:${col}`) } },
    })
    return new Codecs(inst.exports as unknown as Exports)
  }

  private place(src: Uint8Array, dstCap: number): { base: number; dst: number } {
    const base = this.x.arena(align(src.length) + dstCap + 16)
    if (!base) throw new RangeError('wasm memory exhausted')
    new Uint8Array(this.x.memory.buffer, base, src.length).set(src)
    return { base, dst: base + align(src.length) }
  }

  bound(codec: CodecName, n: number): number {
    const b = this.x.compressBound(CODEC_IDS[codec], n)
    if (b < 0) throw codecError(codec, b)
    return b
  }

  /** Raw call: returns the code or the output bytes. */
  compressRaw(codec: CodecName, src: Uint8Array, level = -1, dstCap?: number): number | Uint8Array {
    const cap = dstCap ?? this.bound(codec, src.length)
    const { base, dst } = this.place(src, cap)
    const n = this.x.compressInto(CODEC_IDS[codec], level, base, src.length, dst, cap)
    if (n < 0) return n
    return new Uint8Array(this.x.memory.buffer, dst, n).slice()
  }

  compress(codec: CodecName, src: Uint8Array, level = -1): Uint8Array {
    const r = this.compressRaw(codec, src, level)
    if (typeof r === 'number') throw codecError(codec, r)
    return r
  }

  /** Returns the code (negative) or the output; dstCap defaults to the size hint. */
  decompressRaw(codec: CodecName, src: Uint8Array, dstCap: number): number | Uint8Array {
    const { base, dst } = this.place(src, dstCap)
    const n = this.x.decompressInto(CODEC_IDS[codec], base, src.length, dst, dstCap)
    if (n < 0) return n
    return new Uint8Array(this.x.memory.buffer, dst, n).slice()
  }

  sizeHint(codec: CodecName, src: Uint8Array): number {
    const { base } = this.place(src, 0)
    return this.x.decompressedSizeHint(CODEC_IDS[codec], base, src.length)
  }

  /** Decompresses, growing the output buffer from the size hint while the result is DST_TOO_SMALL. */
  decompress(codec: CodecName, src: Uint8Array, maxBytes = 256 << 20): Uint8Array {
    const hint = this.sizeHint(codec, src)
    let cap = hint >= 0 ? hint : Math.max(1024, src.length * 4)
    for (;;) {
      const r = this.decompressRaw(codec, src, cap)
      if (typeof r !== 'number') return r
      if (r !== -1 || cap >= maxBytes) throw codecError(codec, r)
      cap = Math.min(maxBytes, Math.max(cap * 2, 1024))
    }
  }
}

export function codecName(id: number): CodecName | undefined {
  return NAMES[id]
}

// ------------------------------------------------------------------ corpora (deterministic)

/** xorshift32 PRNG: deterministic corpora for tests and benches. */
export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1
  return () => {
    s ^= s << 13
    s >>>= 0
    s ^= s >>> 17
    s ^= s << 5
    s >>>= 0
    return s / 4294967296
  }
}

const EVENTS = ['page_view', 'click', 'add_to_cart', 'checkout', 'scroll', 'video_play', 'search', 'signup']
const PATHS = ['/', '/products', '/products/42', '/cart', '/checkout', '/search?q=shoes', '/account', '/blog/edge-kafka']
const UAS = ['Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0', 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1) Safari/604.1', 'Mozilla/5.0 (Windows NT 10.0) Firefox/133.0']
const LEVELS = ['INFO', 'INFO', 'INFO', 'DEBUG', 'WARN', 'ERROR']
const enc = new TextEncoder()

function fill(n: number, line: (r: () => number, i: number) => string, seed: number): Uint8Array {
  const r = rng(seed)
  const parts: string[] = []
  let len = 0
  for (let i = 0; len < n; i++) {
    const l = line(r, i)
    parts.push(l)
    len += l.length
  }
  return enc.encode(parts.join('')).subarray(0, n)
}

/** JSON telemetry events, one per line (what the Worker produces). */
export function jsonEvents(n: number, seed = 1): Uint8Array {
  const t0 = 1764500000000
  return fill(n, (r, i) => JSON.stringify({
    ts: t0 + i * 37 + Math.floor(r() * 30),
    event: EVENTS[Math.floor(r() * EVENTS.length)],
    user: `u${Math.floor(r() * 5000)}`,
    session: Math.floor(r() * 0xffffffff).toString(16),
    path: PATHS[Math.floor(r() * PATHS.length)],
    ua: UAS[Math.floor(r() * UAS.length)],
    latency_ms: Math.round(r() * 800) / 10,
    country: ['DE', 'US', 'FR', 'JP', 'BR'][Math.floor(r() * 5)],
  }) + '\n', seed)
}

/** Application log lines. */
export function logLines(n: number, seed = 2): Uint8Array {
  return fill(n, (r, i) => {
    const ms = 1764500000000 + i * 13
    return `${new Date(ms).toISOString()} ${LEVELS[Math.floor(r() * LEVELS.length)]} [worker-${Math.floor(r() * 8)}] ` +
      `req=${Math.floor(r() * 1e9).toString(36)} method=${r() < 0.7 ? 'GET' : 'POST'} ` +
      `path=${PATHS[Math.floor(r() * PATHS.length)]} status=${r() < 0.9 ? 200 : 503} dur=${Math.floor(r() * 250)}ms\n`
  }, seed)
}

export function randomBytes(n: number, seed = 3): Uint8Array {
  const r = rng(seed)
  const b = new Uint8Array(n)
  for (let i = 0; i < n; i++) b[i] = (r() * 256) | 0
  return b
}

/** Long runs of a few byte values. */
export function runs(n: number, seed = 4): Uint8Array {
  const r = rng(seed)
  const b = new Uint8Array(n)
  let i = 0
  while (i < n) {
    const v = (r() * 4) | 0
    const len = 1 + ((r() * r() * 3000) | 0)
    b.fill(v, i, Math.min(n, i + len))
    i += len
  }
  return b
}

/** The named corpus set every codec test runs over. */
export function standardCorpora(): Record<string, Uint8Array> {
  return {
    empty: new Uint8Array(0),
    oneByte: new Uint8Array([0x61]),
    random4k: randomBytes(4096),
    random100k: randomBytes(100_000, 9),
    runs64k: runs(65536),
    zeros200k: new Uint8Array(200_000),
    json16k: jsonEvents(16384),
    logs16k: logLines(16384),
    json1m: jsonEvents(1 << 20, 7),
    mixed: (() => {
      const a = jsonEvents(70_000, 5), b = randomBytes(30_000, 6), c = runs(70_000, 8)
      const m = new Uint8Array(a.length + b.length + c.length)
      m.set(a); m.set(b, a.length); m.set(c, a.length + b.length)
      return m
    })(),
  }
}

// ------------------------------------------------------------------ Kafka's Java codecs

export const KAFKA_LIBS = join(ROOT, '.kafka/libs')

export function javaAvailable(): boolean {
  if (!existsSync(join(KAFKA_LIBS, 'kafka-clients-4.4.0.jar')) && !readdirSyncSafe(KAFKA_LIBS).some((f) => f.startsWith('kafka-clients-'))) return false
  try {
    execFileSync('java', ['-version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

function readdirSyncSafe(d: string): string[] {
  try { return readdirSync(d) } catch { return [] }
}

export interface JavaJob { op: 'compress' | 'decompress'; codec: CodecName; level?: number; input: Uint8Array }

/**
 * Runs jobs through scripts/kafka/Codec.java (kafka-clients' Compression classes) in one JVM.
 * Each result is the output bytes or an Error carrying Java's message.
 */
export function javaCodec(jobs: JavaJob[]): (Uint8Array | Error)[] {
  const dir = mkdtempSync(join(tmpdir(), 'kafka-edge-codec-'))
  try {
    const lines = jobs.map((j, i) => {
      const inp = join(dir, `${i}.in`)
      writeFileSync(inp, j.input)
      return `${j.op} ${j.codec} ${j.level ?? '-'} ${inp} ${join(dir, `${i}.out`)}`
    })
    const stdout = execFileSync('java', ['-cp', `${KAFKA_LIBS}/*`, join(ROOT, 'scripts/kafka/Codec.java'), 'batch'], {
      input: lines.join('\n') + '\n', maxBuffer: 64 << 20, timeout: 300_000,
    }).toString()
    const status = new Map<string, string>()
    for (const l of stdout.split('\n')) {
      const m = /^(ok|error) (\S+)(.*)$/.exec(l)
      if (m) status.set(m[2]!, m[1] === 'ok' ? 'ok' : m[3]!.trim())
    }
    return jobs.map((_, i) => {
      const out = join(dir, `${i}.out`)
      const st = status.get(out)
      return st === 'ok' ? new Uint8Array(readFileSync(out)) : new Error(st ?? 'no result from Java')
    })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Property inputs every codec suite uses: random bytes, repetitive text, and long runs past a 128 KiB block. */
export function codecInputs(): fc.Arbitrary<Uint8Array> {
  return fc.oneof(
    fc.uint8Array({ maxLength: 3000 }),
    fc.array(fc.constantFrom('a', 'ab', 'abc', 'hello ', '{"k":1}', '\n', 'zzzzzzzzzz'), { maxLength: 800 }).map((a) => new TextEncoder().encode(a.join(''))),
    fc.tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 140000 })).map(([v, n]) => new Uint8Array(n).fill(v)),
  )
}
