// The idempotence fault schedule on a 3-node cluster, shared by test/kafka/idempotence-faults.test.ts
// (kafka-edge, with assertions) and `npm run bench -- faults` (every peer producer, counted):
// keyed records whose values name themselves, the faults, and the read-back analysis.
import { execFile } from 'node:child_process'
import * as harness from '../../scripts/kafka/kafka.mjs'
import { bs, contNode, killNode, leaders, restartNode, stopNode, waitFor, type Cluster, type ReadRecord } from './kafka.js'

export const PARTITIONS = 6
export const KEYS = 60
export const VALUE_BYTES = 100

const enc = new TextEncoder()
const dec = new TextDecoder()

export const keyName = (k: number) => `key-${k}`

/** "i|key|seq|" padded with dots: every record in the log says which send it came from. */
export function valueFor(i: number, key: string, seq: number): Uint8Array {
  return enc.encode(`${i}|${key}|${seq}|`.padEnd(VALUE_BYTES, '.'))
}

export function parseValue(v: Uint8Array): { i: number; key: string; seq: number } {
  const [i, key, seq] = dec.decode(v).split('|')
  return { i: Number(i), key: key!, seq: Number(seq) }
}

/** What the producer reported for one send. `claim`: what a failure said about the write. */
export interface SentRecord {
  i: number
  key: string
  /** per-key sequence number: the order the application produced this key's records in */
  seq: number
  partition: number
  state: 'pending' | 'acked' | 'failed'
  ack?: { partition: number; offset: bigint }
  error?: { name: string; message: string }
  /** 'not-written': the error said the record was not written; 'maybe': it said it may have been; 'none': it said neither */
  claim?: 'not-written' | 'maybe' | 'none'
}

export interface ReadBack {
  acked: number
  failed: number
  pending: number
  read: number
  /** records in the log that no send produced, or not as sent */
  foreign: string[]
  /** records on another partition than their key's */
  wrongPartition: string[]
  duplicates: string[]
  /** acknowledged, not in the log */
  missing: string[]
  /** acknowledged at another partition@offset than the one read */
  misplaced: string[]
  /** failed records in the log although their error said they were not written */
  phantom: string[]
  /** failed records in the log, whatever their error said */
  failedFoundInLog: number
  orderViolations: string[]
}

/** The read-back set against what the producer reported. */
export function analyzeReadBack(sent: readonly SentRecord[], read: readonly ReadRecord[]): ReadBack {
  const seen = new Map<number, { partition: number; offset: number }[]>()
  const foreign: string[] = []
  const wrongPartition: string[] = []
  const orderViolations: string[] = []
  const lastByPartition = new Map<number, number>()
  for (const r of read) {
    const { i, key, seq } = parseValue(r.value ?? new Uint8Array())
    const s = sent[i]
    if (!s || s.key !== key || s.seq !== seq) { foreign.push(`${r.partition}@${r.offset}`); continue }
    if (r.partition !== s.partition) wrongPartition.push(`record ${i} (${key}) at ${r.partition}@${r.offset}, its key's partition is ${s.partition}`)
    seen.set(i, [...(seen.get(i) ?? []), { partition: r.partition, offset: r.offset }])
    const prev = lastByPartition.get(r.partition)
    if (prev !== undefined && prev >= i) orderViolations.push(`partition ${r.partition} @${r.offset}: record ${i} after record ${prev}`)
    lastByPartition.set(r.partition, i)
  }
  const acked = sent.filter((s) => s.state === 'acked')
  const failed = sent.filter((s) => s.state === 'failed')
  const at = (s: SentRecord) => seen.get(s.i)![0]!
  return {
    acked: acked.length, failed: failed.length, pending: sent.filter((s) => s.state === 'pending').length, read: read.length,
    foreign, wrongPartition, orderViolations,
    duplicates: [...seen].filter(([, a]) => a.length > 1).map(([i, a]) => `record ${i} at ${a.map((x) => `${x.partition}@${x.offset}`).join(', ')}`),
    missing: acked.filter((s) => !seen.has(s.i)).map((s) => `record ${s.i} acked at ${s.ack!.partition}@${s.ack!.offset}`),
    misplaced: acked.filter((s) => seen.has(s.i) && s.ack!.offset >= 0n && (at(s).partition !== s.ack!.partition || BigInt(at(s).offset) !== s.ack!.offset))
      .map((s) => `record ${s.i} acked at ${s.ack!.partition}@${s.ack!.offset}, read at ${at(s).partition}@${at(s).offset}`),
    phantom: failed.filter((s) => seen.has(s.i) && s.claim === 'not-written').map((s) => `record ${s.i}: ${s.error?.name}: ${s.error?.message}`),
    failedFoundInLog: failed.filter((s) => seen.has(s.i)).length,
  }
}

/** A topic (min.insync.replicas 2) whose preferred leader is `leader` for the first half of the partitions and another node for the rest. */
export async function createTopicLedBy(cluster: Cluster, topic: string, leader: number, partitions = PARTITIONS): Promise<void> {
  const others = cluster.nodes.map((n) => n.id).filter((id) => id !== leader)
  const leaderOf = (p: number) => (p < partitions / 2 ? leader : others[p % others.length]!)
  const assignment = Array.from({ length: partitions }, (_, p) => {
    const l = leaderOf(p)
    return [l, ...cluster.nodes.map((n) => n.id).filter((id) => id !== l)].join(':')
  }).join(',')
  await new Promise<void>((resolve, reject) => execFile('java', [
    '-Xmx128m', '-XX:TieredStopAtLevel=1', '-cp', harness.classpath(), 'org.apache.kafka.tools.TopicCommand',
    '--bootstrap-server', bs(cluster), '--create', '--topic', topic, '--replica-assignment', assignment,
    '--config', 'min.insync.replicas=2',
  ], { timeout: 60_000 }, (err, _out, stderr) => (err ? reject(new Error(`TopicCommand failed: ${stderr}`)) : resolve())))
  await waitFor(async () => {
    const l = await leaders(cluster, topic)
    return Object.keys(l).length === partitions && Object.entries(l).every(([p, id]) => id === leaderOf(Number(p)))
  }, { what: `leaders of ${topic} as assigned`, timeoutMs: 60_000 })
}

/**
 * kill -9 of `victim` 2.5 s into the burst; once its partitions have new leaders, 2 s more, then a
 * restart. Resolves with the failover time.
 */
export async function killLeaderThenRestart(cluster: Cluster, topic: string, victim: number, phase: (p: string) => void = () => {}): Promise<number> {
  await new Promise((r) => setTimeout(r, 2500))
  await killNode(cluster, victim)
  phase('killed')
  const killedAt = Date.now()
  await waitFor(async () => Object.values(await leaders(cluster, topic)).every((l) => l !== victim && l >= 0), { what: 'new leaders for the killed node\'s partitions', timeoutMs: 60_000 })
  const failoverMs = Date.now() - killedAt
  await new Promise((r) => setTimeout(r, 2000))
  await restartNode(cluster, victim)
  phase('restarted')
  return failoverMs
}

/**
 * SIGSTOP of `victim` 2.5 s into the burst for 9 s: past a request.timeout.ms of 3-5 s and past the
 * broker session timeout (4 s), so leaders move away; then SIGCONT.
 */
export async function stopLeaderThenContinue(cluster: Cluster, victim: number, phase: (p: string) => void = () => {}): Promise<void> {
  await new Promise((r) => setTimeout(r, 2500))
  await stopNode(cluster, victim)
  phase('stopped')
  await new Promise((r) => setTimeout(r, 9000))
  await contNode(cluster, victim)
  phase('continued')
}
