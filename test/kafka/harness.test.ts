// The harness itself, against real Apache Kafka 4.4 (KRaft) and the Java clients only: no kafka-edge
// code is involved, so a failure here is a harness (or environment) problem.
import * as net from 'node:net'
import { describe, it, expect, beforeAll } from 'vitest'
import * as harness from '../../scripts/kafka/kafka.mjs'
import {
  ensureCluster, createTopic, readTopic, dumpBatches, partitionsForKeys, leaderOf, describeTopic, killNode, restartNode,
  finalizedFeatures, probeNode, produceJava, uniqueTopic, waitFor, endOffsets, groupOffsets, bs, type Cluster,
} from '../helpers/kafka.js'

const te = new TextEncoder()
const bytes = (s: string) => te.encode(s)

describe('1-node default cluster', () => {
  let c: Cluster
  beforeAll(async () => { c = await ensureCluster() })

  it('describes itself and reuses a healthy cluster', async () => {
    expect(c.name).toBe('default')
    expect(c.nodes).toHaveLength(1)
    expect(c.bootstrap).toBe(`127.0.0.1:${c.nodes[0]!.port}`)
    expect(c.transactionVersion).toBe(2)
    const again = await ensureCluster()
    expect(again.clusterId).toBe(c.clusterId)
    expect(again.nodes[0]!.pid).toBe(c.nodes[0]!.pid)
    const p = await probeNode(c)
    expect(p.clusterId).toBe(c.clusterId)
    expect(p.brokers.map((b) => b.id)).toEqual([1])
    expect(p.finalizedFeatures['transaction.version']).toBe(2)
    expect((await finalizedFeatures(c))['transaction.version']).toBe(2)
  })

  it('reads back what the Java producer wrote, null distinct from empty', async () => {
    const topic = uniqueTopic('harness')
    await createTopic(c, topic, { partitions: 3 })
    const md = await produceJava(c, topic, [
      { key: 'a', value: new Uint8Array(0), headers: [{ key: 'h-null', value: null }, { key: 'h-empty', value: new Uint8Array(0) }, { key: 'h', value: 'v' }], partition: 0 },
      { key: null, value: 'x', partition: 0 },
      { key: new Uint8Array(0), value: null, partition: 2, timestamp: 1_700_000_000_000 },
    ])
    expect(md.map((m) => [m.partition, m.offset])).toEqual([[0, 0], [0, 1], [2, 0]])
    const recs = await readTopic(c, topic, { expected: 3 })
    expect(recs).toHaveLength(3)
    const [r0, r1, r2] = recs
    expect(r0!.key).toEqual(bytes('a'))
    expect(r0!.value).toEqual(new Uint8Array(0))
    expect(r0!.headers).toEqual([{ key: 'h-null', value: null }, { key: 'h-empty', value: new Uint8Array(0) }, { key: 'h', value: bytes('v') }])
    expect(r1!.key).toBeNull()
    expect(r1!.value).toEqual(bytes('x'))
    expect(r2!.partition).toBe(2)
    expect(r2!.key).toEqual(new Uint8Array(0))
    expect(r2!.value).toBeNull()
    expect(r2!.timestamp).toBe(1_700_000_000_000)
    expect(r2!.timestampType).toBe('CreateTime')
    expect(await endOffsets(c, topic)).toEqual({ 0: 2, 1: 0, 2: 1 })

    const batches = await dumpBatches(c, topic)
    // Which partitions DumpLogSegments showed, not only how many batches: a short read names its partition.
    expect([...new Set(batches.map((b) => b.partition))]).toEqual([0, 2])
    for (const b of batches) {
      expect(b.magic).toBe(2)
      expect(b.crcValid).toBe(true)
      expect(b.isControl).toBe(false)
      expect(b.compressCodec).toBe('none')
      expect(b.producerId).toBeGreaterThanOrEqual(0) // the Java producer is idempotent by default
      expect(b.records).toHaveLength(b.count)
    }
    expect(batches.reduce((n, b) => n + b.count, 0)).toBe(3)
    expect(batches.find((b) => b.partition === 0)!.records[0]!.headerKeys).toEqual(['h-null', 'h-empty', 'h'])
  })

  it('shows transactions: read_committed hides aborted records, control batches carry COMMIT/ABORT', async () => {
    const topic = uniqueTopic('harness-tx')
    await createTopic(c, topic, { partitions: 1 })
    await produceJava(c, topic, [{ value: 'committed-1' }, { value: 'committed-2' }], { transactionalId: `${topic}-tx` })
    await produceJava(c, topic, [{ value: 'aborted' }], { transactionalId: `${topic}-tx`, abort: true })
    await produceJava(c, topic, [{ value: 'plain' }], { config: { 'compression.type': 'lz4' } })
    const committed = await readTopic(c, topic, { isolation: 'read_committed', expected: 3 })
    expect(committed.map((r) => new TextDecoder().decode(r.value!))).toEqual(['committed-1', 'committed-2', 'plain'])
    const all = await readTopic(c, topic, { isolation: 'read_uncommitted', expected: 4 })
    expect(all.map((r) => new TextDecoder().decode(r.value!))).toEqual(['committed-1', 'committed-2', 'aborted', 'plain'])

    const batches = await dumpBatches(c, topic)
    const control = batches.filter((b) => b.isControl)
    expect(control.map((b) => b.controlType)).toEqual(['COMMIT', 'ABORT'])
    for (const b of control) { expect(b.isTransactional).toBe(true); expect(b.baseSequence).toBe(-1) }
    const data = batches.filter((b) => !b.isControl)
    // the two committed records may share a batch or not, depending on linger timing
    expect(data.map((b) => b.isTransactional)).toEqual([...data.slice(0, -1).map(() => true), false])
    expect(data.reduce((n, b) => n + b.count, 0)).toBe(4)
    expect(data.at(-1)!.compressCodec).toBe('lz4')
    // transaction.version 2 (KIP-890): the coordinator bumps the epoch with every end marker
    expect(control[0]!.producerEpoch).toBe(data[0]!.producerEpoch + 1)
  })

  it('computes the Java default partitioner for keys, in one JVM', async () => {
    const keys = Array.from({ length: 40 }, (_, i) => bytes(`key-${i}`))
    keys.push(new Uint8Array(0), new Uint8Array([0xff, 0x00, 0x80]))
    const parts = await partitionsForKeys(keys, 7)
    expect(parts).toHaveLength(keys.length)
    for (const p of parts) { expect(p).toBeGreaterThanOrEqual(0); expect(p).toBeLessThan(7) }
    expect(new Set(parts).size).toBeGreaterThan(3)
    // ground truth from the Java producer itself: where did it put the same keys?
    const topic = uniqueTopic('harness-keys')
    await createTopic(c, topic, { partitions: 7 })
    const md = await produceJava(c, topic, keys.map((key) => ({ key, value: 'v' })))
    expect(md.map((m) => m.partition)).toEqual(parts)
    expect(await partitionsForKeys([bytes('key-0')], 7)).toEqual([parts[0]])
  })

  it('reports a group with no commits as empty', async () => {
    expect(await groupOffsets(c, uniqueTopic('no-such-group'))).toEqual([])
  })
})

describe('3-node cluster', () => {
  let c: Cluster
  beforeAll(async () => { c = await ensureCluster({ nodes: 3 }) })

  it('fails a leader over on kill -9 and takes the node back after restart', async () => {
    expect(c.nodes.map((n) => n.id)).toEqual([1, 2, 3])
    expect(new Set(c.nodes.map((n) => n.port)).size).toBe(3)
    const p = await probeNode(c, 2)
    expect(p.brokers.map((b) => b.id).sort()).toEqual([1, 2, 3])

    const topic = uniqueTopic('harness-rf3')
    await createTopic(c, topic, { partitions: 1, replicationFactor: 3, minIsr: 2 })
    const [state] = await describeTopic(c, topic)
    expect(state!.replicas.sort()).toEqual([1, 2, 3])
    expect(state!.isr.sort()).toEqual([1, 2, 3])
    const leader = await leaderOf(c, topic, 0)
    expect([1, 2, 3]).toContain(leader)
    await produceJava(c, topic, [{ value: 'before' }], { config: { acks: 'all' } })

    await killNode(c, leader)
    const next = await waitFor(async () => { const l = await leaderOf(c, topic, 0); return l >= 0 && l !== leader ? l : 0 }, { timeoutMs: 60_000, what: 'a new leader' })
    expect(next).not.toBe(leader)
    expect(bs(c).split(',')).toHaveLength(2)
    // two replicas left = min.insync.replicas: acks=all still works
    await produceJava(c, topic, [{ value: 'during' }], { config: { acks: 'all' } })

    await restartNode(c, leader)
    await waitFor(async () => (await describeTopic(c, topic))[0]!.isr.length === 3, { timeoutMs: 60_000, what: `node ${leader} back in the ISR` })
    const recs = await readTopic(c, topic, { expected: 2 })
    expect(recs.map((r) => new TextDecoder().decode(r.value!))).toEqual(['before', 'during'])
    // every replica holds the same batches
    const copies = await dumpBatches(c, topic, { from: 'all' })
    expect(new Set(copies.map((b) => b.node))).toEqual(new Set([1, 2, 3]))
    for (const id of [1, 2, 3]) expect(copies.filter((b) => b.node === id).map((b) => b.crc)).toEqual(copies.filter((b) => b.node === next).map((b) => b.crc))
  })
})

describe('restart of a node whose port a client took while it was down', () => {
  it('waits for the port to come free and keeps the node\'s address', async () => {
    const c = await ensureCluster({ name: 'harness-rebind' })
    const port = c.nodes[0]!.port
    await killNode(c, 1)
    // Stands in for a client connection that got the node's port as its local port meanwhile.
    // (The killed process may hold its listening socket for a moment yet.)
    const squatter = await waitFor(() => new Promise<net.Server | null>((resolve) => {
      // Whatever connects to it (the restarting node's own clients) is dropped, so close() can finish.
      const srv = net.createServer((sock) => sock.destroy())
      srv.once('error', () => resolve(null))
      srv.listen(port, '127.0.0.1', () => resolve(srv))
    }), { timeoutMs: 10_000, intervalMs: 100, what: `port ${port} to be free after the kill` })
    const restarted = restartNode(c, 1)
    let done = false
    void restarted.then(() => { done = true }, () => { done = true })
    // A start takes about 2 s here; the squatter stays long enough for the first to fail on the port.
    await new Promise((r) => setTimeout(r, 8000))
    expect(done).toBe(false) // the first start failed to bind; the harness waits
    await new Promise<void>((r) => squatter.close(() => r()))
    await restarted
    expect(c.nodes[0]!.port).toBe(port)
    expect((await probeNode(c)).brokers.map((b) => b.id)).toEqual([1])
  })
})

describe('SASL cluster with transaction.version 1', () => {
  let c: Cluster
  beforeAll(async () => { c = await ensureCluster({ sasl: true, tv: 1 }) })

  it('finalizes transaction.version 1', async () => {
    expect(c.transactionVersion).toBe(1)
    expect((await finalizedFeatures(c))['transaction.version']).toBe(1)
    expect((await probeNode(c)).finalizedFeatures['transaction.version']).toBe(1)
    const topic = uniqueTopic('harness-tv1')
    await createTopic(c, topic)
    await produceJava(c, topic, [{ value: 'a' }], { transactionalId: `${topic}-tx` })
    const [data, marker] = await dumpBatches(c, topic)
    expect(marker!.controlType).toBe('COMMIT')
    expect(marker!.producerEpoch).toBe(data!.producerEpoch) // no per-transaction epoch bump before TV2
  })

  it('authenticates PLAIN and SCRAM users on the SASL listener and rejects a wrong password', async () => {
    expect(c.saslBootstrap).toBe(`127.0.0.1:${c.nodes[0]!.saslPort}`)
    for (const [mech, user, pass] of [['PLAIN', 'admin', 'admin-secret'], ['SCRAM-SHA-256', 'relay', 'relay-secret'], ['SCRAM-SHA-512', 'admin', 'admin-secret']] as const) {
      const out = JSON.parse(await harness.runTool('Admin', ['cluster', c.saslBootstrap!, '--sasl', mech, user, pass]))
      expect(out.clusterId).toBe(c.clusterId)
    }
    await expect(harness.runTool('Admin', ['cluster', c.saslBootstrap!, '--sasl', 'SCRAM-SHA-256', 'relay', 'nope'])).rejects.toThrow(/SaslAuthentication|invalid credentials/)
  })
})
