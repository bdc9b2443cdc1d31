import type { Clock } from '../../clock.js'
import {
  ApiException, ClosedError, FatalTransactionException, IllegalStateException, KafkaEdgeError, NetworkException,
  ProducerFencedException, TimeoutException, TransactionAbortableException, TransactionAbortedException,
} from '../../errors.js'
import { EndTxn, InitProducerId, Produce, apiError, errorCode as code, type Message } from '../../protocol/index.js'
import { isFatal } from '../error-policy.js'
import type { TopicPartition } from '../producer-batch.js'
import type { ProducerObserver } from '../config.js'
import type { IdempotenceManager, ProducerIdAndEpoch } from '../idempotence.js'
import {
  AddOffsetsToTxnHandler, AddPartitionsToTxnHandler, EndTxnHandler, FindCoordinatorHandler, InitProducerIdHandler,
  TxnOffsetCommitHandler, fenced, type TxnRequestHandler,
} from './handlers.js'
import {
  CoordinatorType, TxnResult, isTransitionValid, type CoordinatorCluster, type CoordinatorConnection, type CoordinatorNode,
  type GroupMetadata, type OffsetToCommit, type OffsetsToCommit, type TransactionHost, type TransactionsOptions, type TxnState,
} from './state.js'

/**
 * The transactional producer's state machine and coordinator client (Java's TransactionManager,
 * transactional half). It holds the transaction state, the partitions and offsets of the current
 * transaction, and a priority queue of coordinator requests of which exactly one is in flight at a
 * time, in Java's order: FindCoordinator, InitProducerId, AddPartitionsToTxn / AddOffsetsToTxn /
 * TxnOffsetCommit, EndTxn, epoch-bump InitProducerId. Produce requests stay with the Sender; they
 * consult `isSendToPartitionAllowed` (through the idempotence manager) and report failed batches here.
 *
 * Transaction v2 (KIP-890) is used when the coordinator's finalized transaction.version is >= 2 and it
 * speaks EndTxn v5 and Produce v12: partitions join implicitly with the first Produce, offsets go
 * straight to the group coordinator, and every EndTxn returns the next epoch (or a new producer id).
 */
export class TransactionCoordinatorClient {
  readonly transactionalId: string
  readonly transactionTimeoutMs: number
  readonly retryBackoffMs: number
  readonly host: TransactionHost
  private readonly observer: ProducerObserver
  private readonly clock: Clock
  private readonly cluster: CoordinatorCluster
  private readonly idem: IdempotenceManager
  private maxBlockMs: number

  state: TxnState = 'UNINITIALIZED'
  lastError: Error | null = null
  epochBumpRequired = false
  transactionStarted = false
  /** Transaction v2 in use for the current transaction (decided at beginTransaction). */
  tv2 = false
  /** What the transaction coordinator supports, learned from its ApiVersions. */
  coordinatorSupportsTv2 = false
  canBumpEpoch = true
  readonly newPartitions = new Map<string, TopicPartition>()
  readonly pendingPartitions = new Map<string, TopicPartition>()
  readonly partitionsInTransaction = new Map<string, TopicPartition>()
  transactionCoordinator: CoordinatorNode | null = null
  private readonly groupCoordinators = new Map<string, CoordinatorNode>()

  private readonly queue: TxnRequestHandler[] = []
  nextSeq = 0
  private inFlight: TxnRequestHandler | null = null
  private pumpTimer: unknown = null
  private pumpAt = Infinity
  private waitingForBatches = false
  private pendingTransition: { result: TxnResult; state: TxnState; operation: string } | null = null
  private closed = false

  /** Every state change, for tests: [from, to]. */
  readonly transitions: Array<[TxnState, TxnState]> = []

  constructor(opts: TransactionsOptions) {
    this.transactionalId = opts.transactionalId
    this.transactionTimeoutMs = opts.transactionTimeoutMs
    this.retryBackoffMs = opts.retryBackoffMs
    this.maxBlockMs = opts.maxBlockMs
    this.clock = opts.clock
    this.cluster = opts.cluster
    this.idem = opts.idempotence
    this.host = opts.host
    this.observer = opts.observer ?? {}
  }

  get producerIdAndEpoch(): ProducerIdAndEpoch { return this.idem.producerIdAndEpoch }
  get hasProducerId(): boolean { return this.idem.hasProducerId }
  get hasError(): boolean { return this.state === 'ABORTABLE_ERROR' || this.state === 'FATAL_ERROR' }
  get isCompleting(): boolean { return this.state === 'COMMITTING_TRANSACTION' || this.state === 'ABORTING_TRANSACTION' }
  get hasInFlightRequest(): boolean { return this.inFlight !== null }
  get pendingRequests(): readonly string[] { return [...this.queue].sort(byPriority).map((h) => h.api.name) }

  // ---- the application's calls -----------------------------------------------------------------

  /** Gets a producer id and epoch for the transactional.id, fencing older producers with it; `blockMs`: what is left of max.block.ms. */
  async initTransactions(blockMs = this.maxBlockMs): Promise<void> {
    const r = this.initializeTransactions()
    await this.await(r, true, blockMs)
  }

  beginTransaction(): void {
    this.throwIfPendingState('beginTransaction')
    this.maybeFailWithError()
    this.transitionTo('IN_TRANSACTION')
    this.tv2 = this.coordinatorSupportsTv2
  }

  async sendOffsetsToTransaction(offsets: OffsetsToCommit, groupMetadata: GroupMetadata | string): Promise<void> {
    const group = normalizeGroup(groupMetadata)
    const list = normalizeOffsets(offsets)
    this.throwIfPendingState('sendOffsetsToTransaction')
    this.maybeFailWithError()
    if (this.state !== 'IN_TRANSACTION') {
      throw new IllegalStateException(`cannot send offsets when no transaction is in progress (state ${this.state}); call beginTransaction() first`)
    }
    let result: TxnResult
    if (this.tv2) {
      // Transaction v2: TxnOffsetCommit v5 goes straight to the group coordinator.
      result = new TxnResult('TxnOffsetCommit')
      this.enqueue(new TxnOffsetCommitHandler(this, result, list, group, true))
      this.transactionStarted = true
    } else {
      const h = new AddOffsetsToTxnHandler(this, list, group)
      this.enqueue(h)
      result = h.result
    }
    await this.await(result, false)
  }

  async commitTransaction(): Promise<void> {
    const r = this.handleCachedResult(() => {
      this.maybeFailWithError()
      this.transitionTo('COMMITTING_TRANSACTION')
      return this.beginCompletingTransaction(true)
    }, 'COMMITTING_TRANSACTION', 'commitTransaction')
    await this.await(r)
  }

  async abortTransaction(): Promise<void> {
    const r = this.handleCachedResult(() => {
      if (this.state !== 'ABORTABLE_ERROR') this.maybeFailWithError()
      const cause = this.lastError
      this.transitionTo('ABORTING_TRANSACTION')
      // Sequences that expired batches left unresolved only a new epoch repairs, even when they
      // expired while committing (Java's maybeResolveSequences asks for the bump regardless; here it
      // may not have run yet). Else the partition's next batches meet OUT_OF_ORDER_SEQUENCE_NUMBER
      // until they expire too (sim seed 18666).
      if (this.canBumpEpoch && (this.idem.unresolved.size > 0 || this.idem.sequencesNeedNewEpoch)) this.epochBumpRequired = true
      this.newPartitions.clear()
      // Records not yet sent never will be; those in flight complete before EndTxn goes out.
      this.host.abortUndrainedBatches(new TransactionAbortedException('the transaction was aborted before the record was sent'))
      return this.beginCompletingTransaction(false, cause)
    }, 'ABORTING_TRANSACTION', 'abortTransaction')
    await this.await(r)
  }

  /** send() checks (Java: failIfNotReadyForSend). Throws synchronously. */
  failIfNotReadyForSend(): void {
    if (this.hasError) {
      if (this.state === 'FATAL_ERROR' && this.lastError instanceof ProducerFencedException) throw fenced(this)
      throw this.errorStateException('send')
    }
    if (!this.hasProducerId) {
      throw new IllegalStateException('cannot send before initTransactions() completed on a transactional producer ' +
        "(Java: IllegalStateException: Cannot perform a 'send' before completing a call to initTransactions)")
    }
    if (this.state !== 'IN_TRANSACTION') {
      throw new IllegalStateException(`cannot send in state ${this.state}: a transactional producer sends only inside a transaction; ` +
        'call beginTransaction() first (Java: Cannot perform operation without a transaction)')
    }
  }

  /**
   * The record is about to be appended to `tp`: make the partition part of the transaction. Returns an
   * error for the record instead when the transaction can no longer take records.
   */
  maybeAddPartition(tp: TopicPartition): Error | null {
    if (this.state === 'ABORTING_TRANSACTION') return new TransactionAbortedException('the transaction was aborted before the record was appended')
    if (this.hasError) return this.errorStateException('send')
    // COMMITTING: a record send() accepted before commitTransaction() may reach the accumulator late
    // (it waited for metadata); it still belongs to the transaction, and EndTxn waits for it.
    if (this.state !== 'IN_TRANSACTION' && this.state !== 'COMMITTING_TRANSACTION') {
      return new IllegalStateException(`cannot add partition ${tp.topic}-${tp.partition} to the transaction in state ${this.state}`)
    }
    if (this.partitionsInTransaction.has(tp.key) || this.newPartitions.has(tp.key) || this.pendingPartitions.has(tp.key)) return null
    if (this.tv2) {
      // Produce v12 adds the partition on the broker side.
      this.partitionsInTransaction.set(tp.key, tp)
      this.transactionStarted = true
      return null
    }
    this.newPartitions.set(tp.key, tp)
    this.schedule(0)
    return null
  }

  isSendToPartitionAllowed(tp: TopicPartition): boolean {
    if (this.state === 'FATAL_ERROR') return false
    return this.partitionsInTransaction.has(tp.key)
  }

  /** The partition already joined the transaction (drain needs this only without TV2). */
  isPartitionInTransaction(tp: TopicPartition): boolean { return this.partitionsInTransaction.has(tp.key) }

  /** Produce version ceiling: v12 adds partitions implicitly (TV2); without TV2 stay at 11. */
  produceVersionCap(): number { return this.tv2 ? 12 : 11 }

  /** A Produce batch of the transaction failed for good (Java: maybeTransitionToErrorState). */
  batchFailed(error: Error): void {
    const c = error instanceof ApiException ? error.code ?? null : null
    if (c !== null && isFatal(c, { transactional: true })) {
      this.transitionToFatalError(c === code('PRODUCER_FENCED') ? fenced(this) : error)
      return
    }
    if (this.state === 'FATAL_ERROR') return
    // Between an abort and the epoch bump after it, the aborted transaction can still report a failure
    // (a sequence its expired batches left unresolved, found once its partition drained): no
    // transaction is open for it to abort, and the bump restarts every sequence.
    if (this.state === 'INITIALIZING') return
    if (this.canBumpEpoch && !this.isCompleting) this.epochBumpRequired = true
    this.transitionToAbortableError(error)
  }

  close(): void {
    this.closed = true
    if (this.pumpTimer !== null) this.clock.clearTimeout(this.pumpTimer)
    const e = new ClosedError('the producer was closed')
    for (const h of this.queue.splice(0)) h.result.fail(e)
    this.inFlight?.result.fail(e)
    this.pendingTransition?.result.fail(e)
  }

  // ---- state --------------------------------------------------------------------------------------

  transitionTo(target: TxnState, error: Error | null = null): void {
    if (!isTransitionValid(this.state, target)) {
      throw new IllegalStateException(`transactional.id ${JSON.stringify(this.transactionalId)}: invalid transition attempted from state ${this.state} to state ${target}`)
    }
    if (target === 'FATAL_ERROR' || target === 'ABORTABLE_ERROR') this.lastError = error
    else this.lastError = null
    this.transitions.push([this.state, target])
    this.state = target
  }

  transitionToAbortableError(e: Error): void {
    if (this.state === 'ABORTING_TRANSACTION' || this.state === 'FATAL_ERROR') return
    if (!isTransitionValid(this.state, 'ABORTABLE_ERROR')) return
    this.transitionTo('ABORTABLE_ERROR', e)
    // Nothing more of this transaction goes out: records not yet sent fail now.
    this.host.abortUndrainedBatches(this.unsentRecordError())
  }

  transitionToFatalError(e: Error): void {
    if (this.state === 'FATAL_ERROR') return
    this.transitionTo('FATAL_ERROR', e)
    // The sender fails queued batches with the idempotence manager's fatal error.
    this.idem.transitionToFatal(this.unsentRecordError())
    this.pendingTransition?.result.fail(e)
    this.host.abortUndrainedBatches(this.unsentRecordError())
    this.host.wakeupSender()
  }

  /**
   * What records that will never be sent fail with once the transaction failed: a new error each
   * time, because failing a record writes `mayHaveBeenWritten` into its error, and `lastError` may be
   * the error a sent batch already failed with (whose flag must stay true when it may be in the log).
   */
  private unsentRecordError(): Error {
    const cause = this.lastError
    const why = `${cause?.name}: ${cause?.message}`
    if (this.state !== 'FATAL_ERROR') {
      return new TransactionAbortableException(`the record was not sent: the transaction hit an error (${why}); call abortTransaction() and start a new one`, { cause })
    }
    if (cause instanceof ProducerFencedException) return fenced(this)
    return new FatalTransactionException(`the record was not sent: the producer hit a fatal error (${why}); close it and create a new one`, { cause })
  }

  /** New producer id/epoch: every partition's sequences restart at 0 under it. */
  adoptProducerId(pe: ProducerIdAndEpoch, resetSequences: boolean): void {
    this.idem.initialized(pe)
    if (resetSequences) {
      this.idem.unresolved.clear()
      this.idem.sequencesNeedNewEpoch = false
    }
  }

  completeTransaction(): void {
    this.transitionTo(this.epochBumpRequired && !this.tv2 ? 'INITIALIZING' : 'READY')
    this.clearTransaction()
  }

  clearTransaction(): void {
    this.lastError = null
    this.epochBumpRequired = false
    this.transactionStarted = false
    this.newPartitions.clear()
    this.pendingPartitions.clear()
    this.partitionsInTransaction.clear()
  }

  private initializeTransactions(current: ProducerIdAndEpoch | null = null): TxnResult {
    this.maybeFailWithError()
    const isEpochBump = current !== null
    return this.handleCachedResult(() => {
      // An epoch bump changes state while EndTxn is handled; a first init starts here.
      if (!isEpochBump) this.transitionTo('INITIALIZING')
      const h = new InitProducerIdHandler(this, current ?? { producerId: -1n, epoch: -1 }, isEpochBump)
      this.enqueue(h)
      return h.result
    }, 'INITIALIZING', 'initTransactions')
  }

  private beginCompletingTransaction(committed: boolean, cause: Error | null = null): TxnResult {
    if (this.newPartitions.size > 0) this.enqueue(this.addPartitionsHandler())
    // INVALID_PRODUCER_ID_MAPPING: the coordinator would refuse EndTxn; go straight to InitProducerId.
    // (The error that made the transaction abortable is passed in: the transition to ABORTING clears lastError.)
    const pidMapping = cause instanceof ApiException && cause.code === code('INVALID_PRODUCER_ID_MAPPING')
    if (!pidMapping) {
      const h = new EndTxnHandler(this, committed, this.tv2)
      this.enqueue(h)
      // Transaction v2 bumps the epoch in EndTxn itself.
      if (!this.epochBumpRequired || this.tv2) return h.result
    }
    const bump = new InitProducerIdHandler(this, this.producerIdAndEpoch, true)
    this.enqueue(bump)
    return bump.result
  }

  private addPartitionsHandler(): AddPartitionsToTxnHandler {
    for (const [k, tp] of this.newPartitions) this.pendingPartitions.set(k, tp)
    this.newPartitions.clear()
    return new AddPartitionsToTxnHandler(this, [...this.pendingPartitions.values()])
  }

  private maybeFailWithError(): void {
    if (!this.hasError) return
    if (this.lastError instanceof ProducerFencedException) throw fenced(this)
    throw this.errorStateException('this transactional method')
  }

  private errorStateException(what: string): Error {
    const cause = this.lastError
    if (this.state === 'FATAL_ERROR') {
      return new FatalTransactionException(`cannot execute ${what}: the producer hit a fatal error (${cause?.name}: ${cause?.message}); close it and create a new one`, { cause })
    }
    return new TransactionAbortableException(`cannot execute ${what}: the transaction hit an error (${cause?.name}: ${cause?.message}); ` +
      'call abortTransaction() and start a new one', { cause })
  }

  private throwIfPendingState(operation: string): void {
    const p = this.pendingTransition
    if (!p) return
    if (p.result.acked) { this.pendingTransition = null; return }
    throw new IllegalStateException(`cannot ${operation}: the previous call to ${p.operation} timed out and must be called again to complete`)
  }

  private handleCachedResult(supplier: () => TxnResult, nextState: TxnState, operation: string): TxnResult {
    const p = this.pendingTransition
    if (p) {
      if (p.result.acked) this.pendingTransition = null
      else if (p.state !== nextState) throw new IllegalStateException(`cannot ${operation}: the previous call to ${p.operation} timed out and must be called again to complete`)
      else return p.result
    }
    const result = supplier()
    this.pendingTransition = { result, state: nextState, operation }
    return result
  }

  /** Waits up to max.block.ms; a timeout leaves the operation pending so the same call resumes it. */
  private async await(result: TxnResult, cached = true, blockMs = this.maxBlockMs): Promise<void> {
    this.schedule(0)
    this.host.wakeupSender()
    if (!result.completed) {
      let timer: unknown = null
      const timedOut = await Promise.race([
        result.promise.then(() => false),
        new Promise<boolean>((resolve) => { timer = this.clock.setTimeout(() => resolve(true), blockMs) }),
      ])
      this.clock.clearTimeout(timer)
      if (timedOut) {
        const operation = cached ? this.pendingTransition?.operation ?? result.operation : result.operation
        throw new TimeoutException(`${operation} did not complete within max.block.ms (${this.maxBlockMs} ms); call it again to resume waiting for the same operation`)
      }
    }
    result.acked = true
    if (result.error) throw result.error
  }

  // ---- the coordinator request queue ----------------------------------------------------------

  enqueue(h: TxnRequestHandler): void {
    this.queue.push(h)
    this.schedule(0)
  }

  lookupCoordinator(type: CoordinatorType, key: string): void {
    if (type === CoordinatorType.GROUP) this.groupCoordinators.delete(key)
    else this.transactionCoordinator = null
    if (this.queue.some((h) => h instanceof FindCoordinatorHandler && h.type === type && h.key === key)) return
    this.enqueue(new FindCoordinatorHandler(this, type, key))
  }

  setCoordinator(type: CoordinatorType, key: string, node: CoordinatorNode): void {
    if (type === CoordinatorType.GROUP) this.groupCoordinators.set(key, node)
    else this.transactionCoordinator = node
  }

  coordinator(type: CoordinatorType, key: string): CoordinatorNode | null {
    return type === CoordinatorType.GROUP ? this.groupCoordinators.get(key) ?? null : this.transactionCoordinator
  }

  private schedule(delayMs: number): void {
    if (this.closed) return
    const at = this.clock.now() + delayMs
    if (this.pumpTimer !== null && this.pumpAt <= at) return
    if (this.pumpTimer !== null) this.clock.clearTimeout(this.pumpTimer)
    this.pumpAt = at
    this.pumpTimer = this.clock.setTimeout(() => { this.pumpTimer = null; this.pumpAt = Infinity; this.pump() }, delayMs)
  }

  private nextRequest(): TxnRequestHandler | null {
    if (this.newPartitions.size > 0) this.queue.push(this.addPartitionsHandler())
    for (;;) {
      this.queue.sort(byPriority)
      const next = this.queue[0]
      if (!next) return null
      // EndTxn waits for every batch of the transaction to complete.
      if (next.isEndTxn && this.host.hasIncomplete()) {
        if (!this.waitingForBatches) {
          this.waitingForBatches = true
          this.host.flush().catch(() => {}).finally(() => { this.waitingForBatches = false; this.schedule(0) })
        }
        return null
      }
      this.queue.shift()
      // An abortable transaction sends nothing new but coordinator lookups and the retry of an
      // AddPartitionsToTxn or AddOffsetsToTxn whose answer never came. The coordinator may have
      // opened the transaction on it; without the answer the abort would skip EndTxn and leave it
      // open, and the epoch bump after the abort would find it ongoing and fence this producer
      // (Java's TransactionManager drops the retry and fences itself so: sim seeds 3178, 30599).
      const stillUseful = next instanceof FindCoordinatorHandler || ((next instanceof AddPartitionsToTxnHandler || next instanceof AddOffsetsToTxnHandler) && next.isRetry)
      if (this.hasError && !(this.state === 'ABORTABLE_ERROR' && stillUseful)) {
        // E.g. a batch failed while committing: the commit fails with a typed abortable error.
        next.result.fail(this.state === 'ABORTABLE_ERROR' ? this.errorStateException(next.result.operation) : this.lastError!)
        continue
      }
      if (next.isEndTxn && !this.transactionStarted) {
        // Nothing reached the coordinator in this transaction: nothing to end.
        next.result.done()
        if (this.state !== 'FATAL_ERROR') this.completeTransaction()
        continue
      }
      return next
    }
  }

  private pump(): void {
    if (this.inFlight || this.closed) return
    const h = this.nextRequest()
    if (!h) return
    this.inFlight = h
    // A handler that throws (a bug) must not leave its operation unsettled for every later call to
    // resume: the call fails with what was thrown, and the producer with it (its state is unknown).
    this.send(h).catch((e: Error) => {
      h.result.fail(e)
      this.transitionToFatalError(e)
    }).finally(() => {
      this.inFlight = null
      this.schedule(0)
    })
  }

  private async send(h: TxnRequestHandler): Promise<void> {
    const type = h.coordinatorType()
    let conn: CoordinatorConnection
    let nodeId = -1
    if (type !== null) {
      const node = this.coordinator(type, h.coordinatorKey())
      if (!node) {
        this.lookupCoordinator(type, h.coordinatorKey())
        h.reenqueue()
        return
      }
      nodeId = node.nodeId
      if (!this.cluster.brokers.has(node.nodeId)) this.cluster.brokers.set(node.nodeId, { host: node.host, port: node.port, nodeId: node.nodeId })
      try { conn = this.cluster.connection(node.nodeId) } catch { this.lookupCoordinator(type, h.coordinatorKey()); h.reenqueue(); return }
    } else {
      conn = this.cluster.anyConnection()
    }
    if (h.isRetry) await this.sleep(h.retryBackoffMs())
    if (this.closed) return
    let res: Message
    try {
      await conn.connect()
      if (type === CoordinatorType.TRANSACTION) this.learnCoordinatorFeatures(conn)
      const opts = h.versionOpts()
      if (opts.version !== undefined && conn.versionFor(h.api, opts.version) !== opts.version) {
        h.fatalError(apiError(code('UNSUPPORTED_VERSION'), `${h.api.name} v${opts.version} (transaction v2) is not supported by the coordinator`))
        return
      }
      const body = h.body()
      this.observer.onCoordinatorRequest?.({ api: h.api.name, version: opts.version ?? conn.versionFor(h.api, opts.cap) ?? undefined, body, node: nodeId })
      res = await conn.request(h.api, body, opts).response
    } catch (e) {
      if (this.closed) return
      const err = e as Error
      if (
        err instanceof NetworkException || err instanceof TimeoutException || err instanceof ClosedError ||
        (err instanceof KafkaEdgeError && err.retriable) || !(err instanceof KafkaEdgeError)
      ) {
        // Disconnected: find the coordinator again and retry.
        if (type !== null) this.lookupCoordinator(type, h.coordinatorKey())
        h.reenqueue()
      } else {
        h.fatalError(err)
      }
      return
    }
    if (this.closed) return
    h.handleResponse(res)
  }

  private learnCoordinatorFeatures(conn: CoordinatorConnection): void {
    const tv = conn.finalizedFeatures.get('transaction.version') ?? 0
    const endTxn = conn.versionFor(EndTxn) ?? -1
    const produce = conn.versionFor(Produce) ?? -1
    this.coordinatorSupportsTv2 = tv >= 2 && endTxn >= 5 && produce >= 12
    const init = conn.versionFor(InitProducerId) ?? -1
    this.canBumpEpoch = init >= 3
  }

  private sleep(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve()
    return new Promise((resolve) => this.clock.setTimeout(resolve, ms))
  }
}

function byPriority(a: TxnRequestHandler, b: TxnRequestHandler): number {
  return a.priority - b.priority || a.seq - b.seq
}

function normalizeGroup(g: GroupMetadata | string): Required<GroupMetadata> {
  const m = typeof g === 'string' ? { groupId: g } : g
  if (!m || typeof m.groupId !== 'string' || m.groupId.length === 0) throw new IllegalStateException('sendOffsetsToTransaction needs consumer group metadata with a groupId')
  return { groupId: m.groupId, generationId: m.generationId ?? -1, memberId: m.memberId ?? '', groupInstanceId: m.groupInstanceId ?? null }
}

function normalizeOffsets(o: OffsetsToCommit): OffsetToCommit[] {
  if (Array.isArray(o)) return [...o as ReadonlyArray<OffsetToCommit>]
  const out: OffsetToCommit[] = []
  for (const [topic, parts] of Object.entries(o as Record<string, Record<number, number | bigint>>)) {
    for (const [p, offset] of Object.entries(parts)) out.push({ topic, partition: Number(p), offset })
  }
  return out
}

