// npm run bench -- instructions: CPU instructions per record under `valgrind --tool=callgrind`, a
// figure that stays the same whatever else the machine runs (wall-clock CPU figures on a shared
// 2-core box move with the neighbours). A fixed in-process workload, no broker, no sockets:
//   producer   createProducer on a virtual clock (test/sim's VirtualClock) with a stub transport, and
//              one send() per record with a .then, as the produce suite's child does: partitioning,
//              the accumulator, WASM encoding and compression, drain, Produce request framing, and the
//              answer's path back to every record's promise. The stub answers ApiVersions, Metadata and
//              InitProducerId through test/sim's ModelCluster, and Produce itself from the request's
//              header fields: per request, never per record, so the count is the producer's.
//   encode     the WASM core alone: openBatch, append the same records, finish each batch at 16 KiB.
//              What the producer adds around the encoder is the difference.
// Each workload runs twice in its own process, with BENCH_RECORDS_LOW and _HIGH records after the
// same warm-up; (Ir(high) - Ir(low)) / (high - low) is the steady-state cost of one record, with
// node's start, WASM compilation and the JIT's warm-up cancelled out. Values: a pool of 4096 random
// A-Z arrays (distinct within any batch, so the codec works as on real data; the pool is made
// before the count starts to matter). Same settings as the produce suite: acks=all, idempotence,
// linger.ms 5, batch.size 16384, no key, 6 partitions (sticky).
//
//   npm run bench -- instructions
//   BENCH_CONFIGS=100:lz4,1024:lz4 (default; value bytes:codec)  BENCH_RECORDS_LOW / _HIGH (2,000 / 12,000 at
//   100 B; 1 KB a quarter)  BENCH_WARMUP (5,000)  BENCH_WORKLOADS=producer,encode (default)
// Each process takes 30-40 s of CPU under callgrind (node's start is most of it).
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Link, LinkHandlers, Transport } from '../src/edge/transport/transport.js'
import { printTable, report, writeReport, type BenchResult } from './lib.js'

const LOW = Number(process.env.BENCH_RECORDS_LOW ?? 2_000)
const HIGH = Number(process.env.BENCH_RECORDS_HIGH ?? 12_000)
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5_000)
const CONFIGS = (process.env.BENCH_CONFIGS ?? '100:lz4,1024:lz4').split(',').map((c) => {
  const [bytes, compression] = c.split(':') as [string, string]
  return { valueBytes: Number(bytes), compression }
})
const WORKLOADS = (process.env.BENCH_WORKLOADS ?? 'producer,encode').split(',')
const TOPIC = 'bench'
const PARTITIONS = 6
const BATCH_SIZE = 16384
/**
 * V8 flags for a repeatable count: no background compiler or GC threads racing the main one, fixed
 * seeds (two runs of 4,000 records differed by 0.06% of their Ir with it, 0.15% with --single-threaded alone).
 */
const V8_FLAGS = ['--predictable']

export default async function instructions(args: string[]): Promise<void> {
  if (args[0] === '--child') { await child(args.slice(1)); return }
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
  // Every process at once (niced): the counts do not depend on what runs beside them.
  const counted = new Map<string, Promise<{ ir: number }>>()
  const count = (w: string, n: number, c: { valueBytes: number; compression: string }) => {
    const key = `${w} ${n} ${c.valueBytes} ${c.compression}`
    if (!counted.has(key)) counted.set(key, countInstructions(node, childJs, w, n, c))
    return counted.get(key)!
  }
  const sizes = (c: { valueBytes: number }) => {
    const scale = Math.min(1, 256 / c.valueBytes)
    return { low: Math.round(LOW * scale), high: Math.round(HIGH * scale) }
  }
  for (const c of CONFIGS) for (const w of WORKLOADS) { void count(w, sizes(c).low, c).catch(() => {}); void count(w, sizes(c).high, c).catch(() => {}) }
  for (const c of CONFIGS) {
    const { low, high } = sizes(c)
    const perRecord: Record<string, number> = {}
    for (const w of WORKLOADS) {
      const a = await count(w, low, c)
      const b = await count(w, high, c)
      const ir = (b.ir - a.ir) / (high - low)
      perRecord[w] = ir
      runs.push({ workload: w, config: `${c.valueBytes}B ${c.compression}`, low: { records: low, ir: a.ir }, high: { records: high, ir: b.ir } })
      console.log(`  ${c.valueBytes}B ${c.compression} ${w.padEnd(8)} ${Math.round(ir).toLocaleString()} instructions/record (Ir ${a.ir.toLocaleString()} at ${low.toLocaleString()}, ${b.ir.toLocaleString()} at ${high.toLocaleString()})`)
      results.push({ impl: `kafka-edge ${w}`, metric: `instructions/record @${c.valueBytes}B ${c.compression}`, unit: 'Ir', value: Math.round(ir) })
    }
    if (perRecord.producer !== undefined && perRecord.encode !== undefined) results.push({ impl: 'kafka-edge producer', metric: `around the encoder @${c.valueBytes}B ${c.compression}`, unit: 'Ir', value: Math.round(perRecord.producer - perRecord.encode) })
  }
  printTable(results, 'kafka-edge encode')
  const file = writeReport(report('instructions', {
    tool: `${valgrind.stdout.trim()} --tool=callgrind`, node: spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim(), v8Flags: V8_FLAGS,
    method: '(Ir at the high record count - Ir at the low one) / (high - low), each a separate process after the same warm-up',
    warmupRecords: WARMUP, producer: 'acks=all, enable.idempotence=true, linger.ms=5, batch.size=16384, no key, 6 partitions, virtual clock, stub transport', runs,
    loadAverage: { before: loadBefore, after: loadavg(), note: 'instruction counts do not depend on it' },
  }, results))
  console.log(`wrote ${file}`)
}

async function countInstructions(node: string, childJs: string, workload: string, records: number, c: { valueBytes: number; compression: string }): Promise<{ ir: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'kafka-edge-callgrind-'))
  try {
    const out = join(dir, 'callgrind.out')
    const proc = spawn('nice', ['-n', '10', 'valgrind', '--tool=callgrind', '--smc-check=all-non-file', `--callgrind-out-file=${out}`,
      node, ...V8_FLAGS, childJs, '--child', workload, String(records), c.compression, String(c.valueBytes)], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    proc.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
    proc.stderr.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-3000) })
    const code = await new Promise<number | null>((resolve, reject) => { proc.once('error', reject); proc.once('close', resolve) })
    if (code !== 0) throw new Error(`callgrind run failed (${code}):\n${stderr}`)
    const done = JSON.parse(stdout.trim().split('\n').pop()!) as { acked: number; errors: number }
    if (done.errors > 0 || done.acked !== records + (workload === 'producer' ? WARMUP : 0)) throw new Error(`${workload}: ${done.errors} errors, ${done.acked} acknowledged of ${records}`)
    const totals = /^(?:totals|summary): (\d+)/m.exec(readFileSync(out, 'utf8'))
    if (!totals) throw new Error(`no totals in ${out}`)
    return { ir: Number(totals[1]) }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

// ---- the child ------------------------------------------------------------------------------------

function valuePool(valueBytes: number): Uint8Array[] {
  let x = 0x9e3779b9
  return Array.from({ length: 4096 }, () => {
    const v = new Uint8Array(valueBytes)
    for (let j = 0; j < valueBytes; j++) {
      x ^= x << 13; x ^= x >>> 17; x ^= x << 5
      v[j] = 65 + ((x >>> 0) % 26)
    }
    return v
  })
}

async function child(args: string[]): Promise<void> {
  const [workload, nText, compression, bytesText] = args as [string, string, string, string]
  const n = Number(nText)
  const pool = valuePool(Number(bytesText))
  const acked = workload === 'producer' ? await produce(WARMUP, n, compression, pool) : await encode(n, compression, pool)
  process.stdout.write(JSON.stringify({ acked: acked.ok, errors: acked.errors }) + '\n')
  process.exit(0)
}

async function produce(warmup: number, n: number, compression: string, pool: Uint8Array[]): Promise<{ ok: number; errors: number }> {
  const { createProducer } = await import('../src/edge/producer/producer.js')
  const { VirtualClock } = await import('../test/sim/virtual-clock.js')
  const { ModelCluster } = await import('../test/sim/model-broker.js')
  const clock = new VirtualClock()
  const model = new ModelCluster({ brokers: 1, topics: { [TOPIC]: PARTITIONS } }, () => 0.5, () => clock.now())
  const p = createProducer({
    'bootstrap.servers': 'broker0.sim:9092', transport: new StubTransport(model, clock), clock, random: () => 0.5,
    acks: 'all', 'enable.idempotence': true, 'compression.type': compression as 'lz4', 'linger.ms': 5,
  })
  let ok = 0
  let errors = 0
  const done = () => { ok++ }
  const fail = () => { errors++ }
  const settleWhile = async (busy: () => boolean) => { while (busy()) await clock.run({ until: clock.now() + 1000, done: () => !busy() }) }
  let connected = false
  p.connect().then(() => { connected = true }, fail)
  await settleWhile(() => !connected && errors === 0)
  // The produce suite's loop: an event-loop turn every 1024 sends (here 2 ms of virtual time pass in it).
  const loop = async (count: number) => {
    for (let i = 0; i < count; i++) {
      p.send({ topic: TOPIC, value: pool[i & 4095]! }).then(done, fail)
      if ((i & 1023) === 1023) await clock.run({ until: clock.now() + 2 })
    }
    let flushed = false
    p.flush().then(() => { flushed = true }, fail)
    await settleWhile(() => !flushed && errors === 0)
  }
  await loop(warmup)
  await loop(n)
  let closed = false
  p.close().then(() => { closed = true }, fail)
  await settleWhile(() => !closed && errors === 0)
  return { ok, errors }
}

function encode(n: number, compression: string, pool: Uint8Array[]): Promise<{ ok: number; errors: number }> {
  return (async () => {
    const { loadCore, recordBaseSize } = await import('../src/edge/wasm/core.js')
    const core = await loadCore()
    const stamp = { producerId: 1000n, producerEpoch: 0, baseSequence: 0, transactional: false }
    const run = (count: number) => {
      let batch = core.openBatch({ compression: compression as 'lz4' })
      for (let i = 0; i < count; i++) {
        const record = { key: null, value: pool[i & 4095]!, timestamp: 1_700_000_000_000 }
        if (batch.recordCount > 0 && batch.estimatedSizeWith(record, recordBaseSize(record)) > BATCH_SIZE) {
          batch.finish(stamp)
          batch = core.openBatch({ compression: compression as 'lz4' })
        }
        batch.append(record)
      }
      batch.finish(stamp)
    }
    run(WARMUP)
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
  constructor(private readonly model: import('../test/sim/model-broker.js').ModelCluster, private readonly clock: import('../test/sim/virtual-clock.js').VirtualClock) {}

  async open(address: { host: string; port: number }, handlers: LinkHandlers): Promise<Link> {
    const node = this.model.nodeFor(address.host, address.port)
    const { Produce, decodeRequest, encodeResponse } = await import('../src/edge/protocol/index.js')
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
    return {
      write: (frame) => {
        const res = answer(frame)
        if (res) this.clock.setTimeout(() => handlers.onFrame(res.subarray(4)), 1)
        return Promise.resolve()
      },
      close: () => {},
    }
  }
}

// Run as a compiled child: `node <dist>/bench/instructions.js --child ...`.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) await instructions(process.argv.slice(2))
