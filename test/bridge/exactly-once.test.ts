// Exactly once through the relay: the relay drops connections after a Produce reached the broker but
// before its response came back (the case that makes a non-idempotent producer duplicate), and the
// Java reader must see every acknowledged record once, in send order per partition.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Bridge } from '../../src/bridge/index.js'
import type { RecordMetadata } from '../../src/edge/index.js'
import { createTopic, readTopic, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { relayCluster, startRelay, wsProducer } from './helpers.js'

let cluster: Cluster
const bridges: Bridge[] = []
beforeAll(async () => { cluster = await relayCluster() })
afterAll(async () => { await Promise.all(bridges.map((b) => b.close())) })

const enc = new TextEncoder()
const dec = new TextDecoder()

async function runFaulty(faults: Record<string, unknown>, n: number, partitions: number) {
  const bridge = await startRelay(cluster, { faults: { enabled: true, ...faults } }, { env: { KAFKA_EDGE_BRIDGE_FAULTS: '1' } })
  bridges.push(bridge)
  const topic = uniqueTopic('relay-eos')
  await createTopic(cluster, topic, { partitions })
  const p = wsProducer(bridge, { 'linger.ms': 2, 'batch.size': 1024, 'retry.backoff.ms': 20, 'request.timeout.ms': 5000 })
  const sends: Array<Promise<RecordMetadata | Error>> = []
  for (let i = 0; i < n; i++) {
    sends.push(p.send({ topic, key: enc.encode(`k${i % 64}`), value: enc.encode(String(i)) }).catch((e: Error) => e))
    // Paced so that the run is many small Produce requests, not a few big ones: more requests, more faults.
    if (i % 100 === 99) await new Promise((r) => setTimeout(r, 3))
  }
  const results = await Promise.all(sends)
  await p.close()
  const read = await readTopic(cluster, topic, { isolation: 'read_uncommitted', timeoutMs: 60_000 })
  const seen = new Map<number, number>()
  for (const r of read) { const i = Number(dec.decode(r.value!)); seen.set(i, (seen.get(i) ?? 0) + 1) }
  const duplicates = [...seen.values()].filter((c) => c > 1).length
  const acked = results.map((r, i) => (r instanceof Error ? -1 : i)).filter((i) => i >= 0)
  const ackedMissing = acked.filter((i) => !seen.has(i)).length
  // Per key (hence per partition) the record indexes must rise with the offset.
  let orderViolations = 0
  const lastByKey = new Map<string, number>()
  for (const r of read) {
    const i = Number(dec.decode(r.value!))
    const k = `${r.partition}/${i % 64}`
    if ((lastByKey.get(k) ?? -1) > i) orderViolations++
    lastByKey.set(k, i)
  }
  const failed = results.filter((r) => r instanceof Error) as Error[]
  console.log(JSON.stringify({ faults, frames: bridge.metrics.get('kafka_edge_bridge_frames_total', { direction: 'in' }), connections: bridge.metrics.get('kafka_edge_bridge_connections_total'), drops: bridge.metrics.get('kafka_edge_bridge_faults_total', { kind: 'drop_produce_response' }), closes: bridge.metrics.get('kafka_edge_bridge_faults_total', { kind: 'close_on_frame' }), duplicates, ackedMissing, orderViolations, failed: failed.length }))
  return { bridge, read, duplicates, ackedMissing, orderViolations, failed, acked: acked.length }
}

describe('exactly once through relay fault injection', () => {
  it('dropping every 5th Produce response after the broker appended it: 0 duplicates, 0 acknowledged-missing, order kept', async () => {
    const r = await runFaulty({ dropProduceResponseEvery: 5 }, 20_000, 3)
    const drops = r.bridge.metrics.get('kafka_edge_bridge_faults_total', { kind: 'drop_produce_response' })
    expect(drops).toBeGreaterThan(10)
    expect(r.failed.map((e) => e.message).slice(0, 3)).toEqual([])
    expect(r.acked).toBe(20_000)
    expect(r.duplicates).toBe(0)
    expect(r.ackedMissing).toBe(0)
    expect(r.orderViolations).toBe(0)
    expect(r.read).toHaveLength(20_000)
  }, 240_000)

  it('closing every connection at its 15th frame and delaying responses 3 ms: still exactly once, in order', async () => {
    const r = await runFaulty({ closeOnFrame: 15, delayMs: 3 }, 10_000, 2)
    expect(r.bridge.metrics.get('kafka_edge_bridge_faults_total', { kind: 'close_on_frame' })).toBeGreaterThan(0)
    expect(r.failed.map((e) => e.message).slice(0, 3)).toEqual([])
    expect(r.duplicates).toBe(0)
    expect(r.ackedMissing).toBe(0)
    expect(r.orderViolations).toBe(0)
    expect(r.read).toHaveLength(10_000)
  }, 240_000)

  it('fault settings are inert without KAFKA_EDGE_BRIDGE_FAULTS=1', async () => {
    const bridge = await startRelay(cluster, { faults: { enabled: true, dropProduceResponseEvery: 1 } }, { env: {} })
    bridges.push(bridge)
    const topic = uniqueTopic('relay-nofault')
    await createTopic(cluster, topic)
    const p = wsProducer(bridge)
    await Promise.all(Array.from({ length: 100 }, (_, i) => p.send({ topic, value: String(i) })))
    await p.close()
    expect(bridge.metrics.get('kafka_edge_bridge_faults_total', { kind: 'drop_produce_response' })).toBe(0)
  })
})
