import { beforeAll, describe, expect, it } from 'vitest'
import { ProducerBatch, topicPartition } from '../../src/edge/producer/producer-batch.js'
import { IdempotenceManager } from '../../src/edge/producer/idempotence.js'
import { errorCode } from '../../src/edge/protocol/index.js'
import { loadCore, type Core } from '../../src/edge/wasm/core.js'

let core: Core
beforeAll(async () => { core = await loadCore() })

const tp = topicPartition('t', 0)
function batch(records = 1): ProducerBatch {
  const b = new ProducerBatch(tp, core.openBatch({ compression: 'none' }), 0, 0)
  for (let i = 0; i < records; i++) b.append({ key: null, value: new Uint8Array(1), timestamp: 0 }, () => {}, () => {})
  return b
}
function manager(): IdempotenceManager {
  const tm = new IdempotenceManager(null, (b, s) => { b.producerId = s.producerId; b.producerEpoch = s.producerEpoch; b.baseSequence = s.baseSequence })
  tm.initialized({ producerId: 7n, epoch: 0 })
  return tm
}
/** Drains a batch as the accumulator does: stamp, then in flight. */
function drain(tm: IdempotenceManager, b: ProducerBatch): ProducerBatch {
  const s = tm.stampAtDrain(b)!
  b.producerId = s.producerId; b.producerEpoch = s.producerEpoch; b.baseSequence = s.baseSequence
  tm.addInflight(b)
  return b
}
const ack = (tm: IdempotenceManager, b: ProducerBatch, offset: bigint) => tm.handleCompletedBatch(b, offset, 1)

describe('IdempotenceManager sequencing (reference section 3)', () => {
  it('nothing drains without a producer id; sequences are assigned at drain, by record count', () => {
    const tm = new IdempotenceManager(null, () => {})
    expect(tm.canDrain(batch())).toBe(false)
    const ready = manager()
    const a = drain(ready, batch(3))
    ack(ready, a, 0n)
    const b = drain(ready, batch(2))
    expect([a.baseSequence, b.baseSequence, ready.entry(tp).nextSequence]).toEqual([0, 3, 5])
  })

  it('keeps one batch in flight until the broker acknowledged a sequence (it may accept any first sequence)', () => {
    const tm = manager()
    drain(tm, batch())
    expect(tm.canDrain(batch())).toBe(false)
    ack(tm, tm.entry(tp).inflight[0]!, 0n)
    drain(tm, batch())
    expect(tm.canDrain(batch())).toBe(true)
  })

  it('a retry drains only when it is the oldest in-flight batch', () => {
    const tm = manager()
    ack(tm, drain(tm, batch()), 0n)
    const b1 = drain(tm, batch()); const b2 = drain(tm, batch())
    expect(tm.canDrain(b2)).toBe(false)
    expect(tm.canDrain(b1)).toBe(true)
  })

  it('OUT_OF_ORDER right after the last ack bumps the epoch and rewrites in-flight batches from 0', () => {
    const tm = manager()
    ack(tm, drain(tm, batch()), 0n)
    const b1 = drain(tm, batch()); const b2 = drain(tm, batch())
    // b2 is not next after the last ack: plain retry.
    expect(tm.canRetrySequenceError(errorCode('OUT_OF_ORDER_SEQUENCE_NUMBER'), b2, 0n)).toBe(true)
    expect(tm.sequencesNeedNewEpoch).toBe(false)
    expect(tm.canRetrySequenceError(errorCode('OUT_OF_ORDER_SEQUENCE_NUMBER'), b1, 0n)).toBe(true)
    expect(tm.bumpIdempotentEpochIfRequired()).toBe(true)
    expect([b1.producerEpoch, b1.baseSequence, b2.producerEpoch, b2.baseSequence]).toEqual([1, 0, 1, 1])
    expect(b1.sequenceHasBeenReset).toBe(true)
  })

  it('seed 2917269: OUT_OF_ORDER right after the unknown batch of the current epoch bumps, whatever an older epoch left unknown', () => {
    const tm = manager()
    const kept = drain(tm, batch(3)) // epoch 0, sequences 0-2; an attempt timed out, so it may be in the log
    kept.maybeWritten = true
    const refused = drain(tm, batch()); const first = drain(tm, batch()); const second = drain(tm, batch(2))
    tm.handleFailedBatch(refused, errorCode('INVALID_RECORD'), true)
    tm.bumpIdempotentEpochIfRequired()
    expect([kept.producerEpoch, first.producerEpoch, first.baseSequence, second.baseSequence]).toEqual([0, 1, 0, 1])
    // Both unknown batches fail for good: epoch 0 up to sequence 2, epoch 1 at sequence 0.
    tm.handleFailedBatch(kept, errorCode('INVALID_RECORD'), true)
    first.maybeWritten = true
    tm.handleFailedBatch(first, errorCode('INVALID_RECORD'), true)
    // The broker refuses epoch 1's sequence 1 as out of order: so epoch 1's sequence 0 is not in the
    // log, and a bump is safe. Compared with epoch 0's next sequence (3), the batch was retried to expiry.
    expect(tm.canRetrySequenceError(errorCode('OUT_OF_ORDER_SEQUENCE_NUMBER'), second, -1n)).toBe(true)
    expect(tm.sequencesNeedNewEpoch).toBe(true)
    tm.bumpIdempotentEpochIfRequired()
    expect([second.producerEpoch, second.baseSequence]).toEqual([2, 0])
  })

  it('seed 3074759: UNKNOWN_PRODUCER_ID for a rewritten batch right after the unknown one before it bumps the epoch', () => {
    const tm = manager()
    const refused = drain(tm, batch()); const unknown = drain(tm, batch(2)); const rewritten = drain(tm, batch(2))
    tm.handleFailedBatch(refused, errorCode('INVALID_RECORD'), true)
    tm.bumpIdempotentEpochIfRequired()
    expect([unknown.producerEpoch, unknown.baseSequence, rewritten.baseSequence, rewritten.sequenceHasBeenReset]).toEqual([1, 0, 2, true])
    // The first batch of epoch 1 fails for good after an attempt that timed out: it may be in the log.
    unknown.maybeWritten = true
    tm.handleFailedBatch(unknown, errorCode('INVALID_RECORD'), true)
    // The broker has no state for the producer here, so epoch 1's first batch is not in the log, and no
    // batch is left to give the broker a state: waiting for one retried this batch to expiry.
    expect(tm.canRetrySequenceError(errorCode('UNKNOWN_PRODUCER_ID'), rewritten, 0n)).toBe(true)
    expect(tm.sequencesNeedNewEpoch).toBe(true)
    tm.bumpIdempotentEpochIfRequired()
    expect([rewritten.producerEpoch, rewritten.baseSequence]).toEqual([2, 0])
  })

  it('a batch that failed for good bumps; earlier in-flight batches keep their epoch (they may be in the log), later ones restart at 0', () => {
    const tm = manager()
    ack(tm, drain(tm, batch()), 0n)
    const b1 = drain(tm, batch()); const b2 = drain(tm, batch()); const b3 = drain(tm, batch())
    b1.maybeWritten = true
    tm.handleFailedBatch(b2, errorCode('INVALID_RECORD'), true)
    tm.bumpIdempotentEpochIfRequired()
    expect([b1.producerEpoch, b1.baseSequence]).toEqual([0, 1])
    expect([b3.producerEpoch, b3.baseSequence]).toEqual([1, 0])
    // The old-epoch batch goes first; the rewritten one waits for it even though both could say "sequence 0/1".
    expect(tm.canDrain(b1)).toBe(true)
    expect(tm.canDrain(b3)).toBe(false)
  })

  it('an expired batch with unknown outcome holds the partition; resolved if the next ack covers it, else bumped', () => {
    const tm = manager()
    ack(tm, drain(tm, batch()), 0n)
    const lost = drain(tm, batch())
    const after = drain(tm, batch())
    tm.handleFailedBatch(lost, null, false)
    tm.markSequenceUnresolved(lost)
    expect(tm.canDrain(batch())).toBe(false)
    // The batch after it was acknowledged: the lost one landed too.
    ack(tm, after, 2n)
    tm.maybeResolveSequences()
    expect(tm.hasUnresolvedSequence(tp)).toBe(false)

    const tm2 = manager()
    ack(tm2, drain(tm2, batch()), 0n)
    const lost2 = drain(tm2, batch())
    tm2.handleFailedBatch(lost2, null, false)
    tm2.markSequenceUnresolved(lost2)
    tm2.maybeResolveSequences()
    expect(tm2.bumpIdempotentEpochIfRequired()).toBe(true)
    expect(tm2.producerIdAndEpoch.epoch).toBe(1)
  })

  it('UNKNOWN_PRODUCER_ID: retry when the log start is unknown; bump when the log start passed our last ack', () => {
    const tm = manager()
    ack(tm, drain(tm, batch()), 0n)
    const b = drain(tm, batch())
    expect(tm.canRetrySequenceError(errorCode('UNKNOWN_PRODUCER_ID'), b, -1n)).toBe(true)
    expect(tm.sequencesNeedNewEpoch).toBe(false)
    expect(tm.canRetrySequenceError(errorCode('UNKNOWN_PRODUCER_ID'), b, 5n)).toBe(true)
    expect(tm.sequencesNeedNewEpoch).toBe(true)
  })

  it('at Short.MAX_VALUE the bump drops the id; the new id restarts the partition at 0', () => {
    const tm = new IdempotenceManager(null, (b, s) => { b.producerId = s.producerId; b.producerEpoch = s.producerEpoch; b.baseSequence = s.baseSequence })
    tm.initialized({ producerId: 7n, epoch: 32767 })
    ack(tm, drain(tm, batch()), 0n)
    const b = drain(tm, batch())
    tm.canRetrySequenceError(errorCode('OUT_OF_ORDER_SEQUENCE_NUMBER'), b, 0n)
    tm.bumpIdempotentEpochIfRequired()
    expect(tm.hasProducerId).toBe(false)
    tm.initialized({ producerId: 8n, epoch: 0 })
    expect([b.producerId, b.producerEpoch, b.baseSequence]).toEqual([8n, 0, 0])
  })
})
