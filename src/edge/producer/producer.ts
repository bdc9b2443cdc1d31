import { Cluster } from '../client/cluster.js'
import {
  BufferExhaustedException, CheckpointException, ClosedError, ConfigException, IllegalStateException, KafkaEdgeError, POSSIBLE_DUPLICATE_HEADER,
  RecordTooLargeException, TimeoutException, markDelivery,
} from '../errors.js'
import { RECORD_BATCH_HEADER_SIZE, loadCore, readBatchRecords, recordBaseSize, recordSizeFromBase, restamp, type Core, type HeaderInput, type RecordInput } from '../wasm/core.js'
import { Checkpointer, batchIdentity, pendingOrder, type PendingBatch, type ProducerCheckpoint } from './checkpoint.js'
import { APPENDED, BATCH_FULL, BufferPool, NEW_BATCH, RecordAccumulator } from './accumulator.js'
import { parseConfig, type AnyProducerSettings, type ProducerConfig, type ProducerSettings } from './config.js'
import { ProducerMetrics } from './metrics.js'
import { StickyPartitioner, partitionForKey } from './partitioner.js'
import { failRecord, ProducerBatch, topicPartition, type Reject, type RecordMetadata, type Resolve, type SendCallback, type TopicPartition } from './producer-batch.js'
import { Sender } from './sender.js'
import { IdempotenceManager, type ProducerIdState } from './idempotence.js'
import { matchCopies, planResume, type RelabelEntry, type ResumePlan } from './takeover.js'
import { extensions } from '../extensions.js'
import { errorCode, errorInfo } from '../protocol/error-codes.js'
import type { BrokerAddress } from '../transport/transport.js'
import type { TransactionCoordinatorClient } from './transactions/coordinator-client.js'
import type { GroupMetadata, OffsetsToCommit, TxnState } from './transactions/state.js'

export type { RecordMetadata, SendCallback } from './producer-batch.js'

/**
 * What the producer did with the checkpoint it loaded: `resumed` took over its producer id, epoch and
 * sequences and resends its batches as they were; `relabelled` found the broker may have forgotten
 * that producer and re-sent the records under a new id with the possible-duplicate header.
 */
export interface ResumeOutcome {
  mode: 'none' | 'resumed' | 'relabelled'
  /** Batches and records the loaded checkpoint held. */
  batches: number
  records: number
  /** Batches the leaders proved written already (resumed only): they left the checkpoint unsent. */
  written?: number
  /** Batches whose records went out again as new records with the possible-duplicate header. */
  relabelled?: number
  /** Why those batches could not be resent as they were. */
  reason?: string
}


type Bytes = Uint8Array | string | null

export interface ProducerRecord {
  topic: string
  value: Bytes
  key?: Bytes
  partition?: number
  /** ms since the epoch; defaults to now. */
  timestamp?: number
  headers?: Record<string, Bytes> | ReadonlyArray<{ key: string; value: Bytes }>
}

/** A field as it goes to the batch: strings stay strings until they are written into WASM memory. */
const toField = (v: Bytes | undefined, what: string, header?: string): Uint8Array | string | null => {
  if (v === null || v === undefined) return null
  if (typeof v === 'string' || v instanceof Uint8Array) return v
  throw new ConfigException(`${header === undefined ? what : `header ${header}`} must be a Uint8Array, a string or null, got ${typeof v}`)
}
/** A waiting send's own copy (strings cannot change under it). */
const copyOf = <T extends Uint8Array | string | null>(v: T): T => (v === null || typeof v === 'string' ? v : v.slice() as T)
const TOPIC = /^[a-zA-Z0-9._-]{1,249}$/
/** Records needing at most this much staging are staged by send() itself (staging never shrinks on its own). */
const PRESTAGE_MAX_BYTES = 64 * 1024

/**
 * A send() on its way into the accumulator: the record (RecordInput) with its topic and partition.
 * `baseSize` is its recordBaseSize(), computed once.
 */
interface PendingRecord extends RecordInput { topic: string; partition: number | undefined; baseSize: number }
/** A send() waiting for metadata or buffer space: its record, its promise callbacks, and when it began to wait. */
interface PendingSend extends PendingRecord { resolve: Resolve; reject: Reject | null; startedMs: number }

const noop = (): void => {}

/**
 * The sends waiting for metadata or buffer space, oldest first. Up to buffer.memory of records wait
 * (tens of thousands at 1 KB), and Array.prototype.shift on an array that long is no longer O(1):
 * past about 16,000 elements V8 moves them all each time (a shift and a push took 36 µs with 20,000
 * waiting, 0.12 µs with 10,000, Node 22). So the head is an index, and the array is compacted once
 * half of it is taken.
 */
class WaitingSends {
  private items: PendingSend[] = []
  private head = 0

  get length(): number { return this.items.length - this.head }
  first(): PendingSend | undefined { return this.items[this.head] }
  push(p: PendingSend): void { this.items.push(p) }

  shift(): PendingSend {
    const p = this.items[this.head]!
    this.items[this.head++] = undefined as unknown as PendingSend
    if (this.head >= 1024 && this.head * 2 >= this.items.length) this.items = this.drain()
    return p
  }

  /** The sends queued from the `from`-th on go before the others (they are older records). */
  moveToFront(from: number): void {
    const all = this.drain()
    this.items = all.slice(from).concat(all.slice(0, from))
  }

  /** Takes every waiting send out, oldest first. */
  drain(): PendingSend[] {
    const all = this.items.slice(this.head)
    this.items = []
    this.head = 0
    return all
  }
}

type Resolvers<T> = { promise: Promise<T>; resolve: (v: T) => void; reject: (e: Error) => void }
/**
 * A promise and its callbacks in one new object (Promise.withResolvers where the engine has it:
 * Node 22, current browsers and workerd). A shared executor parking the callbacks in module
 * variables (old-generation storage) paid two old-to-new stores through the write barrier per send.
 */
const withResolvers: <T>() => Resolvers<T> = (Promise as { withResolvers?: <T>() => Resolvers<T> }).withResolvers?.bind(Promise) ?? (<T>(): Resolvers<T> => {
  const r = {} as Resolvers<T>
  r.promise = new Promise<T>((resolve, reject) => { r.resolve = resolve; r.reject = reject })
  return r
})

/** What the producer can say about itself without exposing its insides (Worker, browser SDK, tests). */
export interface ProducerState {
  /** The broker-assigned producer id and epoch; null until the first InitProducerId answer, or without idempotence. */
  readonly producerId: bigint | null
  readonly producerEpoch: number | null
  /** The transaction state machine's state (transactional.id set), else the idempotent producer id's state, else null. */
  readonly transactionState: TxnState | ProducerIdState | null
  /** An error the producer cannot recover from happened: close it and create a new one. */
  readonly fatal: boolean
  readonly closed: boolean
}

/**
 * The public producer. send() appends to the accumulator synchronously when it can (metadata known,
 * buffer free) and otherwise queues, so records enter the accumulator in call order no matter which
 * of them had to wait for metadata or buffer space.
 */
export class Producer {
  /** @internal */
  readonly config: ProducerConfig
  private core: Core | null = null
  private connecting: Promise<void> | null = null
  /** @internal */
  readonly cluster: Cluster
  private accumulator!: RecordAccumulator
  /** @internal */
  sender!: Sender
  /** @internal */
  readonly idempotence: IdempotenceManager | null
  /** @internal The transactional state machine and coordinator client (transactional.id set), else null. */
  readonly transactions: TransactionCoordinatorClient | null
  private partitioner: StickyPartitioner
  private readonly metricsRegistry: ProducerMetrics
  private readonly waiting = new WaitingSends()
  /** Serialized size of the records in `waiting`. */
  private waitingBytes = 0
  private pumping = false
  private closed = false
  private readonly startedMs: number
  private pool!: BufferPool
  private readonly validTopics = new Set<string>()
  private readonly tps = new Map<string, TopicPartition[]>()
  /**
   * The topic of the last append and its TopicPartitions: an application sends run after run to one
   * topic, and per record these skip three hash lookups (valid, in use, its partitions). Neither set
   * ever drops a topic, so the cache cannot go stale.
   */
  private lastTopic: string | null = null
  private lastTps: TopicPartition[] = []
  /** The topic and partition count tryAppend is partitioning for, read by availableFn and queueFn. */
  private partTopic = ''
  private partCount = 0
  private readonly availableFn = (): number[] => this.availablePartitions(this.partTopic, this.partCount)
  private readonly queueFn = (i: number): number => this.accumulator.queueSize(this.topicPartition(this.partTopic, i))
  /** @internal With the `checkpoint` setting. */
  checkpointer: Checkpointer | null = null
  private resume: ResumeOutcome | undefined

  constructor(settings: ProducerSettings | AnyProducerSettings) {
    this.config = parseConfig(settings)
    const c = this.config
    this.cluster = new Cluster({
      bootstrap: c.bootstrapServers, transport: c.transport, clock: c.clock, clientId: c.clientId, requestTimeoutMs: c.requestTimeoutMs,
      metadataMaxAgeMs: c.metadataMaxAgeMs, tls: c.security.tls, sasl: c.security.sasl, random: c.random, log: c.log,
    })
    this.idempotence = c.idempotence ? new IdempotenceManager(c.transactionalId, (b, s) => {
      // Copy on write: whoever holds the old array (a checkpoint, a request) keeps what it was given.
      b.bytes = b.bytes!.slice()
      restamp(this.core!, b.bytes, s)
      b.producerId = s.producerId; b.producerEpoch = s.producerEpoch; b.baseSequence = s.baseSequence; b.transactional = s.transactional
    // The accumulator drains a partition only once it is part of the transaction.
    }, c.transactionalId === null ? null : (tp) => this.transactions!.isSendToPartitionAllowed(tp), c.observer.onProducerId?.bind(c.observer)) : null
    if (c.transactionalId !== null && !extensions.transactions) {
      throw new ConfigException('transactional.id: transactions are not in this build (kafka-edge/browser is idempotent only); import the producer from kafka-edge')
    }
    this.transactions = c.transactionalId !== null && this.idempotence ? extensions.transactions!({
      transactionalId: c.transactionalId, transactionTimeoutMs: c.transactionTimeoutMs, retryBackoffMs: c.retryBackoffMs,
      maxBlockMs: c.maxBlockMs, clock: c.clock, cluster: this.cluster, idempotence: this.idempotence, observer: c.observer,
      host: {
        hasIncomplete: () => this.waiting.length > 0 || (this.core !== null && (this.accumulator.incomplete.size > 0 || this.sender.inFlightRequests > 0)),
        flush: () => this.flush().then(() => this.sender?.whenNoRequestsInFlight()),
        abortUndrainedBatches: (e) => this.abortUndrainedBatches(e),
        wakeupSender: () => this.sender?.wakeup(),
      },
    }) : null
    this.partitioner = new StickyPartitioner(c.batchSize, c.partitionerAdaptive, c.random)
    this.metricsRegistry = new ProducerMetrics(c.clock)
    this.startedMs = c.clock.now()
  }

  /** What happened to the loaded checkpoint; undefined until connect() loaded it (or without a checkpoint). */
  get resumeOutcome(): ResumeOutcome | undefined { return this.resume }

  get state(): ProducerState {
    const pe = this.idempotence?.producerIdAndEpoch
    const transactionState = this.transactions?.state ?? this.idempotence?.state ?? null
    return {
      producerId: pe && pe.producerId >= 0n ? pe.producerId : null,
      producerEpoch: pe && pe.producerId >= 0n ? pe.epoch : null,
      transactionState,
      fatal: transactionState === 'FATAL_ERROR',
      closed: this.closed,
    }
  }

  /**
   * @internal Where a partition's leader is, as far as this producer knows (undefined when it does
   * not): the browser SDK's page-hide beacon addresses each batch to it through the relay.
   */
  leaderAddress(topic: string, partition: number): BrokerAddress | undefined {
    return this.cluster.brokers.get(this.cluster.leaderFor(topic, partition))
  }

  /** Loads the WASM core and fetches cluster metadata. send() calls it implicitly. */
  connect(): Promise<void> {
    if (!this.connecting) {
      this.connecting = this.doConnect()
      this.connecting.catch(() => { this.connecting = null })
    }
    return this.connecting
  }

  private async doConnect(): Promise<void> {
    if (this.closed) throw new ClosedError('the producer is closed; create a new one')
    const c = this.config
    if (!this.sender) {
      // The core is published (this.core) only once a checkpoint is taken over: sends made meanwhile
      // wait, so a partition's resent batches go before its new ones.
      const core = await loadCore(c.wasm as Parameters<typeof loadCore>[0], { compression: c.compressionType })
      this.pool = new BufferPool(c.bufferMemory, c.clock)
      this.accumulator = new RecordAccumulator({
        batchSize: c.batchSize, lingerMs: c.lingerMs, maxRequestSize: c.maxRequestSize, bufferMemory: c.bufferMemory,
        maxBlockMs: c.maxBlockMs, deliveryTimeoutMs: c.deliveryTimeoutMs, retryBackoffMs: c.retryBackoffMs,
        retryBackoffMaxMs: c.retryBackoffMaxMs, compression: c.compressionType, compressionLevel: c.compressionLevel,
        clock: c.clock, random: c.random,
      }, this.pool, core, this.idempotence)
      if (c.checkpoint && this.idempotence) {
        const idem = this.idempotence
        this.checkpointer = new Checkpointer(c.checkpoint, () => idem.checkpointHead(), c.clock, c.log, () => c.transport.producerIdTicket)
      }
      this.sender = new Sender(c, this.cluster, this.accumulator, this.idempotence, this.metricsRegistry, this.transactions,
        this.checkpointer && { checkpoint: this.checkpointer, onResumedRefused: (b, e) => this.relabelResumed(b, e) })
      if (!this.checkpointer) this.core = core
    }
    await this.withDeadline(this.cluster.refresh(this.sender.topicsInUse), c.maxBlockMs, 'fetching cluster metadata from bootstrap.servers')
    if (!this.core) await this.takeOverCheckpoint()
    this.sender.wakeup()
  }

  /**
   * Loads the checkpoint and either takes over its identity (every pending batch is still known to
   * its partition's leader under that producer id and epoch: DescribeProducers says so) or, when the
   * broker may have forgotten the producer (producer.id.expiration.ms, retention) or cannot tell,
   * takes a new producer id and re-sends the pending records with the possible-duplicate header.
   */
  private async takeOverCheckpoint(): Promise<void> {
    const c = this.config
    const core = this.accumulator.core
    let cp: ProducerCheckpoint | undefined
    try {
      cp = await c.checkpoint!.load()
    } catch (e) {
      throw new CheckpointException(`the checkpoint store failed to load (${(e as Error)?.message ?? String(e)}); nothing was sent`, { cause: e })
    }
    if (this.core) return
    const cpr = this.checkpointer!
    if (!cp) {
      this.resume = { mode: 'none', batches: 0, records: 0 }
    } else {
      if (cp.v !== 1 || !/^\d+$/.test(cp.producerId) || !Array.isArray(cp.pending)) {
        throw new CheckpointException('the loaded checkpoint is not a version 1 ProducerCheckpoint; clear the store or load it with the kafka-edge version that wrote it')
      }
      cpr.ticket = cp.ticket
      // Through the relay, the resumed id needs the ticket it was issued with (another instance, a restart).
      if (cp.ticket !== undefined && c.transport.producerIdTicket !== undefined) c.transport.producerIdTicket = cp.ticket
      const pe = { producerId: BigInt(cp.producerId), epoch: cp.epoch }
      for (const p of cp.pending) this.sender.topicsInUse.add(p.topic)
      if (cp.pending.length > 0) {
        await this.withDeadline(this.cluster.refresh(this.sender.topicsInUse), c.maxBlockMs, 'fetching metadata for the checkpoint\'s partitions')
      }
      const plan = await planResume({ cluster: this.cluster, config: c, topics: this.sender.topicsInUse }, pe, cp.pending)
      const records = cp.pending.reduce((n, p) => n + p.recordCount, 0)
      const reason = plan.reasons.length > 0 ? plan.reasons.join('; ') : undefined
      if (plan.identity) {
        const now = c.clock.now()
        const batches = plan.resend.map((p) => {
          const id = batchIdentity(p.bytes)
          const stamp = { producerId: id.producerId, producerEpoch: id.epoch, baseSequence: id.baseSequence, transactional: false }
          // Failed for any reason (delivery timeout, a refusal of the resumed state), its records go
          // out again labelled: records in a loaded checkpoint leave it only once in the log.
          const onFail = (e: Error) => { if (!this.closed) this.relabel(core, [p], e.message) }
          return ProducerBatch.resumed(this.topicPartition(p.topic, p.partition), p.bytes, stamp, id.recordCount, now, onFail)
        })
        this.idempotence!.resume(pe, cp.nextSequence.map((n) => ({ tp: this.topicPartition(n.topic, n.partition), next: n.next })), batches)
        for (const b of [...batches].reverse()) {
          cpr.adopt(b)
          this.accumulator.deque(b.tp).unshift(b)
          this.accumulator.incomplete.add(b)
        }
        this.resume = {
          mode: 'resumed', batches: cp.pending.length, records, written: plan.written.length,
          ...(plan.relabel.length > 0 ? { relabelled: plan.relabel.length, reason } : {}),
        }
        // Batches found in the log leave the store now, not with whatever save comes next.
        if (plan.written.length > 0) cpr.persist().catch((e: unknown) => c.log.warn('checkpoint', 'checkpoint save failed after a takeover; the next save retries', { error: String(e) }))
        c.log.debug('checkpoint', 'producer resumed', {
          producerId: pe.producerId, epoch: pe.epoch, resent: batches.length, written: plan.written.length, relabelled: plan.relabel.length,
        })
      } else {
        this.resume = { mode: 'relabelled', batches: cp.pending.length, records, relabelled: plan.relabel.length, reason }
      }
      if (plan.relabel.length > 0) {
        c.log.warn('checkpoint', 'resending some of a checkpoint\'s records as possible duplicates', {
          producerId: pe.producerId, batches: plan.relabel.length, newProducerId: !plan.identity, reason,
        })
        const before = this.waiting.length
        // Batches already being re-sent go first: their records are the oldest.
        this.relabel(core, [...plan.relabel].sort((a, b) => Number(plan.legacy.has(b)) - Number(plan.legacy.has(a)) || pendingOrder(a, b)), reason ?? '', plan)
        // Sends made while the checkpoint loaded queued up first; the old records go before them.
        if (before > 0) this.waiting.moveToFront(before)
      }
    }
    this.sender.releaseProducerId()
    this.core = core
  }

  /**
   * Re-sends the records of batches the broker may or may not hold as new records (possible-duplicate
   * header). Each old batch stays in the checkpoint, with the records whose copies were acknowledged
   * marked, until every copy is acknowledged: a crash meanwhile makes only the missing copies again.
   */
  private relabel(core: Core, pending: readonly PendingBatch[], reason: string, plan?: ResumePlan): void {
    const cpr = this.checkpointer!
    const entries: RelabelEntry[] = pending.map((p) => ({ batch: p, delivered: new Set(p.delivered ?? []), records: readBatchRecords(core, p.bytes) }))
    if (plan) matchCopies(core, plan, entries)
    for (const entry of entries) {
      const { batch: p, records } = entry
      if (entry.delivered.size >= records.length) continue
      cpr.legacy.push(entry)
      records.forEach((r, i) => {
        if (entry.delivered.has(i)) return
        const headers: HeaderInput[] = (r.headers ?? []).filter((h) => h.key !== POSSIBLE_DUPLICATE_HEADER)
        headers.push({ key: POSSIBLE_DUPLICATE_HEADER, value: '1' })
        // Called as the copy's batch completes, before any later save can drop that batch from the checkpoint.
        const acked = (): void => {
          entry.delivered.add(i)
          if (entry.delivered.size < records.length) return
          cpr.legacy = cpr.legacy.filter((l) => l !== entry)
          cpr.persist().catch(noop)
        }
        const failed = (e: Error): void => {
          this.config.log.warn('checkpoint', 'a relabelled resend failed; its record stays in the checkpoint for the next producer', { error: String(e), reason })
        }
        if (this.closed) failed(new ClosedError('the producer was closed'))
        else this.enqueue({ topic: p.topic, partition: p.partition, key: r.key, value: r.value, timestamp: r.timestamp, headers }, acked, failed)
      })
    }
  }

  /**
   * A resumed batch refused for its producer state: it and its partition's other resumed batches
   * fail, and each one's failure relabels its records (in sequence order).
   */
  private relabelResumed(batch: ProducerBatch, error: Error): void {
    const d = this.accumulator.deque(batch.tp)
    const victims = [batch, ...d.filter((b) => b.resumed && !b.done)]
    for (const b of this.sender.inFlightBatches) if (b.resumed && !b.done && b.tp === batch.tp && !victims.includes(b)) victims.push(b)
    this.resume = { ...(this.resume ?? { mode: 'relabelled', batches: 0, records: 0 }), mode: 'relabelled', reason: error.message }
    for (const b of victims) {
      const i = d.indexOf(b)
      if (i >= 0) d.splice(i, 1)
      this.sender.failBatch(b, error, (error as { code?: number }).code ?? null, true)
    }
  }

  /**
   * Sends one record. Without a callback it returns a promise of the record's metadata; with one
   * (Java's `send(record, callback)`) it returns nothing and calls `callback(metadata, null)` or
   * `callback(null, error)` once, never before send() returns. The callback form makes no promise
   * per record, which is most of what a small record costs the caller.
   */
  send(record: ProducerRecord): Promise<RecordMetadata>
  send(record: ProducerRecord, callback: SendCallback): void
  send(record: ProducerRecord, callback?: SendCallback): Promise<RecordMetadata> | void {
    // A transactional producer sends only inside a transaction; like Java, this throws right away.
    if (this.transactions && !this.closed) this.transactions.failIfNotReadyForSend()
    if (callback !== undefined && typeof callback !== 'function') throw new ConfigException('send(record, callback): the callback must be a function')
    const r = callback ? null : withResolvers<RecordMetadata>()
    const resolve = r ? r.resolve : callback!
    const reject = r && r.reject
    if (this.closed) this.refuse(resolve, reject, new ClosedError('send() after close(): the producer is closed; create a new one'))
    else if (this.idempotence?.state === 'FATAL_ERROR') this.refuse(resolve, reject, this.idempotence.fatalError!)
    else this.enqueue(record, resolve, reject)
    return r?.promise
  }

  /** A send fails before any batch holds it, so it was not written. A callback hears it after send() returned. */
  private refuse(resolve: Resolve, reject: Reject | null, e: Error): void {
    markDelivery(e, false)
    if (reject) reject(e)
    else queueMicrotask(() => failRecord(resolve, null, e))
  }

  private enqueue(record: ProducerRecord, resolve: Resolve, reject: Reject | null): void {
    if (this.releaseHold === null && this.config.clock.hold) this.holdWhileBusy()
    // Most sends append at once and need no object of their own: they go through one reused scratch.
    const p = this.scratch
    try {
      this.fill(p, record)
    } catch (e) {
      this.refuse(resolve, reject, e as Error)
      return
    }
    if (this.waiting.length === 0 && this.core && this.tryAppend(p, resolve, reject)) return
    // Java's send() blocks its thread while the buffer is full; ours cannot, so the copies of waiting
    // sends get a budget of their own (buffer.memory again) and memory stays bounded.
    const bytes = recordSizeFromBase(p.baseSize, 0, 0)
    if (this.waiting.length > 0 && this.waitingBytes + bytes > this.config.bufferMemory) {
      p.key = p.value = null
      p.headers = undefined
      this.failBeforeBatch(resolve, reject, new BufferExhaustedException(`${this.waiting.length} sends (${this.waitingBytes} bytes) are already waiting for buffer space or metadata, ` +
        `as much as buffer.memory (${this.config.bufferMemory} bytes) again; await your sends (or slow down) so the producer can catch up, or raise buffer.memory`))
      return
    }
    this.waitingBytes += bytes
    // send() captures the bytes when it is called (the caller may reuse its arrays, as with Java's
    // serializers), so a send that has to wait keeps copies.
    this.waiting.push({
      key: copyOf(p.key), value: copyOf(p.value),
      headers: p.headers && p.headers.map((h) => ({ key: h.key, value: copyOf(h.value) })),
      timestamp: p.timestamp, topic: p.topic, partition: p.partition, resolve, reject, startedMs: this.config.clock.now(), baseSize: p.baseSize,
    })
    p.key = p.value = null
    p.headers = undefined
    this.pump()
  }

  /**
   * The promise callbacks stay out of it: the scratch is an old-generation object, and each send's
   * new functions stored into it went through the write barrier's slow path.
   */
  private readonly scratch: PendingRecord = {
    key: null, value: null, headers: undefined,
    timestamp: 0, topic: '', partition: undefined, baseSize: 0,
  }

  /**
   * Validates a record into `p` (throws ConfigException on bad input). The clock is read only for a
   * record without a timestamp: a Worker's events all carry theirs, and a read was 3 to 4% of a send.
   */
  private fill(p: PendingRecord, r: ProducerRecord): void {
    if (!r || typeof r !== 'object') throw new ConfigException('send() takes a record object { topic, value, key?, headers?, partition?, timestamp? }')
    if (typeof r.topic !== 'string' || (r.topic !== this.lastTopic && !this.validTopics.has(r.topic) && !this.validateTopic(r.topic))) {
      throw new ConfigException(`invalid topic name ${JSON.stringify(r.topic)}: use 1-249 characters of [a-zA-Z0-9._-]`)
    }
    if (r.partition !== undefined && (!Number.isInteger(r.partition) || r.partition < 0)) throw new ConfigException(`partition must be a non-negative integer, got ${r.partition}`)
    const timestamp = r.timestamp ?? this.config.clock.now()
    if (!Number.isSafeInteger(timestamp)) throw new ConfigException(`timestamp must be an integer number of ms since the epoch, got ${r.timestamp}`)
    if (timestamp < 0) throw new ConfigException(`timestamp must not be negative, got ${timestamp}`)
    let headers: HeaderInput[] | undefined
    if (r.headers) {
      const entries = Array.isArray(r.headers) ? r.headers as ReadonlyArray<{ key: string; value: Bytes }> : Object.entries(r.headers).map(([key, value]) => ({ key, value }))
      headers = entries.map((h) => {
        if (typeof h.key !== 'string') throw new ConfigException('header keys must be strings')
        return { key: h.key, value: toField(h.value, 'header', h.key) }
      })
    }
    p.key = toField(r.key, 'key')
    p.value = toField(r.value, 'value')
    p.headers = headers
    p.timestamp = timestamp
    p.topic = r.topic
    p.partition = r.partition
    // Staged now (into WASM memory, where append() finds it), a record is sized from the lengths
    // written rather than by measuring its strings first; a large one is sized and staged apart.
    const core = this.core
    p.baseSize = core !== null && this.waiting.length === 0 && core.stage(p, PRESTAGE_MAX_BYTES) ? core.stagedBaseSize : recordBaseSize(p)
  }

  private validateTopic(topic: string): boolean {
    if (!TOPIC.test(topic)) return false
    this.validTopics.add(topic)
    return true
  }

  /** One TopicPartition per partition, reused by every record (no per-record key strings). */
  private topicPartition(topic: string, partition: number): TopicPartition {
    let list = topic === this.lastTopic ? this.lastTps : this.tps.get(topic)
    if (!list) { list = []; this.tps.set(topic, list) }
    return list[partition] ??= topicPartition(topic, partition)
  }

  /** Appends now if metadata and buffer allow; false means "wait". Throws nothing: errors reject the send. */
  private tryAppend(p: PendingRecord, resolve: Resolve, reject: Reject | null): boolean {
    const c = this.config
    const topic = p.topic
    if (topic !== this.lastTopic) {
      this.sender.topicsInUse.add(topic)
      let list = this.tps.get(topic)
      if (!list) { list = []; this.tps.set(topic, list) }
      this.lastTopic = topic
      this.lastTps = list
    }
    const count = this.cluster.partitionCount(topic)
    if (count === 0) return false
    if (p.partition !== undefined && p.partition >= count) {
      this.refuse(resolve, reject, new KafkaEdgeError(`partition ${p.partition} of ${topic} does not exist: the topic has ${count} partitions`))
      return true
    }
    const size = recordSizeFromBase(p.baseSize, 0, 0) + RECORD_BATCH_HEADER_SIZE
    if (size > c.maxRequestSize || size > c.bufferMemory) {
      const limit = size > c.maxRequestSize ? `max.request.size (${c.maxRequestSize})` : `buffer.memory (${c.bufferMemory})`
      this.failBeforeBatch(resolve, reject, new RecordTooLargeException(`the record is ${size} bytes serialized, more than ${limit}; send smaller records or raise the limit`))
      return true
    }
    let partition = p.partition
    const keyed = p.key !== null && !c.partitionerIgnoreKeys
    const sticky = partition === undefined && !keyed
    // The partitioner's callbacks are made once per producer and read the topic from here.
    this.partTopic = topic
    this.partCount = count
    if (partition === undefined) partition = keyed ? partitionForKey(p.key!, count) : this.partitioner.partition(topic, count, this.availableFn, this.queueFn)
    const tp = this.topicPartition(topic, partition)
    const txnError = this.transactions?.maybeAddPartition(tp)
    if (txnError) {
      this.refuse(resolve, reject, txnError)
      return true
    }
    const result = this.accumulator.tryAppend(tp, p, size, resolve, reject, p.baseSize)
    if ((result & APPENDED) === 0) return false
    // The record's bytes are in its batch now: let go of the caller's arrays.
    p.key = p.value = null
    p.headers = undefined
    const batchFull = (result & BATCH_FULL) !== 0
    if (sticky) this.partitioner.onAppend(topic, size, batchFull, count, this.availableFn, this.queueFn)
    if (batchFull || (result & NEW_BATCH) !== 0) this.sender.wakeup(batchFull ? 0 : c.lingerMs)
    return true
  }

  private availablePartitions(topic: string, count: number): number[] {
    const out: number[] = []
    for (let i = 0; i < count; i++) if (this.cluster.leaderFor(topic, i) >= 0) out.push(i)
    return out
  }

  /** Drains the waiting sends in order, waiting for the core, metadata or buffer space as needed. */
  private async pump(): Promise<void> {
    if (this.pumping) return
    this.pumping = true
    try {
      while (this.waiting.length > 0) {
        const p = this.waiting.first()!
        const c = this.config
        const deadline = p.startedMs + c.maxBlockMs
        try {
          if (!this.core) {
            // A bootstrap hiccup is not the record's failure: the metadata wait below retries until max.block.ms.
            try { await this.connect() } catch (e) { if (!this.core) throw e }
            if (this.waiting.first() !== p) continue
          }
          if (this.tryAppend(p, p.resolve, p.reject)) { this.shiftWaiting(); continue }
          const left = deadline - c.clock.now()
          if (left <= 0) throw this.blockTimeout(p)
          if (this.cluster.partitionCount(p.topic) === 0) {
            // Retriable failures (a broker restarting) are waited out; a refusal (authorization) is final.
            await this.withDeadline(this.cluster.refresh(this.sender.topicsInUse).catch((e: unknown) => {
              if (e instanceof KafkaEdgeError && !e.retriable) throw e
            }), left, `waiting for metadata of topic ${p.topic}`)
            if (this.cluster.partitionCount(p.topic) === 0) {
              await new Promise((r) => c.clock.setTimeout(r as () => void, Math.min(c.retryBackoffMs, Math.max(0, deadline - c.clock.now()))))
            }
          } else {
            // Buffer full: wait for space, then hand the reservation back and retry the append.
            const bytes = Math.max(c.batchSize, recordSizeFromBase(p.baseSize, 0, 0) + RECORD_BATCH_HEADER_SIZE)
            this.sender.wakeup()
            await this.pool.reserve(bytes, Math.max(0, left))
            this.pool.release(bytes)
          }
        } catch (e) {
          // close() failed the waiting sends while this one waited (its wait then fails too).
          if (this.waiting.first() !== p) continue
          this.shiftWaiting()
          this.failBeforeBatch(p.resolve, p.reject, e instanceof TimeoutException && !(e instanceof BufferExhaustedException) ? this.blockTimeout(p) : e as Error)
        }
      }
    } finally {
      this.pumping = false
    }
  }

  /**
   * A record send() accepted failed before it reached a batch: full buffer, no metadata in time, too
   * large, a refusal (Java: an ApiException in KafkaProducer.doSend). Inside a transaction the record
   * is lost to it, so the transaction must not commit: it turns abortable, as Java's
   * maybeTransitionToErrorState makes it.
   */
  private failBeforeBatch(resolve: Resolve, reject: Reject | null, e: Error): void {
    this.refuse(resolve, reject, e)
    this.transactions?.batchFailed(e)
  }

  private shiftWaiting(): void {
    const p = this.waiting.shift()
    this.waitingBytes -= recordSizeFromBase(p.baseSize, 0, 0)
  }

  private blockTimeout(p: PendingSend): Error {
    const cause = this.cluster.lastError
    if (this.cluster.partitionCount(p.topic) === 0) {
      // Without an answer from any broker, "create the topic" would send the user the wrong way.
      return cause
        ? new TimeoutException(`topic ${p.topic} not present in metadata after ${this.config.maxBlockMs} ms (max.block.ms): ` +
          `no broker answered; last error: ${cause.message}`, { cause })
        : new TimeoutException(`topic ${p.topic} not present in metadata after ${this.config.maxBlockMs} ms (max.block.ms)${this.topicAnswer(p.topic)}; create the topic or check its name`)
    }
    return new TimeoutException(`send() blocked for max.block.ms (${this.config.maxBlockMs} ms)`, cause ? { cause } : {})
  }

  /** What the brokers last said about a topic they have no partitions for (the metadata requests ask them to create it). */
  private topicAnswer(topic: string): string {
    const code = this.cluster.topics.get(topic)?.errorCode ?? errorCode('NONE')
    return code === errorCode('NONE') ? '' : `: the brokers answer ${errorInfo(code).name}` +
      (code === errorCode('UNKNOWN_TOPIC_OR_PARTITION') ? ' and did not create it (auto.create.topics.enable=false, no CREATE permission, or a relay)' : '')
  }

  private withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
    const clock = this.config.clock
    return new Promise<T>((resolve, reject) => {
      const t = clock.setTimeout(() => reject(new TimeoutException(`${what} took longer than ${ms} ms`)), ms)
      p.then((v) => { clock.clearTimeout(t); resolve(v) }, (e) => { clock.clearTimeout(t); reject(e) })
    })
  }

  private releaseHold: (() => void) | null = null

  /** Holds the process open while any send is unsettled; checks a few times a second, off the per-record path. */
  private holdWhileBusy(): void {
    this.releaseHold = this.config.clock.hold!()
    const check = () => {
      const busy = !this.closed && (this.waiting.length > 0 || (this.accumulator?.incomplete.size ?? 0) > 0)
      if (busy) { this.config.clock.setTimeout(check, 100); return }
      this.releaseHold?.()
      this.releaseHold = null
    }
    this.config.clock.setTimeout(check, 100)
  }

  /** Resolves when every record sent before the call has completed (acknowledged or failed). */
  async flush(): Promise<void> {
    while (this.waiting.length > 0) await new Promise((r) => this.config.clock.setTimeout(r as () => void, 1))
    if (!this.core) return
    const flushStart = this.config.clock.now()
    this.accumulator.flushesInProgress++
    this.sender.wakeup()
    try {
      // Split pieces keep their original's creation time, so they are waited for too.
      for (;;) {
        const pending = [...this.accumulator.incomplete].filter((b) => b.createdMs <= flushStart)
        if (pending.length === 0) break
        await Promise.all(pending.map((b) => b.whenDone()))
      }
    } finally {
      this.accumulator.flushesInProgress--
    }
    // A settled batch leaves the checkpoint in a microtask after its records' reactions (Sender.release);
    // the save that drops it may be waiting for company: flush() does not return before it.
    if (this.checkpointer) {
      await Promise.resolve()
      await this.checkpointer.saveRemovals()
    }
  }

  /**
   * Sends what is queued and waits for it up to timeoutMs (default: as long as delivery.timeout.ms
   * allows), then fails whatever is left and closes the connections.
   */
  async close(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (this.closed) return
    this.closed = true
    const timeoutMs = opts.timeoutMs ?? Infinity
    if (this.core) {
      this.accumulator.closed = true
      const cp = this.checkpointer
      // The acknowledged batches leave the checkpoint before close() returns (their removal save may be waiting).
      const done = this.flush().then(() => cp?.persist())
      if (Number.isFinite(timeoutMs)) {
        await Promise.race([done, new Promise((r) => this.config.clock.setTimeout(r as () => void, timeoutMs))])
      } else await done.catch(() => {})
      const err = markDelivery(new ClosedError('the producer was closed before the record was acknowledged'), true)
      // What close() gives up on stays in the checkpoint: the next producer resends it as it was.
      if (cp) cp.frozen = true
      this.accumulator.failQueued(() => err)
      for (const b of this.sender.inFlightBatches) this.sender.failBatch(b, err, null, false)
      this.pool.failWaiters(err)
      this.sender.close()
    }
    this.transactions?.close()
    this.waitingBytes = 0
    for (const p of this.waiting.drain()) this.refuse(p.resolve, p.reject, new ClosedError('the producer was closed before the record was sent'))
    this.cluster.close()
  }

  metrics(): Record<string, number> {
    const now = this.config.clock.now()
    return this.metricsRegistry.snapshot({
      bufferAvailable: this.pool?.available ?? this.config.bufferMemory,
      bufferTotal: this.config.bufferMemory,
      bufferWaitMs: this.pool?.waitTimeTotalMs ?? 0,
      uptimeMs: now - this.startedMs,
      inFlight: this.sender?.inFlightRequests ?? 0,
    })
  }

  // ---- transactions (transactional.id set) ----------------------------------------------------

  private txnClient(): TransactionCoordinatorClient {
    if (!this.transactions) throw new IllegalStateException('transactional method invoked on a non-transactional producer: set transactional.id')
    if (this.closed) throw new ClosedError('the producer is closed; create a new one')
    return this.transactions
  }

  /** Registers the transactional.id with its coordinator (fencing older producers with it). Call once, first. */
  async initTransactions(): Promise<void> {
    const t = this.txnClient()
    const clock = this.config.clock
    const started = clock.now()
    // Java's initTransactions blocks up to max.block.ms whatever the brokers do. The first metadata
    // fetch tries each bootstrap server once, so with every broker down (a restart) it failed at once
    // and the call with it; the coordinator client's FindCoordinator retries an unreachable bootstrap
    // until max.block.ms, so a retriable failure here is left to it. (The soak's relayed producers
    // that replaced a failed one while the broker was down stopped for good on that NetworkException.)
    try { await this.connect() } catch (e) {
      if (!this.core || !(e instanceof KafkaEdgeError && e.retriable)) throw e
    }
    await t.initTransactions(this.config.maxBlockMs - (clock.now() - started))
  }

  beginTransaction(): void { this.txnClient().beginTransaction() }

  /** Adds consumed offsets (the next offset to read, per partition) for a group to the transaction. */
  async sendOffsetsToTransaction(offsets: OffsetsToCommit, groupMetadata: GroupMetadata | string): Promise<void> {
    await this.txnClient().sendOffsetsToTransaction(offsets, groupMetadata)
  }

  /** Waits for every record of the transaction, then commits it. */
  async commitTransaction(): Promise<void> { await this.txnClient().commitTransaction() }

  async abortTransaction(): Promise<void> { await this.txnClient().abortTransaction() }

  /** Fails the transaction's records that were never sent (Java: abortUndrainedBatches). */
  private abortUndrainedBatches(error: Error): void {
    if (!this.core) return
    this.accumulator.abortUnsent(markDelivery(error, false))
  }

  /** Partition count of a topic, fetching metadata if needed. */
  async partitionsFor(topic: string): Promise<number> {
    await this.connect()
    this.sender.topicsInUse.add(topic)
    if (this.cluster.partitionCount(topic) === 0) await this.cluster.refresh(this.sender.topicsInUse)
    return this.cluster.partitionCount(topic)
  }
}

/** A producer for the given settings (Java's `new KafkaProducer(props)`); it connects on the first send() or connect(). */
export function createProducer(settings: ProducerSettings | AnyProducerSettings): Producer {
  return new Producer(settings)
}
