import type { Cluster } from '../client/cluster.js'
import { sleep } from '../clock.js'
import { KafkaEdgeError, POSSIBLE_DUPLICATE_HEADER } from '../errors.js'
import { DescribeProducers, errorCode, errorInfo } from '../protocol/index.js'
import { readBatchRecords, type Core, type DecodedRecord } from '../wasm/core.js'
import { batchIdentity, type PendingBatch, type RelabelledBatch } from './checkpoint.js'
import type { ProducerConfig } from './config.js'
import { NUM_BATCHES_TO_RETAIN } from './idempotence.js'
import { incrementSequence } from './producer-batch.js'

// Taking over a dead producer's checkpoint: what the partition leaders say about its identity, and
// which batches are resent, dropped as written, or relabelled (see docs/producer.md, "Resuming a producer").

export interface TakeoverContext { cluster: Cluster; config: ProducerConfig; topics: Set<string> }

/** A batch being relabelled: its records, and which of them need no new copy. */
export interface RelabelEntry extends RelabelledBatch { records: DecodedRecord[] }

/** A partition leader's state for a producer id (DescribeProducers). */
interface LeaderProducerState { producerEpoch: number; lastSequence: number }

/** What a takeover does with each batch of a loaded checkpoint. */
export interface ResumePlan {
  /** false: nothing can be resent under the saved identity (or no leader answered), so a new producer id is taken. */
  identity: boolean
  /** Resent under their own stamps, per partition in (epoch, sequence) order. */
  resend: PendingBatch[]
  /** Proven in the log by the leader's last sequence: dropped. */
  written: PendingBatch[]
  relabel: PendingBatch[]
  reasons: string[]
  /** Batches whose records were already being re-sent as new ones when the checkpoint was saved. */
  legacy: Set<PendingBatch>
}

/** A record's identity for matching a re-sent copy to its original: key, value, timestamp and headers, without the label. */
function recordKey(r: DecodedRecord): string {
  const hex = (b: Uint8Array | null): string => (b === null ? '-' : Array.from(b, (x) => x.toString(16).padStart(2, '0')).join(''))
  const headers = (r.headers ?? []).filter((h) => h.key !== POSSIBLE_DUPLICATE_HEADER).map((h) => `${h.key}=${hex(h.value)}`).join(',')
  return `${hex(r.key)}|${hex(r.value)}|${r.timestamp}|${headers}`
}

/**
 * Decides, partition by partition, what becomes of a loaded checkpoint's batches. A partition's
 * batches are resent under their own stamps when its leader's state for the producer proves the
 * broker recognises them: the leader holds the producer at the epoch of the oldest batch (batches
 * it already has are dropped, the rest continue its sequence exactly), or at an older epoch (then
 * nothing the checkpoint holds for it reached the log: the sender sends a newer epoch's batch only
 * after the older ones settled and left the checkpoint). Otherwise, and for batches of an earlier
 * producer id, the records go out again as new records, labelled. The identity itself is dropped
 * only when no leader can say anything about it.
 */
export async function planResume(ctx: TakeoverContext, pe: { producerId: bigint; epoch: number }, pending: readonly PendingBatch[]): Promise<ResumePlan> {
  const plan: ResumePlan = { identity: true, resend: [], written: [], relabel: [], reasons: [], legacy: new Set() }
  if (pending.length === 0) return plan
  const byTp = new Map<string, Array<PendingBatch & { epoch: number; lastSequence: number }>>()
  const legacy = plan.legacy
  for (const p of pending) {
    const id = batchIdentity(p.bytes)
    if (p.relabelled || id.producerId !== pe.producerId) { legacy.add(p); continue }
    const key = `${p.topic}:${p.partition}`
    byTp.set(key, [...(byTp.get(key) ?? []), { ...p, epoch: id.epoch, lastSequence: incrementSequence(p.baseSequence, p.recordCount - 1) }])
  }
  if (legacy.size > 0) {
    plan.relabel.push(...legacy)
    plan.reasons.push(`${legacy.size} batches were still being re-sent as possible duplicates`)
  }
  if (byTp.size === 0) { plan.identity = false; return plan }
  const states = await describeProducerStates(ctx, pe.producerId, [...byTp.values()].map((l) => l[0]!))
  if (typeof states === 'string') {
    plan.identity = false
    plan.relabel.push(...pending.filter((p) => !legacy.has(p)))
    plan.reasons.push(states)
    return plan
  }
  for (const [key, list] of byTp) {
    list.sort((a, b) => a.epoch - b.epoch || a.baseSequence - b.baseSequence)
    const oldest = list[0]!.epoch
    const state = states.get(key)
    const refuse = (why: string): void => { plan.relabel.push(...list); plan.reasons.push(why) }
    if (!state) { refuse(`the leader of ${key} holds no state for producer ${pe.producerId} (expired after producer.id.expiration.ms, deleted by retention, or never written)`); continue }
    if (state.producerEpoch > oldest) { refuse(`the leader of ${key} holds producer ${pe.producerId} at epoch ${state.producerEpoch}, past the checkpoint's epoch ${oldest}`); continue }
    let rest = list
    if (state.producerEpoch === oldest) {
      // Sequences are contiguous per id and epoch, so a batch at or below the leader's last sequence is in the log.
      rest = list.filter((b) => b.epoch !== oldest || ((state.lastSequence - b.lastSequence) | 0) < 0)
      plan.written.push(...list.filter((b) => !rest.includes(b)))
      const next = rest[0]
      if (next && next.epoch === oldest && next.baseSequence !== incrementSequence(state.lastSequence, 1)) {
        refuse(`the leader of ${key} last saw sequence ${state.lastSequence}, not the one before the checkpoint's batch at ${next.baseSequence}`)
        continue
      }
    }
    if (rest.filter((b) => b.epoch === oldest).length > NUM_BATCHES_TO_RETAIN) { refuse(`more than ${NUM_BATCHES_TO_RETAIN} pending batches for ${key}`); continue }
    plan.resend.push(...rest.map(({ epoch: _e, lastSequence: _l, ...p }) => p))
  }
  // Nothing resent: every record goes out again, so a fresh producer id serves as well and says so.
  if (plan.resend.length === 0 && plan.written.length === 0) plan.identity = false
  return plan
}

/**
 * Each partition leader's state for `producerId` (DescribeProducers, KIP-664): the entry, or none when
 * the leader holds no state for it. Leaders that cannot answer yet (moving, restarting, unreachable)
 * are asked again after a metadata refresh until max.block.ms; a string says why no answer came.
 */
async function describeProducerStates(ctx: TakeoverContext, producerId: bigint, heads: readonly PendingBatch[]): Promise<Map<string, LeaderProducerState | undefined> | string> {
  const c = ctx.config
  const deadline = c.clock.now() + c.maxBlockMs
  const states = new Map<string, LeaderProducerState | undefined>()
  let todo = heads
  let why = ''
  for (let attempt = 0; ; attempt++) {
    const byLeader = new Map<number, Map<string, number[]>>()
    const again: PendingBatch[] = []
    for (const p of todo) {
      const leader = ctx.cluster.leaderFor(p.topic, p.partition)
      if (leader < 0) { again.push(p); why = `no leader known for ${p.topic}-${p.partition}`; continue }
      const topics = byLeader.get(leader) ?? new Map<string, number[]>()
      topics.set(p.topic, [...(topics.get(p.topic) ?? []), p.partition])
      byLeader.set(leader, topics)
    }
    for (const [leader, topics] of byLeader) {
      const asked = todo.filter((p) => topics.get(p.topic)?.includes(p.partition))
      let res
      try {
        const conn = ctx.cluster.connection(leader)
        await conn.connect()
        res = await conn.request(DescribeProducers, { topics: [...topics].map(([name, partitionIndexes]) => ({ name, partitionIndexes })) }).response
      } catch (e) {
        if (e instanceof KafkaEdgeError && !e.retriable) return `DescribeProducers failed (${e.message})`
        again.push(...asked)
        why = `DescribeProducers failed (${(e as Error).message})`
        continue
      }
      for (const t of res.topics) {
        for (const part of t.partitions) {
          const key = `${t.name}:${part.partitionIndex}`
          const info = errorInfo(part.errorCode)
          if (part.errorCode === errorCode('NONE')) {
            states.set(key, part.activeProducers.find((a) => a.producerId === producerId))
          } else if (info.retriable) {
            again.push(...asked.filter((p) => p.topic === t.name && p.partition === part.partitionIndex))
            why = `DescribeProducers answered ${info.name} for ${key}`
          } else {
            return `DescribeProducers answered ${info.name} for ${key}`
          }
        }
      }
    }
    if (again.length === 0) return states
    const wait = Math.min(c.retryBackoffMaxMs, c.retryBackoffMs * 2 ** attempt)
    if (c.clock.now() + wait >= deadline) return `${why}, so the broker's producer state is unknown after ${c.maxBlockMs} ms (max.block.ms)`
    c.log.debug('checkpoint', 'asking again for the producer state of a checkpoint', { producerId, reason: why, partitions: again.length })
    await sleep(c.clock, wait)
    await ctx.cluster.refresh(ctx.topics).catch(() => {})
    todo = again
  }
}

/**
 * A crash after some copies of earlier re-sent batches were saved: each copy (labelled, same content)
 * stands for its original. A copy in a resent batch is on its way (or in the log), so the original is
 * not made again; a copy in a batch relabelled now goes out in its original's place.
 */
export function matchCopies(core: Core, plan: ResumePlan, entries: readonly RelabelEntry[]): void {
  if (plan.legacy.size === 0) return
    const copies = new Map<string, Array<{ entry?: RelabelEntry; index: number }>>()
    const add = (r: DecodedRecord, at: { entry?: RelabelEntry; index: number }): void => {
      if (!r.headers?.some((h) => h.key === POSSIBLE_DUPLICATE_HEADER)) return
      const k = recordKey(r)
      copies.set(k, [...(copies.get(k) ?? []), at])
    }
    for (const p of [...plan.resend, ...plan.written]) readBatchRecords(core, p.bytes).forEach((r, index) => add(r, { index }))
    for (const entry of entries) if (!plan.legacy.has(entry.batch)) entry.records.forEach((r, index) => add(r, { entry, index }))
    for (const entry of entries) {
      if (!plan.legacy.has(entry.batch)) continue
      entry.records.forEach((r, i) => {
        const copy = entry.delivered.has(i) ? undefined : copies.get(recordKey(r))?.shift()
        if (!copy) return
        if (copy.entry) copy.entry.delivered.add(copy.index)
        else entry.delivered.add(i)
      })
    }
}
