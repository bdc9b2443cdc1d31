import type { Clock } from '../clock.js'
import { CheckpointException, markDelivery } from '../errors.js'
import type { Log } from '../log.js'
import type { ProducerBatch, TopicPartition } from './producer-batch.js'
import { NUM_BATCHES_TO_RETAIN } from './idempotence.js'

/**
 * A batch the producer sent (or is about to send) and has no acknowledgement for. `bytes` is the
 * encoded RecordBatch v2 exactly as it goes on the wire: producer id, epoch and base sequence are in
 * its header, so a resumed producer resends it byte for byte and the broker recognises it.
 */
export interface PendingBatch {
  topic: string; partition: number; baseSequence: number; recordCount: number; bytes: Uint8Array
  /** Its records are being re-sent as new records (possible duplicates): a later producer never resends it as it is. */
  relabelled?: true
  /** With `relabelled`: indexes of the records whose copies were acknowledged. */
  delivered?: number[]
}

/** A batch whose records are being re-sent as new records, and which of those copies were acknowledged. */
export interface RelabelledBatch { batch: PendingBatch; delivered: Set<number> }

/**
 * What a later producer needs to take over this one's identity (see docs/producer.md, "Resuming a
 * producer"). `nextSequence` lists every partition the producer stamped batches for.
 */
export interface ProducerCheckpoint {
  v: 1
  /** Decimal, so JSON stores keep it exact. */
  producerId: string
  epoch: number
  transactionalId?: string
  savedAt: number
  nextSequence: Array<{ topic: string; partition: number; next: number }>
  pending: PendingBatch[]
  /** Opaque relay producer-id ticket: carried from save to load untouched. */
  ticket?: string
}

/**
 * Where checkpoints live (IndexedDB, a Durable Object's storage, a file). `save` resolves once the
 * checkpoint would survive the process: the producer sends a batch only after a save holding it resolved.
 */
export interface CheckpointStore {
  load(): Promise<ProducerCheckpoint | undefined>
  save(cp: ProducerCheckpoint): Promise<void>
}

/** How long a save that only drops settled batches waits for one the next batch needs. */
export const REMOVAL_SAVE_DELAY_MS = 50

export type MemoryCheckpointStore = CheckpointStore & { current: ProducerCheckpoint | undefined; saves: number }

/** A checkpoint that keeps everything in memory (tests; a producer restarted inside one process). */
export function memoryCheckpointStore(initial?: ProducerCheckpoint): MemoryCheckpointStore {
  const store = {
    current: initial,
    saves: 0,
    load: () => Promise.resolve(store.current),
    save: (cp: ProducerCheckpoint) => { store.current = cp; store.saves++; return Promise.resolve() },
  }
  return store
}

/** Producer id, epoch and base sequence of an encoded RecordBatch v2 (its header, offsets 43, 51, 53; count at 57). */
export function batchIdentity(bytes: Uint8Array): { producerId: bigint; epoch: number; baseSequence: number; recordCount: number } {
  if (bytes.length < 61) throw new CheckpointException(`a checkpointed batch has ${bytes.length} bytes, fewer than a RecordBatch header; the checkpoint is corrupt`)
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (dv.getInt8(16) !== 2) throw new CheckpointException(`a checkpointed batch has magic ${dv.getInt8(16)}, not 2; the checkpoint is corrupt`)
  return { producerId: dv.getBigInt64(43), epoch: dv.getInt16(51), baseSequence: dv.getInt32(53), recordCount: dv.getInt32(57) }
}

/** Send order: per partition by epoch, then sequence (a local bump restarts sequences at 0 under the next epoch). */
export function pendingOrder(a: PendingBatch, b: PendingBatch): number {
  if (a.topic !== b.topic) return a.topic < b.topic ? -1 : 1
  return a.partition - b.partition || batchIdentity(a.bytes).epoch - batchIdentity(b.bytes).epoch || a.baseSequence - b.baseSequence
}

const stampKey = (b: ProducerBatch): string => `${b.producerId}/${b.producerEpoch}/${b.baseSequence}`

export interface CheckpointHead { producerId: bigint; epoch: number; nextSequence: ProducerCheckpoint['nextSequence'] }

/**
 * Keeps the store in step with the sender: every batch about to be sent is tracked, a batch counts
 * as durable only once a save that held it (with its current stamp: an epoch bump rewrites batches)
 * resolved, and a settled batch leaves at the next save. Saves run one at a time; everything that
 * changes while one runs goes into the next (one save, however many batches asked for it).
 */
export class Checkpointer {
  private readonly tracked = new Map<ProducerBatch, PendingBatch>()
  private readonly saved = new Map<ProducerBatch, string>()
  private running: Promise<void> = Promise.resolve()
  private queued: Promise<void> | null = null
  /** Batches whose records are being re-sent as possible duplicates: kept until every copy is acknowledged. */
  legacy: RelabelledBatch[] = []
  ticket: string | undefined
  /** close(): batches it fails stay in the store, so the next producer resends them under the same identity. */
  frozen = false

  constructor(
    private readonly store: CheckpointStore, private readonly head: () => CheckpointHead, private readonly clock: Clock, private readonly log: Log,
    /** The transport's latest relay ticket, when it has one (newer than the loaded one after an InitProducerId). */
    private readonly transportTicket: () => string | null | undefined = () => undefined,
  ) {}

  track(b: ProducerBatch): void {
    const p = this.tracked.get(b)
    // A batch's bytes are never written to (an epoch bump gives it a restamped copy), so the store
    // gets the batch's own array, and a new array is how a rewrite shows.
    if (!p || p.baseSequence !== b.baseSequence || p.bytes !== b.bytes) {
      this.tracked.set(b, { topic: b.tp.topic, partition: b.tp.partition, baseSequence: b.baseSequence, recordCount: b.recordCount, bytes: b.bytes! })
    }
  }

  /** A batch taken over from the loaded checkpoint: it is in the store already. */
  adopt(b: ProducerBatch): void {
    this.track(b)
    this.saved.set(b, stampKey(b))
  }

  /**
   * Saved under its current stamp, and not beside a batch of an older epoch of its partition that
   * has settled since: a takeover reads older-epoch batches in a checkpoint as proof that nothing
   * newer of that partition was sent, so the save that lets a newer batch go must be without them.
   */
  isDurable(b: ProducerBatch): boolean {
    return this.saved.get(b) === stampKey(b) && !(this.olderBeside.get(b)?.some((o) => !this.tracked.has(o)))
  }

  private readonly olderBeside = new Map<ProducerBatch, ProducerBatch[]>()

  /**
   * The batch settled (acknowledged, failed, split): it leaves the checkpoint at the next save. That
   * save is not urgent (a settled batch still in the store is only resent and dropped by the broker),
   * so it waits up to REMOVAL_SAVE_DELAY_MS for the save the next batch needs anyway.
   */
  untrack(b: ProducerBatch): void {
    if (!this.tracked.delete(b)) return
    this.saved.delete(b)
    this.olderBeside.delete(b)
    this.removals = true
    if (this.frozen || this.removalTimer !== null) return
    this.removalTimer = this.clock.setTimeout(() => {
      this.removalTimer = null
      if (!this.removals || this.frozen) return
      this.persist().catch((e: unknown) => this.log.warn('checkpoint', 'checkpoint save failed after an acknowledgement; the next save retries', { error: String(e) }))
    }, REMOVAL_SAVE_DELAY_MS)
  }

  private removals = false
  private removalTimer: unknown = null

  /** Saves the waiting removals now (flush(): once it returns, acknowledged batches are out of the store). */
  saveRemovals(): Promise<void> {
    if (!this.removals || this.frozen) return Promise.resolve()
    if (this.removalTimer !== null) { this.clock.clearTimeout(this.removalTimer); this.removalTimer = null }
    return this.persist()
  }

  /**
   * Resolves once a save that started after this call completed. A frozen checkpointer saves no more:
   * a closed producer's late save would overwrite what its successor has saved since, or drop the
   * batches close() failed, whose events are nowhere else.
   */
  persist(): Promise<void> {
    if (this.frozen) return Promise.resolve()
    if (this.queued) return this.queued
    const q = this.running.then(() => {
      this.queued = null
      const run = this.saveNow()
      this.running = run.then(noop, noop)
      return run
    })
    this.queued = q
    return q
  }

  private async saveNow(): Promise<void> {
    if (this.frozen) return
    this.removals = false
    const head = this.head()
    const included: Array<[ProducerBatch, string]> = []
    const perPartition = new Map<string, number>()
    const pending: PendingBatch[] = this.legacy.map((l) => ({ ...l.batch, relabelled: true as const, delivered: [...l.delivered] }))
    for (const [b, p] of this.tracked) {
      this.track(b)
      const key = `${b.tp.key}/${b.producerId}`
      const n = (perPartition.get(key) ?? 0) + 1
      perPartition.set(key, n)
      // The broker recognises a resend only among the last NUM_BATCHES_TO_RETAIN batches of a
      // partition; the sender never has more unacknowledged (canDrain), so more here is a bug.
      if (n > NUM_BATCHES_TO_RETAIN) {
        throw new CheckpointException(`more than ${NUM_BATCHES_TO_RETAIN} unacknowledged batches for ${b.tp.topic}-${b.tp.partition}: ` +
          'a resumed producer could not have them deduplicated')
      }
      included.push([b, stampKey(b)])
      pending.push(this.tracked.get(b) ?? p)
    }
    const cp: ProducerCheckpoint = {
      v: 1, producerId: head.producerId.toString(), epoch: head.epoch, savedAt: this.clock.now(), nextSequence: head.nextSequence, pending,
    }
    const ticket = this.transportTicket() ?? this.ticket
    if (ticket !== undefined) cp.ticket = ticket
    try {
      await this.store.save(cp)
    } catch (e) {
      throw markDelivery(new CheckpointException(`the checkpoint store refused the save (${(e as Error)?.message ?? String(e)}); ` +
        'the batches it should hold were not sent. Fix the store; the producer retries with the next batches', { cause: e }), false)
    }
    const byTp = new Map<TopicPartition, ProducerBatch[]>()
    for (const [b] of included) byTp.set(b.tp, [...(byTp.get(b.tp) ?? []), b])
    for (const [b, k] of included) {
      if (!this.tracked.has(b)) continue
      this.saved.set(b, k)
      const older = byTp.get(b.tp)!.filter((o) => o.producerId === b.producerId && o.producerEpoch < b.producerEpoch)
      if (older.length > 0) this.olderBeside.set(b, older)
      else this.olderBeside.delete(b)
    }
  }
}

const noop = (): void => {}
