import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createProducer, type CoordinatorRequestEvent, type Producer } from '../../src/edge/index.js'
import { tcp } from '../../src/edge/node.js'
import { TimeoutException } from '../../src/edge/errors.js'
import { bs, createTopic, endOffsets, ensureCluster, groupOffsets, killNode, readTopic, restartNode, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { rng } from '../helpers/records.js'

const dec = new TextDecoder()
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

describe('transaction coordinator killed (kill -9) during commitTransaction(), 3 nodes', () => {
  let cluster: Cluster
  let p: Producer | undefined
  const killed: number[] = []
  beforeAll(async () => { cluster = await ensureCluster({ name: 'txn3', nodes: 3 }) })
  afterAll(async () => {
    await p?.close({ timeoutMs: 5000 }).catch(() => {})
    for (const id of killed) await restartNode(cluster, id).catch(() => {})
  })

  it('the commit completes after rediscovery (or fails typed and a retried commit completes); read_committed never shows a partial transaction', async () => {
    const topic = uniqueTopic('txn-coordkill')
    await createTopic(cluster, topic, { partitions: 3, replicationFactor: 3, minIsr: 2 })
    // The observer tells which node answers as the transaction coordinator and what was sent.
    const requests: Record<string, number> = {}
    let txnCoordinator = -1
    let onCoordinatorRequest = (_r: CoordinatorRequestEvent) => {}
    p = createProducer({
      'bootstrap.servers': bs(cluster), transport: tcp(), 'transactional.id': `coordkill-${topic}`, 'linger.ms': 0, 'max.block.ms': 15000, 'request.timeout.ms': 10000,
      observer: {
        onCoordinatorRequest: (r) => {
          requests[r.api] = (requests[r.api] ?? 0) + 1
          if (r.api === 'EndTxn' || r.api === 'AddPartitionsToTxn' || r.api === 'InitProducerId') txnCoordinator = r.node
          onCoordinatorRequest(r)
        },
      },
    })
    const txns: Array<{ id: number; values: string[]; committed: boolean }> = []
    await p.initTransactions()
    const runTxn = async (id: number, n: number) => {
      p!.beginTransaction()
      const values = Array.from({ length: n }, (_, j) => `x${id}-${j}`)
      await Promise.all(values.map((value, j) => p!.send({ topic, partition: j % 3, value })))
      txns.push({ id, values, committed: false })
    }
    for (let i = 0; i < 10; i++) { await runTxn(i, 30); await p.commitTransaction(); txns.at(-1)!.committed = true }

    // The transaction whose commit meets the kill.
    await runTxn(10, 300)
    const coordinator = txnCoordinator
    expect(coordinator, 'ten committed transactions named their coordinator').toBeGreaterThanOrEqual(0)
    const pid = cluster.nodes.find((n) => n.id === coordinator)!.pid
    let endTxnSent = 0
    onCoordinatorRequest = ({ api, node }) => {
      if (api === 'EndTxn' && endTxnSent++ === 0) {
        // kill -9 right as the EndTxn leaves for the coordinator.
        expect(node).toBe(coordinator)
        process.kill(pid, 'SIGKILL')
      }
    }
    const started = Date.now()
    let attempts = 0
    const errors: string[] = []
    for (;;) {
      attempts++
      try { await p.commitTransaction(); break } catch (e) {
        errors.push(`${(e as Error).name}: ${(e as Error).message}`)
        // Only a typed, resumable timeout is acceptable; calling commit again resumes it.
        expect(e).toBeInstanceOf(TimeoutException)
        expect(attempts).toBeLessThan(8)
      }
    }
    txns.at(-1)!.committed = true
    const commitMs = Date.now() - started
    await killNode(cluster, coordinator).catch(() => {}) // marks it down for bs(); already dead
    killed.push(coordinator)
    const newCoordinator = txnCoordinator
    expect(newCoordinator).not.toBe(coordinator)
    expect(endTxnSent).toBeGreaterThanOrEqual(2)
    expect(requests.FindCoordinator).toBeGreaterThanOrEqual(2)

    // The producer goes on: more transactions, one aborted, on the surviving nodes.
    for (let i = 11; i < 16; i++) {
      await runTxn(i, 30)
      if (i === 13) await p.abortTransaction()
      else { await p.commitTransaction(); txns.at(-1)!.committed = true }
    }
    console.log(`coordinator node ${coordinator} killed during commit; commit finished after ${commitMs} ms, ${attempts} call(s) [${errors.join(' | ')}], new coordinator ${newCoordinator}, requests ${JSON.stringify(requests)}`)

    const expected = txns.filter((t) => t.committed).flatMap((t) => t.values)
    const read = await readTopic(cluster, topic, { isolation: 'read_committed', expected: expected.length, timeoutMs: 60_000 })
    const seen = new Set(read.map((r) => dec.decode(r.value!)))
    expect(read.length).toBe(expected.length)
    for (const t of txns) {
      const visible = t.values.filter((v) => seen.has(v)).length
      // All or nothing, per transaction.
      expect(visible, `transaction ${t.id}`).toBe(t.committed ? t.values.length : 0)
    }
  }, 240_000)
})

for (const tv of [2, 1] as const) describe(`consume-process-produce exactly once (transaction.version ${tv}), processor killed -9 and restarted mid-stream`, () => {
  let cluster: Cluster
  const children = new Set<ChildProcess>()
  beforeAll(async () => { cluster = await ensureCluster(tv === 2 ? { name: 'txn' } : { name: 'txn-tv1', tv: 1 }) })
  afterAll(() => { for (const c of children) c.kill('SIGKILL') })

  function startProcessor(args: object): {
    child: ChildProcess; lines: string[]; exited: Promise<number | null>; waitLine: (pred: (l: string) => boolean, ms: number) => Promise<string>
  } {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/helpers/eos-processor.ts'), JSON.stringify(args)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    children.add(child)
    const lines: string[] = []
    const listeners = new Set<() => void>()
    let buf = ''
    let stderr = ''
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString()
      let i
      while ((i = buf.indexOf('\n')) >= 0) { lines.push(buf.slice(0, i)); buf = buf.slice(i + 1) }
      for (const l of listeners) l()
    })
    child.stderr!.on('data', (d: Buffer) => { stderr += d.toString() })
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => { children.delete(child); for (const l of listeners) l(); resolve(code) }))
    const waitLine = (pred: (l: string) => boolean, ms: number) => new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`processor: no matching line within ${ms} ms; lines ${lines.slice(-5).join(' / ')}; stderr ${stderr.slice(-2000)}`)), ms)
      const check = () => {
        const l = lines.find(pred)
        if (l !== undefined) { clearTimeout(timer); listeners.delete(check); resolve(l) } else if (child.exitCode !== null || child.signalCode !== null) {
          clearTimeout(timer); listeners.delete(check); reject(new Error(`processor exited (${child.exitCode ?? child.signalCode}); lines ${lines.slice(-5).join(' / ')}; stderr ${stderr.slice(-2000)}`))
        }
      }
      listeners.add(check)
      check()
    })
    return { child, lines, exited, waitLine }
  }

  it('outputs match inputs one to one and the group committed offset equals the input end offset', async () => {
    const input = uniqueTopic('eos-in')
    const output = uniqueTopic('eos-out')
    await createTopic(cluster, input, { partitions: 3 })
    await createTopic(cluster, output, { partitions: 3 })
    expect(cluster.transactionVersion).toBe(tv)
    const N = 1200
    const feeder = createProducer({ 'bootstrap.servers': bs(cluster), transport: tcp(), 'linger.ms': 2 })
    await Promise.all(Array.from({ length: N }, (_, i) => feeder.send({ topic: input, partition: i % 3, value: `in-${i}` })))
    await feeder.close()
    const inputs = (await readTopic(cluster, input, { isolation: 'read_committed', expected: N })).map((r) => ({ partition: r.partition, offset: r.offset, value: dec.decode(r.value!) }))
    expect(inputs).toHaveLength(N)
    const dir = mkdtempSync(path.join(tmpdir(), 'eos-'))
    const inputFile = path.join(dir, 'inputs.json')
    writeFileSync(inputFile, JSON.stringify(inputs))
    const group = `eos-group-${input}`
    const args = { cluster, input, output, group, transactionalId: `eos-${input}`, inputFile, perTxn: 10 }

    const r = rng(99)
    const kills: string[] = []
    for (let round = 0; round < 4; round++) {
      // Let it commit a few transactions, then kill -9 in the middle of the stream: on even rounds
      // inside a transaction whose outputs are written but not committed, on odd rounds just after a commit.
      const k = 2 + Math.floor(r() * 12)
      const mid = round % 2 === 0
      const proc = startProcessor({ ...args, pauseAt: mid ? k : -1 })
      const ready = await proc.waitLine((l) => l.startsWith('ready'), 60_000)
      await proc.waitLine((l) => l === (mid ? `acked ${k}` : `committed ${k}`), 60_000)
      proc.child.kill('SIGKILL')
      await proc.exited
      const commits = proc.lines.filter((l) => l.startsWith('committed')).length
      if (mid) expect(commits).toBe(k - 1)
      kills.push(`${ready} -> killed after ${commits} commits${mid ? ' (mid-transaction)' : ''}`)
    }
    const last = startProcessor(args)
    await last.waitLine((l) => l === 'done', 120_000)
    expect(await last.exited).toBe(0)
    console.log(`EOS TV${tv}: ${kills.join('; ')}; final run ${last.lines[0]}; ${last.lines.at(-2)}`)
    const requests = JSON.parse(last.lines.find((l) => l.startsWith('requests '))!.slice(9)) as Record<string, number>
    expect(requests.TxnOffsetCommit).toBeGreaterThan(0)
    if (tv === 1) expect(requests.AddOffsetsToTxn).toBeGreaterThan(0)
    else expect(requests.AddOffsetsToTxn ?? 0).toBe(0)
    // Each restart resumed from the committed offsets: later runs had less to do.
    const remaining = [...kills.map((k) => Number(/ready (\d+)/.exec(k)![1])), Number(/ready (\d+)/.exec(last.lines[0]!)![1])]
    for (let i = 1; i < remaining.length; i++) expect(remaining[i]!).toBeLessThan(remaining[i - 1]!)

    const out = await readTopic(cluster, output, { isolation: 'read_committed', expected: N, timeoutMs: 60_000 })
    const values = out.map((x) => dec.decode(x.value!))
    expect(values).toHaveLength(N)
    expect(new Set(values).size).toBe(N)
    expect(new Set(values)).toEqual(new Set(inputs.map((i) => `out:${i.value}`)))
    // read_uncommitted also holds the outputs of the two transactions killed mid-way (aborted by the
    // successor's initTransactions); read_committed has none of them.
    const all = await readTopic(cluster, output, { isolation: 'read_uncommitted', timeoutMs: 60_000 })
    expect(all.length).toBeGreaterThanOrEqual(N + 2 * args.perTxn)

    const ends = await endOffsets(cluster, input)
    const offsets = await groupOffsets(cluster, group)
    const committedOffsets = Object.fromEntries(offsets.filter((o) => o.topic === input).map((o) => [o.partition, o.offset]))
    expect(committedOffsets).toEqual(Object.fromEntries(Object.entries(ends).map(([k, v]) => [Number(k), v])))
  }, 300_000)
})
