import type { Clock } from '../../clock.js'
import type { ApiSchema, Message } from '../../protocol/index.js'
import type { ProducerObserver } from '../config.js'
import type { IdempotenceManager } from '../idempotence.js'

// ---- the state machine -------------------------------------------------------------------------

export const TXN_STATES = ['UNINITIALIZED', 'INITIALIZING', 'READY', 'IN_TRANSACTION', 'COMMITTING_TRANSACTION', 'ABORTING_TRANSACTION', 'ABORTABLE_ERROR', 'FATAL_ERROR'] as const
export type TxnState = typeof TXN_STATES[number]

/** target -> the states it may be entered from (Java's TransactionManager.State.isTransitionValid). */
const ALLOWED_FROM: Record<TxnState, readonly TxnState[]> = {
  UNINITIALIZED: ['READY', 'ABORTABLE_ERROR'],
  INITIALIZING: ['UNINITIALIZED', 'COMMITTING_TRANSACTION', 'ABORTING_TRANSACTION'],
  READY: ['INITIALIZING', 'COMMITTING_TRANSACTION', 'ABORTING_TRANSACTION'],
  IN_TRANSACTION: ['READY'],
  COMMITTING_TRANSACTION: ['IN_TRANSACTION'],
  ABORTING_TRANSACTION: ['IN_TRANSACTION', 'ABORTABLE_ERROR'],
  ABORTABLE_ERROR: ['IN_TRANSACTION', 'COMMITTING_TRANSACTION', 'ABORTABLE_ERROR', 'INITIALIZING'],
  FATAL_ERROR: TXN_STATES,
}

export function isTransitionValid(from: TxnState, to: TxnState): boolean {
  return ALLOWED_FROM[to].includes(from)
}

/** Coordinator key types of FindCoordinator. */
export const enum CoordinatorType { GROUP = 0, TRANSACTION = 1 }

/** After the first CONCURRENT_TRANSACTIONS of a transaction, AddPartitionsToTxn retries this soon (Java). */
export const ADD_PARTITIONS_RETRY_BACKOFF_MS = 20

export const enum Priority { FIND_COORDINATOR = 0, INIT_PRODUCER_ID = 1, ADD_PARTITIONS_OR_OFFSETS = 2, END_TXN = 3, EPOCH_BUMP = 4 }

/** The outcome of one transactional operation; the app may stop waiting (max.block.ms) and wait again. */
export class TxnResult {
  readonly promise: Promise<void>
  completed = false
  error: Error | null = null
  /** The app has seen the outcome: a later call starts a new operation instead of resuming this one. */
  acked = false
  private resolveFn!: () => void
  constructor(readonly operation: string) {
    this.promise = new Promise<void>((resolve) => { this.resolveFn = resolve })
  }
  done(): void { if (!this.completed) { this.completed = true; this.resolveFn() } }
  fail(e: Error): void { if (!this.completed) { this.error = e; this.completed = true; this.resolveFn() } }
}

/** The parts of a broker connection the coordinator client uses (Connection implements it). */
export interface CoordinatorConnection {
  request(api: ApiSchema, body: Message, opts?: { version?: number; cap?: number }): { response: Promise<Message> }
  connect(): Promise<void>
  versionFor(api: ApiSchema, cap?: number): number | null
  readonly finalizedFeatures: Map<string, number>
}

/** The parts of the cluster the coordinator client uses (Cluster implements it). */
export interface CoordinatorCluster {
  anyConnection(): CoordinatorConnection
  connection(nodeId: number): CoordinatorConnection
  readonly brokers: Map<number, { host: string; port: number; nodeId: number }>
}

/** What the producer around the state machine provides: its batches, its sender. */
export interface TransactionHost {
  /** Any batch (or queued send) of the producer not yet completed, or a Produce request still out. */
  hasIncomplete(): boolean
  /** Sends everything queued now and resolves once all of it completed and no Produce request is out. */
  flush(): Promise<void>
  /** Fails the records that were never sent (no sequence yet) with `error`. */
  abortUndrainedBatches(error: Error): void
  wakeupSender(): void
}

export interface TransactionsOptions {
  transactionalId: string
  transactionTimeoutMs: number
  retryBackoffMs: number
  maxBlockMs: number
  clock: Clock
  cluster: CoordinatorCluster
  /** The idempotence bookkeeping (producer id/epoch, sequences) shared with the sender. */
  idempotence: IdempotenceManager
  host: TransactionHost
  observer?: ProducerObserver
}

export interface OffsetToCommit { topic: string; partition: number; offset: number | bigint; metadata?: string | null; leaderEpoch?: number }
export type OffsetsToCommit = ReadonlyArray<OffsetToCommit> | Record<string, Record<number, number | bigint>>
export interface GroupMetadata { groupId: string; generationId?: number; memberId?: string; groupInstanceId?: string | null }

export interface CoordinatorNode { nodeId: number; host: string; port: number }

