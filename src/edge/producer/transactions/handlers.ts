import { FatalTransactionException, KafkaEdgeError, ProducerFencedException } from '../../errors.js'
import {
  AddOffsetsToTxn, AddPartitionsToTxn, EndTxn, FindCoordinator, InitProducerId, TxnOffsetCommit, apiError, errorInfo,
  errorCode as code, type ApiSchema, type RequestBody, type ResponseBody,
} from '../../protocol/index.js'
import { topicPartition, type TopicPartition } from '../producer-batch.js'
import type { ProducerIdAndEpoch } from '../idempotence.js'
import type { TransactionCoordinatorClient } from './coordinator-client.js'
import { ADD_PARTITIONS_RETRY_BACKOFF_MS, CoordinatorType, Priority, TxnResult, type GroupMetadata, type OffsetToCommit } from './state.js'

// Coordinator requests, one class per API (Java's TxnRequestHandler subclasses): each builds its body
// and turns its response into a state change of the TransactionCoordinatorClient.

export abstract class TxnRequestHandler<A extends ApiSchema = ApiSchema> {
  isRetry = false
  readonly seq: number
  constructor(protected readonly tm: TransactionCoordinatorClient, readonly result: TxnResult, readonly priority: Priority) {
    this.seq = tm.nextSeq++
  }
  abstract readonly api: A
  /** Which coordinator the request goes to; null = any broker. */
  coordinatorType(): CoordinatorType | null { return CoordinatorType.TRANSACTION }
  coordinatorKey(): string { return this.tm.transactionalId }
  get isEndTxn(): boolean { return false }
  retryBackoffMs(): number { return this.tm.retryBackoffMs }
  abstract body(): RequestBody<A>
  /** Version rule: an exact version or a cap, given the negotiated range. */
  versionOpts(): { version?: number; cap?: number } { return {} }
  abstract handleResponse(res: ResponseBody<A>): void

  fatalError(e: Error): void { this.result.fail(e); this.tm.transitionToFatalError(e) }
  abortableError(e: Error): void { this.result.fail(e); this.tm.transitionToAbortableError(e) }
  /** Java's abortableErrorIfPossible: abortable with an epoch bump when the coordinator can bump, else fatal. */
  abortableErrorIfPossible(e: Error): void {
    if (this.tm.canBumpEpoch) { this.tm.epochBumpRequired = true; this.abortableError(e) } else this.fatalError(e)
  }
  reenqueue(): void { this.isRetry = true; this.tm.enqueue(this) }
  lookupAndRetry(type: CoordinatorType = CoordinatorType.TRANSACTION, key = this.tm.transactionalId): void {
    this.tm.lookupCoordinator(type, key)
    this.reenqueue()
  }
}

export const fenced = (tm: TransactionCoordinatorClient) => new ProducerFencedException(
  `producer with transactional.id ${JSON.stringify(tm.transactionalId)} ` +
  `(producer id ${tm.producerIdAndEpoch.producerId}, epoch ${tm.producerIdAndEpoch.epoch}) was fenced: ` +
  'another producer with the same transactional.id initialized, or the transaction timed out on the coordinator; close this producer')

export class FindCoordinatorHandler extends TxnRequestHandler<typeof FindCoordinator> {
  readonly api = FindCoordinator
  constructor(tm: TransactionCoordinatorClient, readonly type: CoordinatorType, readonly key: string) {
    super(tm, new TxnResult('FindCoordinator'), Priority.FIND_COORDINATOR)
  }
  override coordinatorType(): null { return null }
  body(): RequestBody<typeof FindCoordinator> { return { key: this.key, keyType: this.type, coordinatorKeys: [this.key] } }
  handleResponse(res: ResponseBody<typeof FindCoordinator>): void {
    // v4+ answers in `coordinators`, older versions in top-level fields.
    const c = res.coordinators[0] ?? res
    const err = c.errorCode
    if (err === code('NONE')) {
      this.tm.setCoordinator(this.type, this.key, { nodeId: c.nodeId, host: c.host, port: c.port })
      this.result.done()
    } else if (errorInfo(err).retriable) {
      this.reenqueue()
    } else if (err === code('TRANSACTIONAL_ID_AUTHORIZATION_FAILED')) {
      this.fatalError(apiError(err, `FindCoordinator for transactional.id ${this.key}`, c.errorMessage))
    } else if (err === code('GROUP_AUTHORIZATION_FAILED') || err === code('TRANSACTION_ABORTABLE')) {
      this.abortableError(apiError(err, `FindCoordinator for ${this.type === CoordinatorType.GROUP ? 'group' : 'transactional.id'} ${this.key}`, c.errorMessage))
    } else {
      this.fatalError(new FatalTransactionException(
        `could not find the ${this.type === CoordinatorType.GROUP ? 'group' : 'transaction'} coordinator for ${this.key}: ${errorInfo(err).name}`,
        { cause: apiError(err, 'FindCoordinator', c.errorMessage) },
      ))
    }
  }
}

export class InitProducerIdHandler extends TxnRequestHandler<typeof InitProducerId> {
  readonly api = InitProducerId
  constructor(tm: TransactionCoordinatorClient, readonly current: ProducerIdAndEpoch, readonly isEpochBump: boolean) {
    super(tm, new TxnResult('InitProducerId'), isEpochBump ? Priority.EPOCH_BUMP : Priority.INIT_PRODUCER_ID)
  }
  body(): RequestBody<typeof InitProducerId> {
    return { transactionalId: this.tm.transactionalId, transactionTimeoutMs: this.tm.transactionTimeoutMs, producerId: this.current.producerId, producerEpoch: this.current.epoch }
  }
  handleResponse(res: ResponseBody<typeof InitProducerId>): void {
    const err = res.errorCode
    if (err === code('NONE')) {
      this.tm.adoptProducerId({ producerId: res.producerId, epoch: res.producerEpoch }, true)
      this.tm.transitionTo('READY')
      // An epoch bump that replaced EndTxn (INVALID_PRODUCER_ID_MAPPING) also ends the transaction.
      if (this.isEpochBump) this.tm.clearTransaction()
      this.result.done()
    } else if (err === code('NOT_COORDINATOR') || err === code('COORDINATOR_NOT_AVAILABLE')) {
      this.lookupAndRetry()
    } else if (errorInfo(err).retriable) {
      this.reenqueue()
    } else if (err === code('TRANSACTIONAL_ID_AUTHORIZATION_FAILED') || err === code('CLUSTER_AUTHORIZATION_FAILED')) {
      this.abortableError(apiError(err, 'InitProducerId'))
    } else if (err === code('INVALID_PRODUCER_EPOCH') || err === code('PRODUCER_FENCED')) {
      this.fatalError(fenced(this.tm))
    } else if (err === code('TRANSACTION_ABORTABLE')) {
      this.abortableError(apiError(err, 'InitProducerId'))
    } else {
      this.fatalError(new FatalTransactionException(`unexpected error in InitProducerId: ${errorInfo(err).name}`, { cause: apiError(err, 'InitProducerId') }))
    }
  }
}

export class AddPartitionsToTxnHandler extends TxnRequestHandler<typeof AddPartitionsToTxn> {
  readonly api = AddPartitionsToTxn
  private backoff: number
  constructor(tm: TransactionCoordinatorClient, readonly partitions: TopicPartition[]) {
    super(tm, new TxnResult('AddPartitionsToTxn'), Priority.ADD_PARTITIONS_OR_OFFSETS)
    this.backoff = tm.retryBackoffMs
  }
  override retryBackoffMs(): number { return Math.min(this.tm.retryBackoffMs, this.backoff) }
  override versionOpts() { return { cap: 3 } }
  body(): RequestBody<typeof AddPartitionsToTxn> {
    const byTopic = new Map<string, number[]>()
    for (const tp of this.partitions) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition])
    const pe = this.tm.producerIdAndEpoch
    return {
      transactionalId: this.tm.transactionalId, producerId: pe.producerId, producerEpoch: pe.epoch,
      topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })),
    }
  }
  handleResponse(res: ResponseBody<typeof AddPartitionsToTxn>): void {
    this.backoff = this.tm.retryBackoffMs
    const errors: Array<[TopicPartition, number]> = []
    for (const t of res.results) {
      for (const p of t.partitions) errors.push([topicPartition(t.name, p.partitionIndex), p.errorCode])
    }
    let hasPartitionErrors = false
    const unauthorized = new Set<string>()
    for (const [tp, err] of errors) {
      if (err === code('NONE')) continue
      if (err === code('COORDINATOR_NOT_AVAILABLE') || err === code('NOT_COORDINATOR')) return this.lookupAndRetry()
      if (err === code('CONCURRENT_TRANSACTIONS')) {
        // The previous transaction is still completing: retry soon if nothing was added yet.
        if (this.tm.partitionsInTransaction.size === 0) this.backoff = ADD_PARTITIONS_RETRY_BACKOFF_MS
        return this.reenqueue()
      }
      if (errorInfo(err).retriable) return this.reenqueue()
      if (err === code('INVALID_PRODUCER_EPOCH') || err === code('PRODUCER_FENCED')) return this.fatalError(fenced(this.tm))
      if (err === code('TRANSACTIONAL_ID_AUTHORIZATION_FAILED') || err === code('INVALID_TXN_STATE')) {
        return this.fatalError(apiError(err, `AddPartitionsToTxn for ${tp.topic}-${tp.partition}`))
      }
      if (err === code('TOPIC_AUTHORIZATION_FAILED')) unauthorized.add(tp.topic)
      else if (err === code('UNKNOWN_PRODUCER_ID') || err === code('INVALID_PRODUCER_ID_MAPPING')) return this.abortableErrorIfPossible(apiError(err, 'AddPartitionsToTxn'))
      else if (err === code('TRANSACTION_ABORTABLE')) return this.abortableError(apiError(err, 'AddPartitionsToTxn'))
      else hasPartitionErrors = true
    }
    for (const [tp] of errors) this.tm.pendingPartitions.delete(tp.key)
    if (unauthorized.size > 0) {
      this.abortableError(Object.assign(apiError(code('TOPIC_AUTHORIZATION_FAILED'), `AddPartitionsToTxn for topics ${[...unauthorized].join(', ')}`), {}))
    } else if (hasPartitionErrors) {
      const failed = errors.filter(([, e]) => e !== code('NONE')).map(([tp, e]) => `${tp.topic}-${tp.partition}: ${errorInfo(e).name}`)
      this.abortableError(new KafkaEdgeError(`could not add partitions to the transaction: ${failed.join(', ')}`))
    } else {
      for (const [tp] of errors) this.tm.partitionsInTransaction.set(tp.key, tp)
      this.tm.transactionStarted = true
      this.result.done()
      this.tm.host.wakeupSender()
    }
  }
}

export class EndTxnHandler extends TxnRequestHandler<typeof EndTxn> {
  readonly api = EndTxn
  constructor(tm: TransactionCoordinatorClient, readonly committed: boolean, readonly tv2: boolean) {
    super(tm, new TxnResult(`EndTxn(${committed ? 'commit' : 'abort'})`), Priority.END_TXN)
  }
  override get isEndTxn(): boolean { return true }
  override versionOpts() { return this.tv2 ? { version: 5 } : { cap: 4 } }
  body(): RequestBody<typeof EndTxn> {
    const pe = this.tm.producerIdAndEpoch
    return { transactionalId: this.tm.transactionalId, producerId: pe.producerId, producerEpoch: pe.epoch, committed: this.committed }
  }
  handleResponse(res: ResponseBody<typeof EndTxn>): void {
    const err = res.errorCode
    if (err === code('NONE')) {
      // Transaction v2: the coordinator bumped the epoch (or, at its end, gave a new producer id at epoch 0).
      if (this.tv2) {
        const pid = res.producerId
        const epoch = res.producerEpoch
        if (pid >= 0n && epoch >= 0) this.tm.adoptProducerId({ producerId: pid, epoch }, true)
      }
      this.tm.completeTransaction()
      this.result.done()
    } else if (err === code('COORDINATOR_NOT_AVAILABLE') || err === code('NOT_COORDINATOR')) {
      this.lookupAndRetry()
    } else if (errorInfo(err).retriable) {
      this.reenqueue()
    } else if (err === code('INVALID_PRODUCER_EPOCH') || err === code('PRODUCER_FENCED')) {
      this.fatalError(fenced(this.tm))
    } else if (err === code('TRANSACTIONAL_ID_AUTHORIZATION_FAILED') || err === code('INVALID_TXN_STATE')) {
      this.fatalError(apiError(err, this.result.operation))
    } else if (err === code('UNKNOWN_PRODUCER_ID') || err === code('INVALID_PRODUCER_ID_MAPPING')) {
      this.abortableErrorIfPossible(apiError(err, this.result.operation))
    } else if (err === code('TRANSACTION_ABORTABLE')) {
      this.abortableError(apiError(err, this.result.operation))
    } else {
      this.fatalError(new FatalTransactionException(`unhandled error in EndTxn: ${errorInfo(err).name}`, { cause: apiError(err, 'EndTxn') }))
    }
  }
}

export class AddOffsetsToTxnHandler extends TxnRequestHandler<typeof AddOffsetsToTxn> {
  readonly api = AddOffsetsToTxn
  constructor(tm: TransactionCoordinatorClient, readonly offsets: OffsetToCommit[], readonly group: Required<GroupMetadata>) {
    super(tm, new TxnResult('AddOffsetsToTxn'), Priority.ADD_PARTITIONS_OR_OFFSETS)
  }
  override versionOpts() { return { cap: 4 } }
  body(): RequestBody<typeof AddOffsetsToTxn> {
    const pe = this.tm.producerIdAndEpoch
    return { transactionalId: this.tm.transactionalId, producerId: pe.producerId, producerEpoch: pe.epoch, groupId: this.group.groupId }
  }
  handleResponse(res: ResponseBody<typeof AddOffsetsToTxn>): void {
    const err = res.errorCode
    if (err === code('NONE')) {
      // The result completes only when the TxnOffsetCommit that follows does.
      this.tm.enqueue(new TxnOffsetCommitHandler(this.tm, this.result, this.offsets, this.group, false))
      this.tm.transactionStarted = true
    } else if (err === code('COORDINATOR_NOT_AVAILABLE') || err === code('NOT_COORDINATOR')) {
      this.lookupAndRetry()
    } else if (errorInfo(err).retriable) {
      this.reenqueue()
    } else if (err === code('UNKNOWN_PRODUCER_ID') || err === code('INVALID_PRODUCER_ID_MAPPING')) {
      this.abortableErrorIfPossible(apiError(err, 'AddOffsetsToTxn'))
    } else if (err === code('INVALID_PRODUCER_EPOCH') || err === code('PRODUCER_FENCED')) {
      this.fatalError(fenced(this.tm))
    } else if (err === code('TRANSACTIONAL_ID_AUTHORIZATION_FAILED') || err === code('INVALID_TXN_STATE')) {
      this.fatalError(apiError(err, 'AddOffsetsToTxn'))
    } else if (err === code('GROUP_AUTHORIZATION_FAILED') || err === code('TRANSACTION_ABORTABLE')) {
      this.abortableError(apiError(err, `AddOffsetsToTxn for group ${this.group.groupId}`))
    } else {
      this.fatalError(new FatalTransactionException(`unexpected error in AddOffsetsToTxn: ${errorInfo(err).name}`, { cause: apiError(err, 'AddOffsetsToTxn') }))
    }
  }
}

export class TxnOffsetCommitHandler extends TxnRequestHandler<typeof TxnOffsetCommit> {
  readonly api = TxnOffsetCommit
  /** Partitions still to commit: retriable per-partition errors keep theirs here. */
  private pending: Map<string, OffsetToCommit>
  constructor(tm: TransactionCoordinatorClient, result: TxnResult, offsets: OffsetToCommit[], readonly group: Required<GroupMetadata>, readonly tv2: boolean) {
    super(tm, result, Priority.ADD_PARTITIONS_OR_OFFSETS)
    this.pending = new Map(offsets.map((o) => [`${o.topic}:${o.partition}`, o]))
  }
  override coordinatorType(): CoordinatorType { return CoordinatorType.GROUP }
  override coordinatorKey(): string { return this.group.groupId }
  override versionOpts() { return this.tv2 ? { version: 5 } : { cap: 4 } }
  body(): RequestBody<typeof TxnOffsetCommit> {
    const pe = this.tm.producerIdAndEpoch
    const byTopic = new Map<string, Array<{ partitionIndex: number; committedOffset: bigint; committedLeaderEpoch: number; committedMetadata: string }>>()
    for (const o of this.pending.values()) {
      byTopic.set(o.topic, [...(byTopic.get(o.topic) ?? []), {
        partitionIndex: o.partition, committedOffset: BigInt(o.offset), committedLeaderEpoch: o.leaderEpoch ?? -1, committedMetadata: o.metadata ?? '',
      }])
    }
    return {
      transactionalId: this.tm.transactionalId, groupId: this.group.groupId, producerId: pe.producerId, producerEpoch: pe.epoch,
      generationId: this.group.generationId, memberId: this.group.memberId, groupInstanceId: this.group.groupInstanceId,
      topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })),
    }
  }
  handleResponse(res: ResponseBody<typeof TxnOffsetCommit>): void {
    let reloaded = false
    const what = `TxnOffsetCommit for group ${this.group.groupId}`
    outer: for (const t of res.topics) {
      for (const p of t.partitions) {
        const err = p.errorCode
        const key = `${t.name}:${p.partitionIndex}`
        if (err === code('NONE')) { this.pending.delete(key); continue }
        if (err === code('COORDINATOR_NOT_AVAILABLE') || err === code('NOT_COORDINATOR') || err === code('REQUEST_TIMED_OUT')) {
          if (!reloaded) { reloaded = true; this.tm.lookupCoordinator(CoordinatorType.GROUP, this.group.groupId) }
        } else if (errorInfo(err).retriable) {
          continue
        } else if (err === code('GROUP_AUTHORIZATION_FAILED') || err === code('FENCED_INSTANCE_ID') || err === code('TRANSACTION_ABORTABLE')) {
          this.abortableError(apiError(err, what)); break outer
        } else if (err === code('UNKNOWN_MEMBER_ID') || err === code('ILLEGAL_GENERATION')) {
          const mismatch = new KafkaEdgeError(`transactional offset commit failed: the consumer group metadata does not match (${errorInfo(err).name}); abort the transaction`)
          this.abortableError(Object.assign(mismatch, { name: 'CommitFailedException' })); break outer
        } else if (err === code('INVALID_PRODUCER_EPOCH') || err === code('PRODUCER_FENCED')) {
          this.fatalError(fenced(this.tm)); break outer
        } else if (err === code('TRANSACTIONAL_ID_AUTHORIZATION_FAILED') || err === code('UNSUPPORTED_FOR_MESSAGE_FORMAT')) {
          this.fatalError(apiError(err, what)); break outer
        } else {
          this.fatalError(new FatalTransactionException(`unexpected error in TxnOffsetCommit: ${errorInfo(err).name}`, { cause: apiError(err, what) })); break outer
        }
      }
    }
    if (this.result.completed) this.pending.clear()
    else if (this.pending.size === 0) this.result.done()
    else this.reenqueue()
  }
}

