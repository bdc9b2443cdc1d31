import { beforeAll, describe, expect, it } from 'vitest'
import { TimeoutException } from '../../src/edge/errors.js'
import { createProducer, memoryCheckpointStore, type RecordMetadata } from '../../src/edge/index.js'
import { rng } from '../helpers/records.js'
import { Metadata, Produce } from '../../src/edge/protocol/index.js'
import { World, indexOf, runSeed, valueOf } from './harness.js'
import { NO_NET_FAULTS } from './sim-network.js'
import { runTxnSeed } from './txn-harness.js'
import type { ModelOptions } from './model-broker.js'

// Root causes found by the seeded simulation (seeds 5001-15000), one named deterministic test each.

beforeAll(async () => { await World.preload() })

function world(opts: { model?: Partial<ModelOptions>; producer?: Record<string, unknown> } = {}): World {
  return new World(7, {
    model: { brokers: 1, topics: { t: 1 }, ...opts.model },
    // batch.size below one record: every record is its own batch, so sequences are record indexes.
    producer: { 'linger.ms': 0, 'batch.size': 16, 'retry.backoff.ms': 10, 'request.timeout.ms': 2000, 'delivery.timeout.ms': 60_000, ...opts.producer },
  })
}

const logOf = (w: World, topic = 't', p = 0): number[] => w.cluster.partition(topic, p).values().map(indexOf)

async function finish(w: World): Promise<void> {
  expect(await w.settle()).toBe(true)
  expect(await w.flush()).toBe(true)
  expect(w.violations()).toEqual([])
}

describe('simulation regressions', () => {
  it('seeds 6810, 7627: no more than 5 batches are sent from an unacknowledged one on, so its retry stays in the broker\'s 5-batch window', async () => {
    // Sequence 1 is appended but its answer is an error; its retry's answer is lost too. Meanwhile
    // sequences 2-5 are acknowledged. Had newer batches gone out with the first retry, sequence 1 would
    // have fallen out of the broker's last-5 window and met OUT_OF_ORDER on every retry until expiry.
    const w = world({ producer: { 'max.in.flight.requests.per.connection': 5 } })
    w.send('t')
    expect(await w.settle()).toBe(true)
    let attempts = 0
    w.cluster.script = ({ baseSequence, epoch }) => {
      if (epoch !== 0 || baseSequence !== 1) return null
      attempts++
      if (attempts === 1) return { error: 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', afterAppend: true }
      if (attempts === 2) return { error: 'REQUEST_TIMED_OUT' }
      return null
    }
    const outs = Array.from({ length: 10 }, () => w.send('t'))
    await finish(w)
    expect(outs.map((o) => o.status)).toEqual(outs.map(() => 'acked'))
    expect(w.cluster.errorsSent.get('OUT_OF_ORDER_SEQUENCE_NUMBER') ?? 0).toBe(0)
    expect(logOf(w)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  })

  it('seeds 9377, 10283: after a few seconds of silence the broker may have forgotten us: one batch in flight until it is acknowledged', async () => {
    // Producer state gone (retention / expiry) after a 5 s lull: Kafka accepts any sequence, so a second
    // batch overtaking a failed first one would be appended, and the epoch bump that follows the first
    // one's OUT_OF_ORDER would write the second one again.
    const w = world({ producer: { 'max.in.flight.requests.per.connection': 5 } })
    w.send('t')
    expect(await w.settle()).toBe(true)
    await w.clock.advance(5000)
    w.cluster.truncateHead(w.cluster.partition('t', 0))
    let first = true
    w.cluster.script = ({ baseSequence, epoch }) => (epoch === 0 && baseSequence === 1 && first ? ((first = false), { error: 'NOT_ENOUGH_REPLICAS' }) : null)
    const outs = Array.from({ length: 4 }, () => w.send('t'))
    await finish(w)
    expect(outs.map((o) => o.status)).toEqual(['acked', 'acked', 'acked', 'acked'])
    expect(logOf(w)).toEqual([0, 1, 2, 3, 4])
  })

  it('seed 7523: after a silence, a first batch that fails for good does not take an overtaking batch into a rewrite that writes it twice', async () => {
    // The first batch after the lull is refused (INVALID_RECORD after a NOT_LEADER retry); the epoch bump
    // rewrites what follows it. Nothing may have followed it into a stateless broker's log.
    const w = world({ producer: { 'max.in.flight.requests.per.connection': 5 } })
    w.send('t')
    expect(await w.settle()).toBe(true)
    await w.clock.advance(5000)
    w.cluster.truncateHead(w.cluster.partition('t', 0))
    // Sequence 1 is refused once retriably; sequence 2, were it sent alongside, would be appended with an
    // ambiguous answer and so still be in flight when sequence 1 finally fails and the bump rewrites.
    const seen = new Set<number>()
    w.cluster.script = ({ baseSequence, epoch }) => {
      if (epoch !== 0 || seen.has(baseSequence)) return null
      seen.add(baseSequence)
      if (baseSequence === 1) return { error: 'NOT_LEADER_OR_FOLLOWER' }
      if (baseSequence === 2) return { error: 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', afterAppend: true }
      return null
    }
    const bad = w.send('t', { poison: true })
    const after = [w.send('t'), w.send('t')]
    await finish(w)
    expect(bad.status).toBe('failed')
    expect(bad.error!.mayHaveBeenWritten).toBe(false)
    expect(after.map((o) => o.status)).toEqual(['acked', 'acked'])
    expect(logOf(w)).toEqual([0, 2, 3])
  })

  it('seed 58331: a metadata wait is bounded by max.block.ms, and each silently dead connection costs request.timeout.ms first, as in Java', async () => {
    // Not a producer bug: the invariant expected delivery.timeout.ms to cover a record that never reached
    // a batch. The first metadata request for topic u lost its answer; its retry went to the other broker's
    // idle connection, which had gone dark earlier in the window (Java's leastLoadedNode picks an
    // established connection with nothing in flight the same way). Two request timeouts of 30 s filled
    // max.block.ms, and Java's send() throws "Topic u not present in metadata after 60000 ms" just the same.
    const deadConnections = async (requestTimeoutMs: number) => {
      const w = world({ model: { brokers: 2, topics: { t: 2, u: 1 } }, producer: { 'request.timeout.ms': requestTimeoutMs } })
      w.send('t', { partition: 0 })
      w.send('t', { partition: 1 })
      expect(await w.settle()).toBe(true)
      // Half-open connections: the brokers take the requests, no answer gets back.
      for (const link of w.net.links) (link as unknown as { responsesDark: boolean }).responsesDark = true
      const t0 = w.clock.now()
      const metadataAt: number[] = []
      const handle = w.cluster.handle.bind(w.cluster)
      w.cluster.handle = (node, frame) => {
        if (((frame[4]! << 8) | frame[5]!) === Metadata.key) metadataAt.push(w.clock.now() - t0)
        return handle(node, frame)
      }
      const o = w.send('u')
      expect(await w.settle(120_000)).toBe(true)
      return { w, o, metadataAt, opened: w.net.stats.opened }
    }
    const slow = await deadConnections(30_000)
    expect(slow.o.status).toBe('failed')
    expect(slow.o.error).toBeInstanceOf(TimeoutException)
    expect(slow.o.error!.message).toMatch(/topic u not present in metadata after 60000 ms/)
    expect(slow.o.error!.mayHaveBeenWritten).toBe(false)
    const later = slow.w.send('u')
    await finish(slow.w)
    expect(later.status).toBe('acked')
    // One request per dead connection, request.timeout.ms apart, then a fresh connection answers.
    expect(slow.metadataAt.map((ms) => Math.round(ms / 1000))).toEqual([0, 30, 60])
    // With request.timeout.ms well inside max.block.ms, the same schedule costs two short timeouts.
    const fast = await deadConnections(2000)
    expect(fast.o.status).toBe('acked')
    expect(fast.metadataAt.map((ms) => Math.round(ms / 1000))).toEqual([0, 2, 4])
    await finish(fast.w)
    expect((await runSeed(58331)).violations).toEqual([])
  })

  it('seed 113309: a batch an epoch bump kept at its old stamp (it may be in the log) keeps it through a second bump', async () => {
    // Sequence 1 is appended but answered NOT_ENOUGH_REPLICAS_AFTER_APPEND; sequence 2 is refused for good,
    // and the bump keeps sequence 1 at epoch 0 while rewriting sequence 3, still in flight, to epoch 1.
    // Sequence 3 is then refused too: the second bump's gap is at epoch 1, and it rewrote the epoch-0
    // batch as well, whose retry was appended a second time.
    const w = world({ producer: { 'max.in.flight.requests.per.connection': 5 } })
    w.send('t')
    expect(await w.settle()).toBe(true)
    let first = true
    w.cluster.script = ({ baseSequence, epoch }) => (epoch === 0 && baseSequence === 1 && first ? ((first = false), { error: 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', afterAppend: true }) : null)
    const appended = w.send('t')
    const refused = [w.send('t', { poison: true })]
    await w.clock.advance(1)
    refused.push(w.send('t', { poison: true }))
    await finish(w)
    expect(w.epochs.map((pe) => pe.epoch)).toEqual([0, 1, 2])
    expect(appended.status).toBe('acked')
    expect(refused.map((o) => o.status)).toEqual(['failed', 'failed'])
    expect(logOf(w)).toEqual([0, 1])
    expect((await runSeed(113309)).violations).toEqual([])
  })

  it('seed 135116: a retry in flight when a second bump comes keeps its stamp, so its acknowledgement does not wedge the partition', async () => {
    // Sequence 1 is refused retriably and 2, 3 meet OUT_OF_ORDER behind it; 4 is refused for good: the
    // bump to epoch 1 keeps 1-3 and rewrites 5 (in flight) to epoch 1 sequence 0. Sequence 1's retry
    // goes out; then 5 is refused too, and the second bump rewrote 1-3 (the retry of 1 in flight) to
    // epoch 2 sequences 0-2. The broker appended the retry as epoch 0 sequence 1, but the client took
    // its acknowledgement for epoch 2 sequence 0: sequence 1 of epoch 2 met OUT_OF_ORDER until it expired.
    const w = world({ producer: { 'max.in.flight.requests.per.connection': 5, 'retry.backoff.ms': 1, 'retry.backoff.max.ms': 1 } })
    w.send('t')
    expect(await w.settle()).toBe(true)
    let refusedOnce = false
    w.cluster.script = ({ baseSequence, epoch }) => (epoch === 0 && baseSequence === 1 && !refusedOnce ? ((refusedOnce = true), { error: 'NOT_ENOUGH_REPLICAS' }) : null)
    // The answers to sequence 5 and to the retry of 1 are slow, so the second bump falls between them.
    const handle = w.cluster.handle.bind(w.cluster)
    let retriesOf1 = 0
    w.cluster.handle = (node, frame) => {
      const res = handle(node, frame)
      const seen = ((frame[4]! << 8) | frame[5]!) === Produce.key ? w.cluster.produceLog.at(-1)?.partitions[0] : undefined
      if (seen?.epoch === 0 && seen.baseSequence === 1) retriesOf1++
      const slowMs = seen?.epoch === 0 && seen.baseSequence === 5 ? 10 : seen?.epoch === 0 && seen.baseSequence === 1 && retriesOf1 === 2 ? 20 : 0
      if (slowMs > 0) {
        w.net.baseDelayMs = slowMs
        w.clock.setTimeout(() => { w.net.baseDelayMs = 1 }, 0)
      }
      return res
    }
    const first = [w.send('t'), w.send('t'), w.send('t')]
    const refused = [w.send('t', { poison: true })]
    await w.clock.advance(1)
    refused.push(w.send('t', { poison: true }))
    await finish(w)
    expect(w.epochs.map((pe) => pe.epoch)).toEqual([0, 1, 2])
    expect(first.map((o) => o.status)).toEqual(['acked', 'acked', 'acked'])
    expect(refused.map((o) => o.status)).toEqual(['failed', 'failed'])
    expect(logOf(w)).toEqual([0, 1, 2, 3])
    expect((await runSeed(135116)).violations).toEqual([])
  })

  it('seed 2917269: an unknown batch of an older epoch does not hide the current epoch\'s, so OUT_OF_ORDER right after it bumps the epoch', async () => {
    // Epoch 0 left sequences up to 3 unknown (a poisoned batch after a timed-out attempt); epoch 1's
    // sequence 0 failed the same way, and its sequence 1 met OUT_OF_ORDER until delivery.timeout.ms.
    expect((await runSeed(2917269)).violations).toEqual([])
  })

  it('seed 3074759: a rewritten batch that meets UNKNOWN_PRODUCER_ID right after a batch of unknown outcome bumps the epoch rather than wait for it', async () => {
    // Epoch 1's first batch on a partition the broker had no state for failed for good after a timed-out
    // attempt; the rewritten batch after it met UNKNOWN_PRODUCER_ID until delivery.timeout.ms.
    expect((await runSeed(3074759)).violations).toEqual([])
  })

  it('seed 1246175: a retry backing off behind the pieces of a split batch is sent when its backoff ends, not at delivery.timeout.ms', async () => {
    // Sequence 1 is appended but answered NOT_ENOUGH_REPLICAS_AFTER_APPEND and goes back to the deque to
    // back off; sequences 2-3, in flight behind it, are answered MESSAGE_TOO_LARGE and split. The pieces
    // were put at the head, in front of the retry: ready() judged the node by a fresh piece (sendable),
    // drain() sorted the head, found the retry still backing off and took nothing, and with the node
    // "ready" no timer was left for the backoff. The sender slept until the next delivery.timeout.ms
    // expiry, which failed sequence 1 (maybe written) although the faults were long over.
    const w = world({ producer: { 'batch.size': 1000, 'max.in.flight.requests.per.connection': 5 } })
    w.send('t')
    expect(await w.settle()).toBe(true)
    let appendedOnce = false
    w.cluster.script = ({ baseSequence, epoch, count }) => {
      if (epoch !== 0) return null
      if (baseSequence === 1 && !appendedOnce) { appendedOnce = true; return { error: 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', afterAppend: true } }
      if (count > 1) return { error: 'MESSAGE_TOO_LARGE' }
      return null
    }
    const retried = w.send('t')
    // Drained alone, so the next two records share the following batch (the one refused as too large).
    await w.clock.advance(0)
    const split = [w.send('t'), w.send('t')]
    // delivery.timeout.ms is 60 s: two seconds cover the backoff and a few round trips many times over.
    expect(await w.settle(2000)).toBe(true)
    expect(retried.status).toBe('acked')
    // The retry is recognised as the batch already appended and answered with its original offset.
    expect(retried.md!.offset).toBe(1n)
    expect(split.map((o) => o.md?.offset)).toEqual([2n, 3n])
    expect(w.cluster.duplicates).toBe(1)
    expect(w.cluster.errorsSent.get('MESSAGE_TOO_LARGE')).toBe(1)
    await finish(w)
    expect(logOf(w)).toEqual([0, 1, 2, 3])
    expect((await runSeed(1246175)).violations).toEqual([])
  })

  it('seed 746580: a batch whose deadline passes on a timed-out attempt does not take the next one, maybe written, into a rewrite', async () => {
    // Sequences 1 and 2 are appended, but their answers are lost. Sequence 1's request times out at the
    // very moment its delivery.timeout.ms runs out, so it fails (it may be in the log); sequence 2's
    // request fails with the connection and is retried. A bump that rewrote sequence 2 under a new
    // epoch would append it a second time: it must be retried under its stamp and answered as a duplicate.
    const w = world({ producer: { 'max.in.flight.requests.per.connection': 4, 'request.timeout.ms': 2000, 'delivery.timeout.ms': 2000 } })
    w.send('t')
    expect(await w.settle()).toBe(true)
    w.net.faults = { ...NO_NET_FAULTS, dropResponse: 1 }
    w.net.faultsOn = true
    const timedOut = w.send('t')
    await w.clock.advance(500)
    const retried = w.send('t')
    await w.clock.advance(10)
    w.net.faultsOn = false
    await finish(w)
    expect(timedOut.status).toBe('failed')
    expect(timedOut.error!.mayHaveBeenWritten).toBe(true)
    expect(retried.status).toBe('acked')
    expect(retried.md!.offset).toBe(2n)
    expect(logOf(w)).toEqual([0, 1, 2])
  })

  it('a checkpoint save that fails for a retry whose earlier attempt may be in the log does not take the next batch into a rewrite', async () => {
    // Sequence 1 is appended but answered NOT_ENOUGH_REPLICAS_AFTER_APPEND; sequence 2 is appended and its
    // answer is lost. Sequence 1's retry goes out with a new batch of t-1, whose save the store refuses:
    // the retry fails unsent, but its first attempt is in the log. An epoch bump would then rewrite
    // sequence 2 under epoch 1, and its retry after the request timeout would append it a second time.
    let refuse = false
    const w = world({
      model: { topics: { t: 2 } },
      producer: {
        'batch.size': 200, 'linger.ms': 5000, 'max.in.flight.requests.per.connection': 5,
        checkpoint: { load: () => Promise.resolve(undefined), save: () => (refuse ? Promise.reject(new Error('disk full')) : Promise.resolve()) },
      },
    })
    // A record above batch.size fills its batch and goes at once; a small one lingers.
    const full = { partition: 0, pad: 300 }
    w.send('t', full)
    expect(await w.settle()).toBe(true)
    let first = true
    w.cluster.script = ({ partition, baseSequence, epoch }) => (partition === 0 && epoch === 0 && baseSequence === 1 && first ? ((first = false), { error: 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', afterAppend: true }) : null)
    const handle = w.cluster.handle.bind(w.cluster)
    let lost = false
    w.cluster.handle = (node, frame) => {
      const res = handle(node, frame)
      const seen = ((frame[4]! << 8) | frame[5]!) === Produce.key ? w.cluster.produceLog.at(-1)?.partitions[0] : undefined
      if (!lost && seen?.partition === 0 && seen.epoch === 0 && seen.baseSequence === 2) { lost = true; return null }
      return res
    }
    const maybeWritten = w.send('t', full)
    const answerLost = w.send('t', full)
    await w.clock.advance(3)
    refuse = true
    const refused = w.send('t', { partition: 1 })
    await w.clock.advance(20)
    refuse = false
    await finish(w)
    expect(maybeWritten.status).toBe('failed')
    expect(maybeWritten.error!.mayHaveBeenWritten).toBe(true)
    expect(refused.status).toBe('failed')
    expect(refused.error!.mayHaveBeenWritten).toBe(false)
    expect(answerLost.status).toBe('acked')
    expect(logOf(w)).toEqual([0, 1, 2])
  })

  it('a resumed batch refused for its producer state does not take the next batch, in the log, into a rewrite', async () => {
    // A producer dies with its requests for sequences 1 and 2 of t-0 lost. Its successor takes over the
    // checkpoint and resends both (the leader's last sequence is 0). Sequence 1 is acknowledged; the
    // leader appends 2 but answers OUT_OF_ORDER_SEQUENCE_NUMBER (scripted: a refusal of the resumed state,
    // which cannot say the batch is not in the log), and the successor's own next batch, sequence 3,
    // is appended with its answer lost. The refused batch is relabelled; an epoch bump then would
    // rewrite sequence 3 under a new epoch, and its retry after the request timeout would append it a
    // second time.
    const store = memoryCheckpointStore()
    const w = world({ producer: { 'max.in.flight.requests.per.connection': 5, checkpoint: store } })
    w.send('t')
    expect(await w.settle()).toBe(true)
    const handle = w.cluster.handle.bind(w.cluster)
    w.cluster.handle = (node, frame) => (((frame[4]! << 8) | frame[5]!) === Produce.key ? null : handle(node, frame))
    w.send('t')
    w.send('t')
    await w.clock.advance(200)
    const cp = structuredClone(store.current!)
    w.producer.sender.close()
    w.producer.cluster.close()
    expect(cp.pending.map((b) => b.baseSequence)).toEqual([1, 2])
    expect(logOf(w)).toEqual([0])

    const epoch = cp.epoch
    let refusedOnce = false
    w.cluster.script = ({ baseSequence, epoch: e }) => (e === epoch && baseSequence === 2 && !refusedOnce ? ((refusedOnce = true), { error: 'OUT_OF_ORDER_SEQUENCE_NUMBER', afterAppend: true }) : null)
    let lost = false
    w.cluster.handle = (node, frame) => {
      const res = handle(node, frame)
      const seen = ((frame[4]! << 8) | frame[5]!) === Produce.key ? w.cluster.produceLog.at(-1)?.partitions[0] : undefined
      if (!lost && seen?.epoch === epoch && seen.baseSequence === 3) { lost = true; return null }
      return res
    }
    const next = createProducer({
      'bootstrap.servers': 'broker0.sim:9092', transport: w.net, clock: w.clock, random: rng(99), checkpoint: memoryCheckpointStore(cp),
      'linger.ms': 0, 'batch.size': 16, 'retry.backoff.ms': 10, 'request.timeout.ms': 2000, 'delivery.timeout.ms': 60_000,
    })
    let acked: RecordMetadata | undefined
    next.send({ topic: 't', partition: 0, value: valueOf(3) }).then((md) => { acked = md }, () => {})
    // The relabelled copy is a send made after the first flush() began: a second one waits for it.
    for (let i = 0; i < 2; i++) {
      let flushed = false
      next.flush().then(() => { flushed = true }, () => { flushed = true })
      await w.clock.run({ until: w.clock.now() + 120_000, done: () => flushed })
      expect(flushed).toBe(true)
    }
    expect(next.resumeOutcome).toMatchObject({ mode: 'relabelled', written: 0 })
    // Record 2 is in the log from the refused resend and once more as its relabelled copy (with the
    // possible-duplicate header); record 3 once.
    expect(logOf(w)).toEqual([0, 1, 2, 3, 2])
    expect(acked?.offset).toBe(3n)
    await next.close()
  })

  it('txn seeds 128023, 136231: close() while a send waits for metadata: the wait ending later does not touch the send again', async () => {
    // close() fails and drops the waiting sends; the metadata wait of the first one still ran, and when
    // it timed out the pump took that send off the (now empty) queue: a TypeError escaped the producer.
    const w = world({ producer: { 'max.block.ms': 1000, 'request.timeout.ms': 5000 } })
    w.send('t')
    expect(await w.settle()).toBe(true)
    const handle = w.cluster.handle.bind(w.cluster)
    w.cluster.handle = (node, frame) => (((frame[4]! << 8) | frame[5]!) === Metadata.key ? null : handle(node, frame))
    const escaped: unknown[] = []
    const onEscape = (e: unknown): void => { escaped.push(e) }
    process.on('unhandledRejection', onEscape)
    try {
      const waiting = w.send('u')
      await w.clock.advance(100)
      await w.close()
      await w.clock.advance(2000)
      await new Promise((r) => setImmediate(r))
      expect(waiting.status).toBe('failed')
      expect(waiting.error!.name).toBe('ClosedError')
      expect(waiting.error!.mayHaveBeenWritten).toBe(false)
      expect(escaped).toEqual([])
    } finally {
      process.off('unhandledRejection', onEscape)
    }
    expect((await runTxnSeed(128023)).violations).toEqual([])
    expect((await runTxnSeed(136231)).violations).toEqual([])
  })

  it('txn seed 3113076: a queued retry failed by the producer being fenced may be in the log, though its one answered attempt was refused', async () => {
    // Its Produce reached the broker twice (the network delivered one copy twice): the copy the client
    // read was refused (NOT_ENOUGH_REPLICAS), the other was appended and its answer arrived under a
    // correlation id already answered (the connection closed on it). The retry was waiting out its
    // backoff when a second instance fenced the producer; the queued batch failed as "not written".
    const r = await runTxnSeed(3113076)
    expect(r.violations).toEqual([])
  })
})
