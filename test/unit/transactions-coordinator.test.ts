import { describe, expect, it } from 'vitest'
import { IllegalStateException, TimeoutException, TransactionAbortableException } from '../../src/edge/errors.js'
import { apiError } from '../../src/edge/protocol/index.js'
import { topicPartition } from '../../src/edge/producer/producer-batch.js'
import { ADD_PARTITIONS_RETRY_BACKOFF_MS } from '../../src/edge/producer/transactions/state.js'
import { InitProducerIdHandler } from '../../src/edge/producer/transactions/handlers.js'
import { setup } from '../helpers/txn-fake-coordinator.js'

const tp = (p: number, t = 'out') => topicPartition(t, p)

describe('request order and one request in flight', () => {
  it('TV1: FindCoordinator -> InitProducerId -> AddPartitionsToTxn (all new partitions in one request) -> AddOffsetsToTxn -> FindCoordinator(group) -> TxnOffsetCommit -> EndTxn', async () => {
    const { tm, fake, ok, idem } = setup({ tv: 1, transactionTimeoutMs: 12345 })
    await ok(tm.initTransactions())
    expect(fake.apis()).toEqual(['FindCoordinator', 'InitProducerId'])
    expect(fake.requests('FindCoordinator')[0]!.body).toMatchObject({ keyType: 1, key: 'tid-1' })
    expect(fake.requests('InitProducerId')[0]!.body).toMatchObject({ transactionalId: 'tid-1', transactionTimeoutMs: 12345, producerId: -1n, producerEpoch: -1 })
    expect(tm.state).toBe('READY')
    expect(idem.producerIdAndEpoch).toEqual({ producerId: 4000n, epoch: 0 })

    tm.beginTransaction()
    expect(tm.tv2).toBe(false)
    expect(tm.produceVersionCap()).toBe(11)
    for (const p of [0, 1, 2]) tm.maybeAddPartition(tp(p))
    tm.maybeAddPartition(tp(1)) // already pending: not added twice
    // Not drainable until the coordinator acknowledged the partition.
    expect(tm.isSendToPartitionAllowed(tp(0))).toBe(false)
    await fake.clock.advance(50)
    const adds = fake.requests('AddPartitionsToTxn')
    expect(adds).toHaveLength(1)
    expect(adds[0]!.version).toBe(3)
    expect(adds[0]!.body.topics).toEqual([{ name: 'out', partitions: [0, 1, 2] }])
    expect(tm.isSendToPartitionAllowed(tp(0))).toBe(true)
    expect(tm.isSendToPartitionAllowed(tp(3))).toBe(false)

    await ok(tm.sendOffsetsToTransaction([{ topic: 'in', partition: 0, offset: 42 }], { groupId: 'grp', generationId: 7, memberId: 'm-1', groupInstanceId: null }))
    await ok(tm.commitTransaction())
    expect(fake.apis()).toEqual(['FindCoordinator', 'InitProducerId', 'AddPartitionsToTxn', 'AddOffsetsToTxn', 'FindCoordinator', 'TxnOffsetCommit', 'EndTxn'])
    const commit = fake.requests('TxnOffsetCommit')[0]!
    expect(commit.node).toBe(fake.groupCoordinator)
    expect(commit.version).toBe(4)
    expect(commit.body).toMatchObject({ groupId: 'grp', generationId: 7, memberId: 'm-1', producerId: 4000n, producerEpoch: 0 })
    expect(fake.requests('FindCoordinator')[1]!.body).toMatchObject({ keyType: 0, key: 'grp' })
    expect(fake.requests('EndTxn')[0]!.version).toBe(4)
    expect(fake.requests('EndTxn')[0]!.body).toMatchObject({ committed: true, producerEpoch: 0 })
    expect(fake.maxInFlight).toBe(1)
    expect(tm.state).toBe('READY')
    // TV1 keeps its epoch across transactions.
    expect(idem.producerIdAndEpoch).toEqual({ producerId: 4000n, epoch: 0 })
  })

  it('TV2: no AddPartitionsToTxn, no AddOffsetsToTxn; TxnOffsetCommit v5 and EndTxn v5; Produce v12', async () => {
    const { tm, fake, ok } = setup({ tv: 2 })
    await ok(tm.initTransactions())
    tm.beginTransaction()
    expect(tm.tv2).toBe(true)
    expect(tm.produceVersionCap()).toBe(12)
    tm.maybeAddPartition(tp(0))
    expect(tm.isSendToPartitionAllowed(tp(0))).toBe(true)
    await ok(tm.sendOffsetsToTransaction({ in: { 0: 5, 1: 9 } }, 'grp'))
    await ok(tm.commitTransaction())
    expect(fake.apis()).toEqual(['FindCoordinator', 'InitProducerId', 'FindCoordinator', 'TxnOffsetCommit', 'EndTxn'])
    expect(fake.requests('TxnOffsetCommit')[0]!.version).toBe(5)
    expect(fake.requests('TxnOffsetCommit')[0]!.body).toMatchObject({ generationId: -1, memberId: '', groupInstanceId: null })
    expect(fake.requests('EndTxn')[0]!.version).toBe(5)
  })

  it('TV2 needs the coordinator to speak EndTxn v5: a TV2-finalized cluster without it falls back to TV1', async () => {
    const { tm, fake, ok } = setup({ tv: 2 })
    fake.maxVersions.EndTxn = 4
    await ok(tm.initTransactions())
    tm.beginTransaction()
    expect(tm.tv2).toBe(false)
  })

  it('EndTxn waits until every batch of the transaction completed', async () => {
    const { tm, fake, host, ok } = setup({ tv: 2 })
    await ok(tm.initTransactions())
    tm.beginTransaction()
    tm.maybeAddPartition(tp(0))
    host.incomplete = 3
    const commit = tm.commitTransaction()
    await fake.clock.advance(5_000)
    expect(fake.requests('EndTxn')).toHaveLength(0)
    expect(host.flushes).toBe(1)
    host.complete()
    await ok(commit)
    expect(fake.requests('EndTxn')).toHaveLength(1)
  })

  it('an empty transaction skips EndTxn (TV2 and TV1)', async () => {
    for (const tv of [1, 2]) {
      const { tm, fake, ok } = setup({ tv })
      await ok(tm.initTransactions())
      tm.beginTransaction()
      await ok(tm.commitTransaction())
      tm.beginTransaction()
      await ok(tm.abortTransaction())
      expect(fake.requests('EndTxn')).toHaveLength(0)
      expect(tm.state).toBe('READY')
    }
  })
})

describe('coordinator discovery and moves', () => {
  it('NOT_COORDINATOR on EndTxn: looks the coordinator up again and commits on the new one', async () => {
    const { tm, fake, ok } = setup({ tv: 2 })
    await ok(tm.initTransactions())
    tm.beginTransaction()
    tm.maybeAddPartition(tp(0))
    fake.txnCoordinator = 3 // moved: node 1 now answers NOT_COORDINATOR
    await ok(tm.commitTransaction())
    const ends = fake.requests('EndTxn')
    expect(ends.map((r) => r.node)).toEqual([1, 3])
    expect(fake.apis().slice(2)).toEqual(['EndTxn', 'FindCoordinator', 'EndTxn'])
    expect(tm.transactionCoordinator?.nodeId).toBe(3)
  })

  it('a coordinator that dies mid-commit (disconnect): rediscovery, then the commit completes on the new coordinator', async () => {
    const { tm, fake, ok } = setup({ tv: 1 })
    await ok(tm.initTransactions())
    tm.beginTransaction()
    tm.maybeAddPartition(tp(0))
    await fake.clock.advance(20)
    fake.latencyMs = 50
    const commit = tm.commitTransaction()
    await fake.clock.advance(10)
    expect(fake.requests('EndTxn')).toHaveLength(1)
    fake.down.add(1)
    fake.txnCoordinator = 2
    await ok(commit)
    expect(fake.requests('EndTxn').map((r) => r.node)).toEqual([1, 2])
    expect(fake.requests('FindCoordinator').length).toBeGreaterThanOrEqual(2)
    expect(tm.state).toBe('READY')
  })

  it('COORDINATOR_NOT_AVAILABLE from FindCoordinator is retried after retry.backoff.ms', async () => {
    const { tm, fake, ok } = setup({ tv: 2, retryBackoffMs: 250 })
    fake.script('FindCoordinator', { error: 15 }, { error: 15 })
    await ok(tm.initTransactions())
    const finds = fake.requests('FindCoordinator')
    expect(finds).toHaveLength(3)
    expect(finds[1]!.at - finds[0]!.at).toBeGreaterThanOrEqual(250)
    expect(finds[2]!.at - finds[1]!.at).toBeGreaterThanOrEqual(250)
  })

  it('COORDINATOR_LOAD_IN_PROGRESS is retried on the same coordinator (Java: retriable, no lookup)', async () => {
    const { tm, fake, ok } = setup({ tv: 2 })
    fake.script('InitProducerId', { error: 14 })
    await ok(tm.initTransactions())
    expect(fake.apis()).toEqual(['FindCoordinator', 'InitProducerId', 'InitProducerId'])
  })

  it('TxnOffsetCommit to a moved group coordinator: NOT_COORDINATOR -> FindCoordinator(group) -> retry there', async () => {
    const { tm, fake, ok } = setup({ tv: 2 })
    await ok(tm.initTransactions())
    tm.beginTransaction()
    const p = tm.sendOffsetsToTransaction({ in: { 0: 1 } }, 'grp')
    await fake.clock.advance(3) // FindCoordinator(group) answered with node 2
    fake.groupCoordinator = 3
    await ok(p)
    expect(fake.requests('TxnOffsetCommit').map((r) => r.node)).toEqual([2, 3])
  })
})

describe('CONCURRENT_TRANSACTIONS backoff on AddPartitionsToTxn', () => {
  it('first partition of a transaction: retried after 20 ms; once something was added: after retry.backoff.ms', async () => {
    const { tm, fake, ok } = setup({ tv: 1, retryBackoffMs: 100 })
    await ok(tm.initTransactions())
    tm.beginTransaction()
    fake.script('AddPartitionsToTxn', { error: 51 }, { error: 51 })
    tm.maybeAddPartition(tp(0))
    await fake.clock.advance(500)
    let adds = fake.requests('AddPartitionsToTxn')
    expect(adds).toHaveLength(3)
    expect(adds[1]!.at - adds[0]!.at).toBeGreaterThanOrEqual(ADD_PARTITIONS_RETRY_BACKOFF_MS)
    expect(adds[1]!.at - adds[0]!.at).toBeLessThan(40)
    expect(adds[2]!.at - adds[1]!.at).toBeLessThan(40)
    expect(tm.isSendToPartitionAllowed(tp(0))).toBe(true)

    // Now a partition is in the transaction: the next CONCURRENT_TRANSACTIONS waits retry.backoff.ms.
    fake.script('AddPartitionsToTxn', { error: 51 })
    tm.maybeAddPartition(tp(1))
    await fake.clock.advance(500)
    adds = fake.requests('AddPartitionsToTxn')
    expect(adds).toHaveLength(5)
    expect(adds[4]!.at - adds[3]!.at).toBeGreaterThanOrEqual(100)
    expect(adds[4]!.body.topics).toEqual([{ name: 'out', partitions: [1] }])
  })
})

describe('epochs', () => {
  it('TV2: every EndTxn v5 returns the next epoch, adopted for the next transaction', async () => {
    const { tm, fake, ok, idem, epochs } = setup({ tv: 2 })
    await ok(tm.initTransactions())
    for (let i = 0; i < 3; i++) {
      tm.beginTransaction()
      tm.maybeAddPartition(tp(0))
      await ok(i === 1 ? tm.abortTransaction() : tm.commitTransaction())
    }
    expect(fake.requests('EndTxn').map((r) => r.body.producerEpoch)).toEqual([0, 1, 2])
    expect(idem.producerIdAndEpoch).toEqual({ producerId: 4000n, epoch: 3 })
    expect(epochs.map((e) => e.epoch)).toEqual([0, 1, 2, 3])
    expect(fake.requests('InitProducerId')).toHaveLength(1)
  })

  it('TV2 epoch overflow: EndTxn returns a new producer id at epoch 0, and sequences restart under it', async () => {
    const { tm, fake, ok, idem } = setup({ tv: 2 })
    fake.epoch = 32765
    await ok(tm.initTransactions())
    expect(idem.producerIdAndEpoch).toEqual({ producerId: 4000n, epoch: 32766 })
    // A partition that has sequences under the old id.
    const e = idem.entry(tp(0))
    e.producerIdAndEpoch = idem.producerIdAndEpoch
    e.nextSequence = 17
    tm.beginTransaction()
    tm.maybeAddPartition(tp(0))
    await ok(tm.commitTransaction())
    expect(idem.producerIdAndEpoch).toEqual({ producerId: 4001n, epoch: 0 })
    expect(idem.hasStaleProducerIdAndEpoch(tp(0))).toBe(true)
    // The next drain starts the partition at sequence 0 under the new id.
    tm.beginTransaction()
    tm.maybeAddPartition(tp(0))
    await ok(tm.commitTransaction())
    expect(fake.requests('EndTxn').at(-1)!.body).toMatchObject({ producerId: 4001n, producerEpoch: 0 })
    expect(idem.producerIdAndEpoch).toEqual({ producerId: 4001n, epoch: 1 })
  })

  it('TV1: an abortable error bumps the epoch with InitProducerId(current id, epoch) after EndTxn(abort)', async () => {
    const { tm, fake, ok, idem, host } = setup({ tv: 1 })
    await ok(tm.initTransactions())
    tm.beginTransaction()
    tm.maybeAddPartition(tp(0))
    await fake.clock.advance(20)
    tm.batchFailed(apiError(47, 'Produce'))
    expect(tm.state).toBe('ABORTABLE_ERROR')
    expect(host.aborted).toHaveLength(1) // queued records fail with the error
    await ok(tm.abortTransaction())
    expect(fake.apis().slice(-2)).toEqual(['EndTxn', 'InitProducerId'])
    const bump = fake.requests('InitProducerId').at(-1)!
    expect(bump.body).toMatchObject({ producerId: 4000n, producerEpoch: 0 })
    expect(idem.producerIdAndEpoch).toEqual({ producerId: 4000n, epoch: 1 })
    expect(tm.state).toBe('READY')
    expect(tm.transitions.slice(-3)).toEqual([['ABORTABLE_ERROR', 'ABORTING_TRANSACTION'], ['ABORTING_TRANSACTION', 'INITIALIZING'], ['INITIALIZING', 'READY']])
    // And the producer carries on.
    tm.beginTransaction()
    tm.maybeAddPartition(tp(0))
    await ok(tm.commitTransaction())
    expect(fake.requests('EndTxn').at(-1)!.body).toMatchObject({ committed: true, producerEpoch: 1 })
  })

  it('TV1: INVALID_PRODUCER_ID_MAPPING skips EndTxn and goes straight to InitProducerId', async () => {
    const { tm, fake, ok } = setup({ tv: 1 })
    await ok(tm.initTransactions())
    tm.beginTransaction()
    tm.maybeAddPartition(tp(0))
    await fake.clock.advance(20)
    tm.batchFailed(apiError(49, 'Produce'))
    const before = fake.log.length
    await ok(tm.abortTransaction())
    expect(fake.apis().slice(before)).toEqual(['InitProducerId'])
    expect(tm.state).toBe('READY')
  })

  it('TV2: INVALID_PRODUCER_ID_MAPPING also goes straight to InitProducerId(current id, epoch), which ends the transaction', async () => {
    const { tm, fake, ok, idem } = setup({ tv: 2 })
    await ok(tm.initTransactions())
    tm.beginTransaction()
    tm.maybeAddPartition(tp(0))
    tm.batchFailed(apiError(49, 'Produce'))
    const before = fake.log.length
    await ok(tm.abortTransaction())
    expect(fake.apis().slice(before)).toEqual(['InitProducerId'])
    expect(fake.requests('InitProducerId').at(-1)!.body).toMatchObject({ producerId: 4000n, producerEpoch: 0 })
    expect(idem.producerIdAndEpoch.epoch).toBe(1)
    expect(tm.state).toBe('READY')
    expect(tm.partitionsInTransaction.size).toBe(0)
    tm.beginTransaction()
    expect(tm.state).toBe('IN_TRANSACTION')
  })

  it('a batch that fails while committing fails the commit with TransactionAbortableException; abort then recovers', async () => {
    const { tm, fake, ok, fails, host } = setup({ tv: 2 })
    await ok(tm.initTransactions())
    tm.beginTransaction()
    tm.maybeAddPartition(tp(0))
    host.incomplete = 1
    const commit = tm.commitTransaction()
    await fake.clock.advance(10)
    tm.batchFailed(new TimeoutException('expiring 1 record(s)'))
    host.complete()
    const e = await fails(commit)
    expect(e).toBeInstanceOf(TransactionAbortableException)
    expect((e as Error & { cause: unknown }).cause).toBeInstanceOf(TimeoutException)
    expect(fake.requests('EndTxn')).toHaveLength(0)
    expect(tm.state).toBe('ABORTABLE_ERROR')
    await ok(tm.abortTransaction())
    expect(fake.requests('EndTxn').map((r) => r.body.committed)).toEqual([false])
    expect(tm.state).toBe('READY')
  })

  it('TV2: an abortable error needs no InitProducerId: EndTxn(abort) v5 bumps the epoch', async () => {
    const { tm, fake, ok, idem } = setup({ tv: 2 })
    await ok(tm.initTransactions())
    tm.beginTransaction()
    tm.maybeAddPartition(tp(0))
    tm.batchFailed(apiError(47, 'Produce'))
    await ok(tm.abortTransaction())
    expect(fake.requests('InitProducerId')).toHaveLength(1)
    expect(idem.producerIdAndEpoch.epoch).toBe(1)
    expect(tm.state).toBe('READY')
  })
})

describe('max.block.ms: calling again resumes the pending operation', () => {
  it('commitTransaction times out, other calls are refused, a second commitTransaction completes the same EndTxn', async () => {
    const { tm, fake, ok, run } = setup({ tv: 2, maxBlockMs: 1000 })
    await ok(tm.initTransactions())
    tm.beginTransaction()
    tm.maybeAddPartition(tp(0))
    fake.latencyMs = 1500
    const first = await run(tm.commitTransaction())
    expect(first.ok).toBe(false)
    expect((first as { error: Error }).error).toBeInstanceOf(TimeoutException)
    expect(tm.state).toBe('COMMITTING_TRANSACTION')
    expect(() => tm.beginTransaction()).toThrow(IllegalStateException)
    const abort = await run(tm.abortTransaction())
    expect((abort as { error: Error }).error).toBeInstanceOf(IllegalStateException)
    expect(tm.state).toBe('COMMITTING_TRANSACTION')
    await ok(tm.commitTransaction())
    expect(fake.requests('EndTxn')).toHaveLength(1)
    expect(tm.state).toBe('READY')
    tm.beginTransaction()
    expect(tm.state).toBe('IN_TRANSACTION')
  })

  it('initTransactions times out and a second call resumes it (one InitProducerId)', async () => {
    // FindCoordinator (80 ms), retry.backoff.ms before the re-queued InitProducerId (100 ms, as Java), InitProducerId (80 ms).
    const { tm, fake, ok, run } = setup({ tv: 2, maxBlockMs: 150 })
    fake.latencyMs = 80
    const first = await run(tm.initTransactions())
    expect((first as { error: Error }).error).toBeInstanceOf(TimeoutException)
    await ok(tm.initTransactions())
    expect(fake.requests('InitProducerId')).toHaveLength(1)
    expect(tm.state).toBe('READY')
  })
})

describe('no call is left pending', () => {
  it('a handler that throws on its response fails its call with what it threw, and the producer (it was lost: every later call resumed an operation that never settled)', async () => {
    const { tm, fails } = setup({ tv: 2 })
    const handle = InitProducerIdHandler.prototype.handleResponse
    InitProducerIdHandler.prototype.handleResponse = () => { throw new Error('a handler bug') }
    try {
      expect((await fails(tm.initTransactions())).message).toBe('a handler bug')
      expect(tm.state).toBe('FATAL_ERROR')
      expect((await fails(tm.initTransactions())).name).toBe('FatalTransactionException')
    } finally {
      InitProducerIdHandler.prototype.handleResponse = handle
    }
  })
})
