import type { OpenBatch, ProducerStamp, RecordInput } from '../wasm/core.js'

export interface TopicPartition { readonly topic: string; readonly partition: number; readonly key: string }

export const topicPartition = (topic: string, partition: number): TopicPartition => ({ topic, partition, key: `${topic}:${partition}` })

export interface RecordMetadata {
  topic: string
  partition: number
  /** The record's offset; -1n when the broker answered DUPLICATE_SEQUENCE_NUMBER without one. */
  offset: bigint
  timestamp: number
}

/**
 * send(record, callback)'s callback, called once with the record's metadata or its error, as Java's
 * `Callback.onCompletion(metadata, exception)`: the other argument is null.
 */
export type SendCallback = (metadata: RecordMetadata | null, error: Error | null) => void
/** A record's success callback: its promise's resolve, or its SendCallback (whose reject is then null). */
export type Resolve = (md: RecordMetadata, error: null) => void
export type Reject = (e: Error) => void

/**
 * A SendCallback that throws must not stop the records after it or the sender: its error goes to a
 * microtask of its own, where the runtime reports it as uncaught, as it would a throwing .then()'s.
 */
const rethrowLater = (thrown: unknown): void => queueMicrotask(() => { throw thrown })

/** Fails one record: its promise's reject, or (reject null) its SendCallback. */
export function failRecord(resolve: Resolve, reject: Reject | null, e: Error): void {
  if (reject) reject(e)
  else try { (resolve as SendCallback)(null, e) } catch (thrown) { rethrowLater(thrown) }
}

const NO_SEQUENCE = -1
const noop = (): void => {}
const INT_MAX = 2147483647

/** Sequences wrap from Integer.MAX_VALUE to 0, as the broker expects. */
export const incrementSequence = (seq: number, by: number): number => (seq > INT_MAX - by ? seq - INT_MAX - 1 + by : seq + by)

/** Batches go out by (producer id, epoch, sequence): after a bump, old-epoch batches before rewritten ones. */
export function sequenceOrder(a: ProducerBatch, b: ProducerBatch): number {
  if (a.producerId !== b.producerId) return a.producerId < b.producerId ? -1 : 1
  if (a.producerEpoch !== b.producerEpoch) return a.producerEpoch - b.producerEpoch
  return a.baseSequence - b.baseSequence
}

/**
 * The records bound for one partition in one request. Open (in WASM memory, taking appends) until
 * drained; then closed with its producer id, epoch and base sequence stamped, so a retry is
 * byte-identical to the first send.
 */
export class ProducerBatch {
  open: OpenBatch | null
  /**
   * The closed batch. Never written to: an epoch bump that rewrites the stamp gives the batch a new
   * array, so a request, a checkpoint or a store holding the old one can keep it without a copy.
   */
  bytes: Uint8Array | null = null
  /**
   * Each record's promise callbacks and timestamp, in append order: three flat arrays rather than an
   * object per record, because they live until the ack and every live object is GC work.
   */
  readonly resolves: Resolve[]
  readonly rejects: Array<Reject | null>
  private readonly timestamps: number[]
  private count = 0
  attempts = 0
  /** Some attempt ended without a definite answer (lost response, timeout, error after append): the broker may hold the records. */
  maybeWritten = false
  /** The +-20% retry backoff factor for the current attempt. */
  retryJitter = 1
  lastAttemptMs: number
  drainedMs = -1
  producerId = -1n
  producerEpoch = -1
  baseSequence = NO_SEQUENCE
  transactional = false
  /** Set when an epoch bump rewrote this batch's sequence (Java: sequenceHasBeenReset). */
  sequenceHasBeenReset = false
  /** The leader epoch this batch was last sent under; a change means the retry can skip its backoff. */
  leaderEpochAtSend = -1
  /** How the batch ended (Java's FinalState, plus SPLIT for a batch replaced by its pieces); null while live. */
  finalState: 'SUCCEEDED' | 'FAILED' | 'ABORTED' | 'SPLIT' | null = null
  private doneWaiters: Array<() => void> | null = null
  /** Size before compression, known once closed (for compression-rate-avg and the ratio estimate). */
  uncompressedBytes = 0
  /** Buffer bytes reserved for this batch, returned when it completes. */
  reservedBytes: number

  /** Taken over from a checkpoint: sent by an earlier producer, so the broker may hold it already. */
  resumed = false

  /** `expectedRecords` presizes the arrays (growing by push copies them several times over). */
  constructor(readonly tp: TopicPartition, open: OpenBatch | null, readonly createdMs: number, reservedBytes: number, expectedRecords = 0) {
    this.resolves = new Array(expectedRecords)
    this.rejects = new Array(expectedRecords)
    this.timestamps = new Array(expectedRecords)
    this.open = open
    this.lastAttemptMs = createdMs
    this.reservedBytes = reservedBytes
  }

  /**
   * A batch an earlier producer sealed and sent (from its checkpoint): its bytes go out again
   * unchanged. No caller awaits its records; `onFail` hears (once) if it fails.
   */
  static resumed(tp: TopicPartition, bytes: Uint8Array, stamp: ProducerStamp, recordCount: number, now: number, onFail: Reject): ProducerBatch {
    const b = new ProducerBatch(tp, null, now, 0)
    let failed = false
    b.resolves.push(...new Array<Resolve>(recordCount).fill(noop))
    b.rejects.push(...new Array<Reject>(recordCount).fill((e) => { if (!failed) { failed = true; onFail(e) } }))
    b.bytes = bytes
    b.count = recordCount
    b.producerId = stamp.producerId
    b.producerEpoch = stamp.producerEpoch
    b.baseSequence = stamp.baseSequence
    b.transactional = stamp.transactional
    b.maybeWritten = true
    b.resumed = true
    return b
  }

  get done(): boolean { return this.finalState !== null }
  get recordCount(): number { return this.count }
  get hasSequence(): boolean { return this.baseSequence !== NO_SEQUENCE }
  get inRetry(): boolean { return this.attempts > 0 }
  get lastSequence(): number { return incrementSequence(this.baseSequence, this.recordCount - 1) }
  get sizeInBytes(): number { return this.bytes ? this.bytes.length : this.open!.uncompressedBytes }

  append(record: RecordInput, resolve: Resolve, reject: Reject | null): void {
    // The bytes are copied into WASM memory here; nothing keeps the caller's arrays after this call.
    this.open!.append(record)
    const i = this.count++
    this.resolves[i] = resolve
    this.rejects[i] = reject
    this.timestamps[i] = record.timestamp
  }

  /** Closes the batch under the given producer state (at drain). */
  close(stamp: ProducerStamp): void {
    if (this.open) this.uncompressedBytes = this.open.uncompressedBytes
    this.producerId = stamp.producerId
    this.producerEpoch = stamp.producerEpoch
    this.baseSequence = stamp.baseSequence
    this.transactional = stamp.transactional
    if (this.open) {
      this.bytes = this.open.finish(stamp)
      this.open = null
    }
  }

  stamp(): ProducerStamp {
    return { producerId: this.producerId, producerEpoch: this.producerEpoch, baseSequence: this.baseSequence, transactional: this.transactional }
  }

  hasReachedDeliveryTimeout(deliveryTimeoutMs: number, now: number): boolean {
    return now - this.createdMs >= deliveryTimeoutMs
  }

  complete(baseOffset: bigint, logAppendTimeMs: bigint): void {
    if (this.done) return
    this.finalState = 'SUCCEEDED'
    this.discardOpen()
    const appendTime = logAppendTimeMs >= 0n ? Number(logAppendTimeMs) : -1
    const topic = this.tp.topic
    const partition = this.tp.partition
    const resolves = this.resolves
    const timestamps = this.timestamps
    // One BigInt add per record (not BigInt(i) plus an add).
    const known = baseOffset >= 0n
    let offset = known ? baseOffset : -1n
    for (let i = 0; i < this.count; i++) {
      // A promise's resolve never throws; a SendCallback may. (A try around the whole loop, resumed
      // after a throw, came out 650 instructions per record dearer.)
      try {
        resolves[i]!({ topic, partition, offset, timestamp: appendTime >= 0 ? appendTime : timestamps[i]! }, null)
      } catch (thrown) { rethrowLater(thrown) }
      if (known) offset += 1n
    }
    this.releaseCallbacks()
  }

  /** Fails every record; `perRecord` maps batch indexes to their own error (INVALID_RECORD). */
  fail(error: Error, perRecord?: Map<number, Error>): void {
    this.end('FAILED', error, perRecord)
  }

  /** The transaction aborted before the batch was sent (Java's abort): the records fail, never written. */
  abort(error: Error): void {
    this.end('ABORTED', error)
  }

  private end(state: 'FAILED' | 'ABORTED', error: Error, perRecord?: Map<number, Error>): void {
    if (this.done) return
    this.finalState = state
    this.discardOpen()
    for (let i = 0; i < this.count; i++) failRecord(this.resolves[i]!, this.rejects[i]!, perRecord?.get(i) ?? error)
    this.releaseCallbacks()
  }

  /** Replaced by split pieces: the records' promises now belong to the pieces. */
  markSplit(): void {
    this.finalState = 'SPLIT'
    this.discardOpen()
    this.releaseCallbacks()
  }

  /** Resolves once the batch completed or failed (for flush). */
  whenDone(): Promise<void> {
    if (this.done) return Promise.resolve()
    return new Promise((resolve) => (this.doneWaiters ??= []).push(resolve))
  }

  /**
   * A settled batch can stay referenced for a while (the request that carried it, sequencing
   * state); its callbacks would keep every record's promise and metadata alive with it.
   */
  private releaseCallbacks(): void {
    this.resolves.length = 0
    this.rejects.length = 0
    this.timestamps.length = 0
  }

  private discardOpen(): void {
    const waiters = this.doneWaiters
    this.doneWaiters = null
    if (waiters) for (const w of waiters) w()
    if (this.open) { this.open.discard(); this.open = null }
  }
}
