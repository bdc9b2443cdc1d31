import { describe, expect, it } from 'vitest'
import { FatalTransactionException, IllegalStateException, InvalidProducerEpochException, KafkaEdgeError, ProducerFencedException, TimeoutException, TransactionAbortableException } from '../../src/edge/errors.js'
import { apiError } from '../../src/edge/protocol/index.js'
import { topicPartition } from '../../src/edge/producer/producer-batch.js'
import { TXN_STATES, isTransitionValid, type TxnState } from '../../src/edge/producer/transactions/state.js'
import { setup } from '../helpers/txn-fake-coordinator.js'

const tp0 = topicPartition('t', 0)
const tp1 = topicPartition('t', 1)

// Java's TransactionManager.State transitions, written out here independently of the source: target -> allowed sources.
const LEGAL: Record<TxnState, TxnState[]> = {
  UNINITIALIZED: ['READY', 'ABORTABLE_ERROR'],
  INITIALIZING: ['UNINITIALIZED', 'COMMITTING_TRANSACTION', 'ABORTING_TRANSACTION'],
  READY: ['INITIALIZING', 'COMMITTING_TRANSACTION', 'ABORTING_TRANSACTION'],
  IN_TRANSACTION: ['READY'],
  COMMITTING_TRANSACTION: ['IN_TRANSACTION'],
  ABORTING_TRANSACTION: ['IN_TRANSACTION', 'ABORTABLE_ERROR'],
  ABORTABLE_ERROR: ['IN_TRANSACTION', 'COMMITTING_TRANSACTION', 'ABORTABLE_ERROR', 'INITIALIZING'],
  FATAL_ERROR: [...TXN_STATES],
}

describe('transaction state transitions (all 64 pairs)', () => {
  for (const from of TXN_STATES) {
    for (const to of TXN_STATES) {
      const legal = LEGAL[to].includes(from)
      it(`${from} -> ${to} is ${legal ? 'legal' : 'illegal'}`, () => {
        expect(isTransitionValid(from, to)).toBe(legal)
        const { tm } = setup()
        tm.state = from
        const err = to === 'ABORTABLE_ERROR' || to === 'FATAL_ERROR' ? new Error('x') : null
        if (legal) {
          tm.transitionTo(to, err)
          expect(tm.state).toBe(to)
        } else {
          expect(() => tm.transitionTo(to, err)).toThrow(IllegalStateException)
          expect(tm.state).toBe(from)
        }
      })
    }
  }
})

/** Drives a fresh client to `state` through real calls against the fake coordinator. */
async function at(state: TxnState, tv = 2) {
  const s = setup({ tv })
  const { tm, ok, fails, host } = s
  if (state === 'UNINITIALIZED') return s
  if (state === 'INITIALIZING') {
    s.fake.latencyMs = 1_000_000
    void tm.initTransactions().catch(() => {})
    await s.fake.clock.advance(10)
    expect(tm.state).toBe('INITIALIZING')
    return s
  }
  await ok(tm.initTransactions())
  if (state === 'READY') return s
  tm.beginTransaction()
  tm.maybeAddPartition(tp0)
  if (state === 'IN_TRANSACTION') return s
  if (state === 'ABORTABLE_ERROR') { tm.batchFailed(apiError(47, 'Produce')); return s }
  if (state === 'FATAL_ERROR') { tm.batchFailed(apiError(90, 'Produce')); return s }
  // COMMITTING / ABORTING: EndTxn waits for an incomplete batch.
  host.incomplete = 1
  const p = state === 'COMMITTING_TRANSACTION' ? tm.commitTransaction() : tm.abortTransaction()
  p.catch(() => {})
  await s.fake.clock.advance(10)
  expect(tm.state).toBe(state)
  void fails
  return s
}

describe('application calls in every state: illegal ones throw a typed error and leave the state unchanged', () => {
  type Call = 'init' | 'begin' | 'send' | 'offsets' | 'commit' | 'abort'
  // Which calls are legal (start an operation) in which state.
  const legal: Record<TxnState, Call[]> = {
    UNINITIALIZED: ['init'],
    INITIALIZING: ['init'], // resumes the pending initTransactions
    READY: ['begin'],
    IN_TRANSACTION: ['send', 'offsets', 'commit', 'abort'],
    COMMITTING_TRANSACTION: ['commit'], // resumes
    ABORTING_TRANSACTION: ['abort'], // resumes
    ABORTABLE_ERROR: ['abort'],
    FATAL_ERROR: [],
  }
  const calls: Call[] = ['init', 'begin', 'send', 'offsets', 'commit', 'abort']
  for (const state of TXN_STATES) {
    for (const call of calls) {
      const isLegal = legal[state].includes(call)
      it(`${call} in ${state}: ${isLegal ? 'allowed' : 'throws, state unchanged'}`, async () => {
        const s = await at(state)
        const { tm, run } = s
        const invoke = (): Promise<unknown> => {
          switch (call) {
            case 'init': return tm.initTransactions()
            case 'begin': return Promise.resolve().then(() => tm.beginTransaction())
            case 'send': return Promise.resolve().then(() => tm.failIfNotReadyForSend())
            case 'offsets': return tm.sendOffsetsToTransaction([{ topic: 'in', partition: 0, offset: 5 }], { groupId: 'g' })
            case 'commit': return tm.commitTransaction()
            case 'abort': return tm.abortTransaction()
          }
        }
        if (isLegal) {
          // Allowed: completes, or (a resumed operation whose coordinator is slow) is still waiting;
          // either way not refused.
          let error: Error | null = null
          const p = invoke().catch((e: Error) => { error = e })
          await s.fake.clock.advance(50)
          void p
          expect(error).toBeNull()
        } else {
          const r = await run(invoke(), 50).catch((e: Error) => ({ ok: false as const, error: e }))
          expect(r.ok).toBe(false)
          const e = (r as { error: Error }).error
          const typed = e instanceof IllegalStateException || e instanceof TransactionAbortableException || e instanceof FatalTransactionException ||
            e instanceof ProducerFencedException
          expect(typed, `${e.name}: ${e.message}`).toBe(true)
          expect(tm.state).toBe(state)
        }
      })
    }
  }
})

type Outcome = 'ok' | 'retry' | 'rediscover' | 'abortable' | 'fatal' | 'fenced'

/**
 * Each coordinator API with each error code the reference lists, and what the producer must do.
 * 'retry' = same request again to the same coordinator; 'rediscover' = FindCoordinator first.
 */
const CLASSIFICATION: Record<string, Record<number, Outcome>> = {
  InitProducerId: {
    15: 'rediscover', 16: 'rediscover', 14: 'retry', 51: 'retry', 7: 'retry',
    53: 'abortable', 31: 'abortable', 47: 'fenced', 90: 'fenced', 120: 'abortable', 35: 'fatal', 48: 'fatal',
  },
  AddPartitionsToTxn: {
    15: 'rediscover', 16: 'rediscover', 14: 'retry', 51: 'retry',
    47: 'fenced', 90: 'fenced', 53: 'fatal', 48: 'fatal', 29: 'abortable', 55: 'abortable',
    59: 'abortable', 49: 'abortable', 120: 'abortable', 42: 'abortable',
  },
  AddOffsetsToTxn: {
    15: 'rediscover', 16: 'rediscover', 14: 'retry', 51: 'retry',
    59: 'abortable', 49: 'abortable', 47: 'fenced', 90: 'fenced', 53: 'fatal', 48: 'fatal', 30: 'abortable', 120: 'abortable', 42: 'fatal',
  },
  TxnOffsetCommit: {
    15: 'rediscover', 16: 'rediscover', 7: 'rediscover', 14: 'retry', 51: 'retry',
    30: 'abortable', 82: 'abortable', 120: 'abortable', 25: 'abortable', 22: 'abortable',
    47: 'fenced', 90: 'fenced', 53: 'fatal', 43: 'fatal', 42: 'fatal',
  },
  EndTxn: {
    15: 'rediscover', 16: 'rediscover', 14: 'retry', 51: 'retry',
    47: 'fenced', 90: 'fenced', 53: 'fatal', 48: 'fatal', 59: 'abortable', 49: 'abortable', 120: 'abortable', 42: 'fatal',
  },
}

describe('coordinator error classification (Java TransactionManager handlers)', () => {
  for (const [api, codes] of Object.entries(CLASSIFICATION)) {
    for (const [codeStr, outcome] of Object.entries(codes)) {
      const code = Number(codeStr)
      it(`${api} error ${code} -> ${outcome}`, async () => {
        // TV1 so that AddPartitionsToTxn / AddOffsetsToTxn are in play.
        const s = setup({ tv: 1 })
        const { tm, fake, run, ok } = s
        let op: () => Promise<unknown>
        if (api === 'InitProducerId') {
          op = () => tm.initTransactions()
        } else {
          await ok(tm.initTransactions())
          tm.beginTransaction()
          if (api === 'AddPartitionsToTxn') {
            op = async () => { tm.maybeAddPartition(tp0); await tm.commitTransaction() }
          } else if (api === 'AddOffsetsToTxn' || api === 'TxnOffsetCommit') {
            op = () => tm.sendOffsetsToTransaction({ in: { 0: 10 } }, { groupId: 'g', generationId: 3, memberId: 'm' })
          } else {
            tm.maybeAddPartition(tp0)
            op = () => tm.commitTransaction()
          }
        }
        fake.script(api, { error: code })
        const before = fake.log.length
        const r = await run(op())
        const after = fake.log.slice(before)
        const sentTwice = after.filter((x) => x.api === api).length >= 2
        // Lookups of this API's coordinator beyond the first discovery (which InitProducerId and the
        // first TxnOffsetCommit of a group need anyway).
        const keyType = api === 'TxnOffsetCommit' ? 0 : 1
        const baseline = api === 'InitProducerId' || api === 'TxnOffsetCommit' ? 1 : 0
        const lookups = after.filter((x) => x.api === 'FindCoordinator' && x.body.keyType === keyType).length - baseline
        const rediscovered = lookups > 0
        switch (outcome) {
          case 'retry':
            expect(sentTwice).toBe(true)
            expect(lookups).toBe(0)
            expect(tm.state === 'FATAL_ERROR' || tm.state === 'ABORTABLE_ERROR').toBe(false)
            break
          case 'rediscover':
            expect(sentTwice).toBe(true)
            expect(rediscovered).toBe(true)
            expect(tm.state === 'FATAL_ERROR' || tm.state === 'ABORTABLE_ERROR').toBe(false)
            break
          case 'abortable':
            expect(r.ok).toBe(false)
            expect(tm.state).toBe('ABORTABLE_ERROR')
            // The app may abort and go on.
            if (api !== 'InitProducerId') {
              await ok(tm.abortTransaction())
              expect(tm.state).toBe('READY')
            }
            break
          case 'fatal':
            expect(r.ok).toBe(false)
            expect(tm.state).toBe('FATAL_ERROR')
            expect(s.idem.state).toBe('FATAL_ERROR')
            break
          case 'fenced':
            expect(r.ok).toBe(false)
            expect((r as { error: Error }).error).toBeInstanceOf(ProducerFencedException)
            expect(tm.state).toBe('FATAL_ERROR')
            expect(() => tm.failIfNotReadyForSend()).toThrow(ProducerFencedException)
            break
        }
      })
    }
  }

  // Produce batch failures inside a transaction (reference section 3 table + section 4).
  const PRODUCE: Record<number, 'abortable' | 'fatal'> = {
    47: 'abortable', 29: 'abortable', 87: 'abortable', 48: 'abortable', 120: 'abortable', 45: 'abortable', 59: 'abortable',
    49: 'abortable', 10: 'abortable', 18: 'abortable',
    90: 'fatal', 31: 'fatal', 35: 'fatal', 53: 'fatal',
  }
  for (const [codeStr, outcome] of Object.entries(PRODUCE)) {
    const code = Number(codeStr)
    it(`Produce batch failure ${code} -> ${outcome}`, async () => {
      const { tm, ok } = setup()
      await ok(tm.initTransactions())
      tm.beginTransaction()
      tm.maybeAddPartition(tp0)
      tm.batchFailed(apiError(code, 'Produce'))
      expect(tm.state).toBe(outcome === 'fatal' ? 'FATAL_ERROR' : 'ABORTABLE_ERROR')
      if (code === 90) expect(tm.lastError).toBeInstanceOf(ProducerFencedException)
      if (outcome === 'abortable') {
        expect(() => tm.failIfNotReadyForSend()).toThrow(TransactionAbortableException)
        const commit = await setupRun(tm.commitTransaction(), ok)
        expect(commit).toBeInstanceOf(TransactionAbortableException)
        expect(tm.state).toBe('ABORTABLE_ERROR')
      }
    })
  }
  it('a delivery timeout of a transactional batch is abortable, not fatal', async () => {
    const { tm, ok } = setup()
    await ok(tm.initTransactions())
    tm.beginTransaction()
    tm.batchFailed(new TimeoutException('expired'))
    expect(tm.state).toBe('ABORTABLE_ERROR')
    expect(tm.epochBumpRequired).toBe(true)
  })
})

async function setupRun(p: Promise<unknown>, _ok: unknown): Promise<Error | null> {
  return p.then(() => null, (e: Error) => e)
}

describe('Produce errors: INVALID_PRODUCER_EPOCH from Produce is abortable, from the coordinator fenced', () => {
  it('reference scenario 11', async () => {
    const a = setup({ tv: 1 })
    await a.ok(a.tm.initTransactions())
    a.tm.beginTransaction()
    a.tm.batchFailed(apiError(47, 'Produce'))
    expect(a.tm.state).toBe('ABORTABLE_ERROR')
    const b = setup({ tv: 1 })
    await b.ok(b.tm.initTransactions())
    b.tm.beginTransaction()
    b.tm.maybeAddPartition(tp1)
    b.fake.script('EndTxn', { error: 47 })
    const e = await b.fails(b.tm.commitTransaction())
    expect(e).toBeInstanceOf(ProducerFencedException)
    expect(b.tm.lastError).toBeInstanceOf(ProducerFencedException)
    // The coordinator's INVALID_PRODUCER_EPOCH means fenced: not the broker's raw class for code 47.
    expect(e).not.toBeInstanceOf(InvalidProducerEpochException)
  })
})

describe('regressions', () => {
  it('txn seed 160786 (TV1): a failure of the aborted transaction reported while the epoch bump after the abort is queued does not fail the bump', async () => {
    // An expired batch left a sequence unresolved; the Sender found it out once its partition drained,
    // after EndTxn(abort) had completed and before the InitProducerId bump went out. The error made the
    // client abortable again, the bump failed with it and abortTransaction() with a non-fatal error.
    const { tm, fake, ok } = setup({ tv: 1 })
    await ok(tm.initTransactions())
    tm.beginTransaction()
    tm.maybeAddPartition(tp0)
    await fake.clock.advance(10)
    tm.batchFailed(new TimeoutException('expiring 1 record(s) for t-0'))
    expect(tm.epochBumpRequired).toBe(true)
    fake.script('EndTxn', { respond: () => {
      fake.clock.setTimeout(() => {
        expect(tm.state).toBe('INITIALIZING')
        tm.batchFailed(new KafkaEdgeError('the client has no acknowledgement for some records sent to t-0 and can no longer retry them; abort the transaction and continue'))
      }, 0)
      return { throttleTimeMs: 0, errorCode: 0, producerId: -1n, producerEpoch: -1 }
    } })
    await ok(tm.abortTransaction())
    expect(tm.state).toBe('READY')
    expect(fake.requests('InitProducerId').length).toBe(2)
    expect(tm.producerIdAndEpoch.epoch).toBe(1)
  })
})
