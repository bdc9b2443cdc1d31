// Encode suite: RecordBatch v2 building (records/s) and CRC-32C throughput (GB/s).
//   kafka-edge-wasm  the AssemblyScript core through src/edge/wasm/core.ts
//   kafka-edge-js    the same design in plain TypeScript (bench/ts-batch-builder.ts)
//   kafkajs          kafkajs 2.2.4's Record + RecordBatch encoders (what its producer runs)
import { createRequire } from 'node:module'
import { loadCore, type Core, type ProducerStamp, type DecodedRecord } from '../src/edge/wasm/core.js'
import { bestRate, printTable, report, writeReport, type BenchResult } from './lib.js'
import { crc32cJs, TsBatchBuilder } from './ts-batch-builder.js'

const RECORDS = 1_000_000
const KEY_BYTES = 10
const VALUE_BYTES = 100
const BATCH_BYTES = 16384
const POOL = 1024 // distinct records, cycled: the work per record is the same, the heap stays small
const STAMP: ProducerStamp = { producerId: 1234n, producerEpoch: 0, baseSequence: 0, transactional: false }

const require = createRequire(import.meta.url)

function makeRecords(): DecodedRecord[] {
  const out: DecodedRecord[] = []
  const base = Date.now()
  for (let i = 0; i < POOL; i++) {
    const key = new Uint8Array(KEY_BYTES).map((_, j) => (i * 7 + j) & 0xff)
    const value = new Uint8Array(VALUE_BYTES).map((_, j) => (i * 13 + j * 3) & 0xff)
    out.push({ key, value, timestamp: base + i })
  }
  return out
}

/** Fills 16 KiB batches the way the accumulator does (estimate, then append or roll over). */
function encodeWasm(core: Core, records: DecodedRecord[]): number {
  let bytes = 0
  let batch = core.openBatch({ compression: 'none', initialCapacity: BATCH_BYTES })
  for (let i = 0; i < RECORDS; i++) {
    const r = records[i % POOL]!
    if (batch.recordCount > 0 && batch.estimatedSizeWith(r) > BATCH_BYTES) {
      bytes += batch.finish(STAMP).length
      batch = core.openBatch({ compression: 'none', initialCapacity: BATCH_BYTES })
    }
    batch.append(r)
  }
  return bytes + batch.finish(STAMP).length
}

function encodeJs(records: DecodedRecord[]): number {
  let bytes = 0
  let batch = new TsBatchBuilder(BATCH_BYTES)
  for (let i = 0; i < RECORDS; i++) {
    const r = records[i % POOL]!
    if (batch.recordCount > 0 && batch.estimatedSizeWith(r) > BATCH_BYTES) {
      bytes += batch.finish(STAMP).length
      batch = new TsBatchBuilder(BATCH_BYTES)
    }
    batch.append(r)
  }
  return bytes + batch.finish(STAMP).length
}

interface KafkajsRecordInput { key: Buffer; value: Buffer; timestamp: number }

/** kafkajs gets the same records per batch as the WASM builder produced. */
async function encodeKafkajs(records: KafkajsRecordInput[], perBatch: number): Promise<number> {
  const Record = require('kafkajs/src/protocol/recordBatch/record/v0')
  const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0')
  const Long = require('kafkajs/src/utils/long')
  const producerId = Long.fromValue(1234)
  let bytes = 0
  for (let start = 0; start < RECORDS; start += perBatch) {
    const n = Math.min(perBatch, RECORDS - start)
    const first = records[start % POOL]!.timestamp
    let maxTs = first
    const encoded = new Array(n)
    for (let i = 0; i < n; i++) {
      const r = records[(start + i) % POOL]!
      if (r.timestamp > maxTs) maxTs = r.timestamp
      encoded[i] = Record({ offsetDelta: i, timestampDelta: r.timestamp - first, key: r.key, value: r.value, headers: {} })
    }
    const batch = await RecordBatch({
      records: encoded, firstTimestamp: first, maxTimestamp: maxTs, lastOffsetDelta: n - 1,
      producerId, producerEpoch: 0, firstSequence: 0, partitionLeaderEpoch: -1,
    })
    bytes += batch.buffer.length
  }
  return bytes
}

export default async function run(): Promise<void> {
  const core = await loadCore()
  const records = makeRecords()
  const results: BenchResult[] = []

  // The plain-TS control must produce the same bytes, or the comparison means nothing.
  const probe = records.slice(0, 100)
  const wasmBatch = core.openBatch({ compression: 'none' })
  const jsBatch = new TsBatchBuilder()
  for (const r of probe) {
    wasmBatch.append(r)
    jsBatch.append(r)
  }
  const a = wasmBatch.finish(STAMP)
  const b = jsBatch.finish(STAMP)
  if (Buffer.compare(a, b) !== 0) throw new Error('bench/ts-batch-builder.ts and the WASM builder disagree')

  const perBatch = (() => {
    const batch = core.openBatch({ compression: 'none' })
    let n = 0
    while (batch.estimatedSizeWith(records[n % POOL]!) <= BATCH_BYTES) batch.append(records[n++ % POOL]!)
    batch.discard()
    return n
  })()

  console.log(`encode: ${RECORDS.toLocaleString('en-US')} records, key ${KEY_BYTES} B, value ${VALUE_BYTES} B, ${perBatch} records per ${BATCH_BYTES} B batch, CRC included`)
  const rate = (fn: () => unknown) => bestRate(fn, RECORDS, { rounds: 5, minMs: 1 })
  results.push({ impl: 'kafka-edge-wasm', metric: 'records/s', unit: 'records/s', value: await rate(() => encodeWasm(core, records)) })
  results.push({ impl: 'kafka-edge-js', metric: 'records/s', unit: 'records/s', value: await rate(() => encodeJs(records)) })
  const kjsRecords = records.map((r) => ({ key: Buffer.from(r.key!), value: Buffer.from(r.value!), timestamp: r.timestamp }))
  results.push({ impl: 'kafkajs', metric: 'records/s', unit: 'records/s', value: await rate(() => encodeKafkajs(kjsRecords, perBatch)) })

  // Where the WASM builder's time goes: staging copies alone (JS -> WASM), per record.
  const stagingRate = await bestRate(() => {
    for (let i = 0; i < RECORDS; i++) core.stage(records[i % POOL]!)
  }, RECORDS, { rounds: 3, minMs: 1 })
  results.push({ impl: 'kafka-edge-wasm', metric: 'staging copy ns/record', unit: 'ns', value: 1e9 / stagingRate })

  // CRC-32C. "in memory": the bytes are already in WASM memory, as in the builder's finish.
  // "with copy-in": Core.crc32c on a JS Uint8Array, which first copies into WASM memory.
  for (const [label, size] of [['1KiB', 1024], ['16KiB', 16384], ['1MiB', 1 << 20]] as const) {
    const data = new Uint8Array(size).map((_, i) => (i * 2654435761) >>> 13)
    const at = core.staging(size)
    core.bytes().set(data, at)
    const expected = crc32cJs(data)
    if ((core.exports.crc32c(at, size, 0) >>> 0) !== expected || core.crc32c(data) !== expected) throw new Error('CRC mismatch')
    const gbs = (fn: () => unknown) => bestRate(fn, size, { rounds: 5, minMs: 200 }).then((r) => r / 1e9)
    results.push({ impl: 'kafka-edge-wasm', metric: `GB/s at ${label}`, unit: 'GB/s', value: await gbs(() => core.exports.crc32c(at, size, 0)) })
    results.push({ impl: 'kafka-edge-wasm', metric: `GB/s at ${label} with copy-in`, unit: 'GB/s', value: await gbs(() => core.crc32c(data)) })
    results.push({ impl: 'kafka-edge-js', metric: `GB/s at ${label}`, unit: 'GB/s', value: await gbs(() => crc32cJs(data)) })
  }

  const r = report('encode', {
    records: RECORDS, keyBytes: KEY_BYTES, valueBytes: VALUE_BYTES, batchBytes: BATCH_BYTES, recordsPerBatch: perBatch,
    compression: 'none', crc: 'included', kafkajs: require('kafkajs/package.json').version,
  }, results)
  printTable(results, 'kafka-edge-wasm')
  console.log(`wrote ${writeReport(r)}`)
}
