import { createProducer, type Producer } from '../../src/edge/producer/producer.js'
import { memoryCheckpointStore, type ProducerCheckpoint, type ResumeOutcome } from '../../src/edge/index.js'
import { rng } from '../helpers/records.js'
import { ModelCluster, NO_FAULTS } from './model-broker.js'
import { SimNetwork } from './sim-network.js'
import { VirtualClock } from './virtual-clock.js'
import type { Clock } from '../../src/edge/clock.js'
import type { Transport } from '../../src/edge/transport/transport.js'
import { between, drawNetFaults, indexOf, pick, valueOf, type SeedResult, type SeedStats } from './harness.js'

/**
 * Resumable producers under faults: a chain of producers on one model cluster, each killed without
 * close() at a random moment (a page reload, a crashed renderer, an evicted Durable Object) while
 * answers are lost, requests dropped and leaders move; the next one takes over the dead one's
 * checkpoint. The last one closes cleanly. What must hold:
 * - every record a producer acknowledged, or that sat in a checkpoint a successor took over, is in
 *   the log (nothing accepted is lost);
 * - no record is in the log twice: this sweep never expires producers, so whatever a takeover
 *   relabels (re-sends as new records) must be records the log does not hold;
 * - each partition's log is in send order;
 * - a record failed with mayHaveBeenWritten=false is not in the log; every send settles.
 */
export async function runResumeSeed(seed: number, opts: { verbose?: boolean } = {}): Promise<SeedResult & { outcomes: ResumeOutcome[] }> {
  const r = rng(seed * 104729 + 7)
  const clock = new VirtualClock()
  const began = clock.now()
  const brokers = between(r, 1, 3)
  const partitions = between(r, 1, 4)
  const cluster = new ModelCluster({
    brokers, topics: { t: partitions }, duplicateMode: r() < 0.3 ? 'error' : 'offset', unknownProducerMode: r() < 0.3 ? 'error' : 'accept',
  }, rng(seed ^ 0x5bd1e995), () => clock.now())
  const net = new SimNetwork(clock, rng(seed ^ 0x9747b28c), cluster)
  const level = pick(r, [0, 0.02, 0.06, 0.15])
  net.faults = drawNetFaults(r, level)
  cluster.faults = {
    ...NO_FAULTS, notLeader: level * r(), leaderHint: r(), notEnoughReplicas: level * r(), notEnoughReplicasAfterAppend: level * r(),
    requestTimedOutAfterAppend: level * r() * 0.5, leaderMove: level * r() * 0.5,
  }
  const settings = {
    'linger.ms': pick(r, [0, 1, 5]),
    'batch.size': pick(r, [64, 128, 300, 16384]),
    'max.in.flight.requests.per.connection': between(r, 1, 5),
    'request.timeout.ms': pick(r, [500, 2000, 30_000]),
    'delivery.timeout.ms': 600_000,
    'retry.backoff.ms': pick(r, [1, 10, 100]),
    'retry.backoff.max.ms': pick(r, [100, 1000]),
    'metadata.max.age.ms': pick(r, [300_000, 1000]),
  }
  const saveDelayMs = pick(r, [0, 0, 5, 30])
  const generations = between(r, 2, 4)
  const sent: Array<{ index: number; partition: number; status: 'pending' | 'acked' | 'failed'; written?: boolean; gen: number }> = []
  const takenOver: ProducerCheckpoint[] = []
  const outcomes: ResumeOutcome[] = []
  const violations: string[] = []
  let epochBumps = 0
  let saved: ProducerCheckpoint | undefined
  const utf8 = new TextEncoder()

  for (let g = 0; g < generations; g++) {
    const last = g === generations - 1
    // Each producer gets its own store object holding what the dead one last saved: saves the dead
    // one still had running land in its own store, as a dead page's would go nowhere.
    const start = saved === undefined ? undefined : structuredClone(saved)
    if (start && start.pending.length > 0) takenOver.push(start)
    const inner = memoryCheckpointStore(start)
    let mine: ProducerCheckpoint | undefined = start
    let alive = true
    const store = {
      load: inner.load,
      save: (cp: ProducerCheckpoint) => new Promise<void>((resolve) => {
        const copy = structuredClone(cp)
        const done = (): void => { if (alive) { mine = copy; saved = copy } resolve() }
        if (saveDelayMs === 0) done()
        else clock.setTimeout(done, saveDelayMs)
      }),
    }
    saved = mine
    const trace = (level: string) => (message: string, fields?: unknown): void => {
      console.log(`  ${clock.now() - began} gen ${g} ${level} ${message} ${JSON.stringify(fields ?? {}, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`)
    }
    // A dead producer does nothing more: its timers never fire, its connections neither send nor
    // deliver. Requests it had already written are on the wire and may still land.
    const ownClock: Clock = { now: () => clock.now(), setTimeout: (fn, ms) => clock.setTimeout(() => { if (alive) fn() }, ms), clearTimeout: (h) => clock.clearTimeout(h) }
    const ownNet: Transport = {
      name: 'sim',
      open: async (address, handlers) => {
        if (!alive) throw new Error('dead')
        const link = await net.open(address, { onFrame: (f) => { if (alive) handlers.onFrame(f) }, onClose: (e) => { if (alive) handlers.onClose(e) } })
        return { write: (f) => (alive ? link.write(f) : new Promise<void>(() => {})), close: () => link.close() }
      },
    }
    const p: Producer = createProducer({
      'bootstrap.servers': 'broker0.sim:9092', transport: ownNet, clock: ownClock, random: rng(seed ^ (g + 1) * 0x2545f491), checkpoint: store, ...settings,
      ...(opts.verbose ? {
        observer: { onProduceRequest: (e: { batches: ReadonlyArray<{ partition: number; producerEpoch: number; baseSequence: number; recordCount: number; attempt: number }> }) => {
          console.log(`  ${clock.now() - began} gen ${g} produce ${e.batches.map((b) => `t-${b.partition} e${b.producerEpoch} s${b.baseSequence}+${b.recordCount} #${b.attempt}`).join(', ')}`)
        } },
        debug: 'retry,epoch,checkpoint', logger: { debug: trace('debug'), warn: trace('warn') },
      } : {}),
    })
    net.faultsOn = cluster.faultsOn = level > 0 && !last
    const n = between(r, 3, 30)
    const spanMs = pick(r, [0, 100, 2000])
    const dieAt = last ? -1 : between(r, 0, spanMs + 300)
    const t0 = clock.now()
    const times = Array.from({ length: n }, () => between(r, 0, spanMs)).sort((a, b) => a - b)
    for (let i = 0; i < n; i++) {
      if (dieAt >= 0 && times[i]! > dieAt) break
      await clock.run({ until: t0 + times[i]! })
      const partition = between(r, 0, partitions - 1)
      const o = { index: sent.length, partition, status: 'pending' as 'pending' | 'acked' | 'failed', gen: g, written: undefined as boolean | undefined }
      sent.push(o)
      const record = { topic: 't', partition, value: utf8.encode(valueOf(o.index)) }
      const fail = (e: Error & { mayHaveBeenWritten?: boolean }) => { o.status = 'failed'; o.written = e.mayHaveBeenWritten }
      // Both forms of send(), by index as in World.send: the callback on odd indexes.
      if (o.index % 2 === 1) p.send(record, (_md, e) => { if (e) fail(e); else o.status = 'acked' })
      else p.send(record).then(() => { o.status = 'acked' }, fail)
    }
    if (!last) {
      await clock.run({ until: t0 + dieAt })
      alive = false
      epochBumps += p.metrics()['producer-epoch-bumps-total'] ?? 0
      for (const o of sent) if (o.gen === g && o.status === 'pending') o.status = 'failed'
      if (p.resumeOutcome) outcomes.push(p.resumeOutcome)
      // The next producer comes as soon as the dead one's requests on the wire have landed (the
      // browser SDK waits takeoverSettleMs for that; a leader that has not seen them yet holds no
      // state and the takeover would relabel what is about to be written), or after a while.
      await clock.run({ until: clock.now() + pick(r, [1000, 2000, 10_000]) })
      continue
    }
    net.faultsOn = cluster.faultsOn = false
    for (let b = 0; b < brokers; b++) cluster.reviveBroker(b)
    let flushed = false
    p.flush().then(() => { flushed = true }, (e: unknown) => { violations.push(`final flush failed: ${String(e)}`); flushed = true })
    await clock.run({ until: clock.now() + 1_200_000, done: () => flushed && sent.every((o) => o.gen !== g || o.status !== 'pending') })
    if (!flushed) violations.push('final flush did not resolve')
    await clock.run({ until: clock.now() + 1000 })
    if (p.resumeOutcome) outcomes.push(p.resumeOutcome)
    epochBumps += p.metrics()['producer-epoch-bumps-total'] ?? 0
    for (const o of sent) if (o.gen === g && o.status === 'pending') violations.push(`record ${o.index} never settled`)
    let closed = false
    p.close({ timeoutMs: 0 }).then(() => { closed = true }, () => { closed = true })
    await clock.run({ until: clock.now() + 10_000, done: () => closed })
    if (mine && mine.pending.length > 0) violations.push(`the final checkpoint still holds ${mine.pending.length} batches after flush`)
  }

  // What was accepted: acknowledged, or inside a checkpoint a successor took over.
  const accepted = new Set(sent.filter((o) => o.status === 'acked').map((o) => o.index))
  const dec = new TextDecoder()
  for (const cp of takenOver) for (const b of cp.pending) for (const m of dec.decode(b.bytes).matchAll(/v(\d+)\|/g)) accepted.add(Number(m[1]))
  const count = new Map<number, number>()
  for (let i = 0; i < partitions; i++) {
    const log = cluster.partition('t', i).values().map(indexOf)
    for (const x of log) count.set(x, (count.get(x) ?? 0) + 1)
    const order = log.filter((x, j) => log.indexOf(x) === j)
    for (let j = 1; j < order.length; j++) if (order[j]! < order[j - 1]!) { violations.push(`t-${i} out of order: ${order[j - 1]} before ${order[j]}`); break }
  }
  for (const i of accepted) if (!count.has(i)) violations.push(`record ${i} was accepted but is not in the log`)
  for (const [i, c] of count) if (c > 1) violations.push(`record ${i} is in the log ${c} times`)
  for (const o of sent) if (o.status === 'failed' && o.written === false && count.has(o.index)) violations.push(`record ${o.index} failed as not written but is in the log`)

  const description = `brokers=${brokers} partitions=${partitions} generations=${generations} faults=${level} saveDelay=${saveDelayMs} ${JSON.stringify(settings)}`
  const stats: SeedStats = {
    records: sent.length, acked: sent.filter((o) => o.status === 'acked').length, failed: sent.filter((o) => o.status === 'failed').length,
    virtualMs: clock.now() - began, timers: clock.fired, appends: cluster.appends, duplicatesAnswered: cluster.duplicates, epochBumps,
    brokerErrors: Object.fromEntries(cluster.errorsSent), net: { ...net.stats },
  }
  if (opts.verbose) {
    console.log(`seed ${seed}: ${description}`)
    console.log(JSON.stringify({ outcomes, takenOver: takenOver.map((c) => ({ pid: c.producerId, epoch: c.epoch, next: c.nextSequence, pending: c.pending.map((b) => `${b.partition}:${b.baseSequence}+${b.recordCount}`) })) }))
    for (let i = 0; i < partitions; i++) {
      const p = cluster.partition('t', i)
      console.log(`  log t-${i}: ${p.log.map((b) => `[${b.producerId}/${b.epoch}/s${b.baseSequence}@${b.baseOffset}: ${b.values.map(indexOf).join(',')}]`).join(' ')}`)
    }
  }
  return { seed, ok: violations.length === 0, violations, stats, description, outcomes }
}
