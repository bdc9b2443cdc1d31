import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createProducer, loadCore, type Producer } from '../../src/edge/index.js'
import { tcp } from '../../src/edge/node.js'
import { bs, createTopic, dumpBatches, ensureCluster, readTopic, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { mixedRecords, rng, sameBytes, toProducerRecord } from '../helpers/records.js'

const CODECS = ['gzip', 'snappy', 'lz4', 'zstd'] as const
let cluster: Cluster
beforeAll(async () => { cluster = await ensureCluster({ nodes: 1 }) })

describe.each(CODECS)('compression.type=%s against Kafka 4.4', (codec) => {
  const producers: Producer[] = []
  const make = (extra: Record<string, unknown> = {}) => {
    const p = createProducer({ 'bootstrap.servers': bs(cluster), transport: tcp(), 'compression.type': codec, ...extra })
    producers.push(p)
    return p
  }
  afterAll(async () => { await Promise.all(producers.map((p) => p.close())) })

  it('10,000 mixed-shape records read back byte-identical; every batch carries the codec and a valid CRC', async () => {
    const core = await loadCore()
    expect(core.supportsCompression(codec), `the core is built with ${codec}`).toBe(true)
    const topic = uniqueTopic(`c-${codec}`)
    await createTopic(cluster, topic, { partitions: 6 })
    const p = make()
    const records = mixedRecords(10_000, 9)
    const acks = await Promise.all(records.map((m) => p.send(toProducerRecord(topic, m))))
    const read = await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected: records.length, timeoutMs: 60_000 })
    expect(read).toHaveLength(records.length)
    const at = new Map(read.map((r) => [`${r.partition}:${r.offset}`, r]))
    records.forEach((want, i) => {
      const got = at.get(`${acks[i]!.partition}:${acks[i]!.offset}`)!
      expect(got, `record ${i}`).toBeDefined()
      expect(sameBytes(got.key, want.key) && sameBytes(got.value, want.value), `record ${i} bytes`).toBe(true)
      expect(got.headers.length).toBe(want.headers.length)
    })
    const batches = await dumpBatches(cluster, topic)
    expect(batches.length).toBeGreaterThan(0)
    for (const b of batches) {
      expect(b.compressCodec.toLowerCase()).toBe(codec)
      expect(b.crcValid).toBe(true)
    }
    const rate = p.metrics()['compression-rate-avg']!
    expect(rate).toBeGreaterThan(0)
    expect(rate).toBeLessThan(1)
  })

  it('a batch of one record', async () => {
    const topic = uniqueTopic(`c1-${codec}`)
    await createTopic(cluster, topic, { partitions: 1 })
    const md = await make().send({ topic, key: 'only', value: 'one record' })
    expect(md.offset).toBe(0n)
    const [b] = await dumpBatches(cluster, topic)
    expect(b).toMatchObject({ count: 1, crcValid: true })
    expect(b!.compressCodec.toLowerCase()).toBe(codec)
    const [r] = await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected: 1 })
    expect(new TextDecoder().decode(r!.value!)).toBe('one record')
  })

  it('batches are closed against batch.size by the learned compression ratio, so they fill up', async () => {
    const topic = uniqueTopic(`cf-${codec}`)
    await createTopic(cluster, topic, { partitions: 1 })
    const p = make({ 'linger.ms': 20 })
    const r = rng(3)
    const words = ['checkout', 'click', 'view', 'scroll', 'error', 'latency', 'user', 'session']
    // Records arrive in waves, as telemetry does: the ratio is learned as batches close, so later
    // waves are batched with what earlier ones taught.
    for (let wave = 0; wave < 50; wave++) {
      const sends = []
      for (let i = wave * 2000; i < (wave + 1) * 2000; i++) {
        sends.push(p.send({ topic, value: JSON.stringify({ i, event: words[Math.floor(r() * words.length)], ms: Math.floor(r() * 500), path: `/p/${Math.floor(r() * 50)}` }) }))
      }
      await Promise.all(sends)
    }
    const batches = await dumpBatches(cluster, topic)
    const tail = batches.slice(-20)
    // Uncompressed, a 16 KiB batch holds about 16384 / (value + ~10 bytes of record framing) of these
    // records; once the ratio is learned a compressed batch holds well over that and its wire size
    // approaches batch.size.
    const avgValue = (await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected: 100_000, timeoutMs: 60_000 }))
      .slice(-1000).reduce((n, rec) => n + rec.value!.length, 0) / 1000
    const uncompressedCapacity = Math.floor(16384 / (avgValue + 10))
    // Each wave ends in a partial batch whose poorer ratio makes the estimate jump up (Java's
    // estimator deteriorates fast and improves slowly), so partial and pessimistic batches are
    // normal: the batches that closed on the estimate, the larger half, carry the claim.
    const sizes = tail.map((b) => b.size).sort((a, b) => b - a)
    const fullAvg = sizes.slice(0, tail.length / 2).reduce((n, x) => n + x, 0) / (tail.length / 2)
    expect(fullAvg, `tail batch sizes ${tail.map((b) => b.size).join(',')}`).toBeGreaterThan(16384 * 0.45)
    expect(Math.max(...tail.map((b) => b.count))).toBeGreaterThan(1.5 * uncompressedCapacity)
    expect(Math.max(...batches.map((b) => b.size))).toBeLessThanOrEqual(1048576)
    expect(batches.reduce((n, b) => n + b.count, 0)).toBe(100_000)
  })

  it('a batch at max.request.size is accepted by the broker', async () => {
    const topic = uniqueTopic(`cm-${codec}`)
    await createTopic(cluster, topic, { partitions: 1 })
    const maxRequestSize = 256 * 1024
    const p = make({ 'batch.size': maxRequestSize, 'max.request.size': maxRequestSize, 'linger.ms': 200 })
    const r = rng(5)
    // Incompressible values keep the ratio near 1, so the batch closes right at the size limit.
    const values = Array.from({ length: 600 }, () => Uint8Array.from({ length: 1000 }, () => Math.floor(r() * 256)))
    await Promise.all(values.map((value) => p.send({ topic, value })))
    const batches = await dumpBatches(cluster, topic)
    const largest = Math.max(...batches.map((b) => b.size))
    expect(largest).toBeLessThanOrEqual(maxRequestSize)
    expect(largest).toBeGreaterThan(maxRequestSize * 0.9)
    const read = await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected: 600 })
    expect(read.every((x, i) => sameBytes(x.value, values[i]!))).toBe(true)
  })
})
