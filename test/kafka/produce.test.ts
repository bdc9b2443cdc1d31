import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createProducer, type ProduceRequestEvent, type Producer, type RecordMetadata } from '../../src/edge/index.js'
import { tcp } from '../../src/edge/node.js'
import { bs, createTopic, dumpBatches, ensureCluster, partitionsForKeys, readTopic, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { mixedRecords, rng, sameBytes, toProducerRecord } from '../helpers/records.js'

let cluster: Cluster
beforeAll(async () => { cluster = await ensureCluster({ nodes: 1 }) })

function producer(extra: Record<string, unknown> = {}): Producer {
  return createProducer({ 'bootstrap.servers': bs(cluster), transport: tcp(), ...extra })
}

describe('first produce to a real Kafka 4.4 broker', () => {
  let p: Producer
  afterAll(async () => { await p?.close() })

  it('10,000 mixed-shape records come back byte-identical from the Java reader, each partition in send order', async () => {
    const topic = uniqueTopic('mixed')
    await createTopic(cluster, topic, { partitions: 6 })
    p = producer()
    const records = mixedRecords(10_000, 42)
    const started = Date.now()
    const acks = await Promise.all(records.map((m) => p.send(toProducerRecord(topic, m))))
    expect(acks).toHaveLength(10_000)

    const read = await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected: 10_000, timeoutMs: 60_000 })
    expect(read).toHaveLength(10_000)
    const byPosition = new Map(read.map((r) => [`${r.partition}:${r.offset}`, r]))
    const lastIndexByPartition = new Map<number, number>()
    for (let i = 0; i < records.length; i++) {
      const ack: RecordMetadata = acks[i]!
      const got = byPosition.get(`${ack.partition}:${ack.offset}`)
      expect(got, `record ${i} at ${ack.partition}:${ack.offset}`).toBeDefined()
      const want = records[i]!
      expect(sameBytes(got!.key, want.key), `key of record ${i}`).toBe(true)
      expect(sameBytes(got!.value, want.value), `value of record ${i}`).toBe(true)
      expect(got!.headers.map((h) => h.key)).toEqual(want.headers.map((h) => h.key))
      for (let h = 0; h < want.headers.length; h++) expect(sameBytes(got!.headers[h]!.value, want.headers[h]!.value)).toBe(true)
      if (want.timestamp !== undefined) expect(got!.timestamp).toBe(want.timestamp)
      else expect(got!.timestamp).toBeGreaterThanOrEqual(started - 1000)
      expect(got!.timestamp).toBe(ack.timestamp)
      // Send order per partition: offsets grow with the send index.
      const prev = lastIndexByPartition.get(ack.partition)
      if (prev !== undefined) expect(BigInt(ack.offset) > BigInt(acks[prev]!.offset)).toBe(true)
      lastIndexByPartition.set(ack.partition, i)
    }

    const batches = await dumpBatches(cluster, topic)
    expect(batches.length).toBeGreaterThan(6)
    for (const b of batches) {
      expect(b.magic).toBe(2)
      expect(b.crcValid).toBe(true)
      expect(b.isControl).toBe(false)
      // Idempotence is on by default: every batch carries a producer id and a sequence.
      expect(b.producerId).toBeGreaterThanOrEqual(0)
      expect(b.baseSequence).toBeGreaterThanOrEqual(0)
    }
    expect(batches.reduce((n, b) => n + b.count, 0)).toBe(10_000)
  })

  it('keyed records land on the partition the Java producer chooses (1,000 keys)', async () => {
    const topic = uniqueTopic('keyed')
    await createTopic(cluster, topic, { partitions: 7 })
    p ??= producer()
    const r = rng(7)
    const keys = Array.from({ length: 1000 }, (_, i) => {
      const k = new Uint8Array(1 + Math.floor(r() * 40))
      for (let j = 0; j < k.length; j++) k[j] = Math.floor(r() * 256)
      if (i % 3 === 0) return new TextEncoder().encode(`user-${i}`)
      return k
    })
    const acks = await Promise.all(keys.map((key) => p.send({ topic, key, value: 'v' })))
    const java = await partitionsForKeys(keys, 7)
    expect(acks.map((a) => a.partition)).toEqual(java)
  })

  it('keyless records stick to a partition per batch instead of spraying every record', async () => {
    const topic = uniqueTopic('sticky')
    await createTopic(cluster, topic, { partitions: 6 })
    const q = producer({ 'linger.ms': 50 })
    try {
      const acks = await Promise.all(Array.from({ length: 200 }, (_, i) => q.send({ topic, value: `small-${i}` })))
      // 200 tiny records fit in one batch: all on one partition.
      expect(new Set(acks.map((a) => a.partition)).size).toBe(1)
      const big = 'x'.repeat(4000)
      const acks2 = await Promise.all(Array.from({ length: 100 }, () => q.send({ topic, value: big })))
      // 400 KB of keyless records spread over several partitions, a batch.size worth at a time.
      expect(new Set(acks2.map((a) => a.partition)).size).toBeGreaterThan(1)
    } finally {
      await q.close()
    }
  })

  it('flush() waits for every record sent before it, and close() leaves nothing pending', async () => {
    const topic = uniqueTopic('flush')
    await createTopic(cluster, topic, { partitions: 2 })
    const q = producer({ 'linger.ms': 1000 })
    let acked = 0
    const sends = Array.from({ length: 50 }, (_, i) => q.send({ topic, value: `f${i}` }).then(() => { acked++ }))
    await q.flush()
    expect(acked).toBe(50)
    await Promise.all(sends)
    await q.close()
    await expect(q.send({ topic, value: 'late' })).rejects.toMatchObject({ name: 'ClosedError' })
  })

  for (const compression of ['none', 'lz4'] as const) {
    it(`a batch the topic refuses as too large (MESSAGE_TOO_LARGE, ${compression}) is split from its own bytes and lands whole, in order, once`, async () => {
      const topic = uniqueTopic(`split-${compression}`)
      await createTopic(cluster, topic, { partitions: 1, configs: { 'max.message.bytes': '3000' } })
      const sentSizes: number[] = []
      const q = producer({
        'compression.type': compression, 'linger.ms': 100, 'batch.size': 16384,
        observer: { onProduceRequest: (r: ProduceRequestEvent) => { for (const b of r.batches) sentSizes.push(b.sizeInBytes) } },
      })
      try {
        // One value array refilled per record (incompressible bytes): send() must have taken a copy.
        const r = rng(11)
        const value = new Uint8Array(60)
        const expected: Uint8Array[] = []
        const acks = await Promise.all(Array.from({ length: 300 }, (_, i) => {
          for (let j = 0; j < value.length; j++) value[j] = Math.floor(r() * 256)
          expected.push(value.slice())
          return q.send({ topic, key: `k${i}`, value, headers: { n: String(i) } })
        }))
        value.fill(0)
        // The first request carried a batch over the topic's limit: the broker refused it.
        expect(Math.max(...sentSizes)).toBeGreaterThan(3000)
        expect(acks.map((a) => Number(a.offset))).toEqual(Array.from({ length: 300 }, (_, i) => i))
        const read = await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected: 300 })
        expect(read).toHaveLength(300)
        read.forEach((rec, i) => {
          expect(sameBytes(rec.value, expected[i]!), `value of record ${i}`).toBe(true)
          expect(new TextDecoder().decode(rec.key!)).toBe(`k${i}`)
          expect(new TextDecoder().decode(rec.headers[0]!.value!)).toBe(String(i))
        })
        const batches = await dumpBatches(cluster, topic)
        expect(batches.length).toBeGreaterThan(1)
        for (const b of batches) {
          expect(b.size).toBeLessThanOrEqual(3000)
          expect(b.crcValid).toBe(true)
          expect(b.producerEpoch).toBe(0)
          expect(b.compressCodec.toLowerCase()).toBe(compression)
        }
        // The pieces kept the refused batch's sequences: no gap, no bump.
        for (let i = 1; i < batches.length; i++) expect(batches[i]!.baseSequence).toBe(batches[i - 1]!.lastSequence + 1)
      } finally {
        await q.close()
      }
    })
  }

  it('acks=1 and acks=0 (idempotence then off by default): acks=0 resolves without an offset', async () => {
    const topic = uniqueTopic('acks')
    await createTopic(cluster, topic, { partitions: 1 })
    const one = producer({ acks: 1 })
    const zero = producer({ acks: '0' })
    try {
      expect(one.state.transactionState, 'acks=1 turns idempotence off').toBeNull()
      const md1 = await one.send({ topic, value: 'a1' })
      expect(md1.offset).toBe(0n)
      const md0 = await zero.send({ topic, value: 'a0' })
      expect(md0.offset).toBe(-1n)
      await zero.flush()
      const read = await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected: 2 })
      expect(read.map((r) => new TextDecoder().decode(r.value!))).toEqual(['a1', 'a0'])
      const batches = await dumpBatches(cluster, topic)
      expect(batches.every((b) => b.producerId === -1)).toBe(true)
    } finally {
      await one.close(); await zero.close()
    }
  })

  it('bad input gets typed errors that say what to do, and nothing hangs', async () => {
    const topic = uniqueTopic('bad')
    await createTopic(cluster, topic, { partitions: 2 })
    const q = producer({ 'max.block.ms': 1500, 'max.request.size': 10_000 })
    try {
      await expect(q.send({ topic, value: new Uint8Array(20_000) })).rejects.toMatchObject({ name: 'RecordTooLargeException', mayHaveBeenWritten: false })
      await expect(q.send({ topic: 'no such topic!', value: 'x' })).rejects.toMatchObject({ name: 'ConfigException' })
      await expect(q.send({ topic, partition: 5, value: 'x' })).rejects.toThrow(/has 2 partitions/)
      // The test brokers run with auto.create.topics.enable=false: the error says the topic was not created and why it may not be.
      await expect(q.send({ topic: uniqueTopic('missing'), value: 'x' })).rejects.toMatchObject({
        name: 'TimeoutException', message: expect.stringMatching(/not present in metadata .*UNKNOWN_TOPIC_OR_PARTITION and did not create it \(auto\.create\.topics\.enable=false/),
      })
      // The producer still works after all of that.
      expect((await q.send({ topic, value: 'ok' })).offset).toBeGreaterThanOrEqual(0n)
    } finally {
      await q.close()
    }
    expect(() => producer({ 'enable.idempotence': true, acks: 1 })).toThrow(/acks must be all/)
    expect(() => producer({ 'linger.ms': -1 })).toThrow(/linger.ms/)
    expect(() => producer({ lingerMs: 5, 'linger.ms': 6 })).toThrow(/given twice/)
    expect(() => producer({ 'lingr.ms': 5 })).toThrow(/unknown producer setting/)
  })
})
