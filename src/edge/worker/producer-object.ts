import coreModule from '../../../build/core.wasm'
import { CheckpointException, KafkaEdgeError, POSSIBLE_DUPLICATE_HEADER } from '../errors.js'
import '../producer/install.js'
import { batchIdentity, type CheckpointStore, type PendingBatch, type ProducerCheckpoint } from '../producer/checkpoint.js'
import { CODECS, type ProducerSettings } from '../producer/config.js'
import { createProducer, type Producer, type ProducerRecord } from '../producer/producer.js'
import { loadCore, readBatchRecords, type Core } from '../wasm/core.js'
import { cloudflareSockets } from '../transport/cloudflare-sockets.js'
import type { DurableObjectState, Env, SqlStorage, SqlValue } from './env.js'
import { toRecords, type OtlpRecord, type Signal } from '../otlp/records.js'
import { otlpSettings } from './otlp.js'
import { acceptMode, batchRowKey, bootstrapVar, checkpointFromJson, checkpointHead, choiceVar, countingOpens, intVar, lingerMsVar, relayTransport, securitySettings, topicVar, type MetricSample } from './settings.js'
import { decodeRecords, encodeRecords, type TelemetryRecord } from './validate.js'

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })

/** What the object answers for a produced event. Offsets are strings: JSON has no 64-bit integers. */
export interface ProducedEvent { id: string; partition: number; offset: string }
export interface FailedEvent { id: string; error: string; message: string; retriable: boolean; mayHaveBeenWritten: boolean }

/** Header carrying the event id on every record: how a checkpoint's batches name their events. */
export const EVENT_ID_HEADER = 'event-id'
export const DEFAULT_MAX_BACKLOG = 100_000
export const DEFAULT_MAX_BACKLOG_BYTES = 1 << 30
/**
 * A record value larger than this is stored in rows of event_chunks: a Durable Object's SQLite row
 * (or value) holds at most 2 MB, and a record may be up to max.request.size.
 */
export const CHUNK_BYTES = 1_000_000

// Event rows: waiting to be produced, handed to the producer, waiting again after a send that may
// have written them (resent with the possible-duplicate header), or taken over from the checkpoint.
const WAITING = 0
const HANDED = 1
const WAITING_MAYBE_WRITTEN = 2
const RESUMED = 3
/**
 * How long an accepted event id is remembered at least (ACCEPTED_IDS_WINDOW_SECONDS overrides it): a
 * client that resends a request whose 202 it never saw (a restart, a lost connection) within this
 * window is answered 202 again and nothing is stored twice. Ids are kept in two generations, each
 * spanning one window, so an id is remembered for one to two windows. ACCEPTED_IDS_WINDOW_SECONDS=0
 * remembers none: each id is a row written, most of the rows a request writes, and Cloudflare bills
 * rows written; without them a resend is stored again (consumers dedupe on the event id).
 */
export const ACCEPTED_ID_WINDOW_MS = 3_600_000
/** Rows one produce round hands to the producer at most, and their bytes (bounded memory per round). */
const ROUND = 2000
/** New checkpoint_batches rows per INSERT: 8 bound values each, under the 100 a statement may have. */
const BATCH_ROWS = 12
const ROUND_BYTES = 16 << 20
/**
 * How many of an accept's ids the app generated (x-generated-ids, a count or `all`; they come first
 * in its ids line). Absent, from an app of earlier code: none, so every id is remembered.
 */
function generatedIds(request: Request): number {
  const h = request.headers.get('x-generated-ids')
  if (h === 'all') return Infinity
  const n = Number(h ?? 0)
  return Number.isSafeInteger(n) && n > 0 ? n : 0
}

/** The head's savedAt field as checkpointHead writes it (JSON.stringify: no spaces). */
const SAVED_AT = /"savedAt":\d+/

/**
 * An events row. An OTLP record has a topic, its key and value as bytes (the value inline up to
 * CHUNK_BYTES, else in event_chunks) and the request headers it carries; an event has none of these.
 */
interface Row {
  seq: number; id: string; key: string | null; value: string; ts: number; type: string; state: number; accepted_at: number
  topic: string | null; bkey: ArrayBuffer | null; headers: string | null; chunks: number; size: number
}

/** What deleting a stored row needs to know of it. */
type Stored = Pick<Row, 'seq' | 'size' | 'chunks'>

// What became of each event of a request handed to the producer (0 while its send is open).
const ACKED = 1
const NOT_WRITTEN = 2
const MAYBE_WRITTEN = 3

type WaitingRequest = { seq: number; body: string; n: number; accepted_at: number }
/**
 * The longest text (UTF-16 units) one requests row holds: a Durable Object's SQLite row holds at
 * most 2 MB, and a unit is at most 3 bytes of UTF-8. A longer request (escaping can make the events
 * sent to an object longer than the body they came in) is split into several rows.
 */
const ROW_CHARS = 600_000
/** The most text of waiting requests the object keeps in memory (more stays in SQLite only). */
const QUEUE_BYTES = 4 << 20

/** A requests row handed to the producer in this object's life, until storage no longer needs it. */
interface Flight {
  seq: number; records: TelemetryRecord[]; acceptedAt: number
  /** Per event: 0 while its send is open, then ACKED, NOT_WRITTEN or MAYBE_WRITTEN. */
  outcome: Uint8Array
  acked: number
  /** Acknowledged events already written to the row's `done` (and out of the backlog count). */
  savedDone: number
  failed: boolean
}

/**
 * The Durable Object that owns ONE long-lived idempotent producer per shard. In `durable` mode (the
 * default) a request's events are written to the object's SQLite storage and answered 202 at once;
 * an alarm then produces them, and a row leaves storage in the same transaction as the checkpoint
 * save that no longer needs it. The producer's checkpoint (producer id, epoch, sequences, the
 * batches sent without an acknowledgement) lives in the same storage, so an object that is evicted
 * or restarted resumes its identity and the broker drops the resends it already has. In `sync` mode
 * a request is answered only after Kafka acknowledged its events, as before.
 *
 * Subclass it to change the producer's settings (`producerSettings()`); bind the subclass in
 * wrangler.toml with a `new_sqlite_classes` migration (docs/worker.md).
 *
 * Internal routes (the app reaches them through the stub): POST /accept, POST /produce,
 * GET /metrics, GET /status.
 */
export class KafkaProducerObject {
  protected readonly env: Env
  private readonly ctx: DurableObjectState
  private readonly sql: SqlStorage
  private producer: Producer | null = null
  private starting: Promise<Producer> | null = null
  private connectionsOpened = 0
  private pumping: Promise<void> | null = null
  /** Rows acknowledged since the last checkpoint save: deleted by that save, in its transaction. */
  private readonly acked = new Map<number, Stored>()
  private core: Promise<Core> | null = null
  /** Rows the loaded checkpoint's batches hold remain (then saves read event ids out of the batches). */
  private resumedRows = false
  /**
   * The checkpoint_batches rows as stored (by batchRowKey): a save writes only the batches that are
   * new or changed and deletes the ones that left, instead of rewriting every pending batch.
   */
  private readonly storedBatches = new Map<string, { bytes: Uint8Array; delivered: string | null }>()
  /** The checkpoint was loaded from the earlier one-JSON-row table: the next save drops it. */
  private legacyCheckpoint = false
  private readonly idsOfBatch = new Map<string, string[]>()
  /** Requests rows handed to the producer and not yet deleted or unpacked, by seq. */
  private readonly flights = new Map<number, Flight>()
  /**
   * The highest requests seq handed to the producer: later rows are waiting. Every save stores it
   * (checkpoint_head.handed), so a restart knows which rows may have events in the log or in the
   * checkpoint's batches: only those are looked at, the rest wait as they are.
   */
  private handedSeq = 0
  private savedHanded = 0
  /**
   * The requests rows past handedSeq, in seq order, while they are known and fit in QUEUE_BYTES
   * (null: read them from SQLite). Accept appends the row it stored, so the pump reads back none of
   * what it just wrote, and asks SQLite nothing when there is nothing to produce.
   */
  private queue: WaitingRequest[] | null = null
  private queueBytes = 0
  /** The head row last written, without its savedAt (which nothing reads back): a save that would rewrite it as it is skips it. */
  private headWritten: string | null = null
  /**
   * Events rows may be waiting (cleared when the pump finds none, set by whatever makes one wait):
   * most objects have none, and an empty query still costs an exec per round.
   */
  private eventsWaiting = true
  private readonly startedMs = Date.now()
  /** When the current accepted_ids generation began (accepted_window). */
  private idsSince: number
  private readonly stats = { accepted: 0, produced: 0, rejected: 0, relabelled: 0, retriedIds: 0, latencySum: 0, latencyCount: 0, saves: 0, rowsWritten: 0 }

  constructor(ctx: DurableObjectState, env: Env) {
    this.ctx = ctx
    this.env = env
    // Every statement goes through here so that the rows it wrote are counted: Cloudflare bills a
    // SQLite-backed object per row written, and SQLite has done a write statement's writes (those of
    // an INSERT ... RETURNING too) by the time exec() returns.
    const sql = ctx.storage.sql
    this.sql = {
      exec: <T>(query: string, ...bindings: SqlValue[]) => {
        const cursor = sql.exec<T>(query, ...bindings)
        this.stats.rowsWritten += cursor.rowsWritten
        return cursor
      },
    }
    this.sql.exec(`CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, key TEXT, value TEXT NOT NULL,
      ts INTEGER NOT NULL, type TEXT NOT NULL, state INTEGER NOT NULL DEFAULT 0, accepted_at INTEGER NOT NULL)`)
    // Rows not waiting (handed to the producer, taken over from a checkpoint, maybe written) are the
    // few a restart or a save looks up by state; a waiting row, the common case, is in no index, so
    // storing it writes one b-tree, and the pump finds waiting rows in seq order from the table
    // itself. Queries must say `state <> 0` literally for SQLite to use this partial index.
    this.sql.exec('DROP INDEX IF EXISTS events_state')
    this.sql.exec(`CREATE INDEX IF NOT EXISTS events_taken ON events (state, seq) WHERE state <> ${WAITING}`)
    // OTLP records (added to the events table so they share its states, checkpoint and exactly-once resume).
    const columns = new Set(this.sql.exec<{ name: string }>('PRAGMA table_info(events)').toArray().map((c) => c.name))
    for (const [name, decl] of [['topic', 'TEXT'], ['bkey', 'BLOB'], ['bvalue', 'BLOB'], ['headers', 'TEXT'], ['chunks', 'INTEGER NOT NULL DEFAULT 0'], ['size', 'INTEGER NOT NULL DEFAULT 0']]) {
      if (!columns.has(name!)) this.sql.exec(`ALTER TABLE events ADD COLUMN ${name} ${decl}`)
    }
    this.sql.exec('CREATE TABLE IF NOT EXISTS event_chunks (seq INTEGER NOT NULL, n INTEGER NOT NULL, bytes BLOB NOT NULL, PRIMARY KEY (seq, n))')
    // The checkpoint: its head (identity, sequences, ticket) as JSON, and one row per pending batch
    // with the batch as a BLOB, in first-checkpointed order (n). Objects written before this layout
    // have the table producer_checkpoint instead (load reads it; the next save replaces it).
    this.sql.exec('CREATE TABLE IF NOT EXISTS checkpoint_head (k INTEGER PRIMARY KEY CHECK (k = 0), body TEXT NOT NULL, handed INTEGER NOT NULL DEFAULT 0)')
    if (!this.sql.exec<{ name: string }>('PRAGMA table_info(checkpoint_head)').toArray().some((c) => c.name === 'handed')) {
      this.sql.exec('ALTER TABLE checkpoint_head ADD COLUMN handed INTEGER NOT NULL DEFAULT 0')
    }
    // One row per accepted POST /events request: its events as the app sent them, so accepting,
    // handing over and deleting them are one write each, whatever their number. Which of its events
    // Kafka acknowledged is kept in memory and, once a save drops their batches while others are
    // still unacknowledged, in done (a JSON array of their indexes). AUTOINCREMENT: seqs are never
    // reused, so checkpoint_head.handed keeps meaning the same rows.
    this.sql.exec(`CREATE TABLE IF NOT EXISTS requests (seq INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL, n INTEGER NOT NULL,
      accepted_at INTEGER NOT NULL, done TEXT)`)
    this.sql.exec(`CREATE TABLE IF NOT EXISTS checkpoint_batches (n INTEGER PRIMARY KEY AUTOINCREMENT, k TEXT NOT NULL UNIQUE, topic TEXT NOT NULL,
      partition INTEGER NOT NULL, base_sequence INTEGER NOT NULL, record_count INTEGER NOT NULL, bytes BLOB NOT NULL, relabelled INTEGER NOT NULL, delivered TEXT)`)
    // Accepted ids in two generations, accepted_ids (since accepted_window.since) and
    // accepted_ids_old (the window before): forgetting the older is one DROP TABLE, so no row carries
    // a time and no index on it is written per id. WITHOUT ROWID: the id is the table's own key.
    // The earlier single table (an id and its time, with a rowid or without) becomes the older
    // generation as it is; lookups need only its id key.
    ctx.storage.transactionSync(() => {
      if (this.sql.exec<{ name: string }>('PRAGMA table_info(accepted_ids)').toArray().some((c) => c.name === 'at')) {
        this.sql.exec('DROP INDEX IF EXISTS accepted_ids_at')
        this.sql.exec('DROP TABLE IF EXISTS accepted_ids_old')
        this.sql.exec('ALTER TABLE accepted_ids RENAME TO accepted_ids_old')
      }
      this.sql.exec('CREATE TABLE IF NOT EXISTS accepted_ids (id TEXT PRIMARY KEY) WITHOUT ROWID')
      this.sql.exec('CREATE TABLE IF NOT EXISTS accepted_ids_old (id TEXT PRIMARY KEY) WITHOUT ROWID')
      this.sql.exec('CREATE TABLE IF NOT EXISTS accepted_window (k INTEGER PRIMARY KEY CHECK (k = 0), since INTEGER NOT NULL)')
      this.sql.exec('INSERT OR IGNORE INTO accepted_window (k, since) VALUES (0, ?)', Date.now())
    })
    this.idsSince = this.sql.exec<{ since: number }>('SELECT since FROM accepted_window WHERE k = 0').one().since
  }

  /** 0: no ids are remembered (ACCEPTED_IDS_WINDOW_SECONDS=0). */
  private idWindowMs(): number {
    return intVar(this.env, 'ACCEPTED_IDS_WINDOW_SECONDS', ACCEPTED_ID_WINDOW_MS / 1000, 0) * 1000
  }

  /** A window after the current generation began, it becomes the older one and the older is dropped. */
  private rotateIds(now: number, windowMs: number): void {
    if (windowMs === 0 || now - this.idsSince < windowMs) return
    this.ctx.storage.transactionSync(() => {
      this.sql.exec('DROP TABLE accepted_ids_old')
      this.sql.exec('ALTER TABLE accepted_ids RENAME TO accepted_ids_old')
      this.sql.exec('CREATE TABLE accepted_ids (id TEXT PRIMARY KEY) WITHOUT ROWID')
      this.sql.exec('UPDATE accepted_window SET since = ? WHERE k = 0', now)
    })
    this.idsSince = now
  }

  /**
   * The producer's settings; override to add or change some. A `transport` here replaces
   * cloudflareSockets() (KAFKA_RELAY_URL sets websocket() to the relay); the checkpoint and the core
   * are always the object's.
   */
  protected producerSettings(): ProducerSettings {
    const relay = relayTransport(this.env)
    return {
      'bootstrap.servers': bootstrapVar(this.env, relay !== null),
      'client.id': 'kafka-edge-telemetry',
      'compression.type': choiceVar(this.env, 'KAFKA_COMPRESSION', CODECS),
      'request.timeout.ms': 10_000,
      'max.block.ms': 15_000,
      // Durable mode has no caller waiting: give a slow broker time; sync mode fails within 30 s.
      'delivery.timeout.ms': this.mode() === 'sync' ? 30_000 : 120_000,
      // OTLP requests are split into records of at most this size (less the record's overhead).
      'max.request.size': intVar(this.env, 'KAFKA_MAX_REQUEST_SIZE', 1_048_576),
      'linger.ms': lingerMsVar(this.env),
      ...relay ? { transport: relay } : securitySettings(this.env),
    }
  }

  private mode(): 'durable' | 'sync' { return acceptMode(this.env) }
  private maxBacklog(): number { return intVar(this.env, 'MAX_BACKLOG', DEFAULT_MAX_BACKLOG) }
  private maxBacklogBytes(): number { return intVar(this.env, 'MAX_BACKLOG_BYTES', DEFAULT_MAX_BACKLOG_BYTES) }

  private getProducer(): Promise<Producer> {
    if (this.producer && !this.producer.state.fatal && !this.producer.state.closed) return Promise.resolve(this.producer)
    if (this.starting) return this.starting
    const old = this.producer
    this.producer = null
    this.starting = (async () => {
      // A fatal producer leaves its identity in the checkpoint; the next one takes it over.
      if (old) await old.close({ timeoutMs: 0 }).catch(() => {})
      const settings = this.producerSettings()
      const p = createProducer({
        ...settings,
        // cloudflare:sockets is imported on first use (workerd resolves it); no bundler config needed.
        transport: countingOpens(settings.transport ?? cloudflareSockets(), () => { this.connectionsOpened++ }),
        // workerd refuses to compile WASM from bytes at runtime: hand over the module wrangler compiled.
        wasm: coreModule,
        checkpoint: this.checkpointStore(),
      })
      try {
        await p.connect()
      } catch (e) {
        // Nothing was sent (connect takes over the checkpoint before any send): the next attempt starts afresh.
        await p.close({ timeoutMs: 0 }).catch(() => {})
        throw e
      }
      this.producer = p
      return p
    })().finally(() => { this.starting = null })
    return this.starting
  }

  private decoder(): Promise<Core> {
    this.core ??= loadCore(coreModule)
    return this.core
  }

  /** The event ids inside checkpointed batches (read from their records' event-id header, cached per batch). */
  private async pendingIds(pending: readonly PendingBatch[]): Promise<Set<string>> {
    const ids = new Set<string>()
    const live = new Set<string>()
    for (const b of pending) {
      const id = batchIdentity(b.bytes)
      const k = `${b.topic}/${b.partition}/${id.producerId}/${id.epoch}/${b.baseSequence}`
      live.add(k)
      let list = this.idsOfBatch.get(k)
      if (!list) {
        const core = await this.decoder()
        list = readBatchRecords(core, b.bytes).map((r) => {
          const h = r.headers?.find((x) => x.key === EVENT_ID_HEADER)
          return h?.value ? new TextDecoder().decode(h.value) : ''
        })
        this.idsOfBatch.set(k, list)
      }
      for (const i of list) ids.add(i)
    }
    for (const k of this.idsOfBatch.keys()) if (!live.has(k)) this.idsOfBatch.delete(k)
    return ids
  }

  /** The stored checkpoint (rows, or the earlier one-JSON-row form), and storedBatches set to what is stored. */
  private loadCheckpoint(): ProducerCheckpoint | undefined {
    this.storedBatches.clear()
    const head = this.sql.exec<{ body: string; handed: number }>('SELECT body, handed FROM checkpoint_head WHERE k = 0').toArray()[0]
    this.savedHanded = head?.handed ?? 0
    if (!head) {
      // Every object of the earlier code has the table, most with no row (no checkpoint saved yet): the next save drops it either way.
      this.legacyCheckpoint = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'producer_checkpoint'").one().n > 0
      const old = this.legacyCheckpoint ? this.sql.exec<{ body: string }>('SELECT body FROM producer_checkpoint WHERE k = 0').toArray()[0] : undefined
      return old ? checkpointFromJson(old.body) : undefined
    }
    type BatchRow = { k: string; topic: string; partition: number; base_sequence: number; record_count: number; bytes: ArrayBuffer; relabelled: number; delivered: string | null }
    const pending = this.sql.exec<BatchRow>(
      'SELECT k, topic, partition, base_sequence, record_count, bytes, relabelled, delivered FROM checkpoint_batches ORDER BY relabelled DESC, n').toArray().map((r) => {
      const p: PendingBatch = { topic: r.topic, partition: r.partition, baseSequence: r.base_sequence, recordCount: r.record_count, bytes: new Uint8Array(r.bytes) }
      if (r.relabelled) { p.relabelled = true; p.delivered = JSON.parse(r.delivered ?? '[]') as number[] }
      this.storedBatches.set(r.k, { bytes: p.bytes, delivered: r.delivered })
      return p
    })
    return { ...JSON.parse(head.body) as Omit<ProducerCheckpoint, 'pending'>, pending }
  }

  /**
   * The producer's CheckpointStore in this object's SQLite. load() also settles what a restart left:
   * rows whose events are in the checkpoint's batches now belong to the resuming producer; rows that
   * were handed over but never reached a saved batch were never sent, and wait again. save() writes
   * the checkpoint and deletes, in one transaction, the rows it no longer needs.
   */
  private checkpointStore(): CheckpointStore {
    return {
      load: async () => {
        const cp = this.loadCheckpoint()
        const ids = cp ? await this.pendingIds(cp.pending) : new Set<string>()
        this.ctx.storage.transactionSync(() => {
          for (const r of this.sql.exec<{ seq: number; id: string; state: number }>(`SELECT seq, id, state FROM events WHERE state <> ${WAITING}`)) {
            const next = ids.has(r.id) ? RESUMED : r.state === HANDED || r.state === RESUMED ? WAITING : r.state
            if (next !== r.state) this.sql.exec('UPDATE events SET state = ? WHERE seq = ?', next, r.seq)
            if (next === RESUMED) this.resumedRows = true
          }
          if (this.unpackHanded(ids)) this.resumedRows = true
        })
        // Rows above the mark were never in a saved checkpoint, so none of their events was sent.
        this.eventsWaiting = true
        this.queue = null
        this.headWritten = null
        this.flights.clear()
        this.handedSeq = this.savedHanded
        this.backlogCount = -1
        return cp
      },
      save: async (cp: ProducerCheckpoint) => {
        // Reading event ids out of the batches is needed only while rows taken over at start remain.
        const ids = this.resumedRows ? await this.pendingIds(cp.pending) : null
        const rows = new Map<string, PendingBatch>()
        for (const p of cp.pending) rows.set(batchRowKey(p), p)
        if (rows.size !== cp.pending.length) throw new CheckpointException('two pending batches of the checkpoint carry the same partition and stamp; refusing to store it')
        const delivered = (p: PendingBatch) => (p.relabelled ? JSON.stringify(p.delivered ?? []) : null)
        const written: string[] = []
        const gone = [...this.storedBatches.keys()].filter((k) => !rows.has(k))
        const complete: Flight[] = []
        const partial: Flight[] = []
        for (const f of this.flights.values()) {
          if (f.acked === f.records.length) complete.push(f)
          else if (f.acked > f.savedDone) partial.push(f)
        }
        const handed = this.handedSeq
        // Serialized once: the comparison leaves out savedAt, which changes at every save.
        const body = checkpointHead(cp)
        const head = `${handed} ${body.replace(SAVED_AT, '')}`
        // Counted before the deletes below, which then adjust it.
        this.backlogCounts()
        this.ctx.storage.transactionSync(() => {
          if (head !== this.headWritten || this.legacyCheckpoint) this.sql.exec('INSERT OR REPLACE INTO checkpoint_head (k, body, handed) VALUES (0, ?, ?)', body, handed)
          if (this.legacyCheckpoint) this.sql.exec('DROP TABLE IF EXISTS producer_checkpoint')
          if (gone.length > 0) this.sql.exec('DELETE FROM checkpoint_batches WHERE k IN (SELECT value FROM json_each(?))', JSON.stringify(gone))
          const added: SqlValue[][] = []
          for (const [k, p] of rows) {
            const was = this.storedBatches.get(k)
            if (!was) {
              added.push([k, p.topic, p.partition, p.baseSequence, p.recordCount, buffer(p.bytes), p.relabelled ? 1 : 0, delivered(p)])
            } else if ((was.bytes !== p.bytes && !equalBytes(was.bytes, p.bytes)) || was.delivered !== delivered(p)) {
              this.sql.exec('UPDATE checkpoint_batches SET base_sequence = ?, record_count = ?, bytes = ?, delivered = ? WHERE k = ?',
                p.baseSequence, p.recordCount, buffer(p.bytes), delivered(p), k)
            } else {
              // Equal bytes in another array (the producer's copy of a loaded batch): compared once.
              was.bytes = p.bytes
              continue
            }
            written.push(k)
          }
          // New batches in a few statements rather than one each (each exec costs the isolate CPU);
          // BATCH_ROWS rows keep a statement's bound values within what workerd's SQLite allows.
          for (let i = 0; i < added.length; i += BATCH_ROWS) {
            const part = added.slice(i, i + BATCH_ROWS)
            this.sql.exec(`INSERT INTO checkpoint_batches (k, topic, partition, base_sequence, record_count, bytes, relabelled, delivered) VALUES
              ${part.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`, ...part.flat())
          }
          // One statement per save, not one per event: each exec costs workerd CPU.
          if (this.acked.size > 0) this.deleteRows([...this.acked.values()])
          // A request whose events are all in the log leaves; one partly acknowledged says which are,
          // as this save may drop their batches (a restart must not send those again).
          if (complete.length > 0) this.sql.exec('DELETE FROM requests WHERE seq IN (SELECT value FROM json_each(?))', JSON.stringify(complete.map((f) => f.seq)))
          for (const f of partial) {
            const done: number[] = []
            f.outcome.forEach((o, i) => { if (o === ACKED) done.push(i) })
            this.sql.exec('UPDATE requests SET done = ? WHERE seq = ?', JSON.stringify(done), f.seq)
          }
          // Taken over from the checkpoint and no longer in it: in the log (or relabelled, then in the new batches).
          if (ids) {
            let left = 0
            for (const r of this.sql.exec<Stored & { id: string }>(`SELECT seq, id, size, chunks FROM events WHERE state <> ${WAITING} AND state = ?`, RESUMED)) {
              if (!ids.has(r.id)) this.deleteRows([r])
              else left++
            }
            this.resumedRows = left > 0
          }
        })
        this.stats.saves++
        this.acked.clear()
        for (const f of complete) { this.flights.delete(f.seq); this.backlogCount -= f.records.length - f.savedDone }
        for (const f of partial) { this.backlogCount -= f.acked - f.savedDone; f.savedDone = f.acked }
        this.savedHanded = handed
        this.headWritten = head
        this.legacyCheckpoint = false
        for (const k of gone) this.storedBatches.delete(k)
        for (const k of written) this.storedBatches.set(k, { bytes: rows.get(k)!.bytes, delivered: delivered(rows.get(k)!) })
        // A batch goes to the broker right after this resolves: its checkpoint must be on disk first.
        await this.ctx.storage.sync?.()
      },
    }
  }

  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url)
    try {
      if (request.method === 'POST' && url.pathname === '/accept') return await this.accept(await request.text(), generatedIds(request))
      if (request.method === 'POST' && url.pathname === '/produce') return await this.produceNow(await request.json() as TelemetryRecord[])
      if (request.method === 'POST' && url.pathname === '/otlp') {
        const metadata = JSON.parse(request.headers.get('x-otlp-metadata') ?? '[]') as Array<[string, string]>
        return this.acceptOtlp(request.headers.get('x-otlp-signal') as Signal, new Uint8Array(await request.arrayBuffer()), metadata)
      }
      if (request.method === 'GET' && url.pathname === '/metrics') return json(this.metricSamples())
      if (request.method === 'GET' && url.pathname === '/status') return json(this.status())
      return json({ error: 'not found' }, 404)
    } catch (e) {
      return json({ error: (e as Error).name, message: (e as Error).message }, 500)
    }
  }

  /** The alarm produces what is stored; it runs again while rows are left (retries after failures). */
  async alarm(): Promise<void> {
    try {
      await this.alarmRound()
    } catch {
      // Kafka unreachable, a refused login: the rows stay, and the next alarm tries again.
      await this.ctx.storage.setAlarm(Date.now() + 5000)
    }
  }

  private async alarmRound(): Promise<void> {
    await this.pump()
    if (this.unacknowledged() > 0) await this.ctx.storage.setAlarm(Date.now() + 1000)
  }

  /** Deletes these rows (stored: their sizes are known, so nothing is read back to count them). */
  private deleteRows(rows: readonly Stored[]): void {
    this.backlogCounts()
    const seqs = JSON.stringify(rows.map((r) => r.seq))
    let bytes = 0
    let chunked = false
    for (const r of rows) { bytes += r.size; chunked ||= r.chunks > 0 }
    this.backlogCount -= rows.length
    this.backlogBytes -= bytes
    const where = 'seq IN (SELECT value FROM json_each(?))'
    this.sql.exec(`DELETE FROM events WHERE ${where}`, seqs)
    if (chunked) this.sql.exec(`DELETE FROM event_chunks WHERE ${where}`, seqs)
  }

  /** Rows stored and their record bytes, counted once from SQLite and then kept up to date (COUNT(*) scans the table). */
  private backlogCount = -1
  private backlogBytes = 0

  private backlogCounts(): { count: number; bytes: number } {
    if (this.backlogCount < 0) {
      const all = this.sql.exec<{ n: number; bytes: number }>(`SELECT COUNT(*) + (SELECT COALESCE(SUM(n - COALESCE(json_array_length(done), 0)), 0) FROM requests) AS n,
        COALESCE(SUM(size), 0) AS bytes FROM events`).one()
      this.backlogCount = all.n
      this.backlogBytes = all.bytes
    }
    return { count: this.backlogCount, bytes: this.backlogBytes }
  }

  /**
   * Stored events Kafka has not acknowledged: the backlog less the acknowledged ones whose rows leave
   * with the next checkpoint save (the one that drops their batches, at most REMOVAL_SAVE_DELAY_MS away).
   */
  private unacknowledged(): number {
    let saving = this.acked.size
    for (const f of this.flights.values()) saving += f.acked - f.savedDone
    return this.backlogCounts().count - saving
  }

  /** When the oldest stored row was accepted (for /metrics only: one query). */
  private oldestAcceptedAt(): number | null {
    return this.sql.exec<{ at: number | null }>(`SELECT MIN(at) AS at FROM (SELECT (SELECT accepted_at FROM events ORDER BY seq LIMIT 1) AS at
      UNION ALL SELECT (SELECT accepted_at FROM requests ORDER BY seq LIMIT 1))`).one().at
  }

  /** Seconds a client waits before retrying a refused request: the excess over the rate drained so far (30 s before anything drained). */
  private retryAfter(excess: number): number {
    const rate = this.stats.produced > 0 ? this.stats.produced / Math.max(1, (Date.now() - this.startedMs) / 1000) : 0
    return Math.min(60, Math.max(1, rate > 0 ? Math.ceil(excess / rate) : 30))
  }

  /**
   * An OTLP export request (a checked protobuf *Data message): its records, as the Collector's
   * kafkaexporter would write them, stored in one transaction and answered 200 (the output gate holds
   * the answer until they are durable); then produced like events. Each record carries the event-id
   * header the exactly-once resume needs. 429 when the backlog (records or bytes) would be full.
   */
  private async acceptOtlp(signal: Signal, body: Uint8Array, metadata: Array<[string, string]>): Promise<Response> {
    const settings = otlpSettings(this.env)
    const maxRequestSize = Number(this.producerSettings()['max.request.size'] ?? 1048576)
    const headerBytes = metadata.reduce((n, [k, v]) => n + k.length + v.length * 3 + 8, 0)
    // What a record's batch needs besides its value: the batch header, the record's varints, the key, event-id header.
    const maxRecordBytes = maxRequestSize - 512 - headerBytes
    const { records, items, rejected } = toRecords(signal, body, { ...settings.records, maxRecordBytes })
    const error = rejected > 0 ? `${rejected} of ${items} items are each larger than a Kafka record may be (${maxRecordBytes} bytes, from max.request.size) and were not written` : undefined
    if (records.length === 0) return json({ records: 0, items, rejected, error })
    const bytes = records.reduce((n, r) => n + r.value.length + (r.key?.length ?? 0), 0)
    const { count } = this.backlogCounts()
    const max = this.maxBacklog()
    const maxBytes = this.maxBacklogBytes()
    if (count + records.length > max || this.backlogBytes + bytes > maxBytes) {
      this.stats.rejected += records.length
      const retryAfter = this.retryAfter(Math.max(count + records.length - max, 1))
      return json({ error: `backlog full: ${count} records (${this.backlogBytes} bytes) wait to be produced (at most ${max}, ${maxBytes} bytes); retry after ${retryAfter} s` },
        429, { 'retry-after': String(retryAfter) })
    }
    const now = Date.now()
    const request = crypto.randomUUID()
    const topic = settings.topics[signal]
    const headers = JSON.stringify(metadata)
    this.ctx.storage.transactionSync(() => {
      records.forEach((r: OtlpRecord, i) => {
        const chunked = r.value.length > CHUNK_BYTES
        const chunks = chunked ? Math.ceil(r.value.length / CHUNK_BYTES) : 0
        const { seq } = this.sql.exec<{ seq: number }>(`INSERT INTO events (id, key, value, ts, type, state, accepted_at, topic, bkey, bvalue, headers, chunks, size)
          VALUES (?, NULL, '', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`, `${request}/${i}`, now, `otlp.${signal}`, WAITING, now, topic,
        r.key ? buffer(r.key) : null, chunked ? null : buffer(r.value), headers, chunks, r.value.length + (r.key?.length ?? 0)).one()
        for (let n = 0; n < chunks; n++) {
          this.sql.exec('INSERT INTO event_chunks (seq, n, bytes) VALUES (?, ?, ?)', seq, n, buffer(r.value.subarray(n * CHUNK_BYTES, (n + 1) * CHUNK_BYTES)))
        }
      })
    })
    this.eventsWaiting = true
    this.backlogCount += records.length
    this.backlogBytes += bytes
    this.stats.accepted += records.length
    if (!this.pumping && (await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now())
    return json({ records: records.length, items, rejected, error })
  }

  /** An OTLP row's value, from its own column or its chunks. */
  private otlpValue(r: Row): Uint8Array {
    if (r.chunks === 0) return new Uint8Array(this.sql.exec<{ v: ArrayBuffer }>('SELECT bvalue AS v FROM events WHERE seq = ?', r.seq).one().v)
    const parts = this.sql.exec<{ bytes: ArrayBuffer }>('SELECT bytes FROM event_chunks WHERE seq = ? ORDER BY n', r.seq).toArray().map((c) => new Uint8Array(c.bytes))
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
    let at = 0
    for (const p of parts) { out.set(p, at); at += p.length }
    return out
  }

  private topicName: string | null = null
  /** TELEMETRY_TOPIC, read once it is right (a ConfigException each time until then). */
  private telemetryTopic(): string { return this.topicName ??= topicVar(this.env, 'TELEMETRY_TOPIC') }

  private eventSettingsChecked = false
  /**
   * What every stored event needs to be produced at all: its topic and the producer's settings. A
   * durable accept answers 202 once the events are stored, so a setting that could never work is
   * refused before the first is (the object's fetch answers the ConfigException as a 500).
   */
  private checkEventSettings(): void {
    if (this.eventSettingsChecked) return
    this.telemetryTopic()
    this.producerSettings()
    this.eventSettingsChecked = true
  }

  /**
   * Durable accept of the app's validated events: the body is their ids (a JSON array of strings), a
   * newline, and the events (encodeRecords' lines; from an app of the earlier code, a JSON array of
   * TelemetryRecord, which decodeRecords reads too), stored as one requests row holding the text
   * they came in: the object parses nothing. The answer has no ids (the app has them). A body
   * without the ids line (an app older still, during a deploy) is parsed.
   */
  private async accept(body: string, generated: number): Promise<Response> {
    this.checkEventSettings()
    const now = Date.now()
    const windowMs = this.idWindowMs()
    this.rotateIds(now, windowMs)
    const remember = windowMs > 0
    const nl = body.indexOf('\n')
    const ids = nl < 0 ? null : body.slice(0, nl)
    const batch = nl < 0 ? body : body.slice(nl + 1)
    const max = this.maxBacklog()
    const { count } = this.backlogCounts()
    let stored: number
    let total: number
    // The row's seq when the request is stored as it came (so the queue may hold its text).
    let seq: number | undefined
    try {
      // Two statements per request whatever its size (each exec costs the isolate CPU), the ids
      // from the app's list (reading them out of the events' JSON in SQLite cost more than both
      // statements now do). changes() in the row's insert is the number of ids new to both
      // generations: when some were accepted before (a client's retry) the transaction is rolled
      // back and the request stored without them; past the backlog it is rolled back and nothing
      // is stored.
      ;({ stored, total, seq } = this.ctx.storage.transactionSync(() => {
        if (ids === null || batch.length > ROW_CHARS) throw new Retried()
        // The first `generated` ids are the app's own (x-generated-ids): not remembered, and new by definition.
        const remembering = remember && generated !== Infinity
        if (remembering) this.sql.exec('INSERT OR IGNORE INTO accepted_ids (id) SELECT j.value FROM json_each(?) AS j WHERE j.key >= ? AND NOT EXISTS (SELECT 1 FROM accepted_ids_old AS o WHERE o.id = j.value)', ids, generated)
        const row = this.sql.exec<{ seq: number; fresh: number; total: number }>(
          `INSERT INTO requests (body, n, accepted_at) VALUES (?1, ${remembering ? 'changes() + ?4' : 'json_array_length(?3)'}, ?2) RETURNING seq, n AS fresh, json_array_length(?3) AS total`,
          batch, now, ids, ...(remembering ? [generated] : [])).one()
        if (row.fresh < row.total) throw new Retried()
        if (count + row.fresh > max) throw new BacklogFull(row.fresh)
        return { stored: row.fresh, total: row.total, seq: row.seq }
      }))
    } catch (e) {
      try {
        if (!(e instanceof Retried)) throw e
        ;({ stored, total } = this.acceptParsed(batch, now, count, max, remember))
      } catch (full) {
        if (!(full instanceof BacklogFull)) throw full
        this.stats.rejected += full.incoming
        const retryAfter = this.retryAfter(count + full.incoming - max)
        return json({ error: `backlog full: ${count} events wait to be produced (at most ${max}); retry after ${retryAfter} s` },
          429, { 'retry-after': String(retryAfter) })
      }
    }
    if (this.queue) {
      if (seq === undefined || this.queueBytes + batch.length > QUEUE_BYTES) this.queue = null
      else {
        this.queue.push({ seq, body: batch, n: stored, accepted_at: now })
        this.queueBytes += batch.length
      }
    }
    this.backlogCount += stored
    this.stats.accepted += stored
    this.stats.retriedIds += total - stored
    // Written before the answer leaves (the output gate holds it until the rows are durable).
    if (!this.pumping && (await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now())
    return json({ accepted: total, topic: this.telemetryTopic() }, 202)
  }

  /**
   * A request some of whose ids this object accepted before, or too large for one row: only the
   * others are stored (none, when all were), in rows of at most ROW_CHARS.
   */
  private acceptParsed(batch: string, now: number, count: number, max: number, remember: boolean): { stored: number; total: number } {
    const records = decodeRecords(batch)
    const ids = JSON.stringify(records.map((r) => r.id))
    return this.ctx.storage.transactionSync(() => {
      const known = new Set(!remember ? [] : this.sql.exec<{ id: string }>(`SELECT j.value AS id FROM json_each(?) AS j WHERE EXISTS (SELECT 1 FROM accepted_ids AS a WHERE a.id = j.value)
        OR EXISTS (SELECT 1 FROM accepted_ids_old AS o WHERE o.id = j.value)`, ids).toArray().map((r) => r.id))
      const fresh = records.filter((r) => !known.has(r.id))
      if (count + fresh.length > max) throw new BacklogFull(fresh.length)
      // Only the new ones: an id is remembered from its accept, not from its last resend.
      if (fresh.length > 0 && remember) this.sql.exec('INSERT OR IGNORE INTO accepted_ids (id) SELECT value FROM json_each(?)', JSON.stringify(fresh.map((r) => r.id)))
      let part: string[] = []
      let chars = 0
      const flush = () => {
        if (part.length > 0) this.sql.exec('INSERT INTO requests (body, n, accepted_at) VALUES (?, ?, ?)', part.join('\n'), part.length, now)
        part = []
        chars = 0
      }
      for (const r of fresh) {
        const line = encodeRecords([r])
        if (chars + line.length + 1 > ROW_CHARS) flush()
        part.push(line)
        chars += line.length + 1
      }
      flush()
      return { stored: fresh.length, total: records.length }
    })
  }

  private pump(): Promise<void> {
    this.pumping ??= this.pumpRounds().finally(() => { this.pumping = null })
    return this.pumping
  }

  private async pumpRounds(): Promise<void> {
    const producer = await this.getProducer()
    for (;;) {
      // Rows of the events table first (OTLP records, events a restart or a failed send unpacked,
      // rows older than the requests table): its events were accepted before any waiting request
      // (OTLP records go to other topics: their order against events does not matter).
      // Values of OTLP records are read one by one as they are sent: a round holds at most ROUND_BYTES of them.
      const listed = !this.eventsWaiting ? [] : this.sql.exec<Row>(`SELECT seq, id, key, value, ts, type, state, accepted_at, topic, bkey, headers, chunks, size FROM events
        WHERE state IN (?, ?) ORDER BY seq LIMIT ?`, WAITING, WAITING_MAYBE_WRITTEN, ROUND).toArray()
      if (listed.length === 0) this.eventsWaiting = false
      let bytes = 0
      const rows = listed.filter((r, i) => (bytes += r.size) <= ROUND_BYTES || i === 0)
      const flights = this.takeRequests(ROUND - rows.length, ROUND_BYTES - bytes)
      if (rows.length === 0 && flights.length === 0) break
      if (rows.length > 0) this.sql.exec('UPDATE events SET state = ? WHERE seq IN (SELECT value FROM json_each(?))', HANDED, JSON.stringify(rows.map((r) => r.seq)))
      const sends = rows.map((r) => producer.send(this.record(r, r.state === WAITING_MAYBE_WRITTEN)).then(
        () => {
          this.acked.set(r.seq, r)
          this.produced(r.accepted_at)
        },
        (e: Error & { mayHaveBeenWritten?: boolean }) => {
          // Not written: it waits as it was. Maybe written: resent later, labelled as a possible duplicate.
          this.sql.exec('UPDATE events SET state = ? WHERE seq = ?', e.mayHaveBeenWritten === false ? r.state : WAITING_MAYBE_WRITTEN, r.seq)
          this.eventsWaiting = true
          throw e
        },
      ))
      if (flights.length > 0) sends.push(this.sendFlights(producer, flights))
      const settled = await Promise.allSettled(sends)
      const failed = flights.filter((f) => f.failed)
      if (failed.length > 0) this.unpackFailed(failed)
      if (failed.length > 0 || settled.some((s) => s.status === 'rejected')) break
    }
    // No flush() here: it would save the acknowledged batches' removal at once, a checkpoint save of
    // its own each time the pump runs dry (at a moderate request rate, once per request). Left to the checkpointer, that removal joins the save the next batch needs
    // (or its own, REMOVAL_SAVE_DELAY_MS later); until then a restart only resends batches the
    // broker already has, under their old sequence numbers, and it drops them as duplicates.
  }

  private produced(acceptedAt: number): void {
    this.stats.produced++
    this.stats.latencySum += Date.now() - acceptedAt
    this.stats.latencyCount++
  }

  /** The next waiting requests rows, up to `events` events and `bytes` of JSON (at least one row), now handed to the producer. */
  private takeRequests(events: number, bytes: number): Flight[] {
    const out: Flight[] = []
    if (events <= 0) return out
    let n = 0
    let size = 0
    let more = false
    const queue = this.queue
    for (const r of queue ?? this.sql.exec<WaitingRequest>('SELECT seq, body, n, accepted_at FROM requests WHERE seq > ? ORDER BY seq LIMIT ?', this.handedSeq, events)) {
      if (out.length > 0 && (n + r.n > events || size + r.body.length > bytes)) { more = true; break }
      n += r.n
      size += r.body.length
      const records = decodeRecords(r.body)
      const f: Flight = { seq: r.seq, records, acceptedAt: r.accepted_at, outcome: new Uint8Array(r.n), acked: 0, savedDone: 0, failed: false }
      out.push(f)
      this.flights.set(f.seq, f)
      this.handedSeq = f.seq
    }
    if (queue) {
      queue.splice(0, out.length)
      this.queueBytes -= size
    } else if (!more && out.length < events) {
      // SQLite has no more rows: from now on the queue knows them all.
      this.queue = []
      this.queueBytes = 0
    }
    return out
  }

  /**
   * Requests some of whose sends failed: their events not acknowledged become events rows (waiting,
   * or waiting to be resent as possible duplicates), in the order they were accepted, and the
   * request rows leave, in one transaction. The acknowledged ones are in the log: they leave too.
   */
  private unpackFailed(flights: readonly Flight[]): void {
    const rows: Array<TelemetryRecord & { state: number; at: number }> = []
    for (const f of flights) {
      f.records.forEach((r, i) => {
        if (f.outcome[i] !== ACKED) rows.push({ ...r, state: f.outcome[i] === NOT_WRITTEN ? WAITING : WAITING_MAYBE_WRITTEN, at: f.acceptedAt })
      })
    }
    this.backlogCounts()
    this.ctx.storage.transactionSync(() => {
      this.insertEventRows(rows)
      this.sql.exec('DELETE FROM requests WHERE seq IN (SELECT value FROM json_each(?))', JSON.stringify(flights.map((f) => f.seq)))
    })
    for (const f of flights) {
      this.flights.delete(f.seq)
      this.backlogCount -= f.acked - f.savedDone
    }
  }

  /**
   * At load: the requests rows a saved checkpoint may have handed over (seq up to its mark) become
   * events rows, those whose events are in the checkpoint's batches taken over by the resuming
   * producer, the others waiting; events the row's done lists are in the log and dropped. Returns
   * whether some were taken over. Run inside load's transaction.
   */
  private unpackHanded(pendingIds: ReadonlySet<string>): boolean {
    if (this.savedHanded === 0) return false
    const handed = this.sql.exec<{ body: string; accepted_at: number; done: string | null }>(
      'SELECT body, accepted_at, done FROM requests WHERE seq <= ? ORDER BY seq', this.savedHanded).toArray()
    if (handed.length === 0) return false
    const rows: Array<TelemetryRecord & { state: number; at: number }> = []
    for (const h of handed) {
      const done = new Set(JSON.parse(h.done ?? '[]') as number[])
      ;decodeRecords(h.body).forEach((r, i) => {
        if (!done.has(i)) rows.push({ ...r, state: pendingIds.has(r.id) ? RESUMED : WAITING, at: h.accepted_at })
      })
    }
    this.insertEventRows(rows)
    this.sql.exec('DELETE FROM requests WHERE seq <= ?', this.savedHanded)
    return rows.some((r) => r.state === RESUMED)
  }

  /** Events as events rows, in this order: one statement. */
  private insertEventRows(rows: ReadonlyArray<TelemetryRecord & { state: number; at: number }>): void {
    if (rows.length === 0) return
    this.eventsWaiting = true
    this.sql.exec(`INSERT INTO events (id, key, value, ts, type, state, accepted_at)
      SELECT j.value ->> 'id', j.value ->> 'key', j.value ->> 'value', j.value ->> 'timestamp', j.value ->> 'type', j.value ->> 'state', j.value ->> 'at'
      FROM json_each(?) AS j ORDER BY j.key`, JSON.stringify(rows))
  }

  /**
   * Sends the requests' events with send(record, callback): one promise for them all, settled once
   * every event's callback ran, instead of a promise and a reaction per event.
   */
  private sendFlights(producer: Producer, flights: Flight[]): Promise<void> {
    return new Promise((resolve) => {
      let left = 0
      for (const f of flights) left += f.records.length
      for (const f of flights) {
        f.records.forEach((r, i) => producer.send(this.record(r, false), (_md, e) => {
          if (e) {
            f.outcome[i] = (e as { mayHaveBeenWritten?: boolean }).mayHaveBeenWritten === false ? NOT_WRITTEN : MAYBE_WRITTEN
            f.failed = true
          } else {
            f.outcome[i] = ACKED
            f.acked++
            this.produced(f.acceptedAt)
          }
          if (--left === 0) resolve()
        }))
      }
    })
  }

  private record(r: Row | TelemetryRecord, relabel: boolean): ProducerRecord {
    if ('topic' in r && r.topic !== null) return this.otlpRecord(r, relabel)
    const headers: Array<{ key: string; value: string }> = [
      { key: 'event-type', value: r.type }, { key: 'content-type', value: 'application/json' }, { key: EVENT_ID_HEADER, value: r.id },
    ]
    if (relabel) {
      headers.push({ key: POSSIBLE_DUPLICATE_HEADER, value: '1' })
      this.stats.relabelled++
    }
    return { topic: this.telemetryTopic(), key: r.key, value: r.value, timestamp: 'ts' in r ? r.ts : r.timestamp, headers }
  }

  /** An OTLP record: the exporter's key, value and metadata headers, and the event-id header the resume reads. */
  private otlpRecord(r: Row, relabel: boolean): ProducerRecord {
    const headers = (JSON.parse(r.headers ?? '[]') as Array<[string, string]>).map(([key, value]) => ({ key, value }))
    headers.push({ key: EVENT_ID_HEADER, value: r.id })
    if (relabel) {
      headers.push({ key: POSSIBLE_DUPLICATE_HEADER, value: '1' })
      this.stats.relabelled++
    }
    return { topic: r.topic!, key: r.bkey ? new Uint8Array(r.bkey) : null, value: this.otlpValue(r), timestamp: r.ts, headers }
  }

  /** sync mode: answered once Kafka acknowledged every event. */
  private async produceNow(records: TelemetryRecord[]): Promise<Response> {
    this.checkEventSettings()
    const topic = this.telemetryTopic()
    const started = Date.now()
    let settled: Array<PromiseSettledResult<{ partition: number; offset: bigint }>>
    try {
      const producer = await this.getProducer()
      settled = await Promise.allSettled(records.map((r) => producer.send(this.record(r, false))))
    } catch (e) {
      // The producer could not connect (TLS, SASL, no broker): none of the events was sent.
      const reason = Object.assign(e as Error, { mayHaveBeenWritten: (e as { mayHaveBeenWritten?: boolean }).mayHaveBeenWritten ?? false })
      settled = records.map(() => ({ status: 'rejected', reason }))
    }
    const produced: ProducedEvent[] = []
    const failed: FailedEvent[] = []
    settled.forEach((s, i) => {
      const id = records[i]!.id
      if (s.status === 'fulfilled') {
        produced.push({ id, partition: s.value.partition, offset: s.value.offset.toString() })
        this.stats.produced++
        this.stats.latencySum += Date.now() - started
        this.stats.latencyCount++
      } else {
        const e = s.reason as Error & { mayHaveBeenWritten?: boolean }
        failed.push({ id, error: e.name, message: e.message, retriable: e instanceof KafkaEdgeError ? e.retriable : false, mayHaveBeenWritten: e.mayHaveBeenWritten ?? true })
      }
    })
    this.stats.accepted += produced.length
    const st = this.status()
    if (failed.length === 0) return json({ accepted: produced.length, topic, producerId: st.producerId, producerEpoch: st.producerEpoch, events: produced }, 202)
    // 503 when a retry may help, 500 otherwise; the caller retries the failed ids only.
    const status = failed.every((f) => f.retriable) ? 503 : 500
    return json({ error: 'some events were not acknowledged by Kafka', accepted: produced.length, topic, producerId: st.producerId, events: produced, failed }, status)
  }

  private status() {
    const state = this.producer?.state
    return {
      mode: this.mode(),
      producer: this.producer ? 'open' : 'idle',
      producerId: state?.producerId?.toString() ?? null,
      producerEpoch: state?.producerEpoch ?? null,
      // What the producer did with the checkpoint it found: none, resumed or relabelled, and how many batches.
      resumed: this.producer?.resumeOutcome ?? null,
      connectionsOpened: this.connectionsOpened,
      backlog: this.unacknowledged(),
      // The protocol only, never the credentials: enough to tell whether a deploy picked up its config.
      securityProtocol: this.env.KAFKA_SECURITY_PROTOCOL?.trim().toUpperCase() || 'PLAINTEXT',
    }
  }

  /** This object's samples; the app renders every shard's into one Prometheus text page. */
  private metricSamples(): MetricSample[] {
    const b = { count: this.unacknowledged(), oldest: this.oldestAcceptedAt() }
    const s = this.stats
    const samples: MetricSample[] = [
      { name: 'kafka_edge_backlog_events', type: 'gauge', help: 'events stored and not yet acknowledged by Kafka', value: b.count },
      { name: 'kafka_edge_oldest_event_age_seconds', type: 'gauge', help: 'age of the oldest stored event', value: b.oldest === null ? 0 : (Date.now() - b.oldest) / 1000 },
      { name: 'kafka_edge_events_accepted_total', type: 'counter', help: 'events accepted (stored, or acknowledged in sync mode)', value: s.accepted },
      { name: 'kafka_edge_events_produced_total', type: 'counter', help: 'events acknowledged by Kafka', value: s.produced },
      { name: 'kafka_edge_events_rejected_total', type: 'counter', help: 'events refused with 429 (backlog full)', value: s.rejected },
      { name: 'kafka_edge_events_retried_ids_total', type: 'counter', help: 'events whose id was accepted before (a client retry): answered, not stored', value: s.retriedIds },
      { name: 'kafka_edge_events_relabelled_total', type: 'counter', help: 'events resent with the possible-duplicate header', value: s.relabelled },
      { name: 'kafka_edge_produce_latency_seconds', type: 'summary', help: 'from accept to Kafka acknowledgement', value: s.latencySum / 1000, count: s.latencyCount },
      { name: 'kafka_edge_checkpoint_saves_total', type: 'counter', help: 'checkpoint saves (one SQLite transaction each)', value: s.saves },
      { name: 'kafka_edge_sqlite_rows_written_total', type: 'counter', help: 'rows SQLite wrote, as workerd counts them per statement (Cloudflare bills a SQLite-backed object per row written)', value: s.rowsWritten },
      { name: 'kafka_edge_connections_opened_total', type: 'counter', help: 'broker connections opened', value: this.connectionsOpened },
    ]
    for (const [k, v] of Object.entries(this.producer?.metrics() ?? {})) {
      if (Number.isFinite(v)) samples.push({ name: `kafka_edge_producer_${k.replace(/[^a-zA-Z0-9]/g, '_')}`, type: 'gauge', help: `producer metric ${k} (Java name)`, value: v })
    }
    return samples
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** Thrown inside accept's transaction to roll it back: the request's new events would overfill the backlog. */
class BacklogFull extends Error {
  constructor(readonly incoming: number) { super('backlog full') }
}

/** Thrown inside accept's transaction to roll it back: some of the request's ids were accepted before. */
class Retried extends Error {
  constructor() { super('some ids were accepted before') }
}

/** The bytes as an ArrayBuffer of exactly their length (what SQLite binds as a BLOB). */
function buffer(b: Uint8Array): ArrayBuffer {
  return b.slice().buffer
}
