import type { Clock } from '../clock.js'
import { BufferExhaustedException } from '../errors.js'
import { RECORD_BATCH_HEADER_SIZE, readBatchRecords, type Core, type CompressionType, type RecordInput } from '../wasm/core.js'
import type { Cluster } from '../client/cluster.js'
import { ProducerBatch, sequenceOrder, type Reject, type Resolve, type TopicPartition } from './producer-batch.js'
import type { IdempotenceManager } from './idempotence.js'

/** RecordAccumulator.tryAppend result bits (0: no buffer space, wait and call again). */
export const APPENDED = 1
export const NEW_BATCH = 2
export const BATCH_FULL = 4

export interface AccumulatorOptions {
  batchSize: number
  lingerMs: number
  maxRequestSize: number
  bufferMemory: number
  maxBlockMs: number
  deliveryTimeoutMs: number
  retryBackoffMs: number
  retryBackoffMaxMs: number
  compression: CompressionType
  compressionLevel: number | undefined
  clock: Clock
  random: () => number
}

interface Waiter { bytes: number; resolve(): void; reject(e: Error): void; timer: unknown; startedMs: number }

/**
 * buffer.memory as a byte budget: each batch reserves max(batch.size, its first record) when it opens
 * and returns it when it completes. When the budget is spent, appends wait (FIFO) up to max.block.ms.
 */
export class BufferPool {
  private used = 0
  private readonly waiters: Waiter[] = []
  waitTimeTotalMs = 0

  constructor(readonly total: number, private readonly clock: Clock) {}

  get available(): number { return this.total - this.used }
  get queued(): number { return this.waiters.length }

  tryReserve(bytes: number): boolean {
    if (this.waiters.length > 0 || this.used + bytes > this.total) return false
    this.used += bytes
    return true
  }

  reserve(bytes: number, maxBlockMs: number): Promise<void> {
    if (this.tryReserve(bytes)) return Promise.resolve()
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = {
        bytes, resolve, reject, startedMs: this.clock.now(),
        timer: this.clock.setTimeout(() => {
          const i = this.waiters.indexOf(w)
          if (i >= 0) this.waiters.splice(i, 1)
          this.waitTimeTotalMs += this.clock.now() - w.startedMs
          reject(new BufferExhaustedException(`buffer.memory (${this.total} bytes) stayed full for max.block.ms (${maxBlockMs} ms); ` +
            'the brokers are not keeping up: slow down, raise buffer.memory, or check broker health'))
          this.grant()
        }, maxBlockMs),
      }
      this.waiters.push(w)
    })
  }

  release(bytes: number): void {
    this.used = Math.max(0, this.used - bytes)
    this.grant()
  }

  private grant(): void {
    while (this.waiters.length > 0 && this.used + this.waiters[0]!.bytes <= this.total) {
      const w = this.waiters.shift()!
      this.clock.clearTimeout(w.timer)
      this.used += w.bytes
      this.waitTimeTotalMs += this.clock.now() - w.startedMs
      w.resolve()
    }
  }

  failWaiters(error: Error): void {
    for (const w of this.waiters.splice(0)) { this.clock.clearTimeout(w.timer); w.reject(error) }
  }
}

export interface ReadyResult {
  readyNodes: Set<number>
  nextReadyCheckDelayMs: number
  unknownLeaderTopics: Set<string>
}

/**
 * Per-partition deques of batches (Java's RecordAccumulator). A batch is ready when it is full, has
 * lingered linger.ms, is a retry past its backoff, or the producer is flushing/closing; drain() then
 * takes every sendable head batch for a ready node (so partial batches ride along with ready ones to
 * the same broker), up to max.request.size per request.
 */
export class RecordAccumulator {
  private readonly deques = new Map<string, ProducerBatch[]>()
  readonly incomplete = new Set<ProducerBatch>()
  private readonly drainIndex = new Map<number, number>()
  flushesInProgress = 0
  closed = false
  /** Records in the batch drained last: the size hint for a new batch of a partition without one. */
  private lastBatchRecords = 0
  /** Per topic, the learned compressed/uncompressed ratio (Java's CompressionRatioEstimator). */
  private readonly ratios = new Map<string, number>()
  /** ratio() of the last topic asked, read once per append; setRatio() keeps it current. */
  private ratioTopic: string | null = null
  private ratioValue = 1

  constructor(private readonly opts: AccumulatorOptions, readonly pool: BufferPool, readonly core: Core, private readonly idempotence: IdempotenceManager | null) {}

  deque(tp: TopicPartition): ProducerBatch[] {
    // Sticky partitioning sends run after run to one partition: a one-entry cache skips the Map
    // lookup (deques are never removed from the map, so a cached one stays the partition's).
    if (tp === this.lastTp) return this.lastDeque
    let d = this.deques.get(tp.key)
    if (!d) { d = []; this.deques.set(tp.key, d) }
    this.lastTp = tp
    this.lastDeque = d
    return d
  }
  private lastTp: TopicPartition | null = null
  private lastDeque: ProducerBatch[] = []
  /**
   * After drain(): when the first retry it passed over for its backoff is due (Infinity: none). ready()
   * leaves out the partitions of a node another partition already made ready, so without this their
   * backoff would get no timer and wait for some unrelated wakeup.
   */
  drainBackoffDelayMs = Infinity

  queueSize(tp: TopicPartition): number { return this.deques.get(tp.key)?.length ?? 0 }

  /**
   * Appends to the partition's open batch, or opens a new one (reserving buffer memory). Returns 0
   * when a new batch is needed but the buffer is full, so the caller can wait and call again; else
   * APPENDED, plus NEW_BATCH and/or BATCH_FULL (a number, not an object: this runs once per record).
   * `baseSize` is the record's recordBaseSize() when the caller already has it.
   */
  tryAppend(tp: TopicPartition, record: RecordInput, recordBytes: number, resolve: Resolve, reject: Reject | null, baseSize?: number): number {
    const d = this.deque(tp)
    const last = d[d.length - 1]
    const batchSize = this.opts.batchSize
    if (last && last.open && last.recordCount > 0) {
      const ratio = this.ratio(tp.topic)
      if (this.scale(ratio, last.open.estimatedSizeWith(record, baseSize)) <= batchSize) {
        last.append(record, resolve, reject)
        return this.scale(ratio, last.open.uncompressedBytes) >= batchSize || d.length > 1 ? APPENDED | BATCH_FULL : APPENDED
      }
    }
    const reserve = Math.max(batchSize, recordBytes)
    if (!this.pool.tryReserve(reserve)) return 0
    const open = this.core.openBatch({
      compression: this.opts.compression, level: this.opts.compressionLevel,
      initialCapacity: Math.min(reserve + 64, this.opts.maxRequestSize + 64),
    })
    const batch = new ProducerBatch(tp, open, this.opts.clock.now(), reserve, last ? last.recordCount : this.lastBatchRecords)
    batch.append(record, resolve, reject)
    d.push(batch)
    this.incomplete.add(batch)
    return d.length > 1 || this.estimatedBytes(batch) >= batchSize ? APPENDED | NEW_BATCH | BATCH_FULL : APPENDED | NEW_BATCH
  }

  /** The topic's learned compression ratio (1 without a codec). */
  private ratio(topic: string): number {
    if (this.opts.compression === 'none') return 1
    if (topic !== this.ratioTopic) {
      this.ratioTopic = topic
      this.ratioValue = this.ratios.get(topic) ?? 1
    }
    return this.ratioValue
  }

  private setRatio(topic: string, ratio: number): void {
    this.ratios.set(topic, ratio)
    if (topic === this.ratioTopic) this.ratioValue = ratio
  }

  /**
   * The size a batch will have on the wire. With a codec, batches are closed against batch.size using
   * the ratio learned from recent batches of the topic (+5% margin, as Java), so compressed batches fill.
   * The record area compresses; the header does not.
   */
  private scale(ratio: number, uncompressed: number): number {
    if (this.opts.compression === 'none') return uncompressed
    return RECORD_BATCH_HEADER_SIZE + Math.ceil((uncompressed - RECORD_BATCH_HEADER_SIZE) * ratio * 1.05)
  }

  estimatedBytes(batch: ProducerBatch): number {
    return batch.bytes ? batch.bytes.length : this.scale(this.ratio(batch.tp.topic), batch.open!.uncompressedBytes)
  }

  /**
   * Learns from a closed batch: improve slowly, deteriorate fast (Java's steps 0.005 and 0.05).
   * Only batches of at least a quarter of batch.size teach it: the estimate matters only for batches
   * that approach batch.size, and a batch of a few records compresses worse than the codec's frame
   * overhead (ratio above 1), which would undo, in one step, what a hundred full batches learned.
   */
  private observeRatio(batch: ProducerBatch): void {
    const H = RECORD_BATCH_HEADER_SIZE
    if (this.opts.compression === 'none' || !batch.bytes || batch.uncompressedBytes - H < this.opts.batchSize / 4) return
    const observed = (batch.bytes.length - H) / (batch.uncompressedBytes - H)
    const current = this.ratios.get(batch.tp.topic) ?? 1
    const next = observed < current ? Math.max(current - 0.005, observed) : Math.max(current + 0.05, observed)
    this.setRatio(batch.tp.topic, Math.min(next, 1))
  }

  /** A retry goes back to the head of its deque, in sequence order among other retries. */
  reenqueue(batch: ProducerBatch, now: number): void {
    batch.attempts++
    batch.lastAttemptMs = now
    // Drawn once per attempt from the injected random, so every check of this backoff agrees.
    batch.retryJitter = 0.8 + 0.4 * this.opts.random()
    const d = this.deque(batch.tp)
    if (!batch.hasSequence || !this.idempotence) { d.unshift(batch); return }
    insertInSequenceOrder(d, batch)
  }

  /**
   * Java's ExponentialBackoff(retry.backoff.ms, 2, retry.backoff.max.ms, 0.2): the term is capped
   * before the jitter and the result after it, and it is whole milliseconds so a due retry is never
   * a hair short of due.
   */
  backoffMs(batch: ProducerBatch): number {
    if (batch.attempts === 0) return 0
    const initial = Math.min(this.opts.retryBackoffMs, this.opts.retryBackoffMaxMs)
    const max = this.opts.retryBackoffMaxMs
    const expMax = max > initial ? Math.log2(max / Math.max(initial, 1)) : 0
    if (expMax === 0) return initial
    const term = initial * 2 ** Math.min(batch.attempts - 1, expMax)
    return Math.min(Math.floor(batch.retryJitter * term), max)
  }

  ready(cluster: Cluster, now: number): ReadyResult {
    const readyNodes = new Set<number>()
    const unknownLeaderTopics = new Set<string>()
    let next = Infinity
    const exhausted = this.pool.queued > 0
    for (const d of this.deques.values()) {
      // Judge the batch drain() takes first. Judged by another one (a split piece or a restamped batch
      // ahead of a retry still backing off), the node counted as ready, drain() passed the retry over,
      // and its backoff got no timer (seed 1246175: it waited until delivery.timeout.ms).
      if (this.idempotence) orderRetries(d)
      const first = d[0]
      if (!first) continue
      const leader = cluster.leaderFor(first.tp.topic, first.tp.partition)
      if (leader < 0) { unknownLeaderTopics.add(first.tp.topic); continue }
      if (readyNodes.has(leader)) continue
      const waited = now - first.lastAttemptMs
      const backingOff = first.inRetry && !leaderChanged(first, cluster) && waited < this.backoffMs(first)
      const timeToWait = backingOff ? this.backoffMs(first) : this.opts.lingerMs
      const full = d.length > 1 || this.estimatedBytes(first) >= this.opts.batchSize
      const expired = waited >= timeToWait
      const sendable = full || expired || exhausted || this.closed || this.flushesInProgress > 0
      if (sendable && !backingOff) readyNodes.add(leader)
      else next = Math.min(next, Math.max(0, timeToWait - waited))
    }
    return { readyNodes, nextReadyCheckDelayMs: next, unknownLeaderTopics }
  }

  /** Takes the sendable head batches of each node's partitions, stamping sequences as it goes. */
  drain(cluster: Cluster, nodes: Iterable<number>, now: number): Map<number, ProducerBatch[]> {
    const out = new Map<number, ProducerBatch[]>()
    this.drainBackoffDelayMs = Infinity
    const byNode = new Map<number, ProducerBatch[][]>()
    for (const d of this.deques.values()) {
      const first = d[0]
      if (!first) continue
      const leader = cluster.leaderFor(first.tp.topic, first.tp.partition)
      if (leader < 0) continue
      let list = byNode.get(leader)
      if (!list) { list = []; byNode.set(leader, list) }
      list.push(d)
    }
    for (const node of nodes) {
      const deques = byNode.get(node)
      if (!deques || deques.length === 0) continue
      const start = (this.drainIndex.get(node) ?? 0) % deques.length
      const ready: ProducerBatch[] = []
      let size = 0
      for (let k = 0; k < deques.length; k++) {
        const d = deques[(start + k) % deques.length]!
        if (this.idempotence) orderRetries(d)
        const first = d[0]!
        if (first.inRetry && !leaderChanged(first, cluster) && now - first.lastAttemptMs < this.backoffMs(first)) {
          this.drainBackoffDelayMs = Math.min(this.drainBackoffDelayMs, this.backoffMs(first) - (now - first.lastAttemptMs))
          continue
        }
        if (size + this.estimatedBytes(first) > this.opts.maxRequestSize && ready.length > 0) break
        if (this.idempotence && !this.idempotence.canDrain(first, now)) continue
        d.shift()
        if (this.idempotence && !first.hasSequence) {
          const stamp = this.idempotence.stampAtDrain(first)!
          first.close(stamp)
          this.idempotence.addInflight(first)
          this.observeRatio(first)
        } else if (!first.bytes) {
          first.close({ producerId: -1n, producerEpoch: -1, baseSequence: -1, transactional: false })
          this.observeRatio(first)
        }
        first.drainedMs = now
        this.lastBatchRecords = first.recordCount
        first.leaderEpochAtSend = cluster.topics.get(first.tp.topic)?.partitions[first.tp.partition]?.leaderEpoch ?? -1
        size += first.sizeInBytes
        ready.push(first)
        this.drainIndex.set(node, (start + k + 1) % deques.length)
      }
      if (ready.length > 0) out.set(node, ready)
    }
    return out
  }

  /** Batches still queued (never sent, or waiting to retry) past delivery.timeout.ms. */
  expiredBatches(now: number): ProducerBatch[] {
    const expired: ProducerBatch[] = []
    for (const d of this.deques.values()) {
      while (d.length > 0 && d[0]!.hasReachedDeliveryTimeout(this.opts.deliveryTimeoutMs, now)) expired.push(d.shift()!)
    }
    return expired
  }

  nextExpiryDelay(now: number): number {
    let next = Infinity
    for (const d of this.deques.values()) if (d[0]) next = Math.min(next, d[0].createdMs + this.opts.deliveryTimeoutMs - now)
    return Math.max(0, next)
  }

  /**
   * Whether a refused batch can be split: its records are read back from its own bytes (as Java does),
   * which for a compressed batch takes the codec's decoder.
   */
  canSplit(batch: ProducerBatch): boolean {
    return batch.bytes !== null && batch.recordCount > 1 && (this.opts.compression === 'none' || this.core.supportsDecompression(this.opts.compression))
  }

  /** Splits a batch the broker refused as too large into batch.size pieces that keep its order. */
  split(batch: ProducerBatch): ProducerBatch[] {
    const records = readBatchRecords(this.core, batch.bytes!)
    // The estimate let this batch grow too large: start over from "no compression gain" (as Java).
    this.setRatio(batch.tp.topic, 1)
    const pieces: ProducerBatch[] = []
    let current: ProducerBatch | null = null
    // Java splits into batch.size pieces, which never ends when the broker's limit is below batch.size;
    // at most half the refused size guarantees progress down to single records.
    const limit = Math.min(this.opts.batchSize, Math.max(1, Math.floor(batch.sizeInBytes / 2)))
    for (let i = 0; i < records.length; i++) {
      const record = records[i]!
      if (!current || this.scale(this.ratio(batch.tp.topic), current.open!.estimatedSizeWith(record)) > limit) {
        const open = this.core.openBatch({ compression: this.opts.compression, level: this.opts.compressionLevel })
        current = new ProducerBatch(batch.tp, open, batch.createdMs, 0)
        pieces.push(current)
      }
      current.append(record, batch.resolves[i]!, batch.rejects[i]!)
    }
    return pieces
  }

  /** Re-queues split pieces at the head, in order; the original's buffer reservation moves to the first. */
  reenqueueSplit(original: ProducerBatch, pieces: ProducerBatch[]): void {
    this.incomplete.delete(original)
    pieces[0]!.reservedBytes = original.reservedBytes
    const d = this.deque(original.tp)
    // Java's splitAndReenqueue: with sequences, the pieces go where their sequences belong, behind a
    // lower-sequence retry already back in the deque, not in front of it.
    if (this.idempotence && original.hasSequence) for (const p of pieces) insertInSequenceOrder(d, p)
    else d.unshift(...pieces)
    for (const p of pieces) this.incomplete.add(p)
  }

  deallocate(batch: ProducerBatch): void {
    if (this.incomplete.delete(batch)) this.pool.release(batch.reservedBytes)
  }

  hasUndrained(): boolean {
    for (const d of this.deques.values()) if (d.length > 0) return true
    return false
  }

  /** Fails everything still queued (close with timeout, fatal error). */
  /** Fails every queued batch (a fatal error, close()), each with the error `errorFor` gives it; `onFailed` runs after each. */
  failQueued(errorFor: (batch: ProducerBatch) => Error, onFailed?: (batch: ProducerBatch) => void): void {
    for (const d of this.deques.values()) {
      for (const b of d.splice(0)) { b.fail(errorFor(b)); onFailed?.(b); this.deallocate(b) }
    }
  }

  /** A transaction aborts: its records that never left (no sequence yet) fail, never to be sent (Java's abortUndrainedBatches). */
  abortUnsent(error: Error): void {
    for (const d of this.deques.values()) {
      for (let i = d.length - 1; i >= 0; i--) {
        const b = d[i]!
        if (b.hasSequence) continue
        d.splice(i, 1)
        b.abort(error)
        this.deallocate(b)
      }
    }
  }
}

/** KIP-951: a retry whose partition has a newer leader epoch than at its last send skips the backoff. */
function leaderChanged(batch: ProducerBatch, cluster: Cluster): boolean {
  const epoch = cluster.topics.get(batch.tp.topic)?.partitions[batch.tp.partition]?.leaderEpoch ?? -1
  return batch.leaderEpochAtSend >= 0 && epoch > batch.leaderEpochAtSend
}

/** Java's insertInSequenceOrder: among the batches at the head of the deque that already have sequences. */
function insertInSequenceOrder(d: ProducerBatch[], batch: ProducerBatch): void {
  let i = 0
  while (i < d.length && d[i]!.hasSequence && sequenceOrder(d[i]!, batch) < 0) i++
  d.splice(i, 0, batch)
}

/** An epoch bump restamps batches where they sit, which can leave the retries at a deque's head out of order. */
function orderRetries(d: ProducerBatch[]): void {
  let n = 0
  while (n < d.length && d[n]!.hasSequence) n++
  for (let i = 1; i < n; i++) {
    if (sequenceOrder(d[i - 1]!, d[i]!) > 0) {
      const head = d.slice(0, n).sort(sequenceOrder)
      d.splice(0, n, ...head)
      return
    }
  }
}
