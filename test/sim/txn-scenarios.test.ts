import { beforeAll, describe, expect, it } from 'vitest'
import type { CoordinatorRequestEvent, ProduceRequestEvent } from '../../src/edge/index.js'
import { KafkaEdgeError, ProducerFencedException, TransactionAbortableException } from '../../src/edge/errors.js'
import { ADD_PARTITIONS_RETRY_BACKOFF_MS } from '../../src/edge/producer/transactions/state.js'
import { AddOffsetsToTxn, AddPartitionsToTxn, EndTxn, Produce, TxnOffsetCommit } from '../../src/edge/protocol/index.js'
import { World, indexOf } from './harness.js'
import type { ModelOptions } from './model-broker.js'
import { TxnWorld, runTransaction, runTxnSeed, startIncarnation, type SendSpec, type TxnPlan } from './txn-harness.js'
import { readCommitted } from './txn-invariants.js'

// Named deterministic transactional runs on the model cluster and coordinator; each ends with the
// transactional invariants (txn-invariants.ts).

beforeAll(async () => { await World.preload() })

function world(opts: { model?: Partial<ModelOptions>; producer?: Record<string, unknown> } = {}): TxnWorld {
  return new TxnWorld(11, {
    model: { brokers: 1, topics: { t: 2, u: 1 }, ...opts.model },
    // batch.size below one record: every record is its own batch.
    producer: { 'linger.ms': 0, 'batch.size': 16, 'retry.backoff.ms': 10, 'request.timeout.ms': 1000, 'delivery.timeout.ms': 60_000, ...opts.producer },
  })
}

const to = (topic: string, partition: number, gapMs = 0): SendSpec => ({ topic, partition, gapMs, pad: 0 })
const plan = (intent: 'commit' | 'abort', ...sends: SendSpec[]): TxnPlan => ({ intent, sends, gapMs: 0 })

/** Runs virtual time until `p` settles, which it must within ten virtual minutes. */
async function drive<T>(w: TxnWorld, p: Promise<T>): Promise<T> {
  const out = await w.settle(p)
  if (!out) throw new Error('did not settle within 600 s of virtual time')
  if (!out.ok) throw out.error
  return out.value
}

async function started(w: TxnWorld): Promise<number> {
  const inc = await drive(w, startIncarnation(w))
  expect(inc).not.toBeNull()
  return inc!
}

const txn = (w: TxnWorld, inc: number, p: TxnPlan) => drive(w, runTransaction(w, inc, p))

/** The answers to the next `count` requests of `apiKey` are lost (the requests were handled). */
function loseAnswers(w: TxnWorld, apiKey: number, count: number): void {
  const handle = w.cluster.handle.bind(w.cluster)
  let left = count
  w.cluster.handle = (node, frame) => {
    const res = handle(node, frame)
    if (left > 0 && ((frame[4]! << 8) | frame[5]!) === apiKey) { left--; return null }
    return res
  }
}

/** Every producer closed, every transaction the coordinator started completed; then the invariants. */
async function finish(w: TxnWorld): Promise<void> {
  await drive(w, w.retireAll())
  await w.drainCoordinator(61_000)
  expect(w.violations()).toEqual([])
}


describe('transactional scenarios', () => {
  for (const tv of [1, 2]) {
    it(`TV${tv}: a lost EndTxn answer: commitTransaction() retries EndTxn and resolves; the transaction is committed once`, async () => {
      const w = world({ model: { transactionVersion: tv } })
      const inc = await started(w)
      loseAnswers(w, EndTxn.key, 1)
      const t = await txn(w, inc, plan('commit', to('t', 0), to('t', 1), to('u', 0)))
      expect(t.result).toBe('committed')
      expect(w.requestsSent[inc]!.EndTxn).toBe(2)
      expect(w.usedTv2[inc]).toBe(tv === 2)
      // TV2: the retry carried the epoch before the bump and got the bumped one back, which the next transaction uses.
      const m = w.cluster.coordinator.txns.get('sim-txn')!
      expect(w.producers[inc]!.state.producerEpoch).toBe(m.epoch)
      expect(m.epoch).toBe(tv === 2 ? 1 : 0)
      const next = await txn(w, inc, plan('commit', to('t', 0)))
      expect(next.result).toBe('committed')
      await finish(w)
      expect(readCommitted(w, 't', 0)).toEqual([0, 3])
      expect(readCommitted(w, 'u', 0)).toEqual([2])
    })
  }

  it('the coordinator moves mid-commit: the EndTxn answer is lost with its broker, the new coordinator loads, the retry completes the commit', async () => {
    const w = world({ model: { brokers: 3, coordinatorLoadMs: 300 } })
    const inc = await started(w)
    const handle = w.cluster.handle.bind(w.cluster)
    let moved = -1
    w.cluster.handle = (node, frame) => {
      const res = handle(node, frame)
      if (moved < 0 && ((frame[4]! << 8) | frame[5]!) === EndTxn.key) {
        moved = node
        // The broker dies right after accepting EndTxn, before its answer leaves.
        w.clock.setTimeout(() => { w.cluster.killBroker(node); w.net.severNode(node) }, 0)
      }
      return res
    }
    const t = await txn(w, inc, plan('commit', to('t', 0), to('t', 1)))
    expect(t.result).toBe('committed')
    expect(w.cluster.coordinator.leader).not.toBe(moved)
    expect(w.requestsSent[inc]!.FindCoordinator).toBeGreaterThanOrEqual(2)
    expect(w.cluster.errorsSent.get('COORDINATOR_LOAD_IN_PROGRESS') ?? 0).toBeGreaterThan(0)
    await finish(w)
    expect([...readCommitted(w, 't', 0), ...readCommitted(w, 't', 1)]).toEqual([0, 1])
  })

  for (const tv of [1, 2]) {
    it(`TV${tv}: a second instance with the same transactional.id fences the first: its open transaction is aborted, its commit fails with ProducerFencedException`, async () => {
      const w = world({ model: { transactionVersion: tv } })
      const a = await started(w)
      const zombie = w.begin(a, 'commit')
      w.producers[a]!.beginTransaction()
      w.send(a, zombie, to('t', 0))
      w.send(a, zombie, to('u', 0))
      await w.clock.advance(100)
      expect(zombie.records.map((o) => o.status)).toEqual(['acked', 'acked'])

      const b = await started(w)
      zombie.commitCalled = true
      const commit = await drive(w, w.call(a, 'commitTransaction', () => w.producers[a]!.commitTransaction()))
      expect(commit.kind).toBe('fatal')
      expect(commit.kind !== 'ok' && commit.error.name).toBe('ProducerFencedException')
      zombie.result = 'unknown'
      await drive(w, w.retire(a, commit.kind !== 'ok' ? commit.error : null))

      expect((await txn(w, b, plan('commit', to('t', 0)))).result).toBe('committed')
      expect(w.cluster.coordinator.events.some((e) => e.what === 'fence-init')).toBe(true)
      await finish(w)
      expect(readCommitted(w, 't', 0)).toEqual([2])
      expect(readCommitted(w, 'u', 0)).toEqual([])
    })
  }

  it('TV1: an error on a Produce makes the transaction abortable: the next send() throws, abortTransaction() bumps the epoch, the next transaction commits', async () => {
    const w = world({ model: { transactionVersion: 1 } })
    const inc = await started(w)
    let refused = false
    w.cluster.script = ({ partition }) => (partition === 1 && !refused ? ((refused = true), { error: 'INVALID_PRODUCER_EPOCH' }) : null)
    const failed = await txn(w, inc, plan('commit', to('t', 0), to('t', 1), to('t', 0, 100)))
    expect(failed.result).toBe('aborted')
    expect(failed.commitCalled).toBe(false)
    expect(failed.records.map((o) => o.error?.name)).toEqual([undefined, 'InvalidProducerEpochException'])
    // The abort is followed by InitProducerId with the current id/epoch (KIP-360): epoch 0 -> 1.
    expect(w.cluster.coordinator.events.filter((e) => e.what === 'init').map((e) => e.epoch)).toEqual([0, 1])
    expect(w.producers[inc]!.state.producerEpoch).toBe(1)
    const next = await txn(w, inc, plan('commit', to('t', 1)))
    expect(next.result).toBe('committed')
    await finish(w)
    expect(readCommitted(w, 't', 0)).toEqual([])
    expect(readCommitted(w, 't', 1)).toEqual([2])
    // The new epoch starts its sequences at 0.
    expect(w.cluster.partition('t', 1).log.filter((b) => !b.control).map((b) => [b.epoch, b.baseSequence])).toEqual([[1, 0]])
  })

  it('TV1: a transaction that outlives transaction.timeout.ms is aborted by the coordinator; the fenced producer is replaced and the next one commits', async () => {
    const w = world({ model: { transactionVersion: 1 }, producer: { 'transaction.timeout.ms': 2000 } })
    const a = await started(w)
    const slow = await txn(w, a, plan('commit', to('t', 0), to('t', 1, 3000)))
    expect(slow.result).toBe('unknown')
    expect(w.isRetired(a)).toBe(true)
    expect(w.deaths[0]!.error.name).toBe('ProducerFencedException')
    expect(w.cluster.coordinator.events.some((e) => e.what === 'fence-timeout')).toBe(true)
    const b = await started(w)
    expect((await txn(w, b, plan('commit', to('t', 0)))).result).toBe('committed')
    await finish(w)
    expect(readCommitted(w, 't', 0)).toEqual([2])
  })

  it('TV2: after the coordinator aborted a timed-out transaction, the producer\'s abort at the old epoch is taken as a retry of that abort: it adopts the bumped epoch and carries on', async () => {
    const w = world({ model: { transactionVersion: 2 }, producer: { 'transaction.timeout.ms': 2000 } })
    const inc = await started(w)
    const slow = await txn(w, inc, plan('commit', to('t', 0), to('t', 1, 3000)))
    expect(slow.result).toBe('aborted')
    expect(slow.records[1]!.error!.name).toBe('InvalidProducerEpochException')
    expect(w.cluster.coordinator.events.some((e) => e.what === 'fence-timeout')).toBe(true)
    expect(w.deaths).toEqual([])
    expect((await txn(w, inc, plan('commit', to('t', 1)))).result).toBe('committed')
    await finish(w)
    expect(readCommitted(w, 't', 0)).toEqual([])
    expect(readCommitted(w, 't', 1)).toEqual([2])
  })

  it(`TV1: AddPartitionsToTxn meets CONCURRENT_TRANSACTIONS while the previous commit's markers are written, and retries after ${ADD_PARTITIONS_RETRY_BACKOFF_MS} ms`, async () => {
    const adds: number[] = []
    const w: TxnWorld = world({
      model: { transactionVersion: 1, markerDelayMs: 100 },
      producer: { 'retry.backoff.ms': 100, observer: { onCoordinatorRequest: (r: CoordinatorRequestEvent) => { if (r.api === 'AddPartitionsToTxn') adds.push(w.clock.now()) } } },
    })
    const inc = await started(w)
    expect((await txn(w, inc, plan('commit', to('t', 0)))).result).toBe('committed')
    adds.length = 0
    expect((await txn(w, inc, plan('commit', to('t', 1)))).result).toBe('committed')
    expect(w.cluster.errorsSent.get('CONCURRENT_TRANSACTIONS') ?? 0).toBeGreaterThan(1)
    expect(adds.length).toBeGreaterThan(2)
    for (let i = 2; i < adds.length; i++) expect(adds[i]! - adds[i - 1]!).toBeLessThanOrEqual(ADD_PARTITIONS_RETRY_BACKOFF_MS + 5)
    await finish(w)
  })

  it('TV2: an abort right after a commit, while its markers are still being written, waits (CONCURRENT_TRANSACTIONS) instead of fencing the producer (KAFKA-18464)', async () => {
    const w = world({ model: { transactionVersion: 2, markerDelayMs: 300 } })
    const inc = await started(w)
    expect((await txn(w, inc, plan('commit', to('t', 0)))).result).toBe('committed')
    const aborted = await txn(w, inc, plan('abort', to('t', 1)))
    expect(aborted.result).toBe('aborted')
    expect(w.deaths).toEqual([])
    expect(w.cluster.errorsSent.get('CONCURRENT_TRANSACTIONS') ?? 0).toBeGreaterThan(0)
    expect((await txn(w, inc, plan('commit', to('t', 1)))).result).toBe('committed')
    await finish(w)
    expect(readCommitted(w, 't', 1)).toEqual([2])
  })

  for (const tv of [1, 2]) {
    it(`TV${tv}: offsets sent with sendOffsetsToTransaction() commit with the transaction's records and are dropped when it aborts`, async () => {
      const w = world({ model: { transactionVersion: tv, markerDelayMs: 0 } })
      const inc = await started(w)
      loseAnswers(w, TxnOffsetCommit.key, 1)
      expect((await txn(w, inc, { ...plan('commit', to('t', 0)), offsets: [0, 1] })).result).toBe('committed')
      expect((await txn(w, inc, { ...plan('abort', to('t', 1)), offsets: [1] })).result).toBe('aborted')
      expect(w.requestsSent[inc]!.AddOffsetsToTxn ?? 0).toBe(tv === 1 ? 2 : 0)
      expect(w.requestsSent[inc]!.TxnOffsetCommit).toBe(3)
      await finish(w)
      expect(w.cluster.coordinator.offsetCommits.map((c) => `${c.tp}=${c.offset}:${c.committed}`)).toEqual(['in:0=1:true', 'in:1=1:true', 'in:1=2:false'])
    })
  }

  it('empty transactions: a commit or abort with no records sends no EndTxn', async () => {
    for (const tv of [1, 2]) {
      const w = world({ model: { transactionVersion: tv } })
      const inc = await started(w)
      expect((await txn(w, inc, plan('commit'))).result).toBe('committed')
      expect((await txn(w, inc, plan('abort'))).result).toBe('aborted')
      expect(w.requestsSent[inc]!.EndTxn ?? 0).toBe(0)
      await finish(w)
    }
  })
})

describe('transactional regressions', () => {
  it('a send() that times out waiting for metadata makes the transaction abortable: the commit must not resolve without the record (Java: KafkaProducer.doSend)', async () => {
    const w = world({ producer: { 'max.block.ms': 1000 } })
    const inc = await started(w)
    w.cluster.hiddenTopics.add('u')
    const t = await txn(w, inc, plan('commit', to('t', 0), to('u', 0)))
    expect(t.records[1]!.error!.name).toBe('TimeoutException')
    expect(t.result).toBe('aborted')
    expect(t.commitError).toBeInstanceOf(TransactionAbortableException)
    w.cluster.hiddenTopics.delete('u')
    expect((await txn(w, inc, plan('commit', to('u', 0)))).result).toBe('committed')
    await finish(w)
    expect(readCommitted(w, 't', 0)).toEqual([])
    expect(readCommitted(w, 'u', 0)).toEqual([2])
  })

  it('records that were never sent fail with an error of their own: the error of a sent batch keeps its mayHaveBeenWritten', async () => {
    // Record 0 is appended but every answer is an error until it expires (outcome unknown); record 1,
    // sent later, waits behind it (one request in flight) and fails unsent when record 0's expiry
    // makes the transaction abortable.
    const w = world({ producer: { 'max.in.flight.requests.per.connection': 1, 'request.timeout.ms': 500, 'delivery.timeout.ms': 2000 } })
    const inc = await started(w)
    let attempts = 0
    w.cluster.script = ({ partition }) => (partition !== 0 ? null : attempts++ === 0 ? { error: 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', afterAppend: true } : { error: 'NOT_ENOUGH_REPLICAS' })
    const t = await txn(w, inc, plan('commit', to('t', 0), to('t', 0, 500)))
    const [sent, unsent] = t.records
    expect(sent!.error!.name).toBe('TimeoutException')
    expect(sent!.error!.mayHaveBeenWritten).toBe(true)
    expect(unsent!.error).not.toBe(sent!.error)
    expect(unsent!.error).toBeInstanceOf(KafkaEdgeError)
    expect(unsent!.error!.mayHaveBeenWritten).toBe(false)
    expect(t.result).toBe('aborted')
    w.cluster.script = null
    expect((await txn(w, inc, plan('commit', to('t', 0)))).result).toBe('committed')
    await finish(w)
  })

  it('seeds 3178, 9488: an AddPartitionsToTxn whose answer was lost is resent before the abort, which then ends the transaction the coordinator did open: the epoch bump does not fence the producer', async () => {
    // The AddPartitionsToTxn for t-0 lands but its answer is lost; before its retry, a send to a
    // topic without metadata fails: the transaction turns abortable and needs an epoch bump. The
    // application learns of it at its next send, and aborts.
    const w = world({ model: { transactionVersion: 1 }, producer: { 'max.block.ms': 500 } })
    const inc = await started(w)
    w.cluster.hiddenTopics.add('u')
    loseAnswers(w, AddPartitionsToTxn.key, 1)
    const t = await txn(w, inc, plan('commit', to('t', 0), to('u', 0), to('t', 0, 1500)))
    expect(t.result).toBe('aborted')
    expect(t.commitCalled).toBe(false)
    expect(w.deaths).toEqual([])
    const events = w.cluster.coordinator.events.map((e) => `${e.what}@${e.epoch}`)
    expect(events).toEqual(['init@0', 'begin@0', 'prepare-abort@0', 'complete-abort@0', 'init@1'])
    w.cluster.hiddenTopics.delete('u')
    expect((await txn(w, inc, plan('commit', to('u', 0)))).result).toBe('committed')
    await finish(w)
  })

  it('seed 30599: the same for an AddOffsetsToTxn whose answer was lost', async () => {
    // The offsets partition joins the transaction but the answer is lost; the record, queued behind
    // it for AddPartitionsToTxn, expires first and the transaction turns abortable with a bump due.
    const w = world({ model: { transactionVersion: 1 }, producer: { 'delivery.timeout.ms': 1000 } })
    const inc = await started(w)
    loseAnswers(w, AddOffsetsToTxn.key, 1)
    const t = await txn(w, inc, { ...plan('commit', to('t', 0)), offsets: [0] })
    expect(t.result).toBe('aborted')
    expect(w.deaths).toEqual([])
    expect(w.cluster.coordinator.events.map((e) => `${e.what}@${e.epoch}`)).toEqual(['init@0', 'begin@0', 'prepare-abort@0', 'complete-abort@0', 'init@1'])
    await finish(w)
    expect(w.cluster.coordinator.offsetCommits.filter((c) => c.committed)).toEqual([])
  })

  it('seed 18666: a first batch lost on the way expires while committing; the abort is followed by an epoch bump, so the partition (which the abort marker gave producer state with no sequences) takes the next transaction', async () => {
    const w = world({ model: { transactionVersion: 1 }, producer: { 'delivery.timeout.ms': 1500 } })
    const inc = await started(w)
    // Produce requests vanish (the broker never sees them) until the first transaction ended.
    const handle = w.cluster.handle.bind(w.cluster)
    let dropping = true
    w.cluster.handle = (node, frame) => (dropping && ((frame[4]! << 8) | frame[5]!) === Produce.key ? null : handle(node, frame))
    const lost = await txn(w, inc, plan('commit', to('t', 0)))
    expect(lost.result).toBe('aborted')
    expect(lost.records[0]!.error!.mayHaveBeenWritten).toBe(true)
    dropping = false
    expect(w.cluster.coordinator.events.filter((e) => e.what === 'init').map((e) => e.epoch)).toEqual([0, 1])
    expect((await txn(w, inc, plan('commit', to('t', 0)))).result).toBe('committed')
    await finish(w)
    expect(readCommitted(w, 't', 0)).toEqual([1])
  })

  it('seed 2960: a retry waiting in the queue when the producer is fenced fails saying it may have been written', async () => {
    // Record 0 is appended but its answer is lost; while its retry waits out the backoff, a second
    // instance fences this one and the next AddPartitionsToTxn says so: every queued batch fails.
    const w = world({ model: { transactionVersion: 1 }, producer: { 'retry.backoff.ms': 500, 'retry.backoff.max.ms': 500 } })
    const a = await started(w)
    const zombie = w.begin(a, 'commit')
    w.producers[a]!.beginTransaction()
    loseAnswers(w, Produce.key, 1)
    w.send(a, zombie, to('t', 0))
    await w.clock.advance(10)
    await started(w)
    expect(zombie.records[0]!.status).toBe('pending')
    w.send(a, zombie, to('t', 1))
    await w.clock.advance(100)
    expect(w.producers[a]!.state.transactionState).toBe('FATAL_ERROR')
    const [retried] = zombie.records
    expect(retried!.error).toBeInstanceOf(ProducerFencedException)
    expect(retried!.error!.message).toMatch(/was fenced/)
    expect(retried!.error!.mayHaveBeenWritten).toBe(true)
    zombie.result = 'abandoned'
    await drive(w, w.retire(a, retried!.error!))
    await finish(w)
    expect(w.cluster.partition('t', 0).log[0]!.txn!.fate).toBe('aborted')
  })

  it('seed 222509 (TV2): a batch refused INVALID_PRODUCER_EPOCH on a retry may be in the log from an earlier attempt: it fails saying it may have been written', async () => {
    // The first Produce reaches the broker twice (a relay repeating a frame): the copy the client hears
    // from is refused NOT_LEADER_OR_FOLLOWER, the other one is appended and its answer lost. The retries
    // are refused NOT_LEADER too until the coordinator has aborted the transaction on its timeout (bumping
    // the epoch) and written the marker; the next retry meets INVALID_PRODUCER_EPOCH, which speaks only
    // for itself.
    const w = world({ producer: { 'transaction.timeout.ms': 2000 } })
    const inc = await started(w)
    const handle = w.cluster.handle.bind(w.cluster)
    const notLeader = () => ({ error: 'NOT_LEADER_OR_FOLLOWER' })
    let twinned = false
    w.cluster.handle = (node, frame) => {
      if (twinned || ((frame[4]! << 8) | frame[5]!) !== Produce.key) return handle(node, frame)
      twinned = true
      w.cluster.script = notLeader
      const heard = handle(node, frame)
      w.cluster.script = null
      handle(node, frame)
      w.cluster.script = () => (w.cluster.partition('t', 0).log.some((b) => b.control) ? null : notLeader())
      return heard
    }
    const t = await txn(w, inc, plan('commit', to('t', 0)))
    expect(t.result).toBe('aborted')
    const [o] = t.records
    expect(o!.error!.name).toBe('InvalidProducerEpochException')
    expect(o!.error!.mayHaveBeenWritten).toBe(true)
    expect(w.cluster.coordinator.events.map((e) => e.what)).toContain('fence-timeout')
    await finish(w)
    expect(w.cluster.partition('t', 0).log[0]!.values.map(indexOf)).toEqual([0])
    expect(w.cluster.partition('t', 0).log[0]!.txn!.fate).toBe('aborted')
    expect((await runTxnSeed(222509)).violations).toEqual([])
  })

  it('seeds 122172, 148770, 159410 (TV1): EndTxn waits for a Produce request still on its way when its batch expired, so the write cannot reach the partition after the abort', async () => {
    // The batch expired (delivery.timeout.ms) while its retry was still travelling to the leader; the
    // abort went out at once, and the retry reached the leader after the markers: a transactional
    // write for a partition no longer in the transaction (KIP-890 verification refused it; an older
    // broker would have appended it and left a transaction open that nobody ends).
    let t0 = 0
    // The first attempt is refused; its retry crawls, reaching the leader 1150 ms after the send.
    const onProduceRequest = (r: ProduceRequestEvent) => {
      if (r.node !== 1 || r.batches[0]!.attempt !== 2) return
      const link = [...w.net.links].find((l) => l.node === 1) as unknown as { requestsArriveAt: number }
      link.requestsArriveAt = t0 + 1150
    }
    const w: TxnWorld = world({
      model: { brokers: 2, transactionVersion: 1 },
      producer: { 'request.timeout.ms': 1000, 'delivery.timeout.ms': 1000, 'retry.backoff.ms': 300, 'retry.backoff.max.ms': 300, observer: { onProduceRequest } },
    })
    const inc = await started(w)
    t0 = w.clock.now()
    let refused = false
    w.cluster.script = () => (refused ? null : ((refused = true), { error: 'NOT_LEADER_OR_FOLLOWER' }))
    const handle = w.cluster.handle.bind(w.cluster)
    const arrivals: Array<{ api: number; at: number }> = []
    w.cluster.handle = (node, frame) => {
      arrivals.push({ api: (frame[4]! << 8) | frame[5]!, at: w.clock.now() - t0 })
      return handle(node, frame)
    }
    const t = await txn(w, inc, plan('commit', to('t', 1)))
    expect(t.result).toBe('aborted')
    expect(t.records[0]!.error!.name).toBe('TimeoutException')
    expect(t.records[0]!.error!.mayHaveBeenWritten).toBe(true)
    // The retry reached the leader while the transaction was open, and EndTxn left only after it was answered.
    const retry = arrivals.filter((a) => a.api === Produce.key)[1]!
    const endTxn = arrivals.find((a) => a.api === EndTxn.key)!
    expect(retry.at).toBeGreaterThan(1000)
    expect(endTxn.at).toBeGreaterThan(retry.at)
    expect(w.cluster.coordinator.outsideTransaction).toBe(0)
    await finish(w)
    expect(w.cluster.partition('t', 1).log[0]!.txn!.fate).toBe('aborted')
    // 160786: with EndTxn waiting, an abort could complete before the Sender found a sequence left
    // unresolved (transactions-state.test.ts has its scenario).
    for (const seed of [122172, 148770, 159410, 160786]) expect((await runTxnSeed(seed)).violations).toEqual([])
  })

  // The soak's relayed producers (test/bridge/txn-broker-kill.test.ts has the real-broker form): a
  // producer created while the only broker is down rejected initTransactions() at once with the
  // NetworkException of its first metadata fetch. Java's blocks up to max.block.ms, retrying.
  it('initTransactions() called while the only broker is down waits for it (up to max.block.ms) and resolves once it is back; past max.block.ms it times out and a second call resumes', async () => {
    const w = world({ producer: { 'max.block.ms': 20_000 } })
    w.cluster.killBroker(0)
    const inc = w.newProducer()
    const p = w.producers[inc]!
    const t0 = w.clock.now()
    const first = await w.settle(p.initTransactions(), 30_000)
    expect(first?.ok).toBe(false)
    expect(first && !first.ok && first.error.name).toBe('TimeoutException')
    // Not before max.block.ms (it was 0 ms: the connect failure), and not much after.
    expect(w.clock.now() - t0).toBeGreaterThanOrEqual(20_000)
    expect(w.clock.now() - t0).toBeLessThan(22_000)
    const t1 = w.clock.now()
    void w.sleep(10_000).then(() => w.cluster.reviveBroker(0))
    expect(await w.settle(p.initTransactions(), 30_000)).toMatchObject({ ok: true })
    expect(w.clock.now() - t1).toBeGreaterThanOrEqual(10_000)
    expect(w.clock.now() - t1).toBeLessThan(12_000)
    expect(p.state.producerId).not.toBeNull()
    const t = await txn(w, inc, plan('commit', to('t', 0)))
    expect(t.result).toBe('committed')
    await finish(w)
    expect(readCommitted(w, 't', 0)).toEqual([0])
  })
})
