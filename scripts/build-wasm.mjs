#!/usr/bin/env node
// Compiles the AssemblyScript core to WebAssembly, once per codec variant. The default build (all
// four codecs) ships as build/core.wasm, which the package loads as a separate file (read from disk,
// fetched next to a page's bundle, or imported as a module under workerd); it is also written as a
// base64 TypeScript constant for the `kafka-edge/inline` entry only, so no other entry carries it.
// The variants are shipped as files (package.json exports `kafka-edge/core-lz4.wasm`, ...) for apps
// to pass as the producer's `wasm`.
//
//   node scripts/build-wasm.mjs              build every target (skipped when nothing changed)
//   node scripts/build-wasm.mjs core lz4     build the named targets only (`lz4` = `core-lz4`)
//   node scripts/build-wasm.mjs --debug      assertions kept, names section, .wat next to each .wasm
//   node scripts/build-wasm.mjs --converge   release flags plus binaryen --converge (slower, ~0.1% smaller)
//   node scripts/build-wasm.mjs --jobs=2     compile on 2 worker threads (default 1: each thread pays
//                                            ~5-10 s of JIT warm-up for asc + binaryen, which only
//                                            pays off on an idle multi-core machine)
//   node scripts/build-wasm.mjs --force      rebuild even if sources, flags and outputs are unchanged
//
// The codec set is a compile-time choice: `--use KE_CODECS_<NAME>=<bits>` (1 encoder, 2 decoder,
// 3 both, 0 none; unset = 3), read by assembly/codecs/index.ts, whose dispatch never references a
// left-out codec, so none of its functions is compiled. AssemblyScript still compiles the top-level
// statements of every imported file, which would keep the codec's static tables (memory.data) in
// the module; so this script also hands asc a stub in place of each left-out codec module (see
// STUBS): same export names, no tables, no imports. Result: a left-out codec contributes nothing.
import { createHash } from 'node:crypto'
import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker, isMainThread, parentPort } from 'node:worker_threads'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')

export const CODECS = ['gzip', 'snappy', 'lz4', 'zstd']
const ENCODER = 1
const DECODER = 2

/** asc flags selecting a codec set: { gzip: 3, lz4: 1 } -> gzip enc+dec, lz4 encoder, others out. */
export function codecFlags(set) {
  return CODECS.flatMap((c) => ['--use', `KE_CODECS_${c.toUpperCase()}=${set[c] ?? 0}`])
}

const ALL = Object.fromEntries(CODECS.map((c) => [c, ENCODER | DECODER]))
const variant = (name, set, description) => ({
  name, entry: 'assembly/index.ts', out: `build/${name}.wasm`, args: codecFlags(set), codecs: set, description,
})

// The codec contract (assembly/codecs/index.ts) by module: what a stub must export so the dispatch
// still resolves its imports. Bodies return -2 (E_NOT_BUILT); the guarded dispatch never calls them.
const SIG = {
  compress: 'level: i32, src: usize, srcLen: i32, dst: usize, dstCap: i32',
  compressNoLevel: 'src: usize, srcLen: i32, dst: usize, dstCap: i32',
  bound: 'srcLen: i32',
  decompress: 'src: usize, srcLen: i32, dst: usize, dstCap: i32',
  hint: 'src: usize, srcLen: i32',
}
const STUBS = {
  gzip: { both: { 'assembly/codecs/gzip.ts': { gzipCompressInto: SIG.compress, gzipCompressBound: SIG.bound, gzipDecompressInto: SIG.decompress, gzipDecompressedSizeHint: SIG.hint } } },
  snappy: { both: { 'assembly/codecs/snappy.ts': { snappyCompressInto: SIG.compressNoLevel, snappyCompressBound: SIG.bound, snappyDecompressInto: SIG.decompress, snappyDecompressedSizeHint: SIG.hint } } },
  lz4: { both: { 'assembly/codecs/lz4.ts': { lz4CompressInto: SIG.compress, lz4CompressBound: SIG.bound, lz4DecompressInto: SIG.decompress, lz4DecompressedSizeHint: SIG.hint } } },
  zstd: {
    both: { 'assembly/codecs/zstd.ts': { zstdCompressInto: SIG.compress, zstdCompressBound: SIG.bound, zstdDecompressInto: SIG.decompress, zstdDecompressedSizeHint: SIG.hint } },
    // zstd's encoder and decoder are separate modules (its tables too), so each can go alone.
    encoder: { 'assembly/codecs/zstd-encoder.ts': { zstdCompressBound: SIG.bound, zstdCompressFrame: 'level: i32, checksum: bool, src: usize, srcLen: i32, dst: usize, dstCap: i32' } },
    decoder: { 'assembly/codecs/zstd-decoder.ts': { zstdDecompressInto: SIG.decompress, zstdDecompressedSizeHint: SIG.hint } },
  },
}

/** Absolute path -> stub source for the modules `set` leaves out. */
export function codecStubs(set) {
  if (!set) return new Map()
  const files = {}
  for (const c of CODECS) {
    const bits = set[c] ?? 0
    const stubs = STUBS[c]
    if (bits === 0) Object.assign(files, stubs.both)
    else if (bits === ENCODER && stubs.decoder) Object.assign(files, stubs.decoder)
    else if (bits === DECODER && stubs.encoder) Object.assign(files, stubs.encoder)
  }
  return new Map(Object.entries(files).map(([file, fns]) => [
    resolve(root, file),
    `// Stub generated by scripts/build-wasm.mjs: this codec module is not part of this build.\n`
      + Object.entries(fns).map(([name, params]) => `export function ${name}(${params}): i32 { return -2 }\n`).join(''),
  ]))
}

/**
 * One entry per .wasm. `generated`/`constName` (optional) embed the module as base64 TypeScript;
 * `args` adds compiler flags for that target only. Only `core` is embedded: the variants are files.
 */
export const TARGETS = [
  {
    name: 'core',
    entry: 'assembly/index.ts',
    out: 'build/core.wasm',
    generated: 'src/edge/wasm/core.generated.ts',
    constName: 'CORE_WASM_BASE64',
    args: codecFlags(ALL),
    codecs: ALL,
    description: 'CRC + builder + gzip, snappy, lz4, zstd (encoders and decoders)',
  },
  variant('core-none', {}, 'CRC + builder, no codecs'),
  ...CODECS.map((c) => variant(`core-${c}`, { [c]: ENCODER | DECODER }, `CRC + builder + ${c} (encoder and decoder)`)),
  variant('core-encoders', Object.fromEntries(CODECS.map((c) => [c, ENCODER])), 'CRC + builder + the four encoders (no decoders)'),
]

// `minimal` runtime: TLSF gives heap.free/realloc with coalescing, which the batch regions need
// (the `stub` runtime never frees); its GC only runs when the host calls __collect, and the
// modules allocate no managed objects anyway. SIMD stays off: no kernel here gains from it, and
// Node 20, Chromium and workerd all run the baseline feature set. binaryen's --converge is opt-in:
// it quintuples the build time (this runs in every `npm test`) for ~40 bytes on the full core.
const RELEASE_FLAGS = ['-O3', '--noAssert', '--runtime', 'minimal']
const DEBUG_FLAGS = ['--debug', '--runtime', 'minimal']

export async function buildTarget(target, { debug = false, converge = false } = {}) {
  const started = performance.now()
  const out = resolve(root, target.out)
  await mkdir(dirname(out), { recursive: true })
  const argv = [
    resolve(root, target.entry),
    '--outFile', out,
    ...(debug ? [...DEBUG_FLAGS, '--textFile', out.replace(/\.wasm$/, '.wat')] : RELEASE_FLAGS),
    ...(converge && !debug ? ['--converge'] : []),
    ...(target.args ?? []),
  ]
  const asc = (await import('assemblyscript/asc')).default
  const stubs = codecStubs(target.codecs)
  let diagnostics = ''
  const { error } = await asc.main(argv, {
    readFile: async (name, baseDir) => {
      const file = resolve(baseDir, name)
      if (stubs.has(file)) return stubs.get(file)
      try { return await readFile(file, 'utf8') } catch { return null }
    },
    stdout: { write: (s) => { diagnostics += s; return true } },
    stderr: { write: (s) => { diagnostics += s; return true } },
  })
  if (error) throw new Error(`asc failed for ${target.name}: ${error.message}\n${diagnostics}`)
  if (diagnostics.trim()) process.stderr.write(`${target.name}: ${diagnostics}`)

  const bytes = await readFile(out)
  // Validate here so a broken module fails the build, not the first page that loads it.
  await WebAssembly.compile(bytes)
  if (target.generated) {
    // Typed `string` so the declaration file says so, rather than repeating the literal as its type.
    const ts = `// Generated by scripts/build-wasm.mjs from ${target.entry}; do not edit.\n`
      + `export const ${target.constName}: string = '${bytes.toString('base64')}'\n`
    await mkdir(dirname(resolve(root, target.generated)), { recursive: true })
    await writeFile(resolve(root, target.generated), ts)
  }
  return { name: target.name, out: target.out, bytes: bytes.length, ms: Math.round(performance.now() - started) }
}

/** Builds `targets` on `jobs` worker threads of this process (asc compiles synchronously, so one thread = one core). */
export async function buildTargets(targets, { debug = false, converge = false, jobs = defaultJobs(), onBuilt = () => {} } = {}) {
  if (jobs <= 1 || targets.length <= 1) {
    const results = []
    for (const t of targets) { const r = await buildTarget(t, { debug, converge }); onBuilt(r); results.push(r) }
    return results
  }
  // TARGETS order puts `core`, the longest build, first.
  const queue = [...targets]
  const results = []
  const worker = () => new Promise((resolveWorker, rejectWorker) => {
    const w = new Worker(fileURLToPath(import.meta.url))
    const next = () => {
      const t = queue.shift()
      if (!t) { w.terminate().then(() => resolveWorker()); return }
      w.postMessage({ name: t.name, debug, converge })
    }
    w.on('message', (m) => {
      if (m.error) { queue.length = 0; w.terminate(); rejectWorker(new Error(m.error)); return }
      onBuilt(m.result)
      results.push(m.result)
      next()
    })
    w.on('error', rejectWorker)
    next()
  })
  await Promise.all(Array.from({ length: Math.min(jobs, targets.length) }, worker))
  return targets.map((t) => results.find((r) => r.name === t.name))
}

function defaultJobs() {
  return 1
}

const STAMP = resolve(root, 'build/.core-build-stamp.json')

/** Hash of everything a build depends on: assembly sources, this script, the asc version, the flags. */
async function inputsHash(targets, flags) {
  const h = createHash('sha256')
  const walk = async (dir) => {
    for (const e of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = resolve(dir, e.name)
      if (e.isDirectory()) await walk(p)
      else if (e.name.endsWith('.ts')) h.update(p).update(await readFile(p))
    }
  }
  await walk(resolve(root, 'assembly'))
  h.update(await readFile(fileURLToPath(import.meta.url)))
  h.update(JSON.parse(await readFile(resolve(root, 'node_modules/assemblyscript/package.json'), 'utf8')).version)
  h.update(JSON.stringify({ targets, flags }))
  return h.digest('hex')
}

async function exists(p) {
  try { await stat(resolve(root, p)); return true } catch { return false }
}

async function upToDate(targets, hash) {
  try {
    const stamp = JSON.parse(await readFile(STAMP, 'utf8'))
    for (const t of targets) {
      if (stamp[t.name] !== hash || !(await exists(t.out)) || (t.generated && !(await exists(t.generated)))) return false
    }
    return true
  } catch {
    return false
  }
}

async function writeStamp(targets, hash) {
  let stamp = {}
  try { stamp = JSON.parse(await readFile(STAMP, 'utf8')) } catch {}
  for (const t of targets) stamp[t.name] = hash
  await writeFile(STAMP, JSON.stringify(stamp, null, 2) + '\n')
}

async function main() {
  const started = performance.now()
  const args = process.argv.slice(2)
  const debug = args.includes('--debug')
  const converge = args.includes('--converge')
  const jobsArg = args.find((a) => a.startsWith('--jobs='))
  const jobs = jobsArg ? Number(jobsArg.slice('--jobs='.length)) : defaultJobs()
  const names = args.filter((a) => !a.startsWith('--')).map((n) => (TARGETS.some((t) => t.name === n) ? n : `core-${n}`))
  const unknown = names.filter((n) => !TARGETS.some((t) => t.name === n))
  if (unknown.length) throw new Error(`unknown target(s) ${unknown.join(', ')}; known: ${TARGETS.map((t) => t.name).join(', ')}`)
  const selected = names.length ? TARGETS.filter((t) => names.includes(t.name)) : TARGETS
  const hash = debug ? '' : await inputsHash(TARGETS, { converge })
  if (!debug && !args.includes('--force') && (await upToDate(selected, hash))) {
    console.log(`${selected.map((t) => t.name).join(', ')}: up to date (sources unchanged; --force rebuilds)`)
    return
  }
  await buildTargets(selected, {
    debug, converge, jobs,
    onBuilt: (r) => console.log(`${r.name}: ${r.out} ${r.bytes} bytes${debug ? ' (debug)' : ''} in ${(r.ms / 1000).toFixed(1)}s`),
  })
  // A debug build overwrites the outputs, so it also invalidates the release stamp.
  await writeStamp(selected, hash)
  console.log(`built ${selected.length} target(s) in ${((performance.now() - started) / 1000).toFixed(1)}s (${Math.min(jobs, selected.length)} thread(s))`)
}

if (!isMainThread) {
  parentPort.on('message', async ({ name, debug, converge }) => {
    try {
      const result = await buildTarget(TARGETS.find((t) => t.name === name), { debug, converge })
      parentPort.postMessage({ result })
    } catch (err) {
      parentPort.postMessage({ error: err?.message ?? String(err) })
    }
  })
} else if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(err.message ?? err)
    process.exit(1)
  })
}
