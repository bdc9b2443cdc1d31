import type { Cluster } from '../client/cluster.js'
import type { Connection } from '../client/connection.js'
import { InvalidRecordException, TimeoutException, markDelivery } from '../errors.js'
import { invalidatesMetadata, isAmbiguous, isFatal, refusesProducerState, refusesResumedState } from './error-policy.js'
import { InitProducerId, Produce, apiError, errorCode, errorInfo, type ResponseBody } from '../protocol/index.js'
import type { RecordAccumulator } from './accumulator.js'
import type { Checkpointer } from './checkpoint.js'
import type { ProducerConfig } from './config.js'
import type { ProducerMetrics } from './metrics.js'
import type { ProducerBatch, TopicPartition } from './producer-batch.js'
import type { IdempotenceManager } from './idempotence.js'

type PartitionResponse = ResponseBody<typeof Produce>['responses'][number]['partitionResponses'][number]

const INT_MAX = 2147483647
/** Brokers refuse zstd batches in Produce requests below v7 (Kafka 2.1), and a 2.0 broker cannot read them. */
export const ZSTD_MIN_PRODUCE_VERSION = 7
const UNSUPPORTED_COMPRESSION_TYPE = errorCode('UNSUPPORTED_COMPRESSION_TYPE')

/**
 * The send loop (Java's Sender), driven by wakeups instead of a thread: each run finds ready nodes,
 * drains batches into one Produce request per broker, expires batches past delivery.timeout.ms, and
 * turns every response into complete / retry / split / fail decisions. Frames to a broker are written
 * in drain order by the connection's FIFO, so sequences reach the broker ascending per partition.
 */
export class Sender {
  private timer: unknown = null
  private timerAt = Infinity
  private timerImmediate = false
  private readonly onTimer = (): void => { this.timer = null; this.timerAt = Infinity; this.timerImmediate = false; this.run() }
  private running = false
  private rerun = false
  private readonly inFlightPerNode = new Map<number, number>()
  private readonly throttledUntil = new Map<number, number>()
  readonly inFlightBatches = new Set<ProducerBatch>()
  private readonly idleWaiters: Array<() => void> = []
  private initInFlight = false
  private metadataInFlight = false
  private metadataBackoffUntil = 0
  private initBackoffUntil = 0
  closed = false
  readonly topicsInUse = new Set<string>()
  /** While a checkpoint is being taken over its producer id may be resumed: no InitProducerId until released. */
  private holdProducerId: boolean
  private readonly checkpoint: Checkpointer | null
  /**
   * @param txnHooks the transactional producer's coordinator client: Produce version ceiling and batch
   *   failures; null without a transactional.id.
   * @param resume with the `checkpoint` setting: batches are sent only once durable in it, and a resumed
   *   batch the broker refuses for its producer state goes to `onResumedRefused` (sent again as possible duplicates).
   */
  constructor(
    private readonly config: ProducerConfig,
    private readonly cluster: Cluster,
    private readonly accumulator: RecordAccumulator,
    private readonly idempotence: IdempotenceManager | null,
    private readonly metrics: ProducerMetrics,
    private readonly txnHooks: {
      produceVersionCap(): number
      batchFailed(error: Error): void
      isPartitionInTransaction(tp: TopicPartition): boolean
    } | null = null,
    private readonly resume: { checkpoint: Checkpointer; onResumedRefused(batch: ProducerBatch, error: Error): void } | null = null,
  ) {
    this.checkpoint = resume?.checkpoint ?? null
    this.holdProducerId = resume !== null
  }

  /** The checkpoint was taken over (or there was none to take): the producer may ask for an id now. */
  releaseProducerId(): void {
    this.holdProducerId = false
    this.wakeup()
  }

  get inFlightRequests(): number {
    let n = 0
    for (const v of this.inFlightPerNode.values()) n += v
    return n
  }

  /** Runs the loop soon (coalesced); `delayMs` schedules a later run unless an earlier one is due. */
  wakeup(delayMs = 0): void {
    // An append to a partition with a full batch wakes the sender on every record: a run already due
    // now covers it, without even reading the clock.
    if (this.timer !== null && this.timerImmediate) return
    if (this.closed && delayMs > 0) return
    const clock = this.config.clock
    const at = clock.now() + delayMs
    if (this.timer !== null && this.timerAt <= at) return
    if (this.timer !== null) clock.clearTimeout(this.timer)
    this.timerAt = at
    this.timerImmediate = delayMs <= 0
    this.timer = clock.setTimeout(this.onTimer, delayMs)
  }

  run(): void {
    if (this.running) { this.rerun = true; return }
    this.running = true
    try {
      do { this.rerun = false; this.runOnce() } while (this.rerun)
    } finally {
      this.running = false
    }
  }

  private runOnce(): void {
    const now = this.config.clock.now()
    const idem = this.idempotence
    if (idem) {
      if (idem.state === 'FATAL_ERROR') {
        this.failAll(idem.fatalError!)
        return
      }
      const unresolved = idem.maybeResolveSequences()
      if (unresolved) this.txnHooks?.batchFailed(unresolved)
      if (idem.bumpIdempotentEpochIfRequired()) {
        this.metrics.epochBumps++
        this.config.log.debug('epoch', 'epoch bumped', { producerId: idem.producerIdAndEpoch.producerId, epoch: idem.producerIdAndEpoch.epoch })
      }
      if (!idem.hasProducerId) {
        // A transactional producer gets its id from initTransactions(), never here.
        if (!idem.isTransactional && !this.holdProducerId) this.ensureProducerId(now)
        this.expire(now)
        this.scheduleNext(now, Infinity)
        return
      }
    }

    const ready = this.accumulator.ready(this.cluster, now)
    if (ready.unknownLeaderTopics.size > 0 || this.cluster.metadataStale(now)) this.refreshMetadata(now)

    const sendable: number[] = []
    let throttleDelay = Infinity
    for (const node of ready.readyNodes) {
      // KIP-219: a broker answering Produce v6+ with a throttle time expects the client to hold off.
      const throttledFor = (this.throttledUntil.get(node) ?? 0) - now
      if (throttledFor > 0) { throttleDelay = Math.min(throttleDelay, throttledFor); continue }
      let conn: Connection
      try { conn = this.cluster.connection(node) } catch { this.cluster.requestUpdate(); continue }
      // A broker we cannot reach may no longer lead its partitions: refresh metadata (Java: handleServerDisconnect).
      if (!conn.isReady) { conn.connect().then(() => this.wakeup(), () => { this.cluster.requestUpdate(); this.wakeup(this.config.retryBackoffMs) }); continue }
      if ((this.inFlightPerNode.get(node) ?? 0) >= this.config.maxInFlight) continue
      sendable.push(node)
    }
    const drained = this.accumulator.drain(this.cluster, sendable, now)
    this.expire(now)
    for (const [node, batches] of drained) this.dispatch(node, batches, now)
    // Java's loop goes round again at once: the next batch of a partition may go while the first is
    // in flight (up to max.in.flight). Without this it waited for an answer to wake the sender.
    if (drained.size > 0) this.rerun = true
    this.scheduleNext(now, Math.min(ready.nextReadyCheckDelayMs, throttleDelay, this.accumulator.drainBackoffDelayMs))
  }

  private scheduleNext(now: number, readyDelay: number): void {
    let delay = Math.min(readyDelay, this.accumulator.nextExpiryDelay(now))
    for (const b of this.inFlightBatches) delay = Math.min(delay, Math.max(0, b.createdMs + this.config.deliveryTimeoutMs - now))
    if (this.metadataBackoffUntil > now && this.accumulator.hasUndrained()) delay = Math.min(delay, this.metadataBackoffUntil - now)
    if (Number.isFinite(delay)) this.wakeup(Math.max(delay, 0))
  }

  /** delivery.timeout.ms covers queued and in-flight batches alike. */
  private expire(now: number): void {
    const expired = this.accumulator.expiredBatches(now)
    for (const b of this.inFlightBatches) {
      if (b.hasReachedDeliveryTimeout(this.config.deliveryTimeoutMs, now)) expired.push(b)
    }
    for (const b of expired) {
      this.inFlightBatches.delete(b)
      // The outcome of a batch that reached the wire is unknown: failBatch holds new batches for the
      // partition until what is in flight settles and tells whether the sequence landed.
      if (b.drainedMs >= 0) b.maybeWritten = true
      const err = markDelivery(new TimeoutException(
        `expiring ${b.recordCount} record(s) for ${b.tp.topic}-${b.tp.partition}: ` +
        `${now - b.createdMs} ms passed since batch creation (delivery.timeout.ms=${this.config.deliveryTimeoutMs})` +
        (b.maybeWritten ? '; the batch was sent, so the records may have been written' : '; the records were never sent'),
      ), b.maybeWritten)
      this.failBatch(b, err, null, false)
    }
  }

  private ensureProducerId(now: number): void {
    const idem = this.idempotence!
    if (this.initInFlight || now < this.initBackoffUntil) {
      if (!this.initInFlight) this.wakeup(this.initBackoffUntil - now)
      return
    }
    this.initInFlight = true
    idem.initializing()
    const conn = this.cluster.anyConnection()
    conn.request(InitProducerId, { transactionalId: null, transactionTimeoutMs: INT_MAX, producerId: -1n, producerEpoch: -1 }).response.then((res) => {
      const code = res.errorCode
      if (code === errorCode('NONE')) {
        idem.initialized({ producerId: res.producerId, epoch: res.producerEpoch })
        this.config.log.debug('epoch', 'producer id assigned', { producerId: res.producerId, epoch: res.producerEpoch, broker: conn.describe() })
      } else if (isFatal(code, { transactional: false })) {
        idem.transitionToFatal(apiError(code, 'InitProducerId'))
      } else {
        idem.initFailed()
        this.initBackoffUntil = this.config.clock.now() + this.config.retryBackoffMs
        if (code === errorCode('COORDINATOR_LOAD_IN_PROGRESS') || code === errorCode('COORDINATOR_NOT_AVAILABLE') || code === errorCode('NOT_COORDINATOR')) this.cluster.requestUpdate()
      }
    }, () => {
      idem.initFailed()
      this.initBackoffUntil = this.config.clock.now() + this.config.retryBackoffMs
    }).finally(() => { this.initInFlight = false; this.wakeup() })
  }

  private refreshMetadata(now: number): void {
    if (this.metadataInFlight || now < this.metadataBackoffUntil) return
    this.metadataInFlight = true
    this.cluster.refresh(this.topicsInUse).then(
      () => { this.metadataBackoffUntil = this.config.clock.now() + this.config.retryBackoffMs },
      () => { this.metadataBackoffUntil = this.config.clock.now() + this.config.retryBackoffMs },
    ).finally(() => { this.metadataInFlight = false; this.wakeup() })
  }

  /**
   * With a checkpoint, a request goes out only once every batch in it is durable under its current
   * stamp. Waiting requests keep their place: saves complete in order and each waiting request is
   * sent from its own save's completion, so drain order per connection holds.
   */
  private dispatch(node: number, batches: ProducerBatch[], now: number): void {
    const cp = this.checkpoint
    if (!cp) { this.sendProduce(node, batches, now); return }
    for (const b of batches) cp.track(b)
    if (batches.every((b) => cp.isDurable(b))) { this.sendProduce(node, batches, now); return }
    // Counted as in flight while it waits, so max.in.flight and the delivery timeout see it.
    this.inFlightPerNode.set(node, (this.inFlightPerNode.get(node) ?? 0) + 1)
    for (const b of batches) this.inFlightBatches.add(b)
    const go = (): void => {
      const live = batches.filter((b) => !b.done)
      // An epoch bump may have restamped a batch while the save ran: that stamp must be saved too.
      if (live.some((b) => !cp.isDurable(b)) && !this.closed) {
        for (const b of live) cp.track(b)
        cp.persist().then(go, refused)
        return
      }
      this.inFlightPerNode.set(node, (this.inFlightPerNode.get(node) ?? 1) - 1)
      if (live.length > 0 && !this.closed) this.sendProduce(node, live, this.config.clock.now())
      else if (this.inFlightRequests === 0) for (const resolve of this.idleWaiters.splice(0)) resolve()
      this.wakeup()
    }
    const refused = (e: unknown): void => {
      this.inFlightPerNode.set(node, (this.inFlightPerNode.get(node) ?? 1) - 1)
      // Not sent: a batch fails as not written (later sequences close the gap by an epoch bump) unless
      // an earlier attempt of it was sent (a refused one too: see failAll). Each such batch gets a copy
      // of the error of its own that says so: the store's rejection is one object, shared by every batch of the request.
      for (const b of batches) {
        const sent = b.maybeWritten || b.inRetry
        if (!b.done) this.failBatch(b, markDelivery(sent ? copyOf(e as Error) : e as Error, sent), null, true)
      }
      if (this.inFlightRequests === 0) for (const resolve of this.idleWaiters.splice(0)) resolve()
      this.wakeup()
    }
    cp.persist().then(go, refused)
  }

  private sendProduce(node: number, batches: ProducerBatch[], now: number): void {
    const conn = this.cluster.connection(node)
    if (this.config.compressionType === 'zstd') {
      const version = conn.versionFor(Produce, this.produceVersionCap())
      if (version === null || version < ZSTD_MIN_PRODUCE_VERSION) {
        // Such a request would be refused (or misread) by the broker: the batches fail as its
        // UNSUPPORTED_COMPRESSION_TYPE answer would fail them, without sending it.
        const refused = errorResponse(UNSUPPORTED_COMPRESSION_TYPE)
        refused.errorMessage = `broker ${conn.describe()} takes Produce up to ${version === null ? 'a version below ours' : `v${version}`}, ` +
          `and zstd batches need v${ZSTD_MIN_PRODUCE_VERSION} (Kafka 2.1); upgrade the broker or choose another compression.type`
        for (const b of batches) this.completeBatch(b, refused, now)
        return
      }
    }
    const byTopic = new Map<string, Array<{ index: number; records: Uint8Array }>>()
    let records = 0
    for (const b of batches) {
      let list = byTopic.get(b.tp.topic)
      if (!list) { list = []; byTopic.set(b.tp.topic, list) }
      list.push({ index: b.tp.partition, records: b.bytes! })
      records += b.recordCount
      this.inFlightBatches.add(b)
      this.metrics.batchSize.record(b.bytes!.length)
      if (b.uncompressedBytes > 0 && this.config.compressionType !== 'none') this.metrics.compressionRate.record(b.bytes!.length / b.uncompressedBytes)
      this.metrics.recordQueueTime.record(now - b.createdMs)
    }
    this.metrics.recordsPerRequest.record(records)
    this.metrics.totals.requests++
    this.inFlightPerNode.set(node, (this.inFlightPerNode.get(node) ?? 0) + 1)
    if (this.config.observer.onProduceRequest) this.observeProduce(node, batches)
    const expectResponse = this.config.acks !== 0
    const pending = conn.request(Produce, {
      transactionalId: this.idempotence?.transactionalId ?? null,
      acks: this.config.acks,
      timeoutMs: this.config.requestTimeoutMs,
      topicData: [...byTopic].map(([name, partitionData]) => ({ name, partitionData })),
    }, { cap: this.produceVersionCap(), expectResponse })
    pending.response.then(
      (res) => {
        const throttleMs = expectResponse ? res.throttleTimeMs : 0
        if (throttleMs > 0 && (conn.versionFor(Produce, this.produceVersionCap()) ?? 0) >= 6) {
          // Answers pipelined on one connection each carry a throttle; the latest end wins, never an earlier one.
          this.throttledUntil.set(node, Math.max(this.throttledUntil.get(node) ?? 0, this.config.clock.now() + throttleMs))
        }
        this.handleResponse(res, batches, expectResponse, now)
      },
      (err: unknown) => this.handleFailure(err, batches),
    ).finally(() => {
      this.inFlightPerNode.set(node, (this.inFlightPerNode.get(node) ?? 1) - 1)
      if (this.inFlightRequests === 0) for (const resolve of this.idleWaiters.splice(0)) resolve()
      this.wakeup()
    })
  }

  /**
   * Resolves once no Produce request is out. A batch that expired in flight is done, but its request
   * may still reach the leader: EndTxn waits for that too, or the write could land after the
   * transaction ended (on a broker without KIP-890 verification, opening one nobody ends).
   */
  whenNoRequestsInFlight(): Promise<void> {
    if (this.inFlightRequests === 0) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  private observeProduce(node: number, batches: readonly ProducerBatch[]): void {
    this.config.observer.onProduceRequest!({
      node,
      maxVersion: this.produceVersionCap(),
      batches: batches.map((b) => ({
        topic: b.tp.topic, partition: b.tp.partition, producerId: b.producerId, producerEpoch: b.producerEpoch, baseSequence: b.baseSequence,
        recordCount: b.recordCount, sizeInBytes: b.sizeInBytes, bytes: b.bytes!, attempt: b.attempts + 1, inTransaction: this.txnHooks?.isPartitionInTransaction(b.tp) ?? false,
      })),
    })
  }

  /** Transactions without TV2 stop at Produce v11; everything else at 12 (v13 needs topic ids). */
  produceVersionCap(): number { return this.txnHooks?.produceVersionCap() ?? 12 }

  private handleResponse(res: ResponseBody<typeof Produce>, batches: ProducerBatch[], expectResponse: boolean, sentMs: number): void {
    const now = this.config.clock.now()
    if (!expectResponse) {
      for (const b of batches) this.completeBatch(b, errorResponse(errorCode('NONE')), now)
      return
    }
    this.metrics.requestLatency.record(now - sentMs)
    this.metrics.throttleTime.record(res.throttleTimeMs)
    const endpoints = res.nodeEndpoints
    const byKey = new Map<string, PartitionResponse>()
    for (const t of res.responses) {
      for (const p of t.partitionResponses) byKey.set(`${t.name}:${p.index}`, p)
    }
    for (const b of batches) {
      const pr = byKey.get(b.tp.key)
      if (!pr) {
        // A broker that leaves a partition out of its answer gives no outcome: treat it as a network error.
        this.completeBatch(b, errorResponse(errorCode('NETWORK_EXCEPTION')), now)
        continue
      }
      let hinted = false
      if (pr.errorCode !== errorCode('NONE') && pr.currentLeader && pr.currentLeader.leaderId >= 0) {
        hinted = this.cluster.applyLeaderHint(b.tp.topic, b.tp.partition, pr.currentLeader.leaderId, pr.currentLeader.leaderEpoch, endpoints)
      }
      if (invalidatesMetadata(pr.errorCode) && !hinted) this.cluster.invalidateLeader(b.tp.topic, b.tp.partition)
      this.completeBatch(b, pr, now)
    }
  }

  private handleFailure(err: unknown, batches: ProducerBatch[]): void {
    const now = this.config.clock.now()
    const code = errorCode(err instanceof TimeoutException ? 'REQUEST_TIMED_OUT' : 'NETWORK_EXCEPTION')
    for (const b of batches) {
      // The connection is gone and the leader is in doubt: re-route the retry through fresh metadata
      // rather than hammering a dead broker, and never let one dead broker wedge other partitions.
      this.cluster.invalidateLeader(b.tp.topic, b.tp.partition)
      this.completeBatch(b, errorResponse(code), now)
    }
  }

  private completeBatch(batch: ProducerBatch, pr: PartitionResponse, now: number): void {
    this.inFlightBatches.delete(batch)
    if (batch.done) return
    const code = pr.errorCode
    if (isAmbiguous(code) || (refusesProducerState(code) && batch.inRetry)) batch.maybeWritten = true
    if (batch.resumed && refusesResumedState(code) && this.resume) {
      // The broker's state for the resumed identity is not what the checkpoint promised: a resend
      // under a new epoch could be a second copy, so its records go out again labelled instead.
      this.resume.onResumedRefused(batch, this.batchError(batch, pr))
      return
    }
    if (code === errorCode('MESSAGE_TOO_LARGE') && !batch.resumed && this.accumulator.canSplit(batch)) {
      this.splitAndReenqueue(batch)
      return
    }
    if (code !== errorCode('NONE')) {
      const info = errorInfo(code)
      if (this.canRetry(batch, pr, now)) {
        this.metrics.recordRetry.record(batch.recordCount)
        this.metrics.totals.recordRetries += batch.recordCount
        if (this.config.log.on('retry')) {
          this.config.log.debug('retry', 'batch retried', {
            partition: `${batch.tp.topic}-${batch.tp.partition}`, error: info.name, attempt: batch.attempts + 1, records: batch.recordCount, baseSequence: batch.baseSequence,
          })
        }
        this.accumulator.reenqueue(batch, now)
        return
      }
      if (code === errorCode('DUPLICATE_SEQUENCE_NUMBER')) {
        this.succeed(batch, -1n, -1n)
        return
      }
      const idem = this.idempotence
      if (idem && !idem.isTransactional && isFatal(code, { transactional: false })) idem.transitionToFatal(apiError(code, 'Produce', pr.errorMessage))
      this.failBatch(batch, this.batchError(batch, pr), code, true, perRecordErrors(batch, pr))
      return
    }
    this.succeed(batch, pr.baseOffset, pr.logAppendTimeMs)
  }

  private succeed(batch: ProducerBatch, baseOffset: bigint, logAppendTimeMs: bigint): void {
    this.idempotence?.handleCompletedBatch(batch, baseOffset, this.config.clock.now())
    batch.complete(baseOffset, logAppendTimeMs)
    this.release(batch)
    this.metrics.recordSend.record(batch.recordCount)
    this.metrics.totals.recordsSent += batch.recordCount
    this.accumulator.deallocate(batch)
  }

  /**
   * A settled batch leaves the checkpoint after its records' promise reactions ran: an application
   * that keeps its own outbox (the Worker's SQLite rows) updates it in a plain .then() of send(), and
   * the save that drops the batch then carries that update, never a state between the two.
   */
  private release(batch: ProducerBatch): void {
    const cp = this.checkpoint
    if (cp) queueMicrotask(() => cp.untrack(batch))
  }

  private canRetry(batch: ProducerBatch, pr: PartitionResponse, now: number): boolean {
    if (batch.hasReachedDeliveryTimeout(this.config.deliveryTimeoutMs, now)) return false
    if (batch.attempts >= this.config.retries) return false
    if (this.idempotence) {
      const decided = this.idempotence.canRetrySequenceError(pr.errorCode, batch, pr.logStartOffset)
      if (decided !== null) return decided
    }
    return errorInfo(pr.errorCode).retriable
  }

  /** MESSAGE_TOO_LARGE on a multi-record batch: split, keep the sequences, no attempt counted. */
  private splitAndReenqueue(batch: ProducerBatch): void {
    const pieces = this.accumulator.split(batch)
    if (this.idempotence && batch.hasSequence) {
      this.idempotence.removeInflight(batch)
      let seq = batch.baseSequence
      for (const p of pieces) {
        p.close({ ...batch.stamp(), baseSequence: seq })
        seq += p.recordCount
        this.idempotence.addInflight(p)
      }
    }
    for (const p of pieces) p.maybeWritten = batch.maybeWritten
    this.checkpoint?.untrack(batch)
    batch.markSplit()
    this.accumulator.reenqueueSplit(batch, pieces)
    this.wakeup()
  }

  private batchError(batch: ProducerBatch, pr: PartitionResponse): Error {
    const base = apiError(pr.errorCode, `producing ${batch.recordCount} record(s) to ${batch.tp.topic}-${batch.tp.partition}`, pr.errorMessage)
    // A definite error says this attempt was not appended; an earlier ambiguous attempt may have been.
    return markDelivery(pr.errorCode === errorCode('MESSAGE_TOO_LARGE')
      ? Object.assign(base, { name: 'RecordTooLargeException' })
      : base, batch.maybeWritten)
  }

  failBatch(batch: ProducerBatch, error: Error, code: number | null, adjustSequences: boolean, perRecord?: Map<number, Error>): void {
    this.inFlightBatches.delete(batch)
    if (this.idempotence?.isTransactional) this.txnHooks?.batchFailed(error)
    if (this.idempotence) this.idempotence.handleFailedBatch(batch, code, adjustSequences)
    this.metrics.recordError.record(batch.recordCount)
    this.metrics.totals.recordErrors += batch.recordCount
    batch.fail(error, perRecord)
    this.release(batch)
    this.accumulator.deallocate(batch)
  }

  /**
   * After a fatal error every queued batch fails with it; in-flight ones fail as their answers come.
   * A queued retry gets a copy of the error of its own that says it may be in the log (the shared one
   * says "not written"): even after a refusal, a second copy of an earlier attempt (a relay or a
   * network that delivered it twice) may have been appended, and no retry will now tell (sim seed 3113076).
   */
  failAll(error: Error): void {
    const unsent = markDelivery(error, false)
    this.accumulator.failQueued((b) => (b.maybeWritten || b.inRetry ? markDelivery(copyOf(error), true) : unsent), (b) => this.release(b))
  }

  close(): void {
    this.closed = true
    if (this.timer !== null) this.config.clock.clearTimeout(this.timer)
    this.timer = null
  }
}

/** `e` as a new object (class, message, fields): markDelivery can write to it without touching `e`. */
function copyOf(e: Error): Error {
  return Object.create(Object.getPrototypeOf(e) as object, Object.getOwnPropertyDescriptors(e)) as Error
}

function errorResponse(errorCode: number): PartitionResponse {
  return { index: -1, errorCode, baseOffset: -1n, logAppendTimeMs: -1n, logStartOffset: -1n, recordErrors: [], errorMessage: null, currentLeader: null }
}

function perRecordErrors(batch: ProducerBatch, pr: PartitionResponse): Map<number, Error> | undefined {
  if (pr.recordErrors.length === 0) return undefined
  const m = new Map<number, Error>()
  for (const re of pr.recordErrors) {
    if (re.batchIndex < 0 || re.batchIndex >= batch.recordCount) continue
    const e = new InvalidRecordException(`record ${re.batchIndex} of the batch to ${batch.tp.topic}-${batch.tp.partition} ` +
      `was rejected: ${re.batchIndexErrorMessage ?? pr.errorMessage ?? 'invalid record'}`,
      { code: pr.errorCode, errorName: errorInfo(pr.errorCode).name })
    m.set(re.batchIndex, markDelivery(e, batch.maybeWritten))
  }
  // The other records of the batch were dropped with it; they fail with the batch-level error.
  return m
}

