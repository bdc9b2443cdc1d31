import { IllegalStateException, KafkaEdgeError } from '../errors.js'
import { errorCode } from '../protocol/index.js'
import { ProducerBatch, incrementSequence, sequenceOrder, type TopicPartition } from './producer-batch.js'
import type { ProducerStamp } from '../wasm/core.js'

export interface ProducerIdAndEpoch { readonly producerId: bigint; readonly epoch: number }
export const NO_PRODUCER_ID: ProducerIdAndEpoch = { producerId: -1n, epoch: -1 }
const sameProducer = (a: ProducerIdAndEpoch, b: ProducerIdAndEpoch) => a.producerId === b.producerId && a.epoch === b.epoch
const EPOCH_MAX = 32767
const NO_LAST_ACKED = -1
/**
 * With no acknowledgement for this long, a partition's producer state on the broker may be gone
 * (producer.id.expiration.ms can be set low, retention or DeleteRecords can remove it at any time) and
 * the next batches go one at a time until one is acknowledged. Kept short because the probe costs one
 * round trip of pipelining after a silence at least this long, while a missed loss of state costs a
 * duplicate (a second batch the stateless broker accepts ahead of a failed first one is rewritten by
 * the epoch bump and written again). 30 s let sim seeds 7523, 9377, 10283 write records twice.
 */
export const PRODUCER_STATE_MAY_BE_GONE_MS = 1000
/** The broker keeps this many recent batches per producer per partition (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN). */
export const NUM_BATCHES_TO_RETAIN = 5
const RECENT_KEPT = 4 * NUM_BATCHES_TO_RETAIN

/**
 * Per-partition sequencing state (Java's TxnPartitionEntry): the producer id/epoch the partition's
 * sequences belong to, the next sequence to stamp, the last acknowledged one, and the in-flight
 * batches ordered by (producer id, epoch, base sequence).
 */
export class TxnPartitionEntry {
  producerIdAndEpoch: ProducerIdAndEpoch = NO_PRODUCER_ID
  nextSequence = 0
  lastAckedSequence = NO_LAST_ACKED
  lastAckedOffset = -1n
  /** When the broker last acknowledged a batch here: long silence means it may have forgotten us. */
  lastAckMs = 0
  inflight: ProducerBatch[] = []
  /** The last batches stamped here, acknowledged or not (newest last): what the broker's window may hold. */
  readonly recent: ProducerBatch[] = []

  constructor(readonly tp: TopicPartition) {}

  addInflight(batch: ProducerBatch): void {
    this.inflight.push(batch)
    this.inflight.sort(sequenceOrder)
    if (!this.recent.includes(batch)) {
      this.recent.push(batch)
      if (this.recent.length > RECENT_KEPT) this.recent.shift()
    }
  }

  /**
   * How many batches were sent from the oldest unacknowledged one on (itself included), under its
   * producer id and epoch. The broker recognises a retry as a duplicate only while it is among the
   * last NUM_BATCHES_TO_RETAIN batches it appended for us; batches acknowledged after it still count.
   * Split pieces share their original's first sequence and count once.
   */
  batchesSentSinceOldestUnacked(): number {
    const oldest = this.inflight[0]
    if (!oldest || !oldest.hasSequence) return 0
    const seen = new Set<number>()
    for (const b of this.recent) {
      if (b.producerId !== oldest.producerId || b.producerEpoch !== oldest.producerEpoch || !b.hasSequence) continue
      // Sequences wrap at Int.MAX: "at or after the oldest" is a forward distance below half the space.
      if (((b.baseSequence - oldest.baseSequence) >>> 0) % 2147483648 < 1073741824) seen.add(b.baseSequence)
    }
    return seen.size
  }

  removeInflight(batch: ProducerBatch): void {
    const i = this.inflight.indexOf(batch)
    if (i >= 0) this.inflight.splice(i, 1)
  }

  /**
   * Re-stamps the in-flight batches from sequence 0 under a new id/epoch (after an epoch bump). With
   * `gap` (the first sequence known not to be in the log), batches below it keep their old stamp:
   * one of them may already be in the log, and only under its old stamp would the broker recognise
   * its retry as a duplicate; rewritten, it would be appended a second time.
   */
  startSequencesAtBeginning(pe: ProducerIdAndEpoch, restamp: (b: ProducerBatch, s: ProducerStamp) => void, gap: SequenceGap | null = null): void {
    let seq = 0
    for (const b of this.inflight) {
      if (gap && beforeGap(b, gap)) continue
      restamp(b, { producerId: pe.producerId, producerEpoch: pe.epoch, baseSequence: seq, transactional: b.transactional })
      b.sequenceHasBeenReset = true
      seq += b.recordCount
    }
    this.inflight.sort(sequenceOrder)
    this.producerIdAndEpoch = pe
    this.nextSequence = seq
    this.lastAckedSequence = NO_LAST_ACKED
  }

  /** A transactional batch failed for good: later in-flight batches move down to close the gap. */
  adjustSequencesDueToFailedBatch(failed: ProducerBatch, restamp: (b: ProducerBatch, s: ProducerStamp) => void): void {
    this.nextSequence = Math.max(0, this.nextSequence - failed.recordCount)
    for (const b of this.inflight) {
      if (b.baseSequence < failed.baseSequence) continue
      const seq = b.baseSequence - failed.recordCount
      restamp(b, { ...b.stamp(), baseSequence: Math.max(0, seq) })
    }
    this.inflight.sort(sequenceOrder)
  }
}

/** A sequence of an epoch as one number, ordered by epoch first (epochs stay below 2^15). */
const epochSequence = (epoch: number, sequence: number): number => epoch * 2 ** 31 + sequence

/** Where a partition's sequence run is known to break: nothing from `sequence` on is in the log under that id/epoch. */
export interface SequenceGap { readonly producerId: bigint; readonly epoch: number; readonly sequence: number }

/**
 * Whether a batch was stamped before the gap. A batch of an older epoch still in flight is one an
 * earlier bump kept at its stamp because it may be in the log: it stays before any later gap.
 */
function beforeGap(b: ProducerBatch, gap: SequenceGap): boolean {
  return b.producerId === gap.producerId && (b.producerEpoch < gap.epoch || (b.producerEpoch === gap.epoch && b.baseSequence < gap.sequence))
}

const earlierGap = (a: SequenceGap, b: SequenceGap): SequenceGap => (a.epoch < b.epoch || (a.epoch === b.epoch && a.sequence <= b.sequence) ? a : b)


export type ProducerIdState = 'UNINITIALIZED' | 'INITIALIZING' | 'READY' | 'FATAL_ERROR'

/** target -> the states it may be entered from. FATAL_ERROR is entered from anywhere and never left. */
const PRODUCER_ID_TRANSITIONS: Record<ProducerIdState, readonly ProducerIdState[]> = {
  // READY: the id dropped at Short.MAX_VALUE epochs; INITIALIZING: InitProducerId failed, try again.
  UNINITIALIZED: ['READY', 'INITIALIZING'],
  INITIALIZING: ['UNINITIALIZED'],
  // UNINITIALIZED / READY: the transactional producer adopts ids its coordinator client obtained.
  READY: ['INITIALIZING', 'UNINITIALIZED', 'READY'],
  FATAL_ERROR: ['UNINITIALIZED', 'INITIALIZING', 'READY', 'FATAL_ERROR'],
}

/**
 * The idempotence bookkeeping of Java's TransactionManager: producer id and epoch, sequence numbers
 * per partition, unresolved partitions after expiry, and the local epoch bump of KIP-360. Pure state:
 * the Sender asks it questions and reports events; it never does I/O.
 */
export class IdempotenceManager {
  producerIdAndEpoch: ProducerIdAndEpoch = NO_PRODUCER_ID
  private producerIdState: ProducerIdState = 'UNINITIALIZED'
  fatalError: Error | null = null
  private readonly partitions = new Map<string, TxnPartitionEntry>()
  /**
   * Partition -> the sequence after the last batch whose outcome is unknown (it expired, or failed
   * after an attempt that may have landed), as epochSequence() keys it: a sequence number of one
   * epoch says nothing about the sequences of the next.
   */
  readonly unresolved = new Map<string, number>()
  /** Partition -> where its sequences broke (null: rewrite every in-flight batch). */
  private readonly partitionsToRewrite = new Map<string, SequenceGap | null>()
  /**
   * A partition's sequences broke and only a new epoch repairs them. The idempotent producer bumps
   * locally at once (bumpIdempotentEpochIfRequired); a transactional one hands it to its coordinator
   * client, whose epochBumpRequired (Java's) bumps when the transaction completes.
   */
  sequencesNeedNewEpoch = false
  /**
   * @param sendAllowed transactions: whether a partition may be drained yet (Java's
   *   isSendToPartitionAllowed); null for an idempotent producer.
   */
  constructor(
    readonly transactionalId: string | null,
    private readonly restamp: (b: ProducerBatch, s: ProducerStamp) => void,
    private readonly sendAllowed: ((tp: TopicPartition) => boolean) | null = null,
    private readonly onProducerId: ((pe: ProducerIdAndEpoch) => void) | undefined = undefined,
  ) {}

  get isTransactional(): boolean { return this.transactionalId !== null }
  get hasProducerId(): boolean { return this.producerIdAndEpoch.producerId >= 0n }

  get state(): ProducerIdState { return this.producerIdState }

  /**
   * The only writer of `state`. A move the table does not allow is a bug, not a broker answer, and
   * throws; an answer that arrives after a fatal error changes nothing.
   */
  private transitionTo(target: ProducerIdState): boolean {
    const from = this.producerIdState
    if (from === 'FATAL_ERROR' && target !== 'FATAL_ERROR') return false
    if (!PRODUCER_ID_TRANSITIONS[target].includes(from)) throw new IllegalStateException(`producer id state cannot move from ${from} to ${target}`)
    this.producerIdState = target
    return true
  }

  /** The Sender sends InitProducerId (idempotent producer). */
  initializing(): void { this.transitionTo('INITIALIZING') }

  /** InitProducerId failed retriably: the Sender tries again after a backoff. */
  initFailed(): void { this.transitionTo('UNINITIALIZED') }

  entry(tp: TopicPartition): TxnPartitionEntry {
    let e = this.partitions.get(tp.key)
    if (!e) { e = new TxnPartitionEntry(tp); this.partitions.set(tp.key, e) }
    return e
  }

  setProducerIdAndEpoch(pe: ProducerIdAndEpoch): void {
    this.producerIdAndEpoch = pe
    this.onProducerId?.(pe)
  }

  /** InitProducerId answered. */
  initialized(pe: ProducerIdAndEpoch): void {
    if (!this.transitionTo('READY')) return
    this.setProducerIdAndEpoch(pe)
    if (!this.isTransactional) {
      // A bump past Short.MAX_VALUE: the partitions that asked for it restart under the new id.
      for (const [key, gap] of this.partitionsToRewrite) {
        this.partitions.get(key)?.startSequencesAtBeginning(pe, this.restamp, gap)
        this.unresolved.delete(key)
      }
      this.partitionsToRewrite.clear()
    }
  }

  /** What a checkpoint records: the id/epoch and, per partition stamped under them, the next sequence. */
  checkpointHead(): { producerId: bigint; epoch: number; nextSequence: Array<{ topic: string; partition: number; next: number }> } {
    const pe = this.producerIdAndEpoch
    const nextSequence: Array<{ topic: string; partition: number; next: number }> = []
    for (const e of this.partitions.values()) {
      if (sameProducer(e.producerIdAndEpoch, pe)) nextSequence.push({ topic: e.tp.topic, partition: e.tp.partition, next: e.nextSequence })
    }
    return { producerId: pe.producerId, epoch: pe.epoch, nextSequence }
  }

  /**
   * Takes over an earlier producer's id, epoch and sequences (from its checkpoint) instead of
   * InitProducerId. `batches` are its unacknowledged batches, in sequence order per partition: they
   * become this producer's in-flight batches, so nothing new of their partition is sent before them.
   */
  resume(pe: ProducerIdAndEpoch, next: ReadonlyArray<{ tp: TopicPartition; next: number }>, batches: readonly ProducerBatch[]): void {
    if (!this.transitionTo('READY')) return
    this.setProducerIdAndEpoch(pe)
    for (const n of next) {
      const e = this.entry(n.tp)
      e.producerIdAndEpoch = pe
      e.nextSequence = n.next
    }
    const byTp = new Map<string, ProducerBatch[]>()
    for (const b of batches) byTp.set(b.tp.key, [...(byTp.get(b.tp.key) ?? []), b])
    for (const list of byTp.values()) {
      const e = this.entry(list[0]!.tp)
      for (const b of list) e.addInflight(b)
      const oldest = e.inflight[0]!
      const newest = e.inflight[e.inflight.length - 1]!
      const stamp = { producerId: newest.producerId, epoch: newest.producerEpoch }
      // Batches of an older epoch than the producer's are ones a local bump kept because they may be
      // in the log; the partition moves to the new epoch once they settle, as it would have in the
      // producer that saved them.
      if (!sameProducer(e.producerIdAndEpoch, stamp)) {
        e.producerIdAndEpoch = stamp
        e.nextSequence = incrementSequence(newest.lastSequence, 1)
      } else if (((newest.lastSequence + 1 - e.nextSequence) | 0) > 0) {
        e.nextSequence = incrementSequence(newest.lastSequence, 1)
      }
      // The broker has everything up to the first resend (acknowledged batches left the checkpoint).
      e.lastAckedSequence = oldest.producerEpoch === stamp.epoch && oldest.baseSequence > 0 ? oldest.baseSequence - 1 : NO_LAST_ACKED
    }
  }

  transitionToFatal(error: Error): void {
    if (this.producerIdState === 'FATAL_ERROR') return
    this.transitionTo('FATAL_ERROR')
    this.fatalError = error
  }

  hasInflight(tp: TopicPartition): boolean { return this.entry(tp).inflight.length > 0 }
  hasStaleProducerIdAndEpoch(tp: TopicPartition): boolean { return !sameProducer(this.producerIdAndEpoch, this.entry(tp).producerIdAndEpoch) }
  hasUnresolvedSequence(tp: TopicPartition): boolean { return this.unresolved.has(tp.key) }
  firstInFlightSequence(tp: TopicPartition): number { return this.entry(tp).inflight[0]?.baseSequence ?? -1 }

  private isNextSequence(tp: TopicPartition, sequence: number): boolean {
    return sequence - this.entry(tp).lastAckedSequence === 1
  }

  private isNextSequenceForUnresolved(tp: TopicPartition, batch: ProducerBatch): boolean {
    return this.unresolved.get(tp.key) === epochSequence(batch.producerEpoch, batch.baseSequence)
  }

  /** Whether the head batch of a partition may be drained now (Java: !shouldStopDrainBatchesForPartition). */
  canDrain(first: ProducerBatch, now = 0): boolean {
    if (!this.hasProducerId || this.state !== 'READY') return false
    const tp = first.tp
    if (this.sendAllowed && !this.sendAllowed(tp)) return false
    if (!first.hasSequence) {
      // A new batch under a new epoch would start at sequence 0 and could overtake old-epoch batches.
      if (this.hasInflight(tp) && this.hasStaleProducerIdAndEpoch(tp)) return false
      // Earlier batches have an unknown outcome: nothing new until they resolve.
      if (this.hasUnresolvedSequence(tp)) return false
      // A broker with no state for this producer accepts any first sequence (KIP-360), so a second
      // batch could land while the first fails retriably; the retried first batch then meets
      // OUT_OF_ORDER, the epoch bump rewrites both, and the second is written twice. One batch in
      // flight until the broker has acknowledged a sequence.
      // The broker also drops the state of a producer idle past producer.id.expiration.ms, or whose
      // batches retention deleted (size-based retention on a busy topic can take minutes): after a
      // quiet spell, probe with one batch again.
      const e = this.entry(tp)
      const quiet = e.lastAckedSequence === NO_LAST_ACKED || now - e.lastAckMs >= PRODUCER_STATE_MAY_BE_GONE_MS
      if (quiet && this.hasInflight(tp)) return false
      // The broker answers a retry with its original offset only while the batch is among the last
      // NUM_BATCHES_TO_RETAIN it appended for us; older, the retry gets OUT_OF_ORDER_SEQUENCE_NUMBER
      // until it expires. Batches acknowledged after an unacknowledged one still fill that window (a
      // retry re-sent after newer batches were appended, then its answer lost again), so cap what is
      // sent from the oldest unacknowledged batch on, not just what is in flight.
      if (e.batchesSentSinceOldestUnacked() >= NUM_BATCHES_TO_RETAIN) return false
    }
    // A retry goes only when it is the oldest in flight: while retrying, one request per partition.
    // Compared by identity, not sequence: after a bump an old-epoch batch and a rewritten one can
    // share a sequence number, and the rewritten one must wait for the old one to settle.
    const oldest = this.entry(tp).inflight[0]
    return !(oldest !== undefined && first.hasSequence && first !== oldest)
  }

  /** Stamps a batch at drain: sequences are assigned here, never at append. */
  stampAtDrain(batch: ProducerBatch): ProducerStamp | null {
    if (batch.hasSequence) return null
    const e = this.entry(batch.tp)
    if (this.hasStaleProducerIdAndEpoch(batch.tp) && e.inflight.length === 0) {
      e.startSequencesAtBeginning(this.producerIdAndEpoch, this.restamp)
    }
    const stamp: ProducerStamp = {
      producerId: this.producerIdAndEpoch.producerId,
      producerEpoch: this.producerIdAndEpoch.epoch,
      baseSequence: e.nextSequence,
      transactional: this.isTransactional,
    }
    e.nextSequence = incrementSequence(e.nextSequence, batch.recordCount)
    return stamp
  }

  addInflight(batch: ProducerBatch): void { this.entry(batch.tp).addInflight(batch) }
  removeInflight(batch: ProducerBatch): void { this.entry(batch.tp).removeInflight(batch) }

  handleCompletedBatch(batch: ProducerBatch, baseOffset: bigint, now = 0): void {
    const e = this.entry(batch.tp)
    e.lastAckMs = Math.max(e.lastAckMs, now)
    if (batch.lastSequence > e.lastAckedSequence && sameProducer(e.producerIdAndEpoch, { producerId: batch.producerId, epoch: batch.producerEpoch })) {
      e.lastAckedSequence = batch.lastSequence
    }
    if (baseOffset >= 0n) {
      const last = baseOffset + BigInt(batch.recordCount - 1)
      if (this.isTransactional || last > e.lastAckedOffset) e.lastAckedOffset = last
    }
    e.removeInflight(batch)
  }

  /**
   * `failed` is a batch that is definitely not in the log: later batches cannot be either (the broker
   * refuses gaps) and are rewritten; earlier ones keep their epoch until they settle. Without it,
   * every in-flight batch is rewritten.
   */
  requestEpochBumpForPartition(tp: TopicPartition, failed?: ProducerBatch): void {
    this.sequencesNeedNewEpoch = true
    const gap: SequenceGap | null = failed && failed.hasSequence && !failed.maybeWritten
      ? { producerId: failed.producerId, epoch: failed.producerEpoch, sequence: failed.baseSequence }
      : null
    const prev = this.partitionsToRewrite.get(tp.key)
    if (prev === undefined) this.partitionsToRewrite.set(tp.key, gap)
    // Two gaps before one bump, also across epochs: what precedes the earlier one may be in the log.
    else if (prev !== null) this.partitionsToRewrite.set(tp.key, gap && gap.producerId === prev.producerId ? earlierGap(prev, gap) : null)
  }

  /**
   * The local epoch bump (KIP-360) for the idempotent producer: no request, the epoch goes up by one
   * (at Short.MAX_VALUE the id is dropped and InitProducerId runs again) and the partitions that asked
   * for it restart their in-flight batches from sequence 0.
   */
  bumpIdempotentEpochIfRequired(): boolean {
    if (this.isTransactional || !this.sequencesNeedNewEpoch) return false
    if (this.producerIdAndEpoch.epoch >= EPOCH_MAX) {
      this.producerIdAndEpoch = NO_PRODUCER_ID
      this.transitionTo('UNINITIALIZED')
      // The rewrite waits for the new producer id (initialized()); restamping now would stamp id -1.
      this.sequencesNeedNewEpoch = false
      return true
    } else {
      this.setProducerIdAndEpoch({ producerId: this.producerIdAndEpoch.producerId, epoch: this.producerIdAndEpoch.epoch + 1 })
    }
    for (const [key, gap] of this.partitionsToRewrite) {
      const e = this.partitions.get(key)
      if (e && this.hasProducerId) e.startSequencesAtBeginning(this.producerIdAndEpoch, this.restamp, gap)
      this.unresolved.delete(key)
    }
    this.partitionsToRewrite.clear()
    this.sequencesNeedNewEpoch = false
    return true
  }

  /** A batch whose outcome is unknown left for good (expired): hold the partition until in-flight settles. */
  markSequenceUnresolved(batch: ProducerBatch): void {
    // The latest epoch's unknown batch is the one the partition's next batches follow. Sequences alone
    // let an old epoch's higher one hide it: a batch right after it then met OUT_OF_ORDER without the
    // epoch bump that answer proves safe, and was retried until it expired (seed 2917269).
    const next = epochSequence(batch.producerEpoch, incrementSequence(batch.lastSequence, 1))
    const cur = this.unresolved.get(batch.tp.key)
    this.unresolved.set(batch.tp.key, cur === undefined ? next : Math.max(cur, next))
  }

  /**
   * Once an unresolved partition has nothing in flight: if the last ack is right before the next
   * sequence, the expired batches did land (resolved); otherwise bump the epoch (idempotent) or
   * return an abortable error (transactional).
   */
  maybeResolveSequences(): Error | null {
    let abortable: Error | null = null
    for (const key of this.unresolved.keys()) {
      const e = this.partitions.get(key)
      if (!e || e.inflight.length > 0) continue
      if (this.isNextSequence(e.tp, e.nextSequence)) {
        this.unresolved.delete(key)
        continue
      }
      if (this.isTransactional) {
        this.sequencesNeedNewEpoch = true
        abortable = new KafkaEdgeError(`the client has no acknowledgement for some records sent to ${e.tp.topic}-${e.tp.partition} ` +
          'and can no longer retry them; abort the transaction and continue')
      } else {
        this.requestEpochBumpForPartition(e.tp)
      }
      this.unresolved.delete(key)
    }
    return abortable
  }

  /**
   * Java's TransactionManager.canRetry for the sequence-related errors; returns null when the
   * error is not one of those and the generic retriable flag decides.
   */
  canRetrySequenceError(code: number, batch: ProducerBatch, logStartOffset: bigint): boolean | null {
    if (batch.producerId !== this.producerIdAndEpoch.producerId) return false
    const tp = batch.tp
    if (code === errorCode('UNKNOWN_PRODUCER_ID')) {
      if (logStartOffset === -1n) return true
      // A rewritten batch waits for the one before it to give the broker its state again, unless that
      // one's outcome is unknown and it failed: then nothing will, and only a bump moves on (seed 3074759).
      if (batch.sequenceHasBeenReset && !this.isNextSequenceForUnresolved(tp, batch)) return true
      if (this.entry(tp).lastAckedOffset < logStartOffset) {
        // The log head was deleted (retention) and with it the producer state: restart this partition.
        if (this.isTransactional) this.entry(tp).startSequencesAtBeginning(this.producerIdAndEpoch, this.restamp)
        else this.requestEpochBumpForPartition(tp)
        return true
      }
      if (!this.isTransactional) { this.requestEpochBumpForPartition(tp); return true }
      return false
    }
    if (code === errorCode('OUT_OF_ORDER_SEQUENCE_NUMBER')) {
      if (!this.hasUnresolvedSequence(tp) && (batch.sequenceHasBeenReset || !this.isNextSequence(tp, batch.baseSequence))) {
        // Not the batch right after the last ack: an earlier batch failed and this one will be retried after it.
        return true
      }
      if (!this.isTransactional) {
        if (!this.hasUnresolvedSequence(tp) || this.isNextSequenceForUnresolved(tp, batch)) this.requestEpochBumpForPartition(tp)
        return true
      }
      return false
    }
    return null
  }

  /**
   * Java's handleFailedBatch: the batch will not be retried. Every failure comes through here (a
   * broker's refusal, expiry, a refused checkpoint save, a resumed batch relabelled, close()).
   */
  handleFailedBatch(batch: ProducerBatch, code: number | null, adjustSequenceNumbers: boolean): void {
    this.removeInflight(batch)
    if (this.state === 'FATAL_ERROR') return
    if (batch.maybeWritten && batch.hasSequence) {
      // The batch may be in the log, so it never hands its sequence on: rewriting the later in-flight
      // batches under a new epoch now would append a second copy of any the broker already wrote. As
      // Java does for an expired batch (no adjustSequenceNumbers), the partition waits until what is in
      // flight settles and shows whether the sequence landed (seed 746580; the refused save and the
      // relabelled resumed batch in test/sim/regressions.test.ts).
      this.markSequenceUnresolved(batch)
    } else if (code === errorCode('OUT_OF_ORDER_SEQUENCE_NUMBER') && !this.isTransactional) {
      this.requestEpochBumpForPartition(batch.tp)
    } else if (code === errorCode('UNKNOWN_PRODUCER_ID')) {
      this.partitions.delete(batch.tp.key)
      this.unresolved.delete(batch.tp.key)
    } else if (adjustSequenceNumbers && batch.hasSequence) {
      if (!this.isTransactional) this.requestEpochBumpForPartition(batch.tp, batch)
      else this.entry(batch.tp).adjustSequencesDueToFailedBatch(batch, this.restamp)
    }
  }
}
