import { AddOffsetsToTxn, AddPartitionsToTxn, ApiVersions, DescribeProducers, EndTxn, FindCoordinator, InitProducerId, Metadata, Produce, TxnOffsetCommit, decodeRequest, encodeResponse, errorCode, errorInfo, type Message } from '../../src/edge/protocol/index.js'
import { BatchReadError, readBatch } from '../helpers/batch-reader.js'
import { ModelTxnCoordinator, type CoordinatorFaults } from './model-coordinator.js'

const INT_MAX = 2147483647
/** Kafka keeps this many recent batches per producer per partition (ProducerStateEntry). */
export const NUM_BATCHES_TO_RETAIN = 5
const dec = new TextDecoder()

export interface RetainedBatch { firstSeq: number; lastSeq: number; firstOffset: number; lastOffset: number }
/** `txnFirstOffset` >= 0 while the producer has an open transaction in the partition (Kafka's currentTxnFirstOffset). */
export interface ProducerState { epoch: number; batches: RetainedBatch[]; lastAppendMs: number; txnFirstOffset: number }

/** A transactional batch's fate: open until its transaction's marker, which names the transaction (serial) it closed. */
export interface TxnMark { transactionalId: string; fate: 'open' | 'committed' | 'aborted'; serial: number }

/** One appended batch as the log holds it: the record values (as text) are what invariants check. */
export interface LogBatch {
  baseOffset: number
  producerId: bigint
  epoch: number
  baseSequence: number
  values: string[]
  /** Set on transactional data batches. */
  txn?: TxnMark
  /** A COMMIT or ABORT control batch (no values) written by the transaction coordinator. */
  control?: 'commit' | 'abort'
}

export class ModelPartition {
  leaderEpoch = 0
  readonly log: LogBatch[] = []
  nextOffset = 0
  logStartOffset = 0
  readonly producers = new Map<bigint, ProducerState>()
  constructor(readonly topic: string, readonly index: number, public leader: number) {}

  /** Every record value in offset order (including any below logStartOffset: the invariant checker's view). */
  values(): string[] { return this.log.flatMap((b) => b.values) }
}

/**
 * Probabilities (0..1) of broker-side faults, drawn per partition of each Produce request while
 * `faultsOn` is set. Kept small: each one is a reason for the producer to retry.
 */
export interface BrokerFaults extends CoordinatorFaults {
  notLeader: number
  /** Of the NOT_LEADER answers, how many carry a CurrentLeader hint (v10+). */
  leaderHint: number
  notEnoughReplicas: number
  /** Appends, then errors: the retry must be answered as a duplicate with the original offset. */
  notEnoughReplicasAfterAppend: number
  /** acks=all replication timed out after the leader appended: ambiguous, like the above. */
  requestTimedOutAfterAppend: number
  throttle: number
  /** A leader move (epoch bump, state replicated) per Produce request. */
  leaderMove: number
  /** The topic answers as unknown in a Metadata response. */
  topicMissing: number
}

export const NO_FAULTS: BrokerFaults = {
  notLeader: 0, leaderHint: 0, notEnoughReplicas: 0, notEnoughReplicasAfterAppend: 0, requestTimedOutAfterAppend: 0,
  throttle: 0, leaderMove: 0, topicMissing: 0, notCoordinator: 0, coordinatorNotAvailable: 0, coordinatorMove: 0,
}

export interface ModelOptions {
  brokers: number
  topics: Record<string, number>
  /** Highest ApiVersions version the brokers speak; below 4 exercises the v0 fallback answer. */
  apiVersionsMax: number
  produceMaxVersion: number
  /** 'offset' answers a retried batch with its original offset (Kafka 4); 'error' with DUPLICATE_SEQUENCE_NUMBER. */
  duplicateMode: 'offset' | 'error'
  /** 'accept' takes any sequence from a producer with no state (Kafka 4); 'error' answers UNKNOWN_PRODUCER_ID. */
  unknownProducerMode: 'accept' | 'error'
  /** message.max.bytes: a larger batch gets MESSAGE_TOO_LARGE. */
  maxMessageBytes: number
  /** Record values starting with this prefix are rejected as INVALID_RECORD, per record. */
  poisonPrefix: string
  /** Finalized transaction.version; below 2 the brokers advertise no TV2 (Produce <= 11, EndTxn <= 4). */
  transactionVersion: number
  /** How long the coordinator takes to write a transaction's markers after accepting EndTxn. */
  markerDelayMs: number
  /** How long a newly elected transaction coordinator is loading. */
  coordinatorLoadMs: number
}

export const DEFAULT_MODEL: ModelOptions = {
  brokers: 3, topics: { t: 3 }, apiVersionsMax: 4, produceMaxVersion: 12, duplicateMode: 'offset',
  unknownProducerMode: 'accept', maxMessageBytes: 1_048_588, poisonPrefix: '\u0000poison',
  transactionVersion: 2, markerDelayMs: 5, coordinatorLoadMs: 0,
}

interface PartitionAnswer {
  index: number
  errorCode: number
  baseOffset: bigint
  logAppendTimeMs: bigint
  logStartOffset: bigint
  recordErrors: Array<{ batchIndex: number; batchIndexErrorMessage: string | null }>
  errorMessage: string | null
  currentLeader?: { leaderId: number; leaderEpoch: number }
}

/**
 * A Kafka cluster reduced to what a producer can observe: brokers, partition leaders with leader
 * epochs, one log per partition (replication is perfect, so a leader move keeps log and producer
 * state, as in Kafka with acks=all) and per-producer sequence state with Kafka's rules
 * (ProducerAppendInfo.checkSequence, ProducerStateEntry.findDuplicateBatch). Transactional ids go to
 * the model transaction coordinator (model-coordinator.ts), which writes markers into these logs. It
 * speaks the real protocol through the shared codec.
 */
export class ModelCluster {
  readonly opts: ModelOptions
  readonly partitions = new Map<string, ModelPartition[]>()
  readonly alive = new Set<number>()
  faults: BrokerFaults = NO_FAULTS
  faultsOn = false
  /** Topics answered as unknown in Metadata right now (scenario: a topic briefly missing). */
  readonly hiddenTopics = new Set<string>()
  private nextProducerId = 1000n
  /** Per-request observations, for scenario assertions. */
  readonly produceLog: Array<{
    node: number; version: number; partitions: Array<{ topic: string; partition: number; epoch: number; baseSequence: number; count: number; errorCode: number }>
  }> = []
  readonly errorsSent = new Map<string, number>()
  appends = 0
  /** The throttle of the last Produce answer, read by the network that carries it. */
  lastThrottle = { ms: 0, clientSide: true }
  duplicates = 0
  /** Scripted answers: consulted before everything else for each partition of a Produce request. */
  script: ((ctx: { topic: string; partition: number; baseSequence: number; epoch: number; count: number; node: number }) =>
    { error: string; afterAppend?: boolean; hint?: boolean; logStartOffset?: number } | null) | null = null
  /** Scripted InitProducerId answers, consumed in order. */
  readonly initScript: string[] = []
  readonly coordinator: ModelTxnCoordinator

  constructor(opts: Partial<ModelOptions>, private readonly random: () => number, private readonly now: () => number) {
    this.opts = { ...DEFAULT_MODEL, ...opts }
    for (let b = 0; b < this.opts.brokers; b++) this.alive.add(b)
    for (const [topic, n] of Object.entries(this.opts.topics)) {
      this.partitions.set(topic, Array.from({ length: n }, (_, i) => new ModelPartition(topic, i, i % this.opts.brokers)))
    }
    this.coordinator = new ModelTxnCoordinator(this, {
      transactionVersion: this.opts.transactionVersion, markerDelayMs: this.opts.markerDelayMs, loadMs: this.opts.coordinatorLoadMs,
    }, random, now)
  }

  host(node: number): { host: string; port: number } { return { host: `broker${node}.sim`, port: 9092 + node } }
  nodeFor(host: string, port: number): number {
    const id = port - 9092
    return host === `broker${id}.sim` && id >= 0 && id < this.opts.brokers ? id : -1
  }

  partition(topic: string, index: number): ModelPartition { return this.partitions.get(topic)![index]! }

  /** Moves leadership to another live broker (or `to`), bumping the leader epoch; the log and producer state move with it. */
  moveLeader(p: ModelPartition, to?: number): void {
    const live = [...this.alive].filter((b) => b !== p.leader)
    const target = to ?? (live.length > 0 ? live[Math.floor(this.random() * live.length)]! : p.leader)
    p.leader = target
    p.leaderEpoch++
  }

  /** A broker goes down: its partitions move to live brokers (connections to it fail in the network). */
  killBroker(node: number): void {
    this.alive.delete(node)
    for (const ps of this.partitions.values()) for (const p of ps) if (p.leader === node) this.moveLeader(p)
    this.coordinator.onBrokerDown(node)
  }

  reviveBroker(node: number): void { this.alive.add(node) }

  /** Producer state older than idleMs is forgotten (producer.id.expiration.ms). */
  expireIdleProducers(idleMs: number): void {
    const now = this.now()
    for (const ps of this.partitions.values()) for (const p of ps) {
      for (const [pid, s] of p.producers) if (now - s.lastAppendMs >= idleMs) p.producers.delete(pid)
    }
  }

  /** Retention deleted the log head: producer state for batches below it goes with it. */
  truncateHead(p: ModelPartition): void {
    p.logStartOffset = p.nextOffset
    p.producers.clear()
  }

  /** Handles one request frame (size prefix included); returns the response frame or null (acks=0, unknown API). */
  handle(node: number, frame: Uint8Array): Uint8Array | null {
    const { header, api, body } = decodeRequest(frame)
    if (!api || !body) return null
    const v = header.apiVersion
    const id = header.correlationId
    this.coordinator.tick()
    switch (api.key) {
      case ApiVersions.key: return this.apiVersions(v, id)
      case Metadata.key: return encodeResponse(Metadata, v, id, this.metadata(body))
      case InitProducerId.key: {
        const res = body.transactionalId === null ? this.initProducerId() : this.coordinator.initProducerId(node, v, body)
        return encodeResponse(InitProducerId, v, id, res)
      }
      case FindCoordinator.key: return encodeResponse(FindCoordinator, v, id, this.coordinator.findCoordinator(v, body))
      case AddPartitionsToTxn.key: return encodeResponse(AddPartitionsToTxn, v, id, this.coordinator.addPartitionsToTxn(node, body))
      case EndTxn.key: return encodeResponse(EndTxn, v, id, this.coordinator.endTxn(node, v, body))
      case AddOffsetsToTxn.key: return encodeResponse(AddOffsetsToTxn, v, id, this.coordinator.addOffsetsToTxn(node, body))
      case TxnOffsetCommit.key: return encodeResponse(TxnOffsetCommit, v, id, this.coordinator.txnOffsetCommit(node, v, body))
      case DescribeProducers.key: return encodeResponse(DescribeProducers, v, id, this.describeProducers(body))
      case Produce.key: {
        const res = this.produce(node, v, body)
        return res === null ? null : encodeResponse(Produce, v, id, res)
      }
      default: return null
    }
  }

  private apiVersions(version: number, id: number): Uint8Array {
    const max = this.opts.apiVersionsMax
    if (version > max) {
      // Kafka answers a too-new ApiVersions request in v0 shape, naming its own range.
      this.count('UNSUPPORTED_VERSION')
      return encodeResponse(ApiVersions, 0, id, { errorCode: errorCode('UNSUPPORTED_VERSION'), apiKeys: [{ apiKey: 18, minVersion: 0, maxVersion: max }] })
    }
    // Kafka 4 advertises the transaction v2 versions (Produce 12, EndTxn 5) only with transaction.version >= 2.
    const tv = this.opts.transactionVersion
    const apiKeys = [
      { apiKey: Produce.key, minVersion: 0, maxVersion: tv >= 2 ? this.opts.produceMaxVersion : Math.min(this.opts.produceMaxVersion, 11) },
      { apiKey: Metadata.key, minVersion: 0, maxVersion: 12 },
      { apiKey: FindCoordinator.key, minVersion: 0, maxVersion: 6 },
      { apiKey: ApiVersions.key, minVersion: 0, maxVersion: max },
      { apiKey: InitProducerId.key, minVersion: 0, maxVersion: 5 },
      { apiKey: AddPartitionsToTxn.key, minVersion: 0, maxVersion: 5 },
      { apiKey: AddOffsetsToTxn.key, minVersion: 0, maxVersion: 4 },
      { apiKey: EndTxn.key, minVersion: 0, maxVersion: tv >= 2 ? 5 : 4 },
      { apiKey: TxnOffsetCommit.key, minVersion: 0, maxVersion: tv >= 2 ? 5 : 4 },
      { apiKey: DescribeProducers.key, minVersion: 0, maxVersion: 0 },
    ]
    const finalizedFeatures = [{ name: 'transaction.version', maxVersionLevel: tv, minVersionLevel: tv }]
    return encodeResponse(ApiVersions, version, id, { errorCode: 0, apiKeys, throttleTimeMs: 0, finalizedFeaturesEpoch: 1n, finalizedFeatures })
  }

  private metadata(body: Message): Message {
    const asked = (body.topics as Array<{ name: string }> | null)?.map((t) => t.name) ?? [...this.partitions.keys()]
    const brokers = [...this.alive].sort((a, b) => a - b).map((nodeId) => ({ nodeId, ...this.host(nodeId), rack: null }))
    const topics = asked.map((name) => {
      const ps = this.partitions.get(name)
      const missing = this.hiddenTopics.has(name) || (this.faultsOn && this.random() < this.faults.topicMissing)
      if (!ps || missing) return { errorCode: errorCode('UNKNOWN_TOPIC_OR_PARTITION'), name, topicId: new Uint8Array(16), isInternal: false, partitions: [] }
      return {
        errorCode: 0, name, topicId: new Uint8Array(16), isInternal: false,
        partitions: ps.map((p) => ({
          errorCode: 0, partitionIndex: p.index, leaderId: p.leader, leaderEpoch: p.leaderEpoch,
          replicaNodes: [...this.alive], isrNodes: [...this.alive], offlineReplicas: [],
        })),
      }
    })
    return { throttleTimeMs: 0, brokers, clusterId: 'sim-cluster', controllerId: 0, topics }
  }

  /** The producers a partition holds state for (Kafka's DescribeProducers, KIP-664). */
  private describeProducers(body: Message): Message {
    const topics = (body.topics as Array<{ name: string; partitionIndexes: number[] }>).map((t) => ({
      name: t.name,
      partitions: t.partitionIndexes.map((i) => {
        const p = this.partitions.get(t.name)?.[i]
        if (!p) return { partitionIndex: i, errorCode: errorCode('UNKNOWN_TOPIC_OR_PARTITION'), errorMessage: null, activeProducers: [] }
        const activeProducers = [...p.producers].map(([producerId, s]) => ({
          producerId, producerEpoch: s.epoch, lastSequence: s.batches.at(-1)?.lastSeq ?? -1, lastTimestamp: BigInt(s.lastAppendMs),
          coordinatorEpoch: -1, currentTxnStartOffset: BigInt(s.txnFirstOffset),
        }))
        return { partitionIndex: i, errorCode: 0, errorMessage: null, activeProducers }
      }),
    }))
    return { throttleTimeMs: 0, topics }
  }

  private initProducerId(): Message {
    const scripted = this.initScript.shift()
    if (scripted) return { throttleTimeMs: 0, errorCode: errorCode(scripted), producerId: -1n, producerEpoch: -1 }
    return { throttleTimeMs: 0, errorCode: 0, producerId: this.allocateProducerId(), producerEpoch: 0 }
  }

  allocateProducerId(): bigint { return this.nextProducerId++ }

  /**
   * The coordinator's COMMIT/ABORT marker for a partition (Kafka's appendEndTxnMarker): it closes the
   * producer's open batches there, takes an offset, and moves the producer state to the marker's
   * epoch (a higher one forgets the retained batches, so the next batch starts at sequence 0).
   */
  writeMarker(tp: string, producerId: bigint, epoch: number, commit: boolean, transactionalId: string, serial: number): void {
    const sep = tp.lastIndexOf(':')
    const p = this.partition(tp.slice(0, sep), Number(tp.slice(sep + 1)))
    for (const b of p.log) {
      if (b.txn?.fate === 'open' && b.producerId === producerId) Object.assign(b.txn, { fate: commit ? 'committed' : 'aborted', serial })
    }
    p.log.push({ baseOffset: p.nextOffset++, producerId, epoch, baseSequence: -1, values: [], control: commit ? 'commit' : 'abort' })
    const state = p.producers.get(producerId)
    if (!state) {
      p.producers.set(producerId, { epoch, batches: [], lastAppendMs: this.now(), txnFirstOffset: -1 })
      return
    }
    if (epoch < state.epoch) this.coordinator.anomalies.push(`${transactionalId}: marker at epoch ${epoch} for ${tp}, whose producer state is at epoch ${state.epoch}`)
    if (epoch !== state.epoch) { state.epoch = epoch; state.batches.length = 0 }
    state.txnFirstOffset = -1
    state.lastAppendMs = this.now()
  }

  private count(name: string): void { this.errorsSent.set(name, (this.errorsSent.get(name) ?? 0) + 1) }

  private produce(node: number, version: number, body: Message): Message | null {
    const transactionalId = body.transactionalId as string | null
    const acks = body.acks as number
    const faults = this.faultsOn ? this.faults : NO_FAULTS
    const endpoints = new Map<number, { nodeId: number; host: string; port: number; rack: null }>()
    const seen: (typeof this.produceLog)[number] = { node, version, partitions: [] }
    const responses = (body.topicData as Array<{ name: string; partitionData: Array<{ index: number; records: Uint8Array | null }> }>).map((t) => ({
      name: t.name,
      partitionResponses: t.partitionData.map((pd) => {
        const ans = this.producePartition(node, version, transactionalId, t.name, pd.index, pd.records, faults, endpoints, seen)
        if (ans.errorCode !== 0) this.count(errorInfo(ans.errorCode).name)
        return ans
      }),
    }))
    this.produceLog.push(seen)
    if (faults.leaderMove > 0 && this.random() < faults.leaderMove) {
      const all = [...this.partitions.values()].flat()
      this.moveLeader(all[Math.floor(this.random() * all.length)]!)
    }
    if (acks === 0) return null
    const throttleTimeMs = this.random() < faults.throttle ? 1 + Math.floor(this.random() * 300) : 0
    // KIP-219: from v6 the client holds off after the answer; before it, the broker delays the answer.
    this.lastThrottle = { ms: throttleTimeMs, clientSide: version >= 6 }
    return { responses, throttleTimeMs, nodeEndpoints: version >= 10 ? [...endpoints.values()] : [] }
  }

  private producePartition(node: number, version: number, transactionalId: string | null, topic: string, index: number, records: Uint8Array | null, faults: BrokerFaults,
    endpoints: Map<number, { nodeId: number; host: string; port: number; rack: null }>, seen: (typeof this.produceLog)[number]): PartitionAnswer {
    const answer = (code: string, extra: Partial<PartitionAnswer> = {}): PartitionAnswer => ({
      index, errorCode: errorCode(code), baseOffset: -1n, logAppendTimeMs: -1n, logStartOffset: -1n, recordErrors: [], errorMessage: code === 'NONE' ? null : code, ...extra,
    })
    const p = this.partitions.get(topic)?.[index]
    if (!p || this.hiddenTopics.has(topic)) return answer('UNKNOWN_TOPIC_OR_PARTITION')
    if (!records) return answer('CORRUPT_MESSAGE')

    let batch
    try {
      batch = readBatch(records)
    } catch (e) {
      if (e instanceof BatchReadError && /CRC/.test(e.message)) return answer('CORRUPT_MESSAGE')
      return answer('INVALID_RECORD')
    }
    const obs = { topic, partition: index, epoch: batch.producerEpoch, baseSequence: batch.baseSequence, count: batch.recordCount, errorCode: 0 }
    seen.partitions.push(obs)
    const ret = (a: PartitionAnswer): PartitionAnswer => { obs.errorCode = a.errorCode; return a }

    const notLeaderHint = (hintProb: number): PartitionAnswer => {
      const hint = version >= 10 && this.random() < hintProb
      if (hint) endpoints.set(p.leader, { nodeId: p.leader, ...this.host(p.leader), rack: null })
      return ret(answer('NOT_LEADER_OR_FOLLOWER', hint ? { currentLeader: { leaderId: p.leader, leaderEpoch: p.leaderEpoch } } : {}))
    }
    if (p.leader !== node) return notLeaderHint(faults === NO_FAULTS ? 1 : faults.leaderHint)

    const scripted = this.script?.({ topic, partition: index, baseSequence: batch.baseSequence, epoch: batch.producerEpoch, count: batch.recordCount, node })
    if (scripted && !scripted.afterAppend) {
      if (scripted.error === 'NOT_LEADER_OR_FOLLOWER' && scripted.hint) return notLeaderHint(1)
      return ret(answer(scripted.error, scripted.logStartOffset !== undefined ? { logStartOffset: BigInt(scripted.logStartOffset) } : {}))
    }
    if (this.random() < faults.notLeader) {
      this.moveLeader(p)
      return notLeaderHint(faults.leaderHint)
    }
    if (this.random() < faults.notEnoughReplicas) return ret(answer('NOT_ENOUGH_REPLICAS'))
    if (records.length > this.opts.maxMessageBytes) return ret(answer('MESSAGE_TOO_LARGE'))

    // LogValidator: what a client may never write.
    if (batch.control) return ret(answer('INVALID_RECORD', { errorMessage: 'clients may not write control batches' }))
    if (batch.lastOffsetDelta + 1 !== batch.recordCount || batch.records.length !== batch.recordCount) return ret(answer('INVALID_RECORD'))
    if (batch.producerId >= 0n && batch.baseSequence < 0) return ret(answer('INVALID_RECORD'))
    if (batch.producerId < 0n && batch.baseSequence >= 0) return ret(answer('INVALID_RECORD'))
    for (let i = 0; i < batch.records.length; i++) {
      const r = batch.records[i]!
      if (r.offsetDelta !== i) return ret(answer('INVALID_RECORD'))
    }
    const values = batch.records.map((r) => (r.value ? dec.decode(r.value) : ''))
    const poisoned = values.flatMap((v, i) => (v.startsWith(this.opts.poisonPrefix) ? [{ batchIndex: i, batchIndexErrorMessage: 'poisoned record' }] : []))
    if (poisoned.length > 0) return ret(answer('INVALID_RECORD', { recordErrors: poisoned, errorMessage: 'one or more records were rejected' }))

    const pid = batch.producerId
    const epoch = batch.producerEpoch
    if (batch.transactional) {
      // ReplicaManager verifies the first batch of a transaction per partition with the coordinator
      // (KIP-890): a batch of a transaction that already ended, or of a fenced epoch, is refused.
      if (transactionalId === null || pid < 0n) return ret(answer('INVALID_TXN_STATE'))
      const open = p.producers.get(pid)
      if (!(open && open.epoch === epoch && open.txnFirstOffset >= 0)) {
        const verified = this.coordinator.verifyProduce(transactionalId, pid, epoch, `${topic}:${index}`, version)
        if (verified !== 'NONE') return ret(answer(verified))
      }
    } else if (pid >= 0n && (p.producers.get(pid)?.txnFirstOffset ?? -1) >= 0) {
      return ret(answer('INVALID_TXN_STATE'))
    }
    const firstSeq = batch.baseSequence
    const lastSeq = firstSeq < 0 ? -1 : (firstSeq + batch.recordCount - 1) % (INT_MAX + 1)
    const lso = BigInt(p.logStartOffset)
    let state: ProducerState | undefined
    if (pid >= 0n) {
      state = p.producers.get(pid)
      if (state && epoch < state.epoch) return ret(answer('INVALID_PRODUCER_EPOCH'))
      if (state && epoch === state.epoch) {
        const dup = state.batches.find((b) => b.firstSeq === firstSeq && b.lastSeq === lastSeq)
        if (dup) {
          this.duplicates++
          if (this.opts.duplicateMode === 'error') return ret(answer('DUPLICATE_SEQUENCE_NUMBER', { logStartOffset: lso }))
          return ret(answer('NONE', { baseOffset: BigInt(dup.firstOffset), logStartOffset: lso }))
        }
      }
      if (!state) {
        // UNKNOWN_PRODUCER_ID came with Produce v5 (and its logStartOffset); older answers said OUT_OF_ORDER.
        if (this.opts.unknownProducerMode === 'error' && firstSeq !== 0) return ret(answer(version >= 5 ? 'UNKNOWN_PRODUCER_ID' : 'OUT_OF_ORDER_SEQUENCE_NUMBER', { logStartOffset: lso }))
      } else if (epoch !== state.epoch) {
        if (firstSeq !== 0) return ret(answer('OUT_OF_ORDER_SEQUENCE_NUMBER', { logStartOffset: lso }))
      } else {
        const last = state.batches[state.batches.length - 1]?.lastSeq ?? -1
        const inSequence = firstSeq === last + 1 || (firstSeq === 0 && last === INT_MAX)
        if (!inSequence) return ret(answer('OUT_OF_ORDER_SEQUENCE_NUMBER', { logStartOffset: lso }))
      }
    }

    const baseOffset = p.nextOffset
    p.nextOffset += batch.recordCount
    p.log.push({ baseOffset, producerId: pid, epoch, baseSequence: firstSeq, values, ...(batch.transactional ? { txn: { transactionalId: transactionalId!, fate: 'open' as const, serial: -1 } } : {}) })
    this.appends++
    if (pid >= 0n) {
      if (!state) { state = { epoch, batches: [], lastAppendMs: 0, txnFirstOffset: -1 }; p.producers.set(pid, state) }
      // A new epoch forgets the retained batches (ProducerStateEntry.maybeUpdateProducerEpoch).
      else if (state.epoch !== epoch) { state.epoch = epoch; state.batches.length = 0 }
      if (batch.transactional && state.txnFirstOffset < 0) state.txnFirstOffset = baseOffset
      state.batches.push({ firstSeq, lastSeq, firstOffset: baseOffset, lastOffset: baseOffset + batch.recordCount - 1 })
      if (state.batches.length > NUM_BATCHES_TO_RETAIN) state.batches.shift()
      state.lastAppendMs = this.now()
    }
    if (scripted?.afterAppend) return ret(answer(scripted.error))
    if (this.random() < faults.notEnoughReplicasAfterAppend) return ret(answer('NOT_ENOUGH_REPLICAS_AFTER_APPEND'))
    if (this.random() < faults.requestTimedOutAfterAppend) return ret(answer('REQUEST_TIMED_OUT'))
    return ret(answer('NONE', { baseOffset: BigInt(baseOffset), logStartOffset: lso }))
  }
}
