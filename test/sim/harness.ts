import { KafkaEdgeError, TimeoutException } from '../../src/edge/errors.js'
import { createProducer, type Producer, type RecordMetadata } from '../../src/edge/producer/producer.js'
import { loadCore } from '../../src/edge/wasm/core.js'
import { rng } from '../helpers/records.js'
import { checkInvariants } from './invariants.js'
import { ModelCluster, NO_FAULTS, type BrokerFaults, type ModelOptions } from './model-broker.js'
import { NO_NET_FAULTS, SimNetwork, type NetFaults } from './sim-network.js'
import { VirtualClock } from './virtual-clock.js'

export interface Outcome {
  readonly index: number
  readonly topic: string
  readonly value: string
  status: 'pending' | 'acked' | 'failed'
  md?: RecordMetadata
  error?: Error & { mayHaveBeenWritten?: boolean }
  /** Virtual time of the send() call. */
  sentAt: number
  /** Sent with send(record, callback) (odd indexes) rather than the promise form. */
  callback?: boolean
  /** What went wrong with the callback itself: called twice, or called before send() returned. */
  callbackFault?: string
}

export interface WorldOptions {
  model?: Partial<ModelOptions>
  producer?: Record<string, unknown>
}

/** Value of record i: its index leads, so the log can be read back as send indexes. */
const utf8 = new TextEncoder()
export const valueOf = (i: number, pad = 0): string => `v${i}|${'x'.repeat(pad)}`
export const indexOf = (value: string): number => {
  const m = /^(?:\u0000poison)?v(\d+)\|/.exec(value)
  return m ? Number(m[1]) : -1
}

/** A model cluster, a seeded network and one producer on a virtual clock. */
export class World {
  readonly clock = new VirtualClock()
  readonly random: () => number
  readonly cluster: ModelCluster
  readonly net: SimNetwork
  readonly producer: Producer
  readonly outcomes: Outcome[] = []
  readonly trace: string[] = []
  /** Every (producer id, epoch) the producer took, as its observer reported them. */
  readonly epochs: Array<{ producerId: bigint; epoch: number }> = []
  private readonly scratch = new Uint8Array(64 << 10)

  constructor(readonly seed: number, opts: WorldOptions = {}) {
    this.random = rng(seed)
    this.cluster = new ModelCluster(opts.model ?? {}, rng(seed ^ 0x5bd1e995), () => this.clock.now())
    this.net = new SimNetwork(this.clock, rng(seed ^ 0x9747b28c), this.cluster)
    this.producer = createProducer({
      'bootstrap.servers': 'broker0.sim:9092',
      transport: this.net,
      clock: this.clock,
      random: rng(seed ^ 0x2545f491),
      observer: { onProducerId: (pe: { producerId: bigint; epoch: number }) => { this.epochs.push(pe) } },
      ...opts.producer,
    })
  }

  static async preload(): Promise<void> { await loadCore() }

  /** Sends record i (value valueOf(i)); its outcome is tracked for the invariants. */
  send(topic: string, extra: { key?: string; partition?: number; pad?: number; poison?: boolean } = {}): Outcome {
    const index = this.outcomes.length
    const value = (extra.poison ? '\u0000poison' : '') + valueOf(index, extra.pad ?? 0)
    const o: Outcome = { index, topic, value, status: 'pending', sentAt: this.clock.now() }
    this.outcomes.push(o)
    // The value goes in as a view of one scratch array that is scribbled over right after send():
    // send() must capture the bytes (a record waiting for metadata or buffer space, a split batch).
    const { written } = utf8.encodeInto(value, this.scratch)
    const bytes = this.scratch.subarray(0, written)
    const record = { topic, value: bytes, key: extra.key, partition: extra.partition }
    // Both forms of send() run through every seed: the promise on even indexes, the callback on odd
    // ones (by index, so the seeds' random draws are the same either way).
    if (index % 2 === 1) {
      o.callback = true
      let returned = false
      this.producer.send(record, (md, e) => {
        if (!returned) o.callbackFault = 'called before send() returned'
        else if (o.status !== 'pending') o.callbackFault = `called again after ${o.status}`
        if (e) { o.status = 'failed'; o.error = e } else { o.status = 'acked'; o.md = md! }
      })
      returned = true
    } else {
      this.producer.send(record).then(
        (md) => { o.status = 'acked'; o.md = md },
        (e: Error) => { o.status = 'failed'; o.error = e },
      )
    }
    bytes.fill(0x21)
    return o
  }

  get settled(): boolean { return this.outcomes.every((o) => o.status !== 'pending') }

  /** Runs virtual time until every send settled (or `ms` of virtual time passed). */
  async settle(ms = 600_000): Promise<boolean> {
    return this.clock.run({ until: this.clock.now() + ms, done: () => this.settled })
  }

  /** flush() under virtual time: true when it resolved within `ms`. */
  async flush(ms = 600_000): Promise<boolean> {
    let flushed = false
    let failed: unknown = null
    this.producer.flush().then(() => { flushed = true }, (e) => { failed = e })
    await this.clock.run({ until: this.clock.now() + ms, done: () => flushed || failed !== null })
    if (failed) throw failed
    return flushed
  }

  async close(): Promise<void> {
    let closed = false
    this.producer.close({ timeoutMs: 0 }).then(() => { closed = true }, () => { closed = true })
    await this.clock.run({ until: this.clock.now() + 10_000, done: () => closed })
  }

  violations(): string[] { return checkInvariants(this) }
}

export interface SeedStats {
  records: number
  acked: number
  failed: number
  virtualMs: number
  timers: number
  appends: number
  duplicatesAnswered: number
  epochBumps: number
  brokerErrors: Record<string, number>
  net: SimNetwork['stats']
}

export interface SeedResult { seed: number; ok: boolean; violations: string[]; stats: SeedStats; description: string }

export const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!
export const between = (r: () => number, lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1))

/** How hard a seed's fault window hits: none without a window, else mostly moderate, sometimes heavy. */
export function faultLevel(r: () => number, faultWindowMs: number): number {
  const chaos = r()
  return faultWindowMs === 0 ? 0 : chaos < 0.2 ? 0.02 : chaos < 0.7 ? 0.06 : 0.15
}

export function drawNetFaults(r: () => number, level: number): NetFaults {
  return {
    dropRequest: level * r() * 0.5, dropResponse: level * r(), duplicateRequest: level * r() * 0.3,
    disconnect: level * r(), connectFail: level * r() * 2, maxDelayMs: pick(r, [0, 5, 50, 200]),
  }
}

/**
 * One randomized run: cluster shape, producer settings, workload and faults all drawn from the
 * seed. Faults stop after a window; then every send must settle, flush must resolve, and the
 * invariants must hold.
 */
export async function runSeed(seed: number, opts: { verbose?: boolean; records?: number } = {}): Promise<SeedResult> {
  const r = rng(seed * 7919 + 13)
  const brokers = between(r, 1, 3)
  const partitions = between(r, 1, 6)
  const model: Partial<ModelOptions> = {
    brokers,
    topics: { t: partitions, u: between(r, 1, 3) },
    apiVersionsMax: r() < 0.15 ? pick(r, [0, 1, 2, 3]) : 4,
    produceMaxVersion: pick(r, [3, 7, 8, 9, 10, 11, 12, 12, 12]),
    duplicateMode: r() < 0.3 ? 'error' : 'offset',
    unknownProducerMode: r() < 0.3 ? 'error' : 'accept',
    // Sometimes below what a batch can reach, so MESSAGE_TOO_LARGE forces splits (one record always fits).
    maxMessageBytes: r() < 0.15 ? pick(r, [180, 260, 400]) : 1_048_588,
  }
  const poisonRate = r() < 0.1 ? 0.08 : 0
  // Half-way through, the producer may sit idle past delivery.timeout.ms while the broker forgets it.
  const idleGap = r() < 0.15 ? pick(r, ['expire', 'truncate'] as const) : null
  const lingerMs = pick(r, [0, 0, 1, 5, 20])
  const requestTimeoutMs = pick(r, [500, 2000, 30_000])
  const faultWindowMs = pick(r, [0, 1000, 5000, 20_000])
  // Mostly long enough to ride out the faults; sometimes short so batches expire mid-flight.
  const deliveryTimeoutMs = r() < 0.25 ? lingerMs + requestTimeoutMs + between(r, 0, 3000) : lingerMs + requestTimeoutMs + faultWindowMs * 3 + 120_000
  const producerSettings = {
    'linger.ms': lingerMs,
    'batch.size': pick(r, [64, 128, 300, 1000, 16384]),
    'max.in.flight.requests.per.connection': between(r, 1, 5),
    'request.timeout.ms': requestTimeoutMs,
    'delivery.timeout.ms': deliveryTimeoutMs,
    'retry.backoff.ms': pick(r, [1, 10, 100]),
    'retry.backoff.max.ms': pick(r, [100, 1000]),
    'metadata.max.age.ms': pick(r, [300_000, 1000]),
  }
  const level = faultLevel(r, faultWindowMs)
  const netFaults = drawNetFaults(r, level)
  const brokerFaults: BrokerFaults = {
    ...NO_FAULTS,
    notLeader: level * r(), leaderHint: r(), notEnoughReplicas: level * r(), notEnoughReplicasAfterAppend: level * r(),
    requestTimedOutAfterAppend: level * r() * 0.5, throttle: level * r(), leaderMove: level * r() * 0.5, topicMissing: level * r(),
  }
  const w = new World(seed, { model, producer: producerSettings })
  w.net.faults = netFaults
  w.cluster.faults = brokerFaults
  w.net.faultsOn = w.cluster.faultsOn = faultWindowMs > 0

  const n = opts.records ?? between(r, 5, 40)
  const sendSpanMs = pick(r, [0, 100, 2000, faultWindowMs])
  const killAt = brokers > 1 && faultWindowMs > 0 && r() < 0.3 ? between(r, 0, faultWindowMs) : -1
  const killNode = between(r, 0, brokers - 1)
  const startMs = w.clock.now()
  const sendTimes = Array.from({ length: n }, () => between(r, 0, sendSpanMs)).sort((a, b) => a - b)
  const shapes = Array.from({ length: n }, () => {
    const s = r()
    const topic = r() < 0.8 ? 't' : 'u'
    return s < 0.4 ? { topic } : s < 0.7 ? { topic, key: `k${between(r, 0, 9)}` } : { topic, partition: between(r, 0, (topic === 't' ? partitions : model.topics!.u!) - 1) }
  })
  const pads = Array.from({ length: n }, () => between(r, 0, 40))
  const poison = Array.from({ length: n }, () => r() < poisonRate)

  let sent = 0
  let killed = false
  let startShift = 0
  const sendDue = async (): Promise<void> => {
    while (sent < n) {
      const due = startMs + startShift + sendTimes[sent]!
      if (killAt >= 0 && !killed && startMs + killAt <= due) {
        await w.clock.run({ until: startMs + killAt })
        killed = true
        w.cluster.killBroker(killNode)
        w.net.severNode(killNode)
      }
      await w.clock.run({ until: due })
      if (idleGap && sent === Math.floor(n / 2)) {
        // The quiet spell is fault-free, so no record sees more than the fault window's worth of faults.
        w.net.faultsOn = w.cluster.faultsOn = false
        for (let b = 0; b < brokers; b++) w.cluster.reviveBroker(b)
        await w.flush(deliveryTimeoutMs * 2)
        await w.clock.run({ until: w.clock.now() + deliveryTimeoutMs + 1000 })
        if (idleGap === 'expire') w.cluster.expireIdleProducers(deliveryTimeoutMs)
        else for (const ps of w.cluster.partitions.values()) for (const p of ps) w.cluster.truncateHead(p)
        startShift = w.clock.now() - due
        w.net.faultsOn = w.cluster.faultsOn = faultWindowMs > 0
      }
      w.send(shapes[sent]!.topic, { ...shapes[sent]!, pad: pads[sent]!, poison: poison[sent]! })
      sent++
    }
  }
  await sendDue()
  await w.clock.run({ until: startMs + startShift + faultWindowMs })
  const faultsEnd = w.clock.now()
  // Faults stop: the producer must drain.
  w.net.faultsOn = w.cluster.faultsOn = false
  for (let b = 0; b < brokers; b++) w.cluster.reviveBroker(b)
  const violations: string[] = []
  const flushed = await w.flush(deliveryTimeoutMs * 2 + 600_000)
  if (!flushed) violations.push(`flush did not resolve within ${deliveryTimeoutMs * 2 + 600_000} virtual ms after faults stopped`)
  await w.settle(1000)
  violations.push(...w.violations())
  // With delivery.timeout.ms longer than the fault window plus a full retry cycle, nothing may fail.
  if (deliveryTimeoutMs > faultWindowMs * 3 + 60_000 + requestTimeoutMs) {
    // A poisoned record fails with INVALID_RECORD and takes its batch with it (as in Java).
    const invalidRecord = (o: Outcome): boolean => (o.error as { code?: number } | undefined)?.code === 87
    // Waiting for metadata is bounded by max.block.ms, not delivery.timeout.ms. A connection can go dark
    // in the window and stay so (a lost answer loses the later ones on it): a metadata request on it gets
    // request.timeout.ms, then the next one goes to another established idle connection, which may be dark
    // too, as Java's NetworkClient (leastLoadedNode) does. One such timeout per broker after the window can
    // outlast max.block.ms, and then Java's producer fails the record too (seed 58331). Only a wait that
    // ran out before those timeouts could have ended is excused: a record whose max.block.ms reaches past
    // them (with a second of backoff per broker) must have found its metadata.
    const darkUntil = faultsEnd + brokers * (requestTimeoutMs + 1000)
    const blockedOnMetadata = (o: Outcome): boolean => o.sentAt + w.producer.config.maxBlockMs <= darkUntil
      && o.error?.mayHaveBeenWritten === false && o.error instanceof TimeoutException && /not present in metadata/.test(o.error.message)
    for (const o of w.outcomes) if (o.status === 'failed' && !invalidRecord(o) && !blockedOnMetadata(o)) violations.push(`record ${o.index} failed although delivery.timeout.ms outlasts the faults: ${o.error?.name}: ${o.error?.message}`)
  }
  const m = w.producer.metrics()
  await w.close()
  const description = `brokers=${brokers} partitions=${partitions} records=${n} ${JSON.stringify(producerSettings)} model=${JSON.stringify({ api: model.apiVersionsMax, produce: model.produceMaxVersion, dup: model.duplicateMode, unknown: model.unknownProducerMode })} faults=${level} window=${faultWindowMs} maxMessage=${model.maxMessageBytes} poison=${poisonRate} idle=${idleGap} kill=${killAt >= 0 ? `${killNode}@${killAt}` : 'none'}`
  const stats: SeedStats = {
    records: n,
    acked: w.outcomes.filter((o) => o.status === 'acked').length,
    failed: w.outcomes.filter((o) => o.status === 'failed').length,
    virtualMs: w.clock.now() - startMs,
    timers: w.clock.fired,
    appends: w.cluster.appends,
    duplicatesAnswered: w.cluster.duplicates,
    epochBumps: m['producer-epoch-bumps-total'] ?? 0,
    brokerErrors: Object.fromEntries(w.cluster.errorsSent),
    net: { ...w.net.stats },
  }
  if (opts.verbose) {
    console.log(`seed ${seed}: ${description}`)
    console.log(JSON.stringify(stats))
    for (const o of w.outcomes) console.log(`  #${o.index} ${o.topic} ${o.status} ${o.md ? `p${o.md.partition}@${o.md.offset}` : ''} ${o.error ? `${o.error.name}(${o.error.mayHaveBeenWritten}): ${o.error.message}` : ''}`)
    for (const [topic, ps] of w.cluster.partitions) for (const p of ps) {
      console.log(`  log ${topic}-${p.index} (leader ${p.leader}, epoch ${p.leaderEpoch}): ${p.log.map((b) => `[${b.producerId}/${b.epoch}/s${b.baseSequence}@${b.baseOffset}: ${b.values.map((v) => indexOf(v)).join(',')}]`).join(' ')}`)
    }
  }
  return { seed, ok: violations.length === 0, violations, stats, description }
}

export const isTypedError = (e: unknown): boolean => e instanceof KafkaEdgeError || (e instanceof Error && typeof (e as { code?: unknown }).code === 'number')
export { NO_NET_FAULTS }
