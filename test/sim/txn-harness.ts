import { IllegalStateException, KafkaEdgeError, TimeoutException } from '../../src/edge/errors.js'
import type { ProducerObserver } from '../../src/edge/producer/config.js'
import '../../src/edge/producer/install.js'
import { createProducer, type Producer, type RecordMetadata } from '../../src/edge/producer/producer.js'

import { Produce } from '../../src/edge/protocol/index.js'
import { rng } from '../helpers/records.js'
import { between, drawNetFaults, faultLevel, indexOf, pick, valueOf, type Outcome } from './harness.js'
import { ModelCluster, NO_FAULTS, type BrokerFaults, type ModelOptions } from './model-broker.js'
import { SimNetwork } from './sim-network.js'
import { checkTxnInvariants } from './txn-invariants.js'
import { VirtualClock } from './virtual-clock.js'

export const TRANSACTIONAL_ID = 'sim-txn'
/** The consumer group whose offsets the application commits in its transactions (as a read-process-write app would). */
export const GROUP = 'sim-group'
/** The input topic of those offsets; transaction n commits offset n + 1, so a committed offset names its transaction. */
export const INPUT_TOPIC = 'in'

/** A record sent inside an application transaction by one producer incarnation. */
export interface TxnOutcome extends Outcome { readonly txn: number; readonly incarnation: number }

/**
 * How an application transaction ended, as far as the application was told:
 * - committed: commitTransaction() resolved;
 * - aborted: abortTransaction() resolved;
 * - abandoned: the producer died (fatal error) before commitTransaction() was called, or after the
 *   commit failed with an abortable error: nothing of it may be committed;
 * - unknown: the producer died after commitTransaction() was called and before it answered: either
 *   fate is honest, but all of the transaction shares it;
 * - open: never finished (the run hung).
 */
export type TxnResult = 'open' | 'committed' | 'aborted' | 'abandoned' | 'unknown'

/** One application transaction: its records, what the application asked for, and what it was told. */
export class AppTxn {
  readonly records: TxnOutcome[] = []
  result: TxnResult = 'open'
  commitCalled = false
  /** Input partitions whose offsets the application passed to sendOffsetsToTransaction() (whatever it answered). */
  readonly offsets: number[] = []
  /** The non-fatal error commitTransaction() failed with, if it did (timeouts are retried, not kept). */
  commitError: Error | null = null
  constructor(readonly id: number, readonly incarnation: number, readonly intent: 'commit' | 'abort') {}
}

/** A producer incarnation that died: its error and the producer id/epoch it had then. */
export interface Death { incarnation: number; error: Error; producerId: bigint; epoch: number; at: number }

type CallResult = { kind: 'ok' } | { kind: 'abortable' | 'fatal'; error: Error }

/** A send of the plan; a poisoned record is refused by the broker (INVALID_RECORD), which aborts its transaction. */
export interface SendSpec { gapMs: number; topic: string; key?: string; partition?: number; pad: number; poison?: boolean }
/** One application transaction: records to send, input partitions whose offsets to commit with them, commit or abort. */
export interface TxnPlan { gapMs: number; intent: 'commit' | 'abort'; sends: SendSpec[]; offsets?: number[] }

/**
 * The model cluster, a seeded network and the producer incarnations of one transactional
 * application (same transactional.id), on a virtual clock.
 */
export class TxnWorld {
  readonly clock = new VirtualClock()
  readonly cluster: ModelCluster
  readonly net: SimNetwork
  readonly producers: Producer[] = []
  /** When each incarnation was created, and when the application closed it. */
  readonly startedAt: number[] = []
  readonly endedAt: number[] = []
  private readonly closed = new Set<number>()
  readonly outcomes: TxnOutcome[] = []
  readonly txns: AppTxn[] = []
  readonly deaths: Death[] = []
  /** What the application itself saw go wrong: a call that never completed, an error no producer should raise. */
  readonly appViolations: string[] = []
  /** Virtual time after which a call still timing out is a hang rather than a fault window. */
  retryDeadline = Infinity
  /** Per incarnation: coordinator requests sent per API, and whether a Produce went out at v12 (transaction v2). */
  readonly requestsSent: Array<Record<string, number>> = []
  readonly usedTv2: boolean[] = []

  constructor(readonly seed: number, private readonly opts: { model?: Partial<ModelOptions>; producer?: Record<string, unknown> } = {}) {
    this.cluster = new ModelCluster(opts.model ?? {}, rng(seed ^ 0x5bd1e995), () => this.clock.now())
    this.net = new SimNetwork(this.clock, rng(seed ^ 0x9747b28c), this.cluster)
    this.net.duplicateApis = new Set([Produce.key])
  }

  /** A new producer with the application's transactional.id; returns its incarnation number. */
  newProducer(): number {
    const incarnation = this.producers.length
    this.startedAt.push(this.clock.now())
    const sent: Record<string, number> = {}
    this.requestsSent.push(sent)
    this.usedTv2.push(false)
    // The harness counts through the producer's observer and passes every event on to the scenario's own.
    const own = (this.opts.producer?.observer ?? {}) as ProducerObserver
    this.producers.push(createProducer({
      'bootstrap.servers': 'broker0.sim:9092',
      transport: this.net,
      clock: this.clock,
      random: rng(this.seed ^ 0x2545f491 ^ (incarnation * 0x9e3779b9)),
      'transactional.id': TRANSACTIONAL_ID,
      ...this.opts.producer,
      observer: {
        ...own,
        onCoordinatorRequest: (r) => { sent[r.api] = (sent[r.api] ?? 0) + 1; own.onCoordinatorRequest?.(r) },
        onProduceRequest: (r) => { if (r.maxVersion >= 12) this.usedTv2[incarnation] = true; own.onProduceRequest?.(r) },
      },
    }))
    return incarnation
  }

  sleep(ms: number): Promise<void> { return new Promise((resolve) => this.clock.setTimeout(resolve, ms)) }

  begin(incarnation: number, intent: 'commit' | 'abort'): AppTxn {
    const t = new AppTxn(this.txns.length, incarnation, intent)
    this.txns.push(t)
    return t
  }

  /** send() inside `txn`; a synchronous refusal says whether the transaction is to be aborted or the producer is dead. */
  send(incarnation: number, txn: AppTxn, s: SendSpec): CallResult {
    const index = this.outcomes.length
    const value = (s.poison ? '\u0000poison' : '') + valueOf(index, s.pad)
    const o: TxnOutcome = { index, topic: s.topic, value, status: 'pending', txn: txn.id, incarnation, sentAt: this.clock.now() }
    const record = { topic: s.topic, value, key: s.key, partition: s.partition }
    const settle = (md: RecordMetadata | null, e: Error | null) => { if (e) { o.status = 'failed'; o.error = e } else { o.status = 'acked'; o.md = md! } }
    try {
      // Both forms of send(), by index as in World.send: the callback on odd indexes.
      if (index % 2 === 1) this.producers[incarnation]!.send(record, settle)
      else this.producers[incarnation]!.send(record).then((md) => settle(md, null), (e: Error) => settle(null, e))
    } catch (e) {
      return this.classify(incarnation, 'send', e as Error)
    }
    this.outcomes.push(o)
    txn.records.push(o)
    return { kind: 'ok' }
  }

  /**
   * A transactional call, called again after a retriable error (a timeout resumes the pending
   * operation; initTransactions can meet an unreachable bootstrap server) until it settles for good.
   */
  async call(incarnation: number, op: string, fn: () => Promise<void>): Promise<CallResult> {
    for (;;) {
      try {
        await fn()
        return { kind: 'ok' }
      } catch (e) {
        if (!(e instanceof KafkaEdgeError && e.retriable)) return this.classify(incarnation, op, e as Error)
        // Without a timeout in between, a retry must not spin in zero virtual time.
        if (!(e instanceof TimeoutException)) await this.sleep(100)
        if (this.clock.now() >= this.retryDeadline) {
          this.appViolations.push(`producer ${incarnation}: ${op}() still failing ${this.clock.now() - this.retryDeadline} ms past the retry deadline: ${e.name}: ${e.message}`)
          return { kind: 'fatal', error: e }
        }
      }
    }
  }

  private classify(incarnation: number, op: string, e: Error): CallResult {
    if (this.producers[incarnation]!.state.fatal) return { kind: 'fatal', error: e }
    if (e instanceof IllegalStateException) {
      this.appViolations.push(`producer ${incarnation}: ${op}() threw ${e.name} in state ${this.producers[incarnation]!.state.transactionState}: ${e.message}`)
      return { kind: 'fatal', error: e }
    }
    return { kind: 'abortable', error: e }
  }

  /** The incarnation is done (or dead): close it as an application would. */
  async retire(incarnation: number, death: Error | null = null): Promise<void> {
    if (this.closed.has(incarnation)) return
    this.closed.add(incarnation)
    this.endedAt[incarnation] = this.clock.now()
    const p = this.producers[incarnation]!
    if (death) this.deaths.push({ incarnation, error: death, producerId: p.state.producerId ?? -1n, epoch: p.state.producerEpoch ?? -1, at: this.clock.now() })
    await p.close({ timeoutMs: 0 })
  }

  isRetired(incarnation: number): boolean { return this.closed.has(incarnation) }

  /** Runs virtual time until `p` settles (or `ms` passed); returns how it settled. */
  async settle<T>(p: Promise<T>, ms = 600_000): Promise<{ ok: true; value: T } | { ok: false; error: Error } | null> {
    let out: { ok: true; value: T } | { ok: false; error: Error } | null = null
    p.then((value) => { out = { ok: true, value } }, (error: Error) => { out = { ok: false, error } })
    await this.clock.run({ until: this.clock.now() + ms, done: () => out !== null })
    return out
  }

  async retireAll(): Promise<void> {
    for (let i = 0; i < this.producers.length; i++) await this.retire(i)
  }

  /**
   * `ms` of virtual time pass with no client left: the coordinator aborts the transactions that
   * outlived their timeout and writes every marker it owes (as its timers would in Kafka).
   */
  async drainCoordinator(ms: number): Promise<void> {
    await this.clock.advance(ms)
    this.cluster.coordinator.tick()
    await this.clock.advance(this.cluster.opts.markerDelayMs)
    this.cluster.coordinator.tick()
  }

  violations(): string[] { return checkTxnInvariants(this) }
}

/**
 * One application transaction, run as the Java documentation says to: begin, send, then commit
 * (or abort as planned); an abortable error means abortTransaction() and carry on, a fatal one
 * means close the producer. Returns the transaction; the incarnation is retired if it died.
 */
export async function runTransaction(w: TxnWorld, inc: number, plan: TxnPlan): Promise<AppTxn> {
  const p = w.producers[inc]!
  const txn = w.begin(inc, plan.intent)
  try {
    p.beginTransaction()
  } catch (e) {
    txn.result = 'abandoned'
    await w.retire(inc, e as Error)
    return txn
  }
  let abortable = false
  for (const s of plan.sends) {
    await w.sleep(s.gapMs)
    const r = w.send(inc, txn, s)
    if (r.kind === 'fatal') { txn.result = 'abandoned'; await w.retire(inc, r.error); return txn }
    if (r.kind === 'abortable') { abortable = true; break }
  }
  if (!abortable && plan.offsets?.length) {
    const offsets = plan.offsets.map((partition) => ({ topic: INPUT_TOPIC, partition, offset: BigInt(txn.id + 1) }))
    txn.offsets.push(...plan.offsets)
    const o = await w.call(inc, 'sendOffsetsToTransaction', () => p.sendOffsetsToTransaction(offsets, GROUP))
    if (o.kind === 'fatal') { txn.result = 'abandoned'; await w.retire(inc, o.error); return txn }
    if (o.kind === 'abortable') abortable = true
  }
  if (plan.intent === 'commit' && !abortable) {
    txn.commitCalled = true
    const c = await w.call(inc, 'commitTransaction', () => p.commitTransaction())
    if (c.kind === 'ok') { txn.result = 'committed'; return txn }
    if (c.kind === 'fatal') { txn.result = 'unknown'; await w.retire(inc, c.error); return txn }
    txn.commitError = c.error
  }
  const a = await w.call(inc, 'abortTransaction', () => p.abortTransaction())
  if (a.kind === 'ok') { txn.result = 'aborted'; return txn }
  txn.result = txn.commitCalled && !txn.commitError ? 'unknown' : 'abandoned'
  if (a.kind === 'abortable') w.appViolations.push(`producer ${inc}: abortTransaction() failed with a non-fatal error: ${a.error.name}: ${a.error.message}`)
  await w.retire(inc, a.error)
  return txn
}

/** A new producer incarnation with initTransactions() done; null if it died trying. */
export async function startIncarnation(w: TxnWorld): Promise<number | null> {
  const inc = w.newProducer()
  const init = await w.call(inc, 'initTransactions', () => w.producers[inc]!.initTransactions())
  if (init.kind === 'ok') return inc
  await w.retire(inc, init.error)
  return null
}

/** One application instance: transactions from the shared plan queue until it is empty or the producer dies. */
async function runIncarnation(w: TxnWorld, plans: TxnPlan[]): Promise<void> {
  const inc = await startIncarnation(w)
  if (inc === null) return
  for (let plan = plans.shift(); plan && !w.isRetired(inc); plan = plans.shift()) {
    await w.sleep(plan.gapMs)
    await runTransaction(w, inc, plan)
  }
  await w.retire(inc)
}

/**
 * The application: a first instance, maybe a second one started while the first runs (the first
 * becomes a zombie and must be fenced), then a fresh instance whenever all died with work left.
 */
export async function runApplication(w: TxnWorld, plans: TxnPlan[], secondAtMs: number, maxIncarnations = 4): Promise<void> {
  await Promise.all([runIncarnation(w, plans), secondAtMs >= 0 ? w.sleep(secondAtMs).then(() => runIncarnation(w, plans)) : null])
  while (plans.length > 0 && w.producers.length < maxIncarnations) await runIncarnation(w, plans)
}

export interface TxnSeedStats {
  tv2: boolean
  records: number
  acked: number
  failed: number
  txns: Record<TxnResult, number>
  incarnations: number
  fences: number
  /** Transactional offset commits the coordinator completed (committed or aborted). */
  offsetCommits: number
  virtualMs: number
  timers: number
  appends: number
  brokerErrors: Record<string, number>
  net: SimNetwork['stats']
}

export interface TxnSeedResult { seed: number; ok: boolean; violations: string[]; stats: TxnSeedStats; description: string }


/**
 * One randomized transactional run: cluster shape, transaction version, producer settings, the
 * application's transactions (and whether a second instance fences the first) and the faults all
 * drawn from the seed. Faults stop after a window; the application must then finish, the
 * coordinator completes what it started, and the transactional invariants must hold.
 */
export async function runTxnSeed(seed: number, opts: { verbose?: boolean } = {}): Promise<TxnSeedResult> {
  const r = rng(seed * 104729 + 17)
  const brokers = between(r, 1, 3)
  const transactionVersion = r() < 0.5 ? 2 : pick(r, [0, 1])
  const model: Partial<ModelOptions> = {
    brokers,
    topics: { t: between(r, 1, 4), u: between(r, 1, 3) },
    // Below 3 the ApiVersions answer carries no features: the producer stays on transaction v1.
    apiVersionsMax: r() < 0.1 ? pick(r, [0, 1, 2]) : 4,
    // Transaction v2 needs Produce v12: mostly there on a TV2 cluster, sometimes not (the producer stays on v1).
    produceMaxVersion: transactionVersion >= 2 && r() < 0.8 ? 12 : pick(r, [3, 7, 9, 10, 11, 12]),
    duplicateMode: r() < 0.3 ? 'error' : 'offset',
    unknownProducerMode: r() < 0.3 ? 'error' : 'accept',
    transactionVersion,
    markerDelayMs: pick(r, [0, 1, 10, 50, 300]),
    coordinatorLoadMs: pick(r, [0, 20, 500, 3000]),
  }
  const lingerMs = pick(r, [0, 0, 1, 5, 20])
  const requestTimeoutMs = pick(r, [500, 2000, 30_000])
  const faultWindowMs = pick(r, [0, 1000, 5000, 20_000])
  const transactionTimeoutMs = r() < 0.2 ? pick(r, [2000, 5000, 15_000]) : 60_000
  const deliveryTimeoutMs = r() < 0.25 ? lingerMs + requestTimeoutMs + between(r, 0, 3000) : lingerMs + requestTimeoutMs + faultWindowMs * 3 + 120_000
  const maxBlockMs = pick(r, [1000, 5000, 60_000])
  const producerSettings = {
    'linger.ms': lingerMs,
    'batch.size': pick(r, [64, 128, 300, 16384]),
    'max.in.flight.requests.per.connection': between(r, 1, 5),
    'request.timeout.ms': requestTimeoutMs,
    'delivery.timeout.ms': deliveryTimeoutMs,
    'retry.backoff.ms': pick(r, [1, 10, 100]),
    'retry.backoff.max.ms': pick(r, [100, 1000]),
    'metadata.max.age.ms': pick(r, [300_000, 1000]),
    'max.block.ms': maxBlockMs,
    'transaction.timeout.ms': transactionTimeoutMs,
  }
  const level = faultLevel(r, faultWindowMs)
  const netFaults = drawNetFaults(r, level)
  const brokerFaults: BrokerFaults = {
    ...NO_FAULTS,
    notLeader: level * r(), leaderHint: r(), notEnoughReplicas: level * r(), notEnoughReplicasAfterAppend: level * r(),
    requestTimedOutAfterAppend: level * r() * 0.5, throttle: level * r(), leaderMove: level * r() * 0.5, topicMissing: level * r() * 0.5,
    notCoordinator: level * r(), coordinatorNotAvailable: level * r(), coordinatorMove: level * r() * 0.5,
  }
  const w = new TxnWorld(seed, { model, producer: producerSettings })
  w.net.faults = netFaults
  w.cluster.faults = brokerFaults
  w.net.faultsOn = w.cluster.faultsOn = faultWindowMs > 0

  const topics = model.topics!
  const poisonRate = r() < 0.1 ? 0.05 : 0
  const plans: TxnPlan[] = Array.from({ length: between(r, 1, 8) }, () => ({
    gapMs: pick(r, [0, 0, 10, 500]),
    intent: r() < 0.25 ? 'abort' as const : 'commit' as const,
    offsets: r() < 0.3 ? pick(r, [[0], [1], [0, 1]]) : [],
    sends: Array.from({ length: pick(r, [0, 1, 2, 3, 4, 6]) }, () => {
      const topic = r() < 0.7 ? 't' : 'u'
      const s = r()
      const shape = s < 0.4 ? {} : s < 0.6 ? { key: `k${between(r, 0, 9)}` } : { partition: between(r, 0, topics[topic]! - 1) }
      return { gapMs: pick(r, [0, 0, 1, 10, 100, 1000]), topic, pad: between(r, 0, 40), poison: r() < poisonRate, ...shape }
    }),
  }))
  const txnCount = plans.length
  const secondAtMs = r() < 0.15 ? between(r, 0, Math.max(faultWindowMs, 3000)) : -1
  const killAt = brokers > 1 && faultWindowMs > 0 && r() < 0.3 ? between(r, 0, faultWindowMs) : -1
  const killNode = between(r, 0, brokers - 1)

  const startMs = w.clock.now()
  const violations: string[] = []
  // An exception thrown inside the producer's callbacks would otherwise end the process without a seed number.
  const escaped: unknown[] = []
  const onEscape = (e: unknown): void => { escaped.push(e) }
  process.on('unhandledRejection', onEscape)
  let appDone = false
  let appError: unknown = null
  void runApplication(w, plans, secondAtMs).catch((e: unknown) => { appError = e }).finally(() => { appDone = true })
  try {
    if (killAt >= 0) {
      await w.clock.run({ until: startMs + killAt })
      w.cluster.killBroker(killNode)
      w.net.severNode(killNode)
    }
    await w.clock.run({ until: startMs + faultWindowMs })
    w.net.faultsOn = w.cluster.faultsOn = false
    for (let b = 0; b < brokers; b++) w.cluster.reviveBroker(b)
    // After the faults, every call must complete within a few rounds of max.block.ms and the delivery timeout.
    w.retryDeadline = w.clock.now() + deliveryTimeoutMs + 10 * maxBlockMs + 60_000
    const budget = w.retryDeadline - w.clock.now() + txnCount * 60_000
    if (!await w.clock.run({ until: w.clock.now() + budget, done: () => appDone })) {
      violations.push(`the application did not finish within ${budget} virtual ms after the faults stopped: ${describeStuck(w)}`)
    }
    await w.settle(w.retireAll())
    // The coordinator finishes what it started: pending markers, and aborting what the application left open.
    await w.drainCoordinator(transactionTimeoutMs + 1000)
  } catch (e) {
    violations.push(`the run threw: ${(e as Error).stack ?? e}`)
  } finally {
    process.off('unhandledRejection', onEscape)
  }
  for (const e of escaped) violations.push(`an error escaped the producer: ${(e as Error).stack ?? e}`)
  if (appError) violations.push(`the application threw: ${(appError as Error).stack ?? appError}`)
  violations.push(...w.violations())

  const count = (res: TxnResult) => w.txns.filter((t) => t.result === res).length
  const stats: TxnSeedStats = {
    tv2: w.usedTv2.some(Boolean),
    records: w.outcomes.length,
    acked: w.outcomes.filter((o) => o.status === 'acked').length,
    failed: w.outcomes.filter((o) => o.status === 'failed').length,
    txns: { committed: count('committed'), aborted: count('aborted'), abandoned: count('abandoned'), unknown: count('unknown'), open: count('open') },
    incarnations: w.producers.length,
    fences: w.cluster.coordinator.events.filter((e) => e.what.startsWith('fence')).length,
    offsetCommits: w.cluster.coordinator.offsetCommits.length,
    virtualMs: w.clock.now() - startMs,
    timers: w.clock.fired,
    appends: w.cluster.appends,
    brokerErrors: Object.fromEntries(w.cluster.errorsSent),
    net: { ...w.net.stats },
  }
  const description = `brokers=${brokers} topics=${JSON.stringify(topics)} txns=${txnCount} tv=${transactionVersion} ${JSON.stringify(producerSettings)} model=${JSON.stringify({ api: model.apiVersionsMax, produce: model.produceMaxVersion, dup: model.duplicateMode, unknown: model.unknownProducerMode, markers: model.markerDelayMs, load: model.coordinatorLoadMs })} faults=${level} window=${faultWindowMs} poison=${poisonRate} second=${secondAtMs} kill=${killAt >= 0 ? `${killNode}@${killAt}` : 'none'}`
  if (opts.verbose) printRun(w, seed, description, stats)
  return { seed, ok: violations.length === 0, violations, stats, description }
}

function describeStuck(w: TxnWorld): string {
  const open = w.txns.filter((t) => t.result === 'open').map((t) => `txn ${t.id} (producer ${t.incarnation}, state ${w.producers[t.incarnation]!.transactions!.state}, queue [${w.producers[t.incarnation]!.transactions!.pendingRequests.join(',')}])`)
  const pending = w.outcomes.filter((o) => o.status === 'pending').map((o) => o.index)
  return `open: ${open.join('; ') || 'none'}; pending sends: ${pending.join(',') || 'none'}`
}

function printRun(w: TxnWorld, seed: number, description: string, stats: TxnSeedStats): void {
  console.log(`seed ${seed}: ${description}`)
  console.log(JSON.stringify(stats))
  for (const t of w.txns) {
    console.log(`  txn ${t.id} producer ${t.incarnation} ${t.intent}${t.offsets.length ? ` (offsets ${t.offsets.join(',')})` : ''} -> ${t.result}${t.commitError ? ` (commit: ${t.commitError.name}: ${t.commitError.message})` : ''}`)
    for (const o of t.records) console.log(`    #${o.index} ${o.topic} ${o.status} ${o.md ? `p${o.md.partition}@${o.md.offset}` : ''} ${o.error ? `${o.error.name}(${o.error.mayHaveBeenWritten}): ${o.error.message}` : ''}`)
  }
  for (const d of w.deaths) console.log(`  producer ${d.incarnation} died at +${d.at - 1_700_000_000_000} ms (${d.producerId}/${d.epoch}): ${d.error.name}: ${d.error.message}`)
  for (const c of w.cluster.coordinator.offsetCommits) console.log(`  offsets ${c.group} ${c.tp}=${c.offset} ${c.committed ? 'committed' : 'aborted'} in txn ${c.serial}`)
  for (const e of w.cluster.coordinator.events) console.log(`  coordinator +${e.at - 1_700_000_000_000} ${e.what} ${e.producerId}/${e.epoch} txn ${e.serial}`)
  for (const [topic, ps] of w.cluster.partitions) for (const p of ps) {
    const entries = p.log.map((b) => b.control ? `${b.control.toUpperCase()}/${b.epoch}@${b.baseOffset}` : `[${b.producerId}/${b.epoch}/s${b.baseSequence}@${b.baseOffset} ${b.txn?.fate ?? 'plain'}${b.txn ? `#${b.txn.serial}` : ''}: ${b.values.map(indexOf).join(',')}]`)
    console.log(`  log ${topic}-${p.index}: ${entries.join(' ')}`)
  }
}
