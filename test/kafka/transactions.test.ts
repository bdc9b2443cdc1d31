import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { IllegalStateException } from '../../src/edge/errors.js'
import { createProducer, ProducerFencedException, type CoordinatorRequestEvent, type ProduceRequestEvent, type Producer } from '../../src/edge/index.js'
import { tcp } from '../../src/edge/node.js'

import { bs, createTopic, dumpBatches, ensureCluster, readTopic, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { rng } from '../helpers/records.js'

const dec = new TextDecoder()

function txnProducer(cluster: Cluster, id: string, extra: Record<string, unknown> = {}): Producer {
  return createProducer({ 'bootstrap.servers': bs(cluster), transport: tcp(), 'transactional.id': id, 'linger.ms': 0, ...extra })
}

interface Sent { txn: number; partition: number; value: string; committed: boolean }

/**
 * `count` small transactions over 6 partitions, a seeded random third of them aborted. Returns what
 * was sent, per transaction, with its fate.
 */
async function runTransactions(p: Producer, topic: string, count: number, seed: number): Promise<Sent[]> {
  const r = rng(seed)
  const sent: Sent[] = []
  await p.initTransactions()
  for (let t = 0; t < count; t++) {
    p.beginTransaction()
    const n = 1 + Math.floor(r() * 4)
    const acks: Array<Promise<unknown>> = []
    const mine: Sent[] = []
    for (let j = 0; j < n; j++) {
      const partition = Math.floor(r() * 6)
      const value = `t${t}-r${j}`
      mine.push({ txn: t, partition, value, committed: false })
      acks.push(p.send({ topic, partition, key: `k${t}`, value }))
    }
    const abort = r() < 1 / 3
    const settled = Promise.allSettled(acks)
    if (abort) {
      // Half of the aborts happen before the records were acknowledged, half after.
      if (t % 2 === 0) await Promise.all(acks)
      await p.abortTransaction()
      await settled
    } else {
      await p.commitTransaction()
      await Promise.all(acks)
      for (const s of mine) s.committed = true
    }
    sent.push(...mine)
  }
  return sent
}

function byPartition(list: Array<{ partition: number; value: string }>): Map<number, string[]> {
  const m = new Map<number, string[]>()
  for (const x of list) m.set(x.partition, [...(m.get(x.partition) ?? []), x.value])
  return m
}

for (const tv of [2, 1] as const) {
  describe(`transactions on real Kafka 4.4, transaction.version ${tv}`, () => {
    let cluster: Cluster
    const producers: Producer[] = []
    beforeAll(async () => { cluster = await ensureCluster(tv === 2 ? { name: 'txn' } : { name: 'txn-tv1', tv: 1 }) })
    afterAll(async () => { for (const p of producers) await p.close({ timeoutMs: 5000 }).catch(() => {}) })

    it(`500 transactions over 6 partitions, a random third aborted: read_committed sees exactly the committed records in order (TV${tv} path)`, async () => {
      expect(cluster.transactionVersion).toBe(tv)
      const topic = uniqueTopic(`txn-tv${tv}`)
      await createTopic(cluster, topic, { partitions: 6 })
      const versions: Record<string, number[]> = {}
      const counts: Record<string, number> = {}
      const produceVersions = new Set<number>()
      const history: Array<{ producerId: bigint; epoch: number }> = []
      let notYetAdded = 0
      const p = txnProducer(cluster, `txn-500-tv${tv}-${topic}`, {
        observer: {
          onCoordinatorRequest: ({ api, version }: CoordinatorRequestEvent) => {
            (versions[api] ??= []).push(version ?? -1)
            counts[api] = (counts[api] ?? 0) + 1
          },
          onProduceRequest: (r: ProduceRequestEvent) => {
            produceVersions.add(r.maxVersion)
            // Only partitions already in the transaction are drained (TV1: after AddPartitionsToTxn).
            for (const b of r.batches) if (tv === 1 && !b.inTransaction) notYetAdded++
          },
          onProducerId: (pe: { producerId: bigint; epoch: number }) => { history.push(pe) },
        },
      })
      producers.push(p)
      const started = Date.now()
      const sent = await runTransactions(p, topic, 500, 1000 + tv)
      const elapsed = Date.now() - started
      const committed = sent.filter((s) => s.committed)
      const aborted = sent.filter((s) => !s.committed)
      const abortedTxns = new Set(aborted.map((s) => s.txn)).size
      expect(abortedTxns).toBeGreaterThan(120)
      expect(abortedTxns).toBeLessThan(220)

      expect(notYetAdded).toBe(0)
      // Which protocol path ran.
      if (tv === 1) {
        expect(counts.AddPartitionsToTxn).toBeGreaterThan(0)
        expect(versions.EndTxn!.every((v) => v <= 4)).toBe(true)
        expect([...produceVersions]).toEqual([11])
      } else {
        expect(counts.AddPartitionsToTxn ?? 0).toBe(0)
        expect(versions.EndTxn!.every((v) => v === 5)).toBe(true)
        expect([...produceVersions]).toEqual([12])
        // Every EndTxn v5 bumped the epoch: 500 transactions, 500 epochs after the first.
        expect(history.length).toBe(501)
        for (let i = 1; i < history.length; i++) {
          const [a, b] = [history[i - 1]!, history[i]!]
          expect(b.producerId === a.producerId ? b.epoch === a.epoch + 1 : b.epoch === 0).toBe(true)
        }
      }
      // One producer id for the whole run (retries of the first InitProducerId count as requests).
      expect(counts.InitProducerId).toBeGreaterThanOrEqual(1)
      if (tv === 1) expect(history.length).toBe(1)
      // TV2: every transaction that appended a record ends with EndTxn (retries after
      // CONCURRENT_TRANSACTIONS count too). TV1: an abort before any AddPartitionsToTxn completed has
      // nothing to end on the coordinator, so it skips EndTxn, as Java does.
      const committedTxns = 500 - abortedTxns
      expect(counts.EndTxn).toBeGreaterThanOrEqual(tv === 2 ? 500 : committedTxns)

      const rc = await readTopic(cluster, topic, { isolation: 'read_committed', expected: committed.length, timeoutMs: 60_000 })
      const gotCommitted = rc.map((x) => ({ partition: x.partition, value: dec.decode(x.value!) }))
      expect(gotCommitted.length).toBe(committed.length)
      expect(byPartition(gotCommitted)).toEqual(byPartition(committed))

      const ru = await readTopic(cluster, topic, { isolation: 'read_uncommitted', timeoutMs: 60_000 })
      const gotAll = new Set(ru.map((x) => dec.decode(x.value!)))
      // Aborted records that reached the log are visible to read_uncommitted only; at least the ones
      // acknowledged before the abort are there.
      const abortedValues = aborted.map((s) => s.value)
      const abortedInLog = abortedValues.filter((v) => gotAll.has(v))
      expect(abortedInLog.length).toBeGreaterThan(0)
      for (const v of abortedInLog) expect(gotCommitted.some((x) => x.value === v)).toBe(false)
      for (const s of committed) expect(gotAll.has(s.value)).toBe(true)

      const batches = await dumpBatches(cluster, topic)
      const data = batches.filter((b) => !b.isControl)
      const control = batches.filter((b) => b.isControl)
      expect(data.every((b) => b.isTransactional && b.producerId >= 0)).toBe(true)
      const commits = control.filter((b) => b.controlType === 'COMMIT')
      const aborts = control.filter((b) => b.controlType === 'ABORT')
      // One COMMIT marker per (committed transaction, partition it wrote to).
      const committedPairs = new Set(committed.map((s) => `${s.txn}:${s.partition}`))
      expect(commits.length).toBe(committedPairs.size)
      expect(aborts.length).toBeGreaterThan(0)
      console.log(`TV${tv}: 500 txns (${abortedTxns} aborted, ${sent.length} records) in ${elapsed} ms; requests ${JSON.stringify(counts)}; markers COMMIT ${commits.length} ABORT ${aborts.length}`)
    }, 300_000)

    it('send() outside a transaction throws IllegalStateException; illegal calls leave the state unchanged', async () => {
      const topic = uniqueTopic(`txn-illegal-tv${tv}`)
      await createTopic(cluster, topic, { partitions: 1 })
      let endTxns = 0
      const p = txnProducer(cluster, `txn-illegal-${topic}`, { observer: { onCoordinatorRequest: (r: CoordinatorRequestEvent) => { if (r.api === 'EndTxn') endTxns++ } } })
      producers.push(p)
      expect(() => p.send({ topic, value: 'x' })).toThrow(IllegalStateException)
      expect(() => p.beginTransaction()).toThrow(IllegalStateException)
      await expect(p.commitTransaction()).rejects.toBeInstanceOf(IllegalStateException)
      expect(p.state.transactionState).toBe('UNINITIALIZED')
      await p.initTransactions()
      expect(p.state.transactionState).toBe('READY')
      expect(() => p.send({ topic, value: 'x' })).toThrow(/beginTransaction/)
      await expect(p.initTransactions()).rejects.toBeInstanceOf(IllegalStateException)
      await expect(p.abortTransaction()).rejects.toBeInstanceOf(IllegalStateException)
      expect(p.state.transactionState).toBe('READY')
      p.beginTransaction()
      expect(() => p.beginTransaction()).toThrow(IllegalStateException)
      expect(p.state.transactionState).toBe('IN_TRANSACTION')
      // An empty transaction: nothing to end on TV2; TV1 has no partitions either, so no EndTxn at all.
      await p.commitTransaction()
      expect(endTxns).toBe(0)
      expect(p.state.transactionState).toBe('READY')
    })

    it('zombie fencing: a second producer with the same transactional.id fences the first; none of the zombie\'s later records become visible', async () => {
      const topic = uniqueTopic(`txn-fence-tv${tv}`)
      await createTopic(cluster, topic, { partitions: 3 })
      const id = `txn-fence-${topic}`
      const zombie = txnProducer(cluster, id)
      producers.push(zombie)
      await zombie.initTransactions()
      // One committed transaction, then one left open.
      zombie.beginTransaction()
      await zombie.send({ topic, partition: 0, value: 'zombie-committed' })
      await zombie.commitTransaction()
      zombie.beginTransaction()
      await zombie.send({ topic, partition: 0, value: 'zombie-open' })

      const successor = txnProducer(cluster, id)
      producers.push(successor)
      await successor.initTransactions()
      expect(successor.state.producerEpoch!).toBeGreaterThan(zombie.state.producerEpoch!)

      // The zombie's next send and commit fail; the first error that names the cause is ProducerFencedException.
      const late = zombie.send({ topic, partition: 1, value: 'zombie-late' }).then(() => null, (e: Error) => e)
      const commitErr = await zombie.commitTransaction().then(() => null, (e: Error) => e)
      expect(commitErr).not.toBeNull()
      const lateErr = await late
      expect(lateErr).not.toBeNull()
      let fencedErr: Error | null = [commitErr, lateErr].find((e) => e instanceof ProducerFencedException) ?? null
      if (!fencedErr) {
        // TV2: the late Produce fails with INVALID_PRODUCER_EPOCH (abortable); aborting then meets the fence.
        fencedErr = await zombie.abortTransaction().then(() => null, (e: Error) => e)
      }
      expect(fencedErr).toBeInstanceOf(ProducerFencedException)
      expect(zombie.state.transactionState).toBe('FATAL_ERROR')
      expect(() => zombie.send({ topic, value: 'after-fatal' })).toThrow(ProducerFencedException)
      await expect(zombie.commitTransaction()).rejects.toBeInstanceOf(ProducerFencedException)

      successor.beginTransaction()
      await successor.send({ topic, partition: 2, value: 'successor' })
      await successor.commitTransaction()

      const rc = await readTopic(cluster, topic, { isolation: 'read_committed', expected: 2, timeoutMs: 30_000 })
      expect(rc.map((x) => dec.decode(x.value!)).sort()).toEqual(['successor', 'zombie-committed'])
    })
  })
}
