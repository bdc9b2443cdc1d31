import { createRequire } from 'node:module'
import { beforeAll, describe, expect, it } from 'vitest'
import type { Cluster } from '../../src/edge/client/cluster.js'
import { BufferExhaustedException } from '../../src/edge/errors.js'
import { BufferPool, RecordAccumulator, type AccumulatorOptions } from '../../src/edge/producer/accumulator.js'
import { IdempotenceManager } from '../../src/edge/producer/idempotence.js'
import { topicPartition } from '../../src/edge/producer/producer-batch.js'
import { loadCore, type Core, type RecordInput } from '../../src/edge/wasm/core.js'
import { VirtualClock } from '../sim/virtual-clock.js'
import { rng } from '../helpers/records.js'
import { crc32cBitwise, readBatch } from '../helpers/batch-reader.js'

const require = createRequire(import.meta.url)
const lz4 = require('lz4-napi') as { decompressFrameSync(b: Uint8Array): Buffer }

/** The batch with its records section decompressed by a native lz4, so the independent reader can parse it. */
function uncompressed(batch: Uint8Array): Uint8Array {
  expect(crc32cBitwise(batch.subarray(21))).toBe(new DataView(batch.buffer, batch.byteOffset).getUint32(17))
  if ((batch[22]! & 7) === 0) return batch
  const section = lz4.decompressFrameSync(batch.subarray(61))
  const out = new Uint8Array(61 + section.length)
  out.set(batch.subarray(0, 61))
  out.set(section, 61)
  new DataView(out.buffer).setInt32(8, out.length - 12)
  out[22] = out[22]! & ~7
  return out
}

let core: Core
beforeAll(async () => { core = await loadCore() })

// Every partition led by node 0 (partition 3 by node 1).
const cluster = { leaderFor: (_t: string, p: number) => (p === 3 ? 1 : 0), topics: new Map() } as unknown as Cluster
const record = (n: number): RecordInput => ({ key: null, value: new Uint8Array(n), timestamp: 1_700_000_000_000 })
const ok = () => {}
const no = () => {}

function setup(opts: Partial<AccumulatorOptions> = {}, idempotence: IdempotenceManager | null = null) {
  const clock = new VirtualClock()
  const o: AccumulatorOptions = {
    batchSize: 1000, lingerMs: 5, maxRequestSize: 1_048_576, bufferMemory: 10_000, maxBlockMs: 1000, deliveryTimeoutMs: 120_000,
    retryBackoffMs: 100, retryBackoffMaxMs: 1000, compression: 'none', compressionLevel: undefined, clock, random: rng(1), ...opts,
  }
  const pool = new BufferPool(o.bufferMemory, clock)
  return { clock, pool, acc: new RecordAccumulator(o, pool, core, idempotence) }
}

describe('buffer.memory and max.block.ms', () => {
  it('stops opening batches when the budget is spent, and never grows past it', () => {
    const { acc, pool } = setup({ bufferMemory: 3000, batchSize: 1000 })
    let opened = 0
    for (let p = 0; p < 10; p++) if (acc.tryAppend(topicPartition('t', p), record(10), 80, ok, no)) opened++
    expect(opened).toBe(3)
    expect(pool.available).toBe(0)
  })

  it('a waiter blocks, then gets space when a batch completes', async () => {
    const { clock, pool } = setup({ bufferMemory: 2000 })
    expect(pool.tryReserve(2000)).toBe(true)
    let granted = false
    void pool.reserve(1000, 1000).then(() => { granted = true })
    await clock.advance(500)
    expect(granted).toBe(false)
    pool.release(1000)
    await clock.advance(0)
    expect(granted).toBe(true)
  })

  it('a waiter that stays blocked for max.block.ms fails with BufferExhaustedException', async () => {
    const { clock, pool } = setup({ bufferMemory: 2000 })
    pool.tryReserve(2000)
    let error: unknown = null
    void pool.reserve(1000, 1000).catch((e) => { error = e })
    await clock.advance(999)
    expect(error).toBe(null)
    await clock.advance(1)
    expect(error).toBeInstanceOf(BufferExhaustedException)
    expect((error as BufferExhaustedException).retriable).toBe(true)
  })
})

describe('ready and drain', () => {
  it('a partial batch is ready only after linger.ms; a full one at once', () => {
    const { clock, acc } = setup({ lingerMs: 5, batchSize: 1000 })
    acc.tryAppend(topicPartition('t', 0), record(10), 80, ok, no)
    let r = acc.ready(cluster, clock.now())
    expect(r.readyNodes.size).toBe(0)
    expect(r.nextReadyCheckDelayMs).toBe(5)
    r = acc.ready(cluster, clock.now() + 5)
    expect([...r.readyNodes]).toEqual([0])
    acc.tryAppend(topicPartition('t', 3), record(1200), 1300, ok, no)
    expect([...acc.ready(cluster, clock.now()).readyNodes]).toEqual([1])
  })

  it('drain takes one batch per partition of a ready node and respects max.request.size', () => {
    const { clock, acc } = setup({ lingerMs: 0, batchSize: 500, maxRequestSize: 1500 })
    for (let p = 0; p < 3; p++) for (let i = 0; i < 2; i++) acc.tryAppend(topicPartition('t', p), record(400), 480, ok, no)
    const drained = acc.drain(cluster, [0], clock.now()).get(0)!
    // Three partitions each have a ~470-byte head batch; max.request.size fits three of them, one per partition.
    expect(drained.map((b) => b.tp.partition).sort()).toEqual([0, 1, 2])
    expect(drained.reduce((n, b) => n + b.sizeInBytes, 0)).toBeLessThanOrEqual(1500)
    const { acc: small } = setup({ lingerMs: 0, batchSize: 500, maxRequestSize: 1000 })
    for (let p = 0; p < 3; p++) small.tryAppend(topicPartition('t', p), record(400), 480, ok, no)
    expect(small.drain(cluster, [0], clock.now()).get(0)!.length).toBe(2)
  })

  it('retry backoff grows exponentially with +-20% jitter, capped at retry.backoff.max.ms', () => {
    const { clock, acc } = setup({ lingerMs: 0, retryBackoffMs: 100, retryBackoffMaxMs: 1000 })
    acc.tryAppend(topicPartition('t', 0), record(10), 80, ok, no)
    const b = acc.drain(cluster, [0], clock.now()).get(0)![0]!
    const seen: number[] = []
    for (let attempt = 1; attempt <= 6; attempt++) {
      acc.reenqueue(b, clock.now())
      acc.deque(b.tp).shift()
      seen.push(acc.backoffMs(b))
    }
    const terms = [100, 200, 400, 800, 1000, 1000]
    seen.forEach((ms, i) => {
      expect(Number.isInteger(ms)).toBe(true)
      expect(ms).toBeGreaterThanOrEqual(Math.floor(terms[i]! * 0.8))
      expect(ms).toBeLessThanOrEqual(Math.min(1000, terms[i]! * 1.2))
    })
  })

  it('split pieces queue behind a lower-sequence retry, so ready() judges the head drain() takes (seed 1246175)', () => {
    const idem = new IdempotenceManager(null, (b, s) => b.close(s))
    idem.initialized({ producerId: 7n, epoch: 0 })
    const { clock, acc } = setup({ lingerMs: 0, retryBackoffMs: 100, retryBackoffMaxMs: 100 }, idem)
    const tp = topicPartition('t', 0)
    const drainOne = () => acc.drain(cluster, [0], clock.now()).get(0)![0]!
    acc.tryAppend(tp, record(10), 80, ok, no)
    idem.handleCompletedBatch(drainOne(), 0n, clock.now())
    acc.tryAppend(tp, record(10), 80, ok, no)
    const retry = drainOne()
    acc.tryAppend(tp, record(10), 80, ok, no)
    acc.tryAppend(tp, record(10), 80, ok, no)
    const big = drainOne()
    expect([retry.baseSequence, big.baseSequence, big.recordCount]).toEqual([1, 2, 2])
    // The retry comes back first; then the batch behind it is refused as too large and split (as the Sender does).
    acc.reenqueue(retry, clock.now())
    const pieces = acc.split(big)
    idem.removeInflight(big)
    pieces.forEach((p, i) => { p.close({ ...big.stamp(), baseSequence: big.baseSequence + i }); idem.addInflight(p) })
    big.markSplit()
    acc.reenqueueSplit(big, pieces)
    expect(acc.deque(tp).map((b) => b.baseSequence)).toEqual([1, 2, 3])
    const r = acc.ready(cluster, clock.now() + 40)
    expect(r.readyNodes.size).toBe(0)
    expect(r.nextReadyCheckDelayMs).toBe(60)
    expect(acc.drain(cluster, [0], clock.now() + 100).get(0)![0]).toBe(retry)
  })

  it('a retry drain() passes over for its backoff is reported, also when another partition made its node ready', () => {
    const { clock, acc } = setup({ lingerMs: 0, retryBackoffMs: 100, retryBackoffMaxMs: 100 })
    const p0 = topicPartition('t', 0)
    const p1 = topicPartition('t', 1)
    acc.tryAppend(p0, record(10), 80, ok, no)
    acc.tryAppend(p1, record(10), 80, ok, no)
    const first = acc.drain(cluster, [0], clock.now()).get(0)!
    acc.reenqueue(first.find((b) => b.tp === p1)!, clock.now())
    acc.tryAppend(p0, record(10), 80, ok, no)
    // Node 0 is ready for partition 0, so ready() never weighs partition 1's backoff.
    const r = acc.ready(cluster, clock.now() + 30)
    expect([...r.readyNodes]).toEqual([0])
    expect(r.nextReadyCheckDelayMs).toBe(Infinity)
    expect(acc.drain(cluster, [0], clock.now() + 30).get(0)!.map((b) => b.tp)).toEqual([p0])
    expect(acc.drainBackoffDelayMs).toBe(70)
    expect(acc.drain(cluster, [0], clock.now() + 100).get(0)!.map((b) => b.tp)).toEqual([p1])
    expect(acc.drainBackoffDelayMs).toBe(Infinity)
  })

  for (const compression of ['none', 'lz4'] as const) {
    it(`split (${compression}) reads the records back from the refused batch: the caller's reused arrays do not leak in`, () => {
      const { clock, acc } = setup({ lingerMs: 0, batchSize: 100_000, bufferMemory: 1_000_000, compression })
      const key = new Uint8Array(8)
      const value = new Uint8Array(120)
      const expected: Array<{ key: number[]; value: number[]; header: number[]; timestamp: number }> = []
      for (let i = 0; i < 12; i++) {
        // One key and one value array refilled per record, as a Java application reuses its serializer output.
        key.fill(i)
        value.fill(100 + i)
        const hv = i % 3 === 0 ? null : new Uint8Array([i, i, i])
        const rec: RecordInput = { key, value, headers: [{ key: `h-${i}-ü`, value: hv }], timestamp: 1_700_000_000_000 + i * 7 }
        acc.tryAppend(topicPartition('t', 0), rec, 200, ok, no)
        expected.push({ key: [...key], value: [...value], header: hv ? [...hv] : [], timestamp: rec.timestamp })
      }
      key.fill(0xee)
      value.fill(0xee)
      const b = acc.drain(cluster, [0], clock.now()).get(0)![0]!
      const pieces = acc.split(b)
      expect(pieces.length).toBeGreaterThanOrEqual(2)
      const got = pieces.flatMap((p) => {
        p.close({ producerId: 1n, producerEpoch: 0, baseSequence: 0, transactional: false })
        return readBatch(uncompressed(p.bytes!), { verifyCrc: false }).records
      })
      expect(got.map((r) => ({ key: [...r.key!], value: [...r.value!], header: [...(r.headers[0]!.value ?? [])], timestamp: r.timestamp }))).toEqual(expected)
      expect(got.map((r) => r.headers[0]!.key)).toEqual(expected.map((_, i) => `h-${i}-ü`))
    })
  }

  it('split of a refused batch halves it at least, down to single records', () => {
    const { clock, acc } = setup({ lingerMs: 0, batchSize: 100_000, bufferMemory: 1_000_000 })
    for (let i = 0; i < 8; i++) acc.tryAppend(topicPartition('t', 0), record(100), 180, ok, no)
    const b = acc.drain(cluster, [0], clock.now()).get(0)![0]!
    const pieces = acc.split(b)
    expect(pieces.length).toBeGreaterThanOrEqual(2)
    expect(pieces.reduce((n, p) => n + p.recordCount, 0)).toBe(8)
  })
})

describe('the learned compression ratio', () => {
  /** Appends `n` records to `tp` and drains them all; the record counts of the batches, in order. */
  function appendAndDrain(acc: RecordAccumulator, clock: VirtualClock, partition: number, n: number, value: () => Uint8Array): number[] {
    const tp = topicPartition('t', partition)
    for (let i = 0; i < n; i++) expect(acc.tryAppend(tp, { key: null, value: value(), timestamp: 1_700_000_000_000 }, 80, ok, no)).not.toBe(null)
    const counts: number[] = []
    while (acc.deque(tp).length > 0) for (const b of acc.drain(cluster, [0], clock.now()).get(0) ?? []) counts.push(b.recordCount)
    return counts
  }

  it('is not undone by one batch of a few incompressible records', () => {
    const { clock, acc } = setup({ compression: 'lz4', lingerMs: 0, batchSize: 1000, bufferMemory: 1_000_000 })
    const zeros = () => new Uint8Array(50)
    const r = rng(7)
    const noise = () => Uint8Array.from({ length: 50 }, () => Math.floor(r() * 256))
    let learned: number[] = []
    for (let round = 0; round < 40; round++) learned = appendAndDrain(acc, clock, 0, 400, zeros)
    // Uncompressed, about 16 of these records fill 1000 bytes; compressed, many more do.
    expect(learned[0]).toBeGreaterThan(50)
    // One small batch on another partition of the topic: its codec frame outweighs its records.
    expect(appendAndDrain(acc, clock, 1, 1, noise)).toEqual([1])
    const after = appendAndDrain(acc, clock, 0, 400, zeros)
    // Before this rule the noise batch's ratio (above 1) reset the estimate: 15 records a batch again.
    expect(after[0]).toBeGreaterThan(50)
  })
})
