import { beforeAll, describe, expect, it } from 'vitest'
import { ProducerBatch, topicPartition } from '../../src/edge/producer/producer-batch.js'
import { Writer } from '../../src/edge/protocol/index.js'
import { loadCore, type Core, type ProducerStamp } from '../../src/edge/wasm/core.js'

let core: Core
beforeAll(async () => { core = await loadCore() })

const tp = topicPartition('t', 0)
const stamp: ProducerStamp = { producerId: 7n, producerEpoch: 1, baseSequence: 40, transactional: false }
const value = (i: number) => Uint8Array.from({ length: 200 }, (_, k) => (i * 31 + k) & 0xff)

/** A batch of `n` records, and the bytes the same records finish to on their own. */
function closed(n: number): { batch: ProducerBatch; expected: Uint8Array } {
  const batch = new ProducerBatch(tp, core.openBatch({ compression: 'lz4' }), 0, 0)
  const alone = core.openBatch({ compression: 'lz4' })
  for (let i = 0; i < n; i++) {
    const r = { key: null, value: value(i), timestamp: 1_700_000_000_000 + i }
    batch.append(r, () => {}, null)
    alone.append(r)
  }
  batch.close(stamp)
  return { batch, expected: alone.finish(stamp) }
}

/** A request-shaped frame: a header, the batch's records field, a trailer. */
function frameWith(batch: ProducerBatch): Uint8Array {
  return new Writer(32).int32(0).int16(0).bytes(batch.requestRecords(), false).int8(9).finish()
}

describe('ProducerBatch: closed batches go from WASM memory into their request in one copy', () => {
  it('a closed batch waits in WASM memory; its request copies it into the frame, and the batch keeps that copy as its bytes', () => {
    const { batch, expected } = closed(50)
    expect(batch.closed).toBe(true)
    expect(batch.sizeInBytes).toBe(expected.length)
    const frame = frameWith(batch)
    const bytes = batch.bytes!
    expect(bytes.buffer).toBe(frame.buffer)
    expect(bytes.byteOffset - frame.byteOffset).toBe(10)
    expect(Buffer.from(bytes).equals(Buffer.from(expected))).toBe(true)
    // A retry carries the same bytes, from the batch's own copy.
    const retry = frameWith(batch)
    expect(Buffer.from(retry.subarray(10, 10 + expected.length)).equals(Buffer.from(expected))).toBe(true)
    expect(batch.bytes).toBe(bytes)
  })

  it('reading the bytes before the request copies the batch out of WASM memory; the request then carries that copy', () => {
    const { batch, expected } = closed(20)
    const out = batch.bytes!
    expect(Buffer.from(out).equals(Buffer.from(expected))).toBe(true)
    const frame = frameWith(batch)
    expect(Buffer.from(frame.subarray(10, 10 + expected.length)).equals(Buffer.from(expected))).toBe(true)
    expect(batch.bytes).toBe(out)
  })

  it('a batch that ends between its request being made and encoded still goes out whole', () => {
    const { batch, expected } = closed(20)
    const records = batch.requestRecords()
    batch.fail(new Error('expired'))
    const frame = new Writer(16).bytes(records, false).finish()
    expect(Buffer.from(frame.subarray(4)).equals(Buffer.from(expected))).toBe(true)
  })

  it('frees its WASM memory once placed: 2,000 batches closed and sent leave the memory as it was after the first', () => {
    frameWith(closed(30).batch)
    const before = core.memoryBytes()
    for (let i = 0; i < 2000; i++) frameWith(closed(30).batch)
    expect(core.memoryBytes()).toBe(before)
  })
})
