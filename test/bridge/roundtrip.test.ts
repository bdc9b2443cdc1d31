import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Bridge } from '../../src/bridge/index.js'
import type { RecordMetadata } from '../../src/edge/index.js'
import { createTopic, readTopic, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { mixedRecords, sameBytes, toProducerRecord } from '../helpers/records.js'
import { relayCluster, startRelay, wsProducer } from './helpers.js'

let cluster: Cluster
let bridge: Bridge
beforeAll(async () => {
  cluster = await relayCluster()
  bridge = await startRelay(cluster)
})
afterAll(async () => { await bridge?.close() })

describe('the producer through the relay (WebSocket -> relay -> SASL SCRAM-SHA-512 -> Kafka 4.4)', () => {
  it('100,000 mixed records come back byte-identical from the Java reader, in send order per partition', async () => {
    const topic = uniqueTopic('relay-100k')
    await createTopic(cluster, topic, { partitions: 4 })
    const p = wsProducer(bridge, { 'compression.type': 'lz4' })
    const records = mixedRecords(100_000, 2024)
    const acks: RecordMetadata[] = []
    // Windows of 10k keep the pending promise count modest while the accumulator stays full.
    for (let i = 0; i < records.length; i += 10_000) {
      acks.push(...await Promise.all(records.slice(i, i + 10_000).map((m) => p.send(toProducerRecord(topic, m)))))
    }
    await p.close()
    expect(acks).toHaveLength(100_000)

    const read = await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected: 100_000, timeoutMs: 120_000 })
    expect(read).toHaveLength(100_000)
    const byPosition = new Map(read.map((r) => [`${r.partition}:${r.offset}`, r]))
    const lastOffset = new Map<number, bigint>()
    let mismatches = 0
    for (let i = 0; i < records.length; i++) {
      const ack = acks[i]!
      const got = byPosition.get(`${ack.partition}:${ack.offset}`)
      const want = records[i]!
      const same = got !== undefined && sameBytes(got.key, want.key) && sameBytes(got.value, want.value) &&
        got.headers.length === want.headers.length &&
        want.headers.every((h, j) => got.headers[j]!.key === h.key && sameBytes(got.headers[j]!.value, h.value)) &&
        (want.timestamp === undefined || got.timestamp === want.timestamp)
      if (!same) mismatches++
      const prev = lastOffset.get(ack.partition)
      if (prev !== undefined && BigInt(ack.offset) <= prev) mismatches++
      lastOffset.set(ack.partition, BigInt(ack.offset))
    }
    expect(mismatches).toBe(0)
    // Everything went through the relay: it saw the produce traffic and no refusals.
    expect(bridge.metrics.get('kafka_edge_bridge_frames_total', { direction: 'in' })).toBeGreaterThan(100)
    expect(bridge.metrics.render()).not.toMatch(/kafka_edge_bridge_rejects_total\{/)
  }, 300_000)
})
