// npm run bench -- instructions: CPU instructions per record under `valgrind --tool=callgrind`, a
// figure that stays the same whatever else the machine runs (wall-clock CPU figures on a shared
// 2-core box move with the neighbours). A fixed in-process workload, no broker, no sockets:
//   producer   createProducer on a virtual clock (test/sim's VirtualClock) with a stub transport, and
//              one send(record, callback) per record, as the produce suite's child does (BENCH_SEND=promise:
//              a .then per record instead): partitioning, the accumulator, WASM encoding and compression,
//              drain, Produce request framing, and the answer's path back to every record's callback. The stub answers ApiVersions, Metadata and
//              InitProducerId through test/sim's ModelCluster, and Produce itself from the request's
//              header fields: per request, never per record, so the count is the producer's.
//   encode     the WASM core alone: openBatch, append the same records, finish each batch at 16 KiB.
//              What the producer adds around the encoder is the difference.
//   zstd-wasm, zstd-codec   (BENCH_WORKLOADS=zstd-wasm,zstd-codec) one 16 KiB JSON batch (the codecs
//              suite's jsonEvents corpus, 32 seeds in turn, made before counting) compressed at level 3
//              per count: kafka-edge's WASM zstd (build/codecs-test.wasm, the codecs suite's module,
//              input copied into its memory) against the zstd-codec package (libzstd built by
//              Emscripten, its Simple.compress). BENCH_BATCHES_LOW / _HIGH (200 / 1,200), after
//              BENCH_ZSTD_WARMUP (300) batches; prints the Ir ratio zstd-codec / ours.
//   worker     (BENCH_WORKLOADS=worker) the telemetry Worker's POST /events of 100 events, app and
//              Durable Object in one Node process (bench/worker-inprocess.ts: node:sqlite for the
//              object's storage, the stub link and virtual clock below for its producer): parsing and
//              validation, the durable accept, the pump, the producer and the checkpoint saves, per
//              POST. BENCH_POSTS_LOW / _HIGH (20 / 120) after BENCH_POSTS_WARMUP (200). BENCH_WORKER_EVENT_IDS:
//              round (the worker suite's ids, which sort together), uuid (random UUIDs) or none (the app names them).
// Each workload runs twice in its own process, with BENCH_RECORDS_LOW and _HIGH records after the
// same warm-up and a full GC (global.gc()); (Ir(high) - Ir(low)) / (high - low) is the steady-state
// cost of one record, with node's start, WASM compilation and the JIT's warm-up cancelled out. V8
// runs with a GC schedule and WASM code that do not follow the clock (V8_FLAGS), and the producer
// child loads what connect() waits on before its virtual clock starts, so the count repeats however
// loaded the machine is; --trace-gc lines after the child's window marker give the mark-compacts and
// scavenges of each window, printed and kept in the JSON, and a run whose low and high windows differ
// in mark-compacts is flagged (WARNING, and `warning` in its JSON entry). Values: a pool of 4096 random
// A-Z arrays (distinct within any batch, so the codec works as on real data; the pool is made
// before the count starts to matter). Same settings as the produce suite: acks=all, idempotence,
// linger.ms 5, batch.size 16384, no key, 6 partitions (sticky).
//
//   npm run bench -- instructions
//   BENCH_CONFIGS=100:lz4,1024:lz4 (default; value bytes:codec[:shape], shape bytes (default), strings or
//   worker: see recordPool)  BENCH_RECORDS_LOW / _HIGH (2,000 / 32,000 at
//   100 B; 1 KB a quarter)  BENCH_WARMUP (5,000)  BENCH_WORKLOADS=producer,encode (default)
//   BENCH_V8_FLAGS="--flag ..." added after V8_FLAGS (to try one; the counts then compare only with
//   runs of the same flags, each flag moves them)
//   BENCH_ALLOC=1: no callgrind; bytes allocated per record and the functions that allocate them,
//   natively under V8's sampling heap profiler (bench/results/instructions-alloc.json)
// A whole run (8 processes) is about 2 minutes of CPU under callgrind, node's start most of it; three
// runs side by side gave the same figures to within one instruction per record (docs/benchmarks.md).
import { spawn, spawnSync } from 'node:child_process'
import { Session } from 'node:inspector'
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Link, LinkHandlers, Transport } from '../src/edge/transport/transport.js'
import { WORKER_EVENT_IDS, azFiller, eventsBody, printTable, report, writeReport, type BenchResult, SEND_FORM } from './lib.js'

const LOW = Number(process.env.BENCH_RECORDS_LOW ?? 2_000)
const HIGH = Number(process.env.BENCH_RECORDS_HIGH ?? 32_000)
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5_000)
/**
 * What a record holds: `bytes` (a Uint8Array value, the default), `strings` (the same value as a
 * string) or `worker` (the telemetry Worker's record: string key, value and three string headers).
 */
const SHAPES = ['bytes', 'strings', 'worker'] as const
type Shape = (typeof SHAPES)[number]
const CONFIGS = (process.env.BENCH_CONFIGS ?? '100:lz4,1024:lz4').split(',').map((c) => {
  const [bytes, compression, shape = 'bytes'] = c.split(':') as [string, string, Shape?]
  if (!SHAPES.includes(shape)) throw new Error(`BENCH_CONFIGS: unknown record shape '${shape}' in '${c}' (one of ${SHAPES.join(', ')})`)
  return { valueBytes: Number(bytes), compression, shape }
})
const configName = (c: { valueBytes: number; compression: string; shape: Shape }) =>
  `${c.valueBytes}B ${c.compression}${c.shape === 'bytes' ? '' : ` ${c.shape}`}${SEND_FORM === 'promise' ? ' promise' : ''}`
const WORKLOADS = (process.env.BENCH_WORKLOADS ?? 'producer,encode').split(',')
const ZSTD_WORKLOADS = ['zstd-wasm', 'zstd-codec']
const POSTS_LOW = Number(process.env.BENCH_POSTS_LOW ?? 20)
const POSTS_HIGH = Number(process.env.BENCH_POSTS_HIGH ?? 120)
const POSTS_WARMUP = Number(process.env.BENCH_POSTS_WARMUP ?? 200)
const EVENTS_PER_POST = 100
/** The worker suite's topic: 4 partitions. */
const WORKER_PARTITIONS = 4
const BATCHES_LOW = Number(process.env.BENCH_BATCHES_LOW ?? 200)
const BATCHES_HIGH = Number(process.env.BENCH_BATCHES_HIGH ?? 1_200)
const ZSTD_WARMUP = Number(process.env.BENCH_ZSTD_WARMUP ?? 300)
const ZSTD_BATCH = 16384
const ZSTD_LEVEL = 3
const TOPIC = 'bench'
const PARTITIONS = 6
const BATCH_SIZE = 16384
/**
 * V8 flags for a repeatable count. --predictable: no background compiler or GC threads racing the
 * main one. It still leaves the GC schedule to the clock, which valgrind slows 50 times and the
 * machine's load moves: the heap's growth and the memory reducer follow measured GC speed
 * (--predictable-gc-schedule fixes both, and the young generation at 4 MB semi-spaces), incremental
 * marking paces its steps by elapsed time and runs from delayed tasks (--no-incremental-marking: a
 * mark-compact is atomic and only allocation starts it); scavenge tasks and code flushing by age
 * are off, and the hash and random seeds fixed (node draws both at start). WASM: Liftoff code tiers
 * up to TurboFan through compile jobs that run when the task runner gets to them, so where in the
 * count the faster code starts moved from run to run (encode: 4,127 / 4,140 / 4,204); --no-liftoff
 * compiles every function with TurboFan at instantiation, the code a long-running producer runs
 * (two encode runs then differed by 870 and 1,258 instructions in totals of 450 and 574 million).
 * --expose-gc for the full GC before each window, --trace-gc to count the GCs inside it.
 */
const V8_FLAGS = ['--predictable', '--predictable-gc-schedule', '--no-incremental-marking', '--no-minor-gc-task',
  '--no-memory-reducer', '--no-flush-bytecode', '--no-flush-baseline-code', '--hash-seed=1', '--random-seed=1', '--no-liftoff',
  '--expose-gc', '--trace-gc', ...(process.env.BENCH_V8_FLAGS ?? '').split(/\s+/).filter(Boolean)]
/** The child prints this line where the measured part starts: --trace-gc lines after it are the window's GCs. */
const WINDOW_START = '-- window start --'

export default async function instructions(args: string[]): Promise<void> {
  if (args[0] === '--child') { await child(args.slice(1)); return }
  if (process.env.BENCH_ALLOC === '1') { await allocations(); return }
  const valgrind = spawnSync('valgrind', ['--version'], { encoding: 'utf8' })
  if (valgrind.status !== 0) throw new Error('valgrind is not installed (apt-get install valgrind)')
  const peers = await import('./peers.js')
  peers.ensurePeers()
  const { compileChild } = await import('./produce.js')
  const childJs = compileChild('instructions')
  const node = peers.NODE22
  const loadBefore = loadavg()
  const results: BenchResult[] = []
  const runs: Array<Record<string, unknown>> = []
  const recordWorkloads = WORKLOADS.filter((w) => !ZSTD_WORKLOADS.includes(w) && w !== 'worker')
  const workerWorkload = WORKLOADS.includes('worker')
  const zstdWorkloads = WORKLOADS.filter((w) => ZSTD_WORKLOADS.includes(w))
  let wasmPath = ''
  if (zstdWorkloads.length) {
    const harness = await import('../test/helpers/codec-harness.js')
    await harness.ensureTestWasm()
    wasmPath = harness.TEST_WASM
  }
  // Every process at once (niced): the counts do not depend on what runs beside them.
  const counted = new Map<string, Promise<ChildCount>>()
  const count = (w: string, n: number, c: { valueBytes: number; compression: string; shape: Shape }) => {
    const key = `${w} ${n} ${c.valueBytes} ${c.compression} ${c.shape}`
    // Records acknowledged (after the producer's warm-up), batches compressed, or the worker's POSTs answered 202.
    const expected = n + (w === 'producer' ? WARMUP : 0)
    if (!counted.has(key)) counted.set(key, countInstructions(node, childJs, [w, String(n), c.compression, String(c.valueBytes), wasmPath, c.shape], expected))
    return counted.get(key)!
  }
  const sizes = (c: { valueBytes: number }) => {
    const scale = Math.min(1, 256 / c.valueBytes)
    return { low: Math.round(LOW * scale), high: Math.round(HIGH * scale) }
  }
  const zstdConfig = { valueBytes: ZSTD_BATCH, compression: 'zstd', shape: 'bytes' as const }
  for (const w of zstdWorkloads) { void count(w, BATCHES_LOW, zstdConfig).catch(() => {}); void count(w, BATCHES_HIGH, zstdConfig).catch(() => {}) }
  const workerConfig = { valueBytes: 0, compression: 'none', shape: 'worker' as const }
  if (workerWorkload) { void count('worker', POSTS_LOW, workerConfig).catch(() => {}); void count('worker', POSTS_HIGH, workerConfig).catch(() => {}) }
  for (const c of recordWorkloads.length ? CONFIGS : []) {
    for (const w of recordWorkloads) { void count(w, sizes(c).low, c).catch(() => {}); void count(w, sizes(c).high, c).catch(() => {}) }
  }
  const perBatch: Record<string, number> = {}
  for (const w of zstdWorkloads) {
    const a = await count(w, BATCHES_LOW, zstdConfig)
    const b = await count(w, BATCHES_HIGH, zstdConfig)
    const ir = (b.ir - a.ir) / (BATCHES_HIGH - BATCHES_LOW)
    perBatch[w] = ir
    const ratio = (BATCHES_HIGH - BATCHES_LOW) * ZSTD_BATCH / (b.bytes - a.bytes)
    runs.push({ workload: w, config: `16KiB json zstd level ${ZSTD_LEVEL}`, low: { batches: BATCHES_LOW, ...gcFields(a) }, high: { batches: BATCHES_HIGH, ...gcFields(b) }, ...gcMismatch(w, a, b) })
    console.log(`  16KiB json zstd-${ZSTD_LEVEL} ${w.padEnd(10)} ${Math.round(ir).toLocaleString()} instructions/batch, ratio ${ratio.toFixed(3)} (Ir ${a.ir.toLocaleString()} at ${BATCHES_LOW}, ${b.ir.toLocaleString()} at ${BATCHES_HIGH}; ${gcText(a, b)})`)
    results.push({ impl: w === 'zstd-wasm' ? 'kafka-edge-wasm' : w, metric: `instructions/batch @16KiB json zstd level ${ZSTD_LEVEL}`, unit: 'Ir', value: Math.round(ir) })
    results.push({ impl: w === 'zstd-wasm' ? 'kafka-edge-wasm' : w, metric: `ratio @16KiB json zstd level ${ZSTD_LEVEL}`, unit: 'ratio', value: Number(ratio.toFixed(4)) })
  }
  if (perBatch['zstd-wasm'] !== undefined && perBatch['zstd-codec'] !== undefined) {
    const x = perBatch['zstd-codec'] / perBatch['zstd-wasm']
    console.log(`  zstd-codec Ir / kafka-edge Ir per 16 KiB batch: ${x.toFixed(3)}x`)
    results.push({ impl: 'kafka-edge-wasm', metric: `zstd-codec Ir / ours @16KiB json zstd level ${ZSTD_LEVEL}`, unit: 'x', value: Number(x.toFixed(3)) })
  }
  if (workerWorkload) {
    const a = await count('worker', POSTS_LOW, workerConfig)
    const b = await count('worker', POSTS_HIGH, workerConfig)
    const ir = (b.ir - a.ir) / (POSTS_HIGH - POSTS_LOW)
    const config = `POST /events of ${EVENTS_PER_POST} events, durable accept`
    runs.push({ workload: 'worker', config, low: { posts: POSTS_LOW, ...gcFields(a) }, high: { posts: POSTS_HIGH, ...gcFields(b) }, perPost: Math.round(ir), ...gcMismatch('worker', a, b) })
    console.log(`  worker ${config}: ${Math.round(ir).toLocaleString()} instructions/POST, ${Math.round(ir / EVENTS_PER_POST).toLocaleString()} per event (Ir ${a.ir.toLocaleString()} at ${POSTS_LOW}, ${b.ir.toLocaleString()} at ${POSTS_HIGH}; ${gcText(a, b)})`)
    results.push({ impl: 'kafka-edge worker', metric: `instructions/POST @${config}`, unit: 'Ir', value: Math.round(ir) })
  }
  for (const c of recordWorkloads.length ? CONFIGS : []) {
    const { low, high } = sizes(c)
    const perRecord: Record<string, number> = {}
    for (const w of recordWorkloads) {
      const a = await count(w, low, c)
      const b = await count(w, high, c)
      const ir = (b.ir - a.ir) / (high - low)
      perRecord[w] = ir
      runs.push({
        workload: w, config: configName(c), low: { records: low, ...gcFields(a) }, high: { records: high, ...gcFields(b) }, perRecord: Math.round(ir), ...gcMismatch(w, a, b),
      })
      console.log(`  ${configName(c)} ${w.padEnd(8)} ${Math.round(ir).toLocaleString()} instructions/record (Ir ${a.ir.toLocaleString()} at ${low.toLocaleString()}, ${b.ir.toLocaleString()} at ${high.toLocaleString()}; ${gcText(a, b)})`)
      results.push({ impl: `kafka-edge ${w}`, metric: `instructions/record @${configName(c)}`, unit: 'Ir', value: Math.round(ir) })
    }
    if (perRecord.producer !== undefined && perRecord.encode !== undefined) results.push({ impl: 'kafka-edge producer', metric: `around the encoder @${configName(c)}`, unit: 'Ir', value: Math.round(perRecord.producer - perRecord.encode) })
  }
  printTable(results, recordWorkloads.length ? 'kafka-edge encode' : zstdWorkloads.length ? 'kafka-edge-wasm' : 'kafka-edge worker')
  const file = writeReport(report(recordWorkloads.length ? 'instructions' : zstdWorkloads.length ? 'instructions-zstd' : 'instructions-worker', {
    tool: `${valgrind.stdout.trim()} --tool=callgrind`, node: spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim(), v8Flags: V8_FLAGS,
    method: '(Ir at the high record count - Ir at the low one) / (high - low), each a separate process after the same warm-up and a full GC (global.gc()); GCs in each window from --trace-gc',
    warmupRecords: WARMUP, ...(workerWorkload ? { worker: { warmupPosts: POSTS_WARMUP, eventsPerPost: EVENTS_PER_POST, partitions: WORKER_PARTITIONS, storage: 'node:sqlite (WAL), statements cached by text', body: 'the worker suite\'s: type bench, id, key user-(i % 20), data { r, i, path }', eventIds: WORKER_EVENT_IDS } } : {}), ...(zstdWorkloads.length ? { zstd: { batchBytes: ZSTD_BATCH, level: ZSTD_LEVEL, warmupBatches: ZSTD_WARMUP, inputs: '32 jsonEvents(16384, 101 + k) in turn' } } : {}), producer: `send(record${SEND_FORM === 'callback' ? ', callback)' : ').then(...)'} per record, acks=all, enable.idempotence=true, linger.ms=5, batch.size=16384, no key, 6 partitions, virtual clock, stub transport`, runs,
    loadAverage: { before: loadBefore, after: loadavg(), note: 'instruction counts do not depend on it' },
  }, results))
  console.log(`wrote ${file}`)
}

/**
 * BENCH_ALLOC=1: what the record workloads allocate per record, and where, natively (no valgrind):
 * one child per configuration under V8's sampling heap profiler (every 256 bytes, objects that
 * either GC collected included), from the window's start to its end. Sampled, so a function's
 * figure moves by a few bytes per record between runs; the total is the number to compare.
 */
async function allocations(): Promise<void> {
  const peers = await import('./peers.js')
  peers.ensurePeers()
  const { compileChild } = await import('./produce.js')
  const childJs = compileChild('instructions')
  const results: BenchResult[] = []
  const runs: Array<Record<string, unknown>> = []
  const workloads = WORKLOADS.filter((w) => !ZSTD_WORKLOADS.includes(w))
  for (const c of CONFIGS) {
    for (const w of workloads) {
      const n = Math.round(200_000 * Math.min(1, 256 / c.valueBytes))
      const out = spawnSync(peers.NODE22, ['--expose-gc', childJs, '--child', w, String(n), c.compression, String(c.valueBytes), '', c.shape],
        { encoding: 'utf8', env: { ...process.env, BENCH_ALLOC_CHILD: '1' }, maxBuffer: 64 << 20 })
      if (out.status !== 0) throw new Error(`allocation child failed (${out.status}):\n${out.stderr.slice(-3000)}`)
      const line = out.stdout.split('\n').find((l) => l.startsWith('{"alloc"'))
      if (!line) throw new Error(`the allocation child printed no profile:\n${out.stdout.slice(-2000)}`)
      const { alloc } = JSON.parse(line) as { alloc: Array<{ frame: string; bytes: number }> }
      const total = alloc.reduce((t, a) => t + a.bytes, 0)
      const top = alloc.slice(0, 12).map((a) => ({ frame: a.frame, bytesPerRecord: Math.round(a.bytes / n), share: Number((a.bytes / total).toFixed(3)) }))
      console.log(`  ${configName(c)} ${w}: ${Math.round(total / n).toLocaleString()} bytes allocated per record`)
      for (const t of top) console.log(`    ${String(t.bytesPerRecord).padStart(6)} B  ${(100 * t.share).toFixed(1).padStart(5)}%  ${t.frame}`)
      runs.push({ workload: w, config: configName(c), records: n, bytesPerRecord: Math.round(total / n), top })
      results.push({ impl: `kafka-edge ${w}`, metric: `bytes allocated/record @${configName(c)}`, unit: 'B', value: Math.round(total / n) })
    }
  }
  printTable(results, results[0]!.impl)
  const file = writeReport(report('instructions-alloc', {
    node: spawnSync(peers.NODE22, ['--version'], { encoding: 'utf8' }).stdout.trim(),
    method: 'HeapProfiler.startSampling (samplingInterval 256, includeObjectsCollectedByMajorGC and ...MinorGC) in the child from the window start (after the warm-up and a full GC) to the last record acknowledged; self bytes per function',
    warmupRecords: WARMUP, runs,
  }, results))
  console.log(`wrote ${file}`)
}

const gcFields = (c: ChildCount) => ({ ir: c.ir, markCompacts: c.markCompacts, scavenges: c.scavenges })
const gcText = (a: ChildCount, b: ChildCount) => `mark-compacts in the windows ${a.markCompacts}/${b.markCompacts}, scavenges ${a.scavenges}/${b.scavenges}`

/**
 * A mark-compact in the high window only is 20-25 million instructions (and a recompiled send path)
 * spread over the records: the figure then depends on where the heap's limit falls, not only on the
 * code, so the run says so, and the JSON keeps it.
 */
function gcMismatch(w: string, a: ChildCount, b: ChildCount): { warning?: string } {
  if (a.markCompacts === b.markCompacts) return {}
  const warning = `${w}: ${a.markCompacts} mark-compacts in the low window, ${b.markCompacts} in the high one; compare only with runs of the same counts`
  console.log(`WARNING: ${warning}`)
  return { warning }
}

/** The process's Ir, and the major and minor GCs --trace-gc reported inside its window. */
interface ChildCount { ir: number; bytes: number; markCompacts: number; scavenges: number }

async function countInstructions(node: string, childJs: string, childArgs: string[], expected: number): Promise<ChildCount> {
  const dir = mkdtempSync(join(tmpdir(), 'kafka-edge-callgrind-'))
  try {
    const out = join(dir, 'callgrind.out')
    const proc = spawn('nice', ['-n', '10', 'valgrind', '--tool=callgrind', '--smc-check=all-non-file', `--callgrind-out-file=${out}`,
      node, ...V8_FLAGS, childJs, '--child', ...childArgs], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    proc.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
    proc.stderr.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-3000) })
    const code = await new Promise<number | null>((resolve, reject) => { proc.once('error', reject); proc.once('close', resolve) })
    if (code !== 0) throw new Error(`callgrind run failed (${code}):\n${stderr}`)
    const lines = stdout.trim().split('\n')
    const done = JSON.parse(lines.pop()!) as { acked: number; errors: number; bytes?: number }
    if (done.errors > 0 || done.acked !== expected) throw new Error(`${childArgs[0]}: ${done.errors} errors, ${done.acked} acknowledged of ${expected}`)
    const start = lines.indexOf(WINDOW_START)
    if (start < 0) throw new Error(`${childArgs[0]}: no window marker in the child's output`)
    const gcs = lines.slice(start + 1)
    const totals = /^(?:totals|summary): (\d+)/m.exec(readFileSync(out, 'utf8'))
    if (!totals) throw new Error(`no totals in ${out}`)
    return {
      ir: Number(totals[1]), bytes: done.bytes ?? 0,
      markCompacts: gcs.filter((l) => l.includes('Mark-Compact')).length, scavenges: gcs.filter((l) => l.includes('Scavenge')).length,
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

// ---- the child ------------------------------------------------------------------------------------

function valuePool(valueBytes: number): Uint8Array[] {
  const fill = azFiller(0x9e3779b9)
  return Array.from({ length: 4096 }, () => {
    const v = new Uint8Array(valueBytes)
    fill(v, 0, valueBytes)
    return v
  })
}

/** Makes record `i` of the shape, from pools made before the count (the loop only picks from them). */
type MakeRecord = (i: number) => { key: Uint8Array | string | null; value: Uint8Array | string; headers?: Array<{ key: string; value: string }>; timestamp?: number }

function recordPool(valueBytes: number, shape: Shape): MakeRecord {
  const bytes = valuePool(valueBytes)
  if (shape === 'bytes') return (i) => ({ key: null, value: bytes[i & 4095]! })
  const strings = bytes.map((v) => String.fromCharCode(...v))
  if (shape === 'strings') return (i) => ({ key: null, value: strings[i & 4095]! })
  // The Worker's send(): a key per client and key slot, the event's JSON text, its three headers in a
  // new array per record, and the event's own timestamp (src/edge/worker/producer-object.ts).
  const keys = Array.from({ length: 256 }, (_, k) => `c${k >> 2}-k${k & 3}`)
  const ids = Array.from({ length: 4096 }, (_, k) => `0190a1b2-c3d4-7e5f-8a9b-${k.toString(16).padStart(12, '0')}`)
  return (i) => ({
    key: keys[i & 255]!, value: strings[i & 4095]!,
    headers: [{ key: 'event-type', value: 'page_view' }, { key: 'content-type', value: 'application/json' }, { key: 'event-id', value: ids[i & 4095]! }],
    timestamp: 1_700_000_000_000 + (i & 4095),
  })
}

/**
 * A full GC, then the marker: low and high runs enter their windows from the same heap, so no
 * mark-compact left pending by the warm-up falls into one of them and not the other (a mark-compact
 * also drops optimized code that embeds maps it frees, and the send path compiles again after it).
 */
function startWindow(): void {
  const gc = (globalThis as { gc?: () => void }).gc
  if (!gc) throw new Error('the instructions child needs --expose-gc')
  gc()
  process.stdout.write(`${WINDOW_START}\n`)
  if (process.env.BENCH_ALLOC_CHILD === '1') {
    // An in-process session dispatches at once: sampling has begun when post() returns.
    allocSession.connect()
    allocSession.post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
  }
}

const allocSession = new Session()

/** The sampled bytes since startWindow, by allocating function (self), largest first. */
function allocSummary(): Promise<Array<{ frame: string; bytes: number }>> {
  type Node = { callFrame: { functionName: string; url: string; lineNumber: number }; selfSize: number; children: Node[] }
  return new Promise((resolve, reject) => allocSession.post('HeapProfiler.stopSampling', (e, r) => {
    if (e) { reject(e); return }
    const by = new Map<string, number>()
    const walk = (n: Node) => {
      const f = n.callFrame
      const frame = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop() ?? ''}:${f.lineNumber + 1}`
      by.set(frame, (by.get(frame) ?? 0) + n.selfSize)
      n.children.forEach(walk)
    }
    walk((r as unknown as { profile: { head: Node } }).profile.head)
    resolve([...by].map(([frame, bytes]) => ({ frame, bytes })).filter((a) => a.bytes > 0).sort((a, b) => b.bytes - a.bytes))
  }))
}

async function child(args: string[]): Promise<void> {
  const [workload, nText, compression, bytesText, wasmPath, shape] = args as [string, string, string, string, string, Shape]
  const n = Number(nText)
  if (ZSTD_WORKLOADS.includes(workload)) {
    const r = await compressBatches(workload, n, wasmPath)
    process.stdout.write(JSON.stringify({ acked: r.ok, errors: 0, bytes: r.bytes }) + '\n')
    process.exit(0)
  }
  if (workload === 'worker') {
    const r = await workerPosts(POSTS_WARMUP, n)
    process.stdout.write(JSON.stringify({ acked: r.ok, errors: r.errors }) + '\n')
    process.exit(0)
  }
  const pool = recordPool(Number(bytesText), shape)
  const acked = workload === 'producer' ? await produce(WARMUP, n, compression, pool) : await encode(n, compression, pool)
  if (process.env.BENCH_ALLOC_CHILD === '1') process.stdout.write(JSON.stringify({ alloc: await allocSummary() }) + '\n')
  process.stdout.write(JSON.stringify({ acked: acked.ok, errors: acked.errors }) + '\n')
  process.exit(0)
}

/** Compresses n 16 KiB JSON batches after the warm-up; the bytes out count only the n. */
async function compressBatches(workload: string, n: number, wasmPath: string): Promise<{ ok: number; bytes: number }> {
  const { Codecs, CODEC_IDS, jsonEvents } = await import('../test/helpers/codec-harness.js')
  const inputs = Array.from({ length: 32 }, (_, k) => jsonEvents(ZSTD_BATCH, 101 + k))
  let compress: (src: Uint8Array) => number
  if (workload === 'zstd-wasm') {
    const x = (await Codecs.load(readFileSync(wasmPath))).x
    const id = CODEC_IDS.zstd
    const cap = x.compressBound(id, ZSTD_BATCH)
    const base = x.arena(ZSTD_BATCH + cap)
    const dst = base + ZSTD_BATCH
    compress = (src) => {
      new Uint8Array(x.memory.buffer, base, src.length).set(src)
      const r = x.compressInto(id, ZSTD_LEVEL, base, src.length, dst, cap)
      if (r < 0) throw new Error(`zstd compressInto ${r}`)
      return r
    }
  } else {
    const { createRequire } = await import('node:module')
    type Simple = { compress(b: Uint8Array, level: number): Uint8Array }
    const zc = createRequire(import.meta.url)('zstd-codec') as { ZstdCodec: { run(cb: (z: { Simple: new () => Simple }) => void): void } }
    const simple = await new Promise<Simple>((resolve) => zc.ZstdCodec.run((z) => resolve(new z.Simple())))
    compress = (src) => simple.compress(src, ZSTD_LEVEL).length
  }
  for (let i = 0; i < ZSTD_WARMUP; i++) compress(inputs[i & 31]!)
  startWindow()
  let bytes = 0
  for (let i = 0; i < n; i++) bytes += compress(inputs[i & 31]!)
  return { ok: n, bytes }
}

async function produce(warmup: number, n: number, compression: string, make: MakeRecord): Promise<{ ok: number; errors: number }> {
  const { createProducer } = await import('../src/edge/producer/producer.js')
  const { VirtualClock } = await import('../test/sim/virtual-clock.js')
  const { ModelCluster } = await import('../test/sim/model-broker.js')
  // The virtual clock runs ahead while a promise waits on real I/O: loading the WASM core (file read,
  // compilation) or a module inside connect() would let a load-dependent span of virtual time pass,
  // with its timers, retries and allocations (the heap at the window's start moved by 2 MB natively).
  await (await import('../src/edge/wasm/core.js')).loadCore()
  const protocol = await import('../src/edge/protocol/index.js')
  const clock = new VirtualClock()
  const model = new ModelCluster({ brokers: 1, topics: { [TOPIC]: PARTITIONS } }, () => 0.5, () => clock.now())
  const p = createProducer({
    'bootstrap.servers': 'broker0.sim:9092', transport: new StubTransport(model, clock, protocol), clock, random: () => 0.5,
    acks: 'all', 'enable.idempotence': true, 'compression.type': compression as 'lz4', 'linger.ms': 5,
  })
  let ok = 0
  let errors = 0
  const done = () => { ok++ }
  const fail = () => { errors++ }
  const callback = (_md: unknown, e: Error | null) => { if (e) errors++; else ok++ }
  const settleWhile = async (busy: () => boolean) => { while (busy()) await clock.run({ until: clock.now() + 1000, done: () => !busy() }) }
  let connected = false
  p.connect().then(() => { connected = true }, fail)
  await settleWhile(() => !connected && errors === 0)
  // The produce suite's loop: an event-loop turn every 1024 sends (here 2 ms of virtual time pass in it).
  const loop = async (count: number) => {
    for (let i = 0; i < count; i++) {
      const r = make(i)
      if (SEND_FORM === 'callback') p.send({ topic: TOPIC, key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp }, callback)
      else p.send({ topic: TOPIC, key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp }).then(done, fail)
      if ((i & 1023) === 1023) await clock.run({ until: clock.now() + 2 })
    }
    let flushed = false
    p.flush().then(() => { flushed = true }, fail)
    await settleWhile(() => !flushed && errors === 0)
  }
  await loop(warmup)
  startWindow()
  await loop(n)
  let closed = false
  p.close().then(() => { closed = true }, fail)
  await settleWhile(() => !closed && errors === 0)
  return { ok, errors }
}

/**
 * The Worker's POSTs, app and object in this process: `warmup` of them, then the window's `n`. ok
 * counts the window's POSTs answered 202; every event of every POST must have been produced.
 */
async function workerPosts(warmup: number, n: number): Promise<{ ok: number; errors: number }> {
  const { VirtualClock } = await import('../test/sim/virtual-clock.js')
  const { ModelCluster } = await import('../test/sim/model-broker.js')
  const protocol = await import('../src/edge/protocol/index.js')
  const { startWorker } = await import('./worker-inprocess.js')
  const clock = new VirtualClock()
  const model = new ModelCluster({ brokers: 1, topics: { [TOPIC]: WORKER_PARTITIONS } }, () => 0.5, () => clock.now())
  const worker = await startWorker({
    topic: TOPIC, transport: new StubTransport(model, clock, protocol), clock,
    settle: async (done) => { while (!done()) await clock.run({ until: clock.now() + 1000, done }) },
  })
  // The clients' bodies are made before the count: only the Worker's work is in it.
  const bodies = Array.from({ length: warmup + n }, (_, r) => eventsBody(r, EVENTS_PER_POST, WORKER_EVENT_IDS))
  let ok = 0
  let errors = 0
  const run = async (from: number, count: number) => {
    for (let r = from; r < from + count; r++) {
      if ((await worker.post(bodies[r]!)) === 202) ok++
      else errors++
    }
  }
  await run(0, warmup)
  ok = 0
  startWindow()
  await run(warmup, n)
  const produced = await worker.produced()
  if (produced !== (warmup + n) * EVENTS_PER_POST) {
    console.error(`worker: ${produced} events produced of ${(warmup + n) * EVENTS_PER_POST}`)
    errors++
  }
  await worker.close()
  return { ok, errors }
}

function encode(n: number, compression: string, make: MakeRecord): Promise<{ ok: number; errors: number }> {
  return (async () => {
    const { loadCore } = await import('../src/edge/wasm/core.js')
    const core = await loadCore()
    const stamp = { producerId: 1000n, producerEpoch: 0, baseSequence: 0, transactional: false }
    const run = (count: number) => {
      let batch = core.openBatch({ compression: compression as 'lz4' })
      for (let i = 0; i < count; i++) {
        const record = { ...make(i), timestamp: 1_700_000_000_000 }
        // Sized as send() sizes it: staged, then measured by what was written (append() finds it staged).
        core.stage(record)
        if (batch.recordCount > 0 && batch.estimatedSizeWith(record, core.stagedBaseSize) > BATCH_SIZE) {
          batch.finish(stamp)
          batch = core.openBatch({ compression: compression as 'lz4' })
        }
        batch.append(record)
      }
      batch.finish(stamp)
    }
    run(WARMUP)
    startWindow()
    run(n)
    return { ok: n, errors: 0 }
  })()
}

/**
 * A link per broker that answers at once (1 ms of virtual time later): Produce from its header
 * fields (each partition's batch header gives the record count), everything else through the model.
 */
class StubTransport implements Transport {
  readonly name = 'stub'
  constructor(
    private readonly model: import('../test/sim/model-broker.js').ModelCluster,
    private readonly clock: import('../test/sim/virtual-clock.js').VirtualClock,
    private readonly protocol: typeof import('../src/edge/protocol/index.js'),
  ) {}

  open(address: { host: string; port: number }, handlers: LinkHandlers): Promise<Link> {
    const node = this.model.nodeFor(address.host, address.port)
    const { Produce, decodeRequest, encodeResponse } = this.protocol
    const offsets = new Map<string, bigint>()
    const answer = (frame: Uint8Array): Uint8Array | null => {
      if (((frame[4]! << 8) | frame[5]!) !== Produce.key) return this.model.handle(node, frame)
      const { header, body } = decodeRequest(frame)
      const topics = body!.topicData as Array<{ name: string; partitionData: Array<{ index: number; records: Uint8Array }> }>
      const responses = topics.map((t) => ({
        name: t.name,
        partitionResponses: t.partitionData.map((pd) => {
          const key = `${t.name}:${pd.index}`
          const base = offsets.get(key) ?? 0n
          const count = new DataView(pd.records.buffer, pd.records.byteOffset).getInt32(57)
          offsets.set(key, base + BigInt(count))
          return { index: pd.index, errorCode: 0, baseOffset: base, logAppendTimeMs: -1n, logStartOffset: 0n, recordErrors: [], errorMessage: null }
        }),
      }))
      return encodeResponse(Produce, header.apiVersion, header.correlationId, { responses, throttleTimeMs: 0, nodeEndpoints: [] })
    }
    return Promise.resolve({
      write: (frame) => {
        const res = answer(frame)
        if (res) this.clock.setTimeout(() => handlers.onFrame(res.subarray(4)), 1)
        return Promise.resolve()
      },
      close: () => {},
    })
  }
}

// Run as a compiled child: `node <dist>/bench/instructions.js --child ...`.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) await instructions(process.argv.slice(2))
