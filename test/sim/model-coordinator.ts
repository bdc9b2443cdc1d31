import { errorCode, type Message } from '../../src/edge/protocol/index.js'

// Kafka's transaction coordinator (core/.../coordinator/transaction/TransactionCoordinator.scala,
// TransactionMetadata.scala) reduced to what a producer can observe. The transaction log is
// perfectly replicated: a coordinator move keeps every entry, and markers of a completing
// transaction keep being written by the new coordinator.

export type TxnStatus = 'Empty' | 'Ongoing' | 'PrepareCommit' | 'PrepareAbort' | 'CompleteCommit' | 'CompleteAbort'

/** Kafka's isProducerEpochExhausted: the next bump would reach Short.MAX_VALUE. */
const EPOCH_EXHAUSTED = 32766
/** The __consumer_offsets partition of every group in the model: AddOffsetsToTxn adds it to a transaction. */
export const OFFSETS_PARTITION = '__consumer_offsets:0'

/** One transactional id's entry in the transaction log (Kafka's TransactionMetadata). */
export class TxnMetadata {
  state: TxnStatus = 'Empty'
  epoch = -1
  /** The epoch before the last bump a client asked for (InitProducerId with its epoch, TV2 EndTxn). */
  lastEpoch = -1
  readonly partitions = new Set<string>()
  startedMs = 0
  /** Numbers this id's transactions: the markers of transaction n close the batches appended in it. */
  serial = 0
  /** When a Prepare* state's markers are all written. */
  markersDueMs = 0
  constructor(readonly transactionalId: string, public producerId: bigint, public timeoutMs: number) {}

  get completing(): boolean { return this.state === 'PrepareCommit' || this.state === 'PrepareAbort' }
}

/** One transactional offset commit as its marker decided it: which transaction, which fate. */
export interface OffsetCommit { group: string; tp: string; offset: bigint; serial: number; committed: boolean }

/** What the coordinator did, in order: scenario assertions and the invariants read it. */
export interface CoordinatorEvent {
  at: number
  transactionalId: string
  what: 'init' | 'begin' | 'prepare-commit' | 'prepare-abort' | 'complete-commit' | 'complete-abort' | 'fence-init' | 'fence-timeout'
  producerId: bigint
  epoch: number
  serial: number
}

/** Probabilities per coordinator request while the cluster's faults are on. */
export interface CoordinatorFaults {
  /** NOT_COORDINATOR: the client looks the coordinator up again (and finds the same one). */
  notCoordinator: number
  /** FindCoordinator answers COORDINATOR_NOT_AVAILABLE. */
  coordinatorNotAvailable: number
  /** The transaction-state partition moves to another live broker, which loads it first. */
  coordinatorMove: number
}

/** The cluster around the coordinator: brokers, partition logs for markers, producer ids. */
export interface CoordinatorHost {
  readonly alive: ReadonlySet<number>
  readonly faultsOn: boolean
  readonly faults: CoordinatorFaults
  readonly errorsSent: Map<string, number>
  host(node: number): { host: string; port: number }
  allocateProducerId(): bigint
  /** Appends a COMMIT/ABORT control batch to a partition, closing the producer's open batches there. */
  writeMarker(tp: string, producerId: bigint, epoch: number, commit: boolean, transactionalId: string, serial: number): void
}

export interface CoordinatorOptions {
  /** Finalized transaction.version: 2 turns on KIP-890 (EndTxn v5 bumps, Produce v12 adds partitions). */
  transactionVersion: number
  /** How long markers take once EndTxn was accepted: CONCURRENT_TRANSACTIONS meanwhile. */
  markerDelayMs: number
  /** How long a newly elected coordinator answers COORDINATOR_LOAD_IN_PROGRESS. */
  loadMs: number
}

/** An error name ('NONE' for success), with the producer id and epoch some answers carry. */
type Answer = { error: string; producerId?: bigint; producerEpoch?: number }
const NONE: Answer = { error: 'NONE' }

/**
 * The transaction coordinator of the model cluster: one transaction-state partition whose leader
 * is the coordinator for every transactional id. Requests reach it through ModelCluster.handle;
 * Produce requests consult it to verify (TV1) or add (TV2) a partition. Marker writes and
 * transaction timeouts happen in tick(), which the cluster runs before every request it handles,
 * so no timers are needed and a run stays a pure function of its seed.
 */
export class ModelTxnCoordinator {
  readonly txns = new Map<string, TxnMetadata>()
  readonly events: CoordinatorEvent[] = []
  /** Offsets of open transactions (Kafka's pending transactional offset commits): producer id -> group -> partition -> offset. */
  private readonly pendingOffsets = new Map<bigint, Map<string, Map<string, bigint>>>()
  /** Every transactional offset commit the markers completed, in order; the last committed per group and partition is the group's offset. */
  readonly offsetCommits: OffsetCommit[] = []
  /** Broker leading the transaction-state partition. */
  leader: number
  private loadedAtMs = 0
  /** Model inconsistencies found on the way (a marker older than the partition's epoch): reported as violations. */
  readonly anomalies: string[] = []
  /** Transactional writes (Produce, TxnOffsetCommit) for a partition outside the transaction: the producer skipped AddPartitionsToTxn / AddOffsetsToTxn. */
  outsideTransaction = 0

  constructor(private readonly host: CoordinatorHost, readonly opts: CoordinatorOptions, private readonly random: () => number, private readonly now: () => number) {
    this.leader = Math.min(...host.alive)
  }

  get tv2(): boolean { return this.opts.transactionVersion >= 2 }

  /** The coordinator's broker went down: the partition moves to a live broker, which loads it first. */
  onBrokerDown(node: number): void {
    if (node === this.leader) this.move()
  }

  /** Leadership goes to the next live broker (no random draw: runs without transactions keep their random streams). */
  move(): void {
    const live = [...this.host.alive].filter((b) => b !== this.leader).sort((a, b) => a - b)
    if (live.length === 0) return
    this.leader = live.find((b) => b > this.leader) ?? live[0]!
    this.loadedAtMs = this.now() + this.opts.loadMs
  }

  /** Writes due markers and aborts transactions past their timeout (Kafka: abortTimedOutTransactions). */
  tick(): void {
    const now = this.now()
    for (const m of this.txns.values()) {
      if (m.state === 'Ongoing' && m.startedMs + m.timeoutMs < now) this.fence(m, 'fence-timeout')
      if (m.completing && m.markersDueMs <= now) this.complete(m)
    }
  }

  // ---- requests ---------------------------------------------------------------------------------

  findCoordinator(version: number, body: Message): Message {
    const keys = version >= 4 ? body.coordinatorKeys as string[] : [body.key as string]
    const answers = keys.map((key) => {
      if (this.chance(this.host.faults.coordinatorNotAvailable)) {
        return { key, nodeId: -1, host: '', port: -1, errorCode: this.code('COORDINATOR_NOT_AVAILABLE'), errorMessage: 'simulated' }
      }
      return { key, nodeId: this.leader, ...this.host.host(this.leader), errorCode: 0, errorMessage: null }
    })
    if (version >= 4) return { throttleTimeMs: 0, coordinators: answers }
    const a = answers[0]!
    return { throttleTimeMs: 0, errorCode: a.errorCode, errorMessage: a.errorMessage, nodeId: a.nodeId, host: a.host, port: a.port }
  }

  initProducerId(node: number, version: number, body: Message): Message {
    const expected = version >= 3 && (body.producerId as bigint) >= 0n ? { producerId: body.producerId as bigint, epoch: body.producerEpoch as number } : null
    const a = this.gate(node) ?? this.init(body.transactionalId as string, body.transactionTimeoutMs as number, expected)
    return { throttleTimeMs: 0, errorCode: this.code(a.error), producerId: a.producerId ?? -1n, producerEpoch: a.producerEpoch ?? -1 }
  }

  addPartitionsToTxn(node: number, body: Message): Message {
    const topics = body.topics as Array<{ name: string; partitions: number[] }>
    const a = this.gate(node) ?? this.addPartitions(body.transactionalId as string, body.producerId as bigint, body.producerEpoch as number, topics.flatMap((t) => t.partitions.map((p) => `${t.name}:${p}`)))
    const code = this.code(a.error)
    return { throttleTimeMs: 0, results: topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p, errorCode: code })) })) }
  }

  /** TV1: the group's offsets partition joins the transaction, as AddPartitionsToTxn would add it. */
  addOffsetsToTxn(node: number, body: Message): Message {
    const a = this.gate(node) ?? this.addPartitions(body.transactionalId as string, body.producerId as bigint, body.producerEpoch as number, [OFFSETS_PARTITION])
    return { throttleTimeMs: 0, errorCode: this.code(a.error) }
  }

  /**
   * The group coordinator (the same broker in the model) takes offsets into the producer's open
   * transaction: v5 (transaction v2) adds the offsets partition itself, below it the partition must
   * have been added by AddOffsetsToTxn. The offsets count only once the commit marker is written.
   */
  txnOffsetCommit(node: number, version: number, body: Message): Message {
    const topics = body.topics as Array<{ name: string; partitions: Array<{ partitionIndex: number; committedOffset: bigint }> }>
    const pid = body.producerId as bigint
    const a = this.gate(node) ?? this.verifyOffsets(body.transactionalId as string, pid, body.producerEpoch as number, version)
    if (a.error === 'NONE') {
      const byGroup = this.pendingOffsets.get(pid) ?? new Map<string, Map<string, bigint>>()
      this.pendingOffsets.set(pid, byGroup)
      const offsets = byGroup.get(body.groupId as string) ?? new Map<string, bigint>()
      byGroup.set(body.groupId as string, offsets)
      for (const t of topics) for (const p of t.partitions) offsets.set(`${t.name}:${p.partitionIndex}`, p.committedOffset)
    }
    const code = this.code(a.error)
    return { throttleTimeMs: 0, topics: topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: code })) })) }
  }

  endTxn(node: number, version: number, body: Message): Message {
    const m = this.txns.get(body.transactionalId as string)
    const commit = body.committed as boolean
    const epoch = body.producerEpoch as number
    const a = this.gate(node)
      ?? (!m || m.producerId !== body.producerId ? { error: 'INVALID_PRODUCER_ID_MAPPING' }
        : version >= 5 ? this.endTxnV2(m, epoch, commit) : this.endTxnV1(m, epoch, commit))
    return { throttleTimeMs: 0, errorCode: this.code(a.error), producerId: a.producerId ?? -1n, producerEpoch: a.producerEpoch ?? -1 }
  }

  /**
   * A transactional Produce batch for a partition where the producer has no open transaction yet
   * (Kafka verifies only the first batch of a transaction per partition). Transaction v2 (Produce
   * v12) adds the partition to the transaction; below it the coordinator only confirms that
   * AddPartitionsToTxn did. Answers are translated as ReplicaManager translates them.
   */
  verifyProduce(transactionalId: string, producerId: bigint, epoch: number, tp: string, produceVersion: number): string {
    // The partition leader cannot reach a loaded coordinator: retriable for every client.
    if (this.now() < this.loadedAtMs) return 'NOT_ENOUGH_REPLICAS'
    if (this.tv2 && produceVersion >= 12) {
      const { error } = this.addPartitions(transactionalId, producerId, epoch, [tp])
      return error === 'PRODUCER_FENCED' ? 'INVALID_PRODUCER_EPOCH' : error
    }
    const m = this.txns.get(transactionalId)
    if (!m || m.producerId !== producerId) return 'INVALID_PRODUCER_ID_MAPPING'
    if (m.epoch !== epoch) return 'INVALID_PRODUCER_EPOCH'
    if (m.completing) return 'NOT_ENOUGH_REPLICAS'
    if (!m.partitions.has(tp)) {
      this.outsideTransaction++
      return produceVersion >= 11 ? 'TRANSACTION_ABORTABLE' : 'INVALID_TXN_STATE'
    }
    return 'NONE'
  }

  private verifyOffsets(id: string, producerId: bigint, epoch: number, version: number): Answer {
    if (version >= 5) {
      const a = this.addPartitions(id, producerId, epoch, [OFFSETS_PARTITION])
      return a.error === 'PRODUCER_FENCED' ? { error: 'INVALID_PRODUCER_EPOCH' } : a
    }
    const m = this.txns.get(id)
    if (!m || m.producerId !== producerId) return { error: 'INVALID_PRODUCER_ID_MAPPING' }
    if (m.epoch !== epoch) return { error: 'INVALID_PRODUCER_EPOCH' }
    if (m.completing) return { error: 'CONCURRENT_TRANSACTIONS' }
    if (!m.partitions.has(OFFSETS_PARTITION)) {
      this.outsideTransaction++
      return { error: 'INVALID_TXN_STATE' }
    }
    return NONE
  }

  // ---- state transitions --------------------------------------------------------------------------

  /** Kafka's handleInitProducerId / prepareInitProducerIdTransit for a transactional id. */
  private init(id: string, timeoutMs: number, expected: { producerId: bigint; epoch: number } | null): Answer {
    let m = this.txns.get(id)
    if (!m) {
      m = new TxnMetadata(id, this.host.allocateProducerId(), timeoutMs)
      this.txns.set(id, m)
    }
    if (m.completing) return { error: 'CONCURRENT_TRANSACTIONS' }
    if (expected && m.epoch !== -1 && expected.producerId !== m.producerId) return { error: 'PRODUCER_FENCED' }
    if (m.state === 'Ongoing') {
      // Kafka fences the open transaction (with an epoch the client never sees), aborts it, and has
      // the client retry: the retry bumps once more.
      this.fence(m, 'fence-init')
      return { error: 'CONCURRENT_TRANSACTIONS' }
    }
    if (expected && m.epoch !== -1 && expected.epoch !== m.epoch) {
      // A retried bump whose answer was lost gets the same epoch again; anything else is a zombie.
      return expected.epoch === m.lastEpoch ? this.identity(m) : { error: 'PRODUCER_FENCED' }
    }
    if (m.epoch >= EPOCH_EXHAUSTED) {
      m.producerId = this.host.allocateProducerId()
      m.epoch = 0
      m.lastEpoch = -1
    } else {
      m.lastEpoch = expected ? m.epoch : -1
      m.epoch++
    }
    m.state = 'Empty'
    m.partitions.clear()
    m.timeoutMs = timeoutMs
    this.event(m, 'init')
    return this.identity(m)
  }

  private addPartitions(id: string, producerId: bigint, epoch: number, tps: string[]): Answer {
    const m = this.txns.get(id)
    if (!m || m.producerId !== producerId) return { error: 'INVALID_PRODUCER_ID_MAPPING' }
    if (m.epoch !== epoch) return { error: 'PRODUCER_FENCED' }
    if (m.completing) return { error: 'CONCURRENT_TRANSACTIONS' }
    if (m.state !== 'Ongoing') {
      m.state = 'Ongoing'
      m.serial++
      m.startedMs = this.now()
      this.event(m, 'begin')
    }
    for (const tp of tps) m.partitions.add(tp)
    return NONE
  }

  /** Kafka's endTransactionWithTV1: the epoch must match exactly; a completed transaction answers a retry with NONE. */
  private endTxnV1(m: TxnMetadata, epoch: number, commit: boolean): Answer {
    if (epoch !== m.epoch) return { error: 'PRODUCER_FENCED' }
    const same = commit ? 'Commit' : 'Abort'
    switch (m.state) {
      case 'Ongoing':
        this.prepare(m, commit, false)
        return NONE
      case 'CompleteCommit': case 'CompleteAbort':
        return m.state === `Complete${same}` ? NONE : { error: 'INVALID_TXN_STATE' }
      case 'PrepareCommit': case 'PrepareAbort':
        return { error: m.state === `Prepare${same}` ? 'CONCURRENT_TRANSACTIONS' : 'INVALID_TXN_STATE' }
      case 'Empty':
        return { error: 'INVALID_TXN_STATE' }
    }
  }

  /**
   * Kafka's endTransaction for transaction v2: every EndTxn bumps the epoch and answers with it, so
   * a retry carries the epoch before the bump (retryOnEpochBump); an abort of a transaction that
   * never reached a partition bumps too. While markers are being written every EndTxn is told to
   * wait, before its epoch is checked (KAFKA-18464: else an empty abort right after a commit, at the
   * epoch the commit returned, was fenced).
   */
  private endTxnV2(m: TxnMetadata, epoch: number, commit: boolean): Answer {
    if (m.completing) return { error: 'CONCURRENT_TRANSACTIONS' }
    const isRetry = m.epoch === epoch + 1
    const valid = m.state === 'Ongoing' || m.state === 'Empty' ? epoch === m.epoch : isRetry || epoch === m.epoch
    if (!valid) return { error: 'PRODUCER_FENCED' }
    const bump = (c: boolean): Answer => { this.prepare(m, c, true); return this.identity(m) }
    if (m.state === 'Ongoing') return bump(commit)
    if (m.state === 'CompleteCommit' && commit) return isRetry ? this.identity(m) : { error: 'INVALID_TXN_STATE' }
    if (m.state === 'CompleteAbort' && isRetry) {
      // A commit at the epoch before an abort's bump comes from a producer whose transaction the
      // coordinator aborted (fenced or timed out): PRODUCER_FENCED since KAFKA-20785 (before it,
      // INVALID_TXN_STATE, which producers take as fatal without saying they were fenced).
      return commit ? { error: 'PRODUCER_FENCED' } : this.identity(m)
    }
    // An abort of a completed or empty transaction still bumps; a commit of one it never saw is refused.
    return commit || (m.state === 'CompleteCommit' && isRetry) ? { error: 'INVALID_TXN_STATE' } : bump(false)
  }

  private prepare(m: TxnMetadata, commit: boolean, bumpEpoch: boolean): void {
    if (bumpEpoch) { m.lastEpoch = m.epoch; m.epoch++ }
    m.state = commit ? 'PrepareCommit' : 'PrepareAbort'
    m.markersDueMs = this.now() + this.opts.markerDelayMs
    this.event(m, commit ? 'prepare-commit' : 'prepare-abort')
  }

  /**
   * Kafka's prepareFenceProducerEpoch + abort: the open transaction ends under an epoch its producer
   * never had. One bump, also with transaction v2 (KAFKA-19367 stopped the abort from bumping again).
   */
  private fence(m: TxnMetadata, why: 'fence-init' | 'fence-timeout'): void {
    m.epoch++
    m.lastEpoch = -1
    this.event(m, why)
    this.prepare(m, false, false)
  }

  private complete(m: TxnMetadata): void {
    const commit = m.state === 'PrepareCommit'
    for (const tp of [...m.partitions].sort()) {
      if (tp === OFFSETS_PARTITION) this.completeOffsets(m, commit)
      else this.host.writeMarker(tp, m.producerId, m.epoch, commit, m.transactionalId, m.serial)
    }
    m.partitions.clear()
    m.state = commit ? 'CompleteCommit' : 'CompleteAbort'
    this.event(m, commit ? 'complete-commit' : 'complete-abort')
  }

  private completeOffsets(m: TxnMetadata, committed: boolean): void {
    for (const [group, offsets] of this.pendingOffsets.get(m.producerId) ?? []) {
      for (const [tp, offset] of offsets) this.offsetCommits.push({ group, tp, offset, serial: m.serial, committed })
    }
    this.pendingOffsets.delete(m.producerId)
  }

  // ---- helpers ------------------------------------------------------------------------------------

  /** A coordinator answers only as the loaded leader of the transaction-state partition. */
  private gate(node: number): Answer | null {
    if (node !== this.leader) return { error: 'NOT_COORDINATOR' }
    if (this.now() < this.loadedAtMs) return { error: 'COORDINATOR_LOAD_IN_PROGRESS' }
    if (this.chance(this.host.faults.coordinatorMove)) {
      this.move()
      if (node !== this.leader) return { error: 'NOT_COORDINATOR' }
    }
    if (this.chance(this.host.faults.notCoordinator)) return { error: 'NOT_COORDINATOR' }
    return null
  }

  private identity(m: TxnMetadata): Answer { return { error: 'NONE', producerId: m.producerId, producerEpoch: m.epoch } }

  private chance(p: number): boolean { return this.host.faultsOn && p > 0 && this.random() < p }

  /** The code for an answer the client will see, counted in the cluster's error statistics. */
  private code(name: string): number {
    if (name !== 'NONE') this.host.errorsSent.set(name, (this.host.errorsSent.get(name) ?? 0) + 1)
    return errorCode(name)
  }

  private event(m: TxnMetadata, what: CoordinatorEvent['what']): void {
    this.events.push({ at: this.now(), transactionalId: m.transactionalId, what, producerId: m.producerId, epoch: m.epoch, serial: m.serial })
  }
}
