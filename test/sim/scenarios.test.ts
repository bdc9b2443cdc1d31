import { beforeAll, describe, expect, it } from 'vitest'
import { ConfigException, KafkaEdgeError } from '../../src/edge/errors.js'
import { World, indexOf } from './harness.js'
import type { ModelOptions } from './model-broker.js'

// Reference section 7, one named deterministic test each, on the model cluster and virtual clock.
// Every test ends with the simulation invariants (exactly once, send order, honest failures).

beforeAll(async () => { await World.preload() })

type Script = NonNullable<World['cluster']['script']>

function world(opts: { model?: Partial<ModelOptions>; producer?: Record<string, unknown>; seed?: number } = {}): World {
  return new World(opts.seed ?? 7, {
    model: { brokers: 1, topics: { t: 1 }, ...opts.model },
    // batch.size below one record: every record is its own batch, so sequences are record indexes.
    producer: { 'linger.ms': 0, 'batch.size': 16, 'retry.backoff.ms': 10, 'request.timeout.ms': 2000, 'delivery.timeout.ms': 60_000, ...opts.producer },
  })
}

/** Answers `error` the first time each listed sequence (under epoch 0) arrives. */
function onceFor(sequences: number[], error: string, extra: Partial<ReturnType<Script> & object> = {}): Script {
  const seen = new Set<number>()
  return ({ baseSequence, epoch }) => {
    if (epoch !== 0 || !sequences.includes(baseSequence) || seen.has(baseSequence)) return null
    seen.add(baseSequence)
    return { error, ...extra }
  }
}

const logOf = (w: World, topic = 't', p = 0): number[] => w.cluster.partition(topic, p).values().map(indexOf)
const errors = (w: World, name: string): number => w.cluster.errorsSent.get(name) ?? 0

async function warm(w: World, topic = 't', partition?: number): Promise<void> {
  // One acknowledged batch first: until then a partition keeps a single batch in flight.
  w.send(topic, { partition })
  expect(await w.settle()).toBe(true)
}

async function finish(w: World): Promise<void> {
  expect(await w.settle()).toBe(true)
  expect(await w.flush()).toBe(true)
  expect(w.violations()).toEqual([])
}

describe('reference section 7 scenarios', () => {
  it('1: retries keep order with 3 in flight (LEADER_NOT_AVAILABLE on the first, OUT_OF_ORDER on the next two)', async () => {
    const w = world({ producer: { 'max.in.flight.requests.per.connection': 3 } })
    await warm(w)
    w.cluster.script = onceFor([1], 'LEADER_NOT_AVAILABLE')
    for (let i = 0; i < 3; i++) w.send('t')
    await finish(w)
    expect(errors(w, 'OUT_OF_ORDER_SEQUENCE_NUMBER')).toBe(2)
    expect(logOf(w)).toEqual([0, 1, 2, 3])
    expect(w.producer.state.producerEpoch).toBe(0)
    // While retrying, one request per partition: the retries went one at a time in sequence order.
    const retried = w.cluster.produceLog.slice(-3).map((r) => r.partitions[0]!.baseSequence)
    expect(retried).toEqual([1, 2, 3])
  })

  it('2: answers arriving out of order across brokers still complete each partition in order', async () => {
    const w = world({ model: { brokers: 2, topics: { t: 2 } }, producer: { 'max.in.flight.requests.per.connection': 5 } })
    await warm(w, 't', 0); await warm(w, 't', 1)
    w.net.faults = { dropRequest: 0, dropResponse: 0, duplicateRequest: 0, disconnect: 0, connectFail: 0, maxDelayMs: 40 }
    w.net.faultsOn = true
    const order: number[] = []
    const outs = Array.from({ length: 12 }, (_, i) => w.send('t', { partition: i % 2 }))
    for (const o of outs) void Promise.resolve().then(async () => { while (o.status === 'pending') await new Promise((r) => setImmediate(r)); order.push(o.index) })
    await finish(w)
    for (const p of [0, 1]) {
      const acks = outs.filter((o) => o.md?.partition === p).map((o) => o.md!.offset)
      expect(acks).toEqual([...acks].sort((a, b) => (a < b ? -1 : 1)))
    }
    expect(logOf(w, 't', 0)).toEqual([0, ...outs.filter((o) => o.index % 2 === 0).map((o) => o.index)])
  })

  it('3: DUPLICATE_SEQUENCE_NUMBER on an already-appended batch is success (offset -1), written once', async () => {
    const w = world({ model: { duplicateMode: 'error' } })
    await warm(w)
    w.cluster.script = onceFor([1], 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', { afterAppend: true })
    const o = w.send('t')
    await finish(w)
    expect(errors(w, 'DUPLICATE_SEQUENCE_NUMBER')).toBe(1)
    expect(o.status).toBe('acked')
    expect(o.md!.offset).toBe(-1n)
    expect(logOf(w)).toEqual([0, 1])
  })

  it('4: a real gap (OUT_OF_ORDER right after the last ack) bumps the epoch locally and rewrites from sequence 0', async () => {
    const w = world({ producer: { 'max.in.flight.requests.per.connection': 3 } })
    await warm(w)
    w.cluster.script = onceFor([1], 'OUT_OF_ORDER_SEQUENCE_NUMBER')
    for (let i = 0; i < 3; i++) w.send('t')
    await finish(w)
    expect(w.producer.state.producerEpoch).toBe(1)
    const batches = w.cluster.partition('t', 0).log
    expect(batches.map((b) => [b.epoch, b.baseSequence])).toEqual([[0, 0], [1, 0], [1, 1], [1, 2]])
    expect(w.producer.metrics()['producer-epoch-bumps-total']).toBe(1)
  })

  it('5a: UNKNOWN_PRODUCER_ID with logStartOffset above the last acked offset bumps and retries', async () => {
    const w = world()
    await warm(w); await warm(w)
    w.cluster.script = onceFor([2], 'UNKNOWN_PRODUCER_ID', { logStartOffset: 5 })
    const o = w.send('t')
    await finish(w)
    expect(o.status).toBe('acked')
    expect(w.producer.state.producerEpoch).toBe(1)
    expect(w.cluster.partition('t', 0).log.at(-1)!.baseSequence).toBe(0)
  })

  it('5b: UNKNOWN_PRODUCER_ID without a logStartOffset (-1) retries the same sequence, no bump', async () => {
    const w = world()
    await warm(w)
    w.cluster.script = onceFor([1], 'UNKNOWN_PRODUCER_ID', { logStartOffset: -1 })
    const o = w.send('t')
    await finish(w)
    expect(o.status).toBe('acked')
    expect(w.producer.state.producerEpoch).toBe(0)
    expect(w.cluster.partition('t', 0).log.at(-1)!.baseSequence).toBe(1)
  })

  it('5c: a broker that lost our state during a quiet spell (Kafka 4 accepts any first sequence) causes no duplicate', async () => {
    const w = world({ producer: { 'max.in.flight.requests.per.connection': 5 } })
    await warm(w)
    await w.clock.advance(120_000)
    w.cluster.expireIdleProducers(60_000)
    // The first batch after the silence fails retriably; a second one must not have overtaken it.
    w.cluster.script = onceFor([1], 'NOT_ENOUGH_REPLICAS')
    for (let i = 0; i < 4; i++) w.send('t')
    await finish(w)
    expect(logOf(w)).toEqual([0, 1, 2, 3, 4])
  })

  it('6: a sent batch that expires leaves the partition unresolved; with nothing acknowledged after it, the epoch is bumped', async () => {
    const w = world({ producer: { 'request.timeout.ms': 1000, 'delivery.timeout.ms': 1000 } })
    await warm(w)
    // Appended, but every answer is an error until the batch expires: its outcome stays unknown.
    let attempts = 0
    w.cluster.script = ({ baseSequence, epoch }) => {
      if (epoch !== 0 || baseSequence !== 1) return null
      return attempts++ === 0 ? { error: 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', afterAppend: true } : { error: 'NOT_ENOUGH_REPLICAS' }
    }
    const lost = w.send('t')
    expect(await w.settle()).toBe(true)
    expect(lost.status).toBe('failed')
    expect(lost.error!.name).toBe('TimeoutException')
    expect(lost.error!.mayHaveBeenWritten).toBe(true)
    w.cluster.script = null
    const next = w.send('t')
    await finish(w)
    expect(next.status).toBe('acked')
    // Record 1 landed once (the honest "may have been written"); record 2 follows in order.
    expect(logOf(w)).toEqual([0, 1, 2])
  })

  it('7: MESSAGE_TOO_LARGE splits a batch keeping its sequences, and flush waits for the pieces', async () => {
    const w = world({ model: { maxMessageBytes: 300 }, producer: { 'batch.size': 16384, 'linger.ms': 50 } })
    await warm(w)
    const outs = Array.from({ length: 10 }, () => w.send('t', { pad: 20 }))
    expect(await w.flush()).toBe(true)
    expect(outs.every((o) => o.status === 'acked')).toBe(true)
    expect(errors(w, 'MESSAGE_TOO_LARGE')).toBeGreaterThan(0)
    const batches = w.cluster.partition('t', 0).log
    for (let i = 1; i < batches.length; i++) expect(batches[i]!.baseSequence).toBe(batches[i - 1]!.baseSequence + batches[i - 1]!.values.length)
    expect(w.producer.state.producerEpoch).toBe(0)
    await finish(w)
  })

  it('8: a one-record batch too large fails alone (RecordTooLarge); the batches behind it recover via OUT_OF_ORDER and a bump', async () => {
    const w = world({ model: { maxMessageBytes: 400 }, producer: { 'max.in.flight.requests.per.connection': 3 } })
    await warm(w)
    const big = w.send('t', { pad: 500 })
    const after = [w.send('t'), w.send('t')]
    await finish(w)
    expect(big.status).toBe('failed')
    expect(big.error!.name).toBe('RecordTooLargeException')
    expect(big.error!.mayHaveBeenWritten).toBe(false)
    expect(after.every((o) => o.status === 'acked')).toBe(true)
    expect(logOf(w)).toEqual([0, 2, 3])
  })

  it('9: INVALID_RECORD maps RecordErrors to per-record errors; the rest of the batch fails with the batch error', async () => {
    const w = world({ producer: { 'batch.size': 16384, 'linger.ms': 20 } })
    await warm(w)
    const outs = [w.send('t'), w.send('t', { poison: true }), w.send('t')]
    await finish(w)
    expect(outs.map((o) => o.status)).toEqual(['failed', 'failed', 'failed'])
    expect(outs[1]!.error!.name).toBe('InvalidRecordException')
    expect(outs[1]!.error!.message).toMatch(/record 1 of the batch/)
    expect(outs[0]!.error!.message).not.toMatch(/record 0 of the batch/)
    const next = w.send('t')
    await finish(w)
    expect(next.status).toBe('acked')
  })

  it('10 (idempotent part; the 20 ms AddPartitions retry needs the transactional producer): CONCURRENT_TRANSACTIONS from Produce is retried with the same sequence', async () => {
    const w = world()
    await warm(w)
    w.cluster.script = onceFor([1], 'CONCURRENT_TRANSACTIONS')
    const o = w.send('t')
    await finish(w)
    expect(o.status).toBe('acked')
    expect(w.cluster.partition('t', 0).log.at(-1)!.baseSequence).toBe(1)
  })

  it('11 (idempotent part; coordinator fencing needs the transactional producer): INVALID_PRODUCER_EPOCH from Produce fails the batch, bumps, and later sends go through', async () => {
    const w = world()
    await warm(w)
    w.cluster.script = onceFor([1], 'INVALID_PRODUCER_EPOCH')
    const bad = w.send('t')
    expect(await w.settle()).toBe(true)
    expect(bad.status).toBe('failed')
    expect(bad.error!.mayHaveBeenWritten).toBe(false)
    const next = w.send('t')
    await finish(w)
    expect(next.status).toBe('acked')
    expect(w.producer.state.transactionState).toBe('READY')
    expect(w.producer.state.producerEpoch).toBe(1)
  })

  it('12 (needs the transactional producer for abort; today: the idempotent analogue) a timed-out batch bumps the epoch and the producer continues', async () => {
    const w = world({ producer: { 'request.timeout.ms': 1000, 'delivery.timeout.ms': 1000 } })
    await warm(w)
    w.cluster.script = ({ baseSequence, epoch }) => (epoch === 0 && baseSequence === 1 ? { error: 'NOT_ENOUGH_REPLICAS' } : null)
    const timedOut = w.send('t')
    expect(await w.settle()).toBe(true)
    expect(timedOut.error!.name).toBe('TimeoutException')
    w.cluster.script = null
    const next = w.send('t')
    await finish(w)
    expect(next.status).toBe('acked')
    expect(w.producer.state.producerEpoch).toBe(1)
    expect(logOf(w)).toEqual([0, 2])
  })

  it('13 (TV2 EndTxn needs the transactional producer; today: epoch overflow) at Short.MAX_VALUE a bump takes a new producer id and restarts sequences', async () => {
    const w = world()
    const realInit = w.cluster.handle.bind(w.cluster)
    let inits = 0
    w.cluster.handle = (node, frame) => {
      const res = realInit(node, frame)
      // The first InitProducerId answer is rewritten to epoch 32767 (offset of the int16 epoch: header 4+4+1, throttle 4, error 2, id 8).
      if (res && ((frame[4]! << 8) | frame[5]!) === 22 && inits++ === 0) new DataView(res.buffer, res.byteOffset).setInt16(res.length - 3, 32767)
      return res
    }
    await warm(w)
    expect(w.producer.state.producerEpoch).toBe(32767)
    w.cluster.script = ({ baseSequence, epoch }) => (epoch === 32767 && baseSequence === 1 ? { error: 'OUT_OF_ORDER_SEQUENCE_NUMBER' } : null)
    const o = w.send('t')
    await finish(w)
    expect(o.status).toBe('acked')
    const last = w.cluster.partition('t', 0).log.at(-1)!
    expect(last.producerId).not.toBe(w.cluster.partition('t', 0).log[0]!.producerId)
    expect([last.epoch, last.baseSequence]).toEqual([0, 0])
  })

  it('14: a broker dies with requests in flight, then NOT_ENOUGH_REPLICAS and duplicates: no fatal error, a 6-partition burst completes in order', async () => {
    const w = world({ model: { brokers: 3, topics: { t: 6 } }, producer: { 'max.in.flight.requests.per.connection': 5, 'linger.ms': 1 } })
    for (let p = 0; p < 6; p++) await warm(w, 't', p)
    w.cluster.faults = { ...w.cluster.faults, notEnoughReplicas: 0.2, notEnoughReplicasAfterAppend: 0.2 }
    w.cluster.faultsOn = true
    const outs = Array.from({ length: 60 }, (_, i) => w.send('t', { partition: i % 6 }))
    await w.clock.advance(3)
    w.cluster.killBroker(1)
    w.net.severNode(1)
    await w.clock.advance(2000)
    w.cluster.faultsOn = false
    w.cluster.reviveBroker(1)
    await finish(w)
    expect(outs.every((o) => o.status === 'acked')).toBe(true)
    expect(w.producer.state.transactionState).toBe('READY')
    expect(w.cluster.duplicates).toBeGreaterThan(0)
  })

  it('15: a topic missing from metadata for a while keeps its sequence state', async () => {
    const w = world({ producer: { 'metadata.max.age.ms': 100 } })
    await warm(w); await warm(w)
    w.cluster.hiddenTopics.add('t')
    const during = [w.send('t'), w.send('t')]
    await w.clock.advance(3000)
    w.cluster.hiddenTopics.delete('t')
    await finish(w)
    expect(during.every((o) => o.status === 'acked')).toBe(true)
    expect(w.cluster.partition('t', 0).log.map((b) => [b.epoch, b.baseSequence])).toEqual([[0, 0], [0, 1], [0, 2], [0, 3]])
  })
})

describe('send(record, callback): Java\'s callback form', () => {
  const utf8 = new TextEncoder()

  /** Runs `f` with queueMicrotask catching what its tasks throw, so a rethrown callback error is seen, not reported as uncaught. */
  async function catchingMicrotasks(f: (thrown: unknown[]) => Promise<void>): Promise<void> {
    const original = globalThis.queueMicrotask
    const thrown: unknown[] = []
    globalThis.queueMicrotask = (task) => original(() => { try { task() } catch (e) { thrown.push(e) } })
    try { await f(thrown) } finally { globalThis.queueMicrotask = original }
  }

  it('calls back once per record with its metadata, in partition order, and returns nothing', async () => {
    const w = world({ producer: { 'batch.size': 16384, 'linger.ms': 5 } })
    const calls: Array<{ offset: bigint | undefined; error: Error | null }> = []
    const results = Array.from({ length: 5 }, (_, i) => w.producer.send({ topic: 't', value: utf8.encode(`v${i}|`) }, (md, e) => {
      calls.push({ offset: md?.offset, error: e })
    }))
    expect(results).toEqual([undefined, undefined, undefined, undefined, undefined])
    expect(calls).toEqual([])
    await w.clock.run({ until: w.clock.now() + 5000, done: () => calls.length === 5 })
    expect(calls).toEqual([0n, 1n, 2n, 3n, 4n].map((offset) => ({ offset, error: null })))
    expect(logOf(w)).toEqual([0, 1, 2, 3, 4])
  })

  it('a callback that throws leaves the rest of its batch and the producer working; its error is rethrown on its own', async () => {
    await catchingMicrotasks(async (thrown) => {
      const w = world({ producer: { 'batch.size': 16384, 'linger.ms': 5 } })
      const acked: number[] = []
      for (let i = 0; i < 4; i++) {
        w.producer.send({ topic: 't', value: utf8.encode(`v${i}|`) }, (md) => {
          if (i === 1) throw new Error('the application\'s callback failed')
          acked.push(Number(md!.offset))
        })
      }
      await w.clock.run({ until: w.clock.now() + 5000, done: () => acked.length === 3 })
      expect(acked).toEqual([0, 2, 3])
      expect(thrown.map((e) => (e as Error).message)).toEqual(['the application\'s callback failed'])
      let after: bigint | undefined
      w.producer.send({ topic: 't', value: utf8.encode('v4|') }, (md) => { after = md!.offset })
      await w.clock.run({ until: w.clock.now() + 5000, done: () => after !== undefined })
      expect(after).toBe(4n)
      expect(logOf(w)).toEqual([0, 1, 2, 3, 4])
    })
  })

  it('a record refused inside send() is called back after send() returned, as not written', async () => {
    const w = world()
    await warm(w)
    let returned = false
    const got: Array<{ error: Error | null; returned: boolean }> = []
    w.producer.send({ topic: 't', partition: 3, value: 'x' }, (_md, e) => { got.push({ error: e, returned }) })
    returned = true
    await w.clock.advance(1)
    expect(got).toHaveLength(1)
    expect(got[0]!.returned).toBe(true)
    expect(got[0]!.error).toBeInstanceOf(KafkaEdgeError)
    expect(got[0]!.error!.message).toMatch(/partition 3 of t does not exist/)
    expect((got[0]!.error as { mayHaveBeenWritten?: boolean }).mayHaveBeenWritten).toBe(false)
  })

  it('a record the broker refuses (INVALID_RECORD) is called back with the error and no metadata', async () => {
    const w = world()
    await warm(w)
    const got: Array<[unknown, Error | null]> = []
    w.producer.send({ topic: 't', value: '\u0000poison v1|' }, (md, e) => { got.push([md, e]) })
    await w.clock.run({ until: w.clock.now() + 5000, done: () => got.length === 1 })
    expect(got[0]![0]).toBeNull()
    expect(got[0]![1]).toBeInstanceOf(KafkaEdgeError)
    expect((got[0]![1] as { mayHaveBeenWritten?: boolean }).mayHaveBeenWritten).toBe(false)
  })

  it('a callback that is not a function is a ConfigException thrown by send()', () => {
    const w = world()
    expect(() => w.producer.send({ topic: 't', value: 'x' }, { onCompletion() {} } as never)).toThrow(ConfigException)
  })
})
