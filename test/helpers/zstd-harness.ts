// Compiles assembly/codecs/entry-zstd-test.ts with the asc API into build/zstd-test.wasm (rebuilt
// when any assembly/codecs/zstd*.ts is newer) and wraps its exports for the zstd tests and bench.
import asc from 'assemblyscript/asc'
import { mkdirSync, readFileSync, readdirSync, statSync, existsSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const codecs = resolve(root, 'assembly/codecs')

interface Exports {
  memory: WebAssembly.Memory
  scratch(size: number): number
  zstdCompressInto(level: number, src: number, srcLen: number, dst: number, dstCap: number): number
  zstdCompressIntoChecked(level: number, checksum: number, src: number, srcLen: number, dst: number, dstCap: number): number
  zstdCompressBound(srcLen: number): number
  zstdDecompressInto(src: number, srcLen: number, dst: number, dstCap: number): number
  zstdDecompressedSizeHint(src: number, srcLen: number): number
  predefinedCell(kind: number, state: number): number
  hash64(p: number, len: number): bigint
}

const FLAGS = ['-O3', '--noAssert', '--runtime', 'stub', '--converge']

function newestSource(): number {
  let t = 0
  for (const f of readdirSync(codecs)) {
    if (/^(zstd.*|entry-zstd.*)\.ts$/.test(f)) t = Math.max(t, statSync(resolve(codecs, f)).mtimeMs)
  }
  return t
}

/** Compiles `entry` (relative to assembly/codecs) to build/<out>; returns the wasm bytes. */
export async function compileZstdEntry(entry: string, out: string, extra: string[] = []): Promise<Uint8Array> {
  const outFile = resolve(root, 'build', out)
  mkdirSync(dirname(outFile), { recursive: true })
  if (existsSync(outFile) && statSync(outFile).mtimeMs > newestSource()) return readFileSync(outFile)
  let diag = ''
  const { error } = await asc.main([resolve(codecs, entry), '--outFile', outFile, ...FLAGS, ...extra], {
    stdout: { write: (s: string) => { diag += s; return true } } as never,
    stderr: { write: (s: string) => { diag += s; return true } } as never,
  })
  if (error) throw new Error(`asc failed for ${entry}: ${error.message}\n${diag}`)
  return readFileSync(outFile)
}

/** gzip -9 size of a wasm built from an entry. */
export async function gzippedSize(entry: string, out: string): Promise<{ raw: number, gzip: number }> {
  const bytes = await compileZstdEntry(entry, out)
  return { raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length }
}

export interface Zstd {
  compress(data: Uint8Array, level?: number, checksum?: boolean): Uint8Array
  /** Returns the output, or the negative result code. */
  decompress(data: Uint8Array, cap?: number): Uint8Array | number
  sizeHint(data: Uint8Array): number
  bound(n: number): number
  predefinedCell(kind: number, state: number): number
  xxh64(data: Uint8Array): bigint
  exports: Exports
}

let cached: Promise<Zstd> | undefined

export function loadZstd(): Promise<Zstd> {
  cached ??= (async () => {
    const bytes = await compileZstdEntry('entry-zstd-test.ts', 'zstd-test.wasm')
    const { instance } = await WebAssembly.instantiate(bytes as BufferSource, {
      env: { abort: () => { throw new Error('wasm abort') } },
    }) as unknown as WebAssembly.WebAssemblyInstantiatedSource
    const x = instance.exports as unknown as Exports
    const io = (inLen: number, outCap: number) => {
      const base = x.scratch(inLen + outCap + 16)
      return { inPtr: base, outPtr: base + ((inLen + 15) & ~15) }
    }
    return {
      exports: x,
      bound: (n) => x.zstdCompressBound(n),
      compress(data, level = 3, checksum = false) {
        const cap = x.zstdCompressBound(data.length)
        const { inPtr, outPtr } = io(data.length, cap)
        new Uint8Array(x.memory.buffer, inPtr, data.length).set(data)
        const n = x.zstdCompressIntoChecked(level, checksum ? 1 : 0, inPtr, data.length, outPtr, cap)
        if (n < 0) throw new Error(`zstdCompressInto returned ${n}`)
        return new Uint8Array(x.memory.buffer, outPtr, n).slice()
      },
      decompress(data, cap) {
        if (cap === undefined) {
          const { inPtr } = io(data.length, 0)
          new Uint8Array(x.memory.buffer, inPtr, data.length).set(data)
          const hint = x.zstdDecompressedSizeHint(inPtr, data.length)
          cap = hint >= 0 ? hint : Math.max(1 << 20, data.length * 8)
        }
        const { inPtr, outPtr } = io(data.length, cap)
        new Uint8Array(x.memory.buffer, inPtr, data.length).set(data)
        const n = x.zstdDecompressInto(inPtr, data.length, outPtr, cap)
        if (n < 0) return n
        return new Uint8Array(x.memory.buffer, outPtr, n).slice()
      },
      sizeHint(data) {
        const { inPtr } = io(data.length, 0)
        new Uint8Array(x.memory.buffer, inPtr, data.length).set(data)
        return x.zstdDecompressedSizeHint(inPtr, data.length)
      },
      predefinedCell: (k, s) => x.predefinedCell(k, s),
      xxh64(data) {
        const { inPtr } = io(data.length, 0)
        new Uint8Array(x.memory.buffer, inPtr, data.length).set(data)
        return BigInt.asUintN(64, x.hash64(inPtr, data.length))
      },
    } satisfies Zstd
  })()
  return cached
}

// ---- corpora (deterministic) ---------------------------------------------------------------

/** Small deterministic PRNG (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const enc = new TextEncoder()

/** Newline-separated JSON telemetry events, about `bytes` long. */
export function jsonEvents(bytes: number, seed = 1): Uint8Array {
  const r = rng(seed)
  const pick = <T>(a: T[]) => a[Math.floor(r() * a.length)]!
  const events = ['page_view', 'click', 'add_to_cart', 'purchase', 'scroll', 'session_start', 'error']
  const paths = ['/', '/products', '/products/42', '/cart', '/checkout', '/blog/zstd-at-the-edge', '/search']
  const agents = ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/126.0', 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) Safari/605.1.15', 'Mozilla/5.0 (Linux; Android 14) Mobile Chrome/125.0']
  const out: string[] = []
  let len = 0
  let ts = 1717000000000
  while (len < bytes) {
    ts += Math.floor(r() * 5000)
    const e = {
      ts, event: pick(events), user: `u-${Math.floor(r() * 5000).toString(36)}`,
      session: Math.floor(r() * 1e9).toString(16), path: pick(paths), ua: pick(agents),
      country: pick(['US', 'DE', 'FR', 'JP', 'BR', 'IN']), latency_ms: Math.round(r() * 900) / 10,
      value: r() < 0.3 ? Math.round(r() * 50000) / 100 : null, ok: r() < 0.95,
    }
    const s = JSON.stringify(e)
    out.push(s)
    len += s.length + 1
  }
  return enc.encode(out.join('\n')).subarray(0, bytes)
}

/** Application log lines, about `bytes` long. */
export function logLines(bytes: number, seed = 2): Uint8Array {
  const r = rng(seed)
  const pick = <T>(a: T[]) => a[Math.floor(r() * a.length)]!
  const levels = ['INFO', 'INFO', 'INFO', 'DEBUG', 'WARN', 'ERROR']
  const msgs = [
    'request completed method=GET path=/api/v1/items status=200',
    'request completed method=POST path=/api/v1/orders status=201',
    'cache miss key=session:', 'connection reset by peer remote=10.0.',
    'retrying produce to partition', 'slow query table=events duration_ms=',
    'user login succeeded user_id=', 'rate limit exceeded client=',
  ]
  const out: string[] = []
  let len = 0
  let t = Date.UTC(2024, 5, 1)
  while (len < bytes) {
    t += Math.floor(r() * 2000)
    const s = `${new Date(t).toISOString()} ${pick(levels)} [worker-${Math.floor(r() * 8)}] ${pick(['http', 'db', 'kafka', 'auth'])}: ${pick(msgs)}${Math.floor(r() * 100000)} trace=${Math.floor(r() * 2 ** 32).toString(16)}`
    out.push(s)
    len += s.length + 1
  }
  return enc.encode(out.join('\n')).subarray(0, bytes)
}

export function randomBytes(n: number, seed = 3): Uint8Array {
  const r = rng(seed)
  const b = new Uint8Array(n)
  for (let i = 0; i < n; i++) b[i] = Math.floor(r() * 256)
  return b
}
