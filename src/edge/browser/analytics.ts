import { nextTask, systemClock } from '../clock.js'
import { KafkaEdgeError, POSSIBLE_DUPLICATE_HEADER } from '../errors.js'
import type { CheckpointStore, PendingBatch, ProducerCheckpoint } from '../producer/checkpoint.js'
import type { Producer, ResumeOutcome } from '../producer/producer.js'
import type { ProducerSettings } from '../producer/config.js'
import type { Transport } from '../transport/transport.js'
import type { WebSocketConstructor } from '../transport/websocket.js'
import type { CoreSource } from '../wasm/core.js'
import { CheckpointConflictError, IndexedDbOutbox, MemoryStorage, OutboxFullError, WebStorageOutbox, checkpointWriter, type Outbox, type OutboxEntry, type StorageLike } from './outbox.js'

type SenderModule = typeof import('./sender.js')

/** Producer id, epoch, base sequence and count (header bytes 43..61): what names a batch. */
const stampOf = (b: PendingBatch): string => `${b.bytes.subarray(43, 61).join()}`

export interface AnalyticsEvent {
  /** What happened: 1-100 characters of A-Z a-z 0-9 _ . : / - */
  type: string
  /** Any JSON value. */
  data?: unknown
  /** Kafka record key (partitioning); default: none (sticky partitioning) or options.key(event). */
  key?: string | null
  /** Your id for the event; default a random UUID. */
  id?: string
  /** ms since the epoch; default now. */
  timestamp?: number
}

/** The subset of the Web Locks API used (navigator.locks). */
export interface LockManagerLike {
  request(name: string, options: { signal?: AbortSignal }, callback: () => Promise<void>): Promise<unknown>
}

export interface AnalyticsOptions {
  /** The kafka-edge relay, e.g. wss://relay.example/kafka. */
  relayUrl: string
  /** Relay token (or a function returning a fresh one per connection). */
  token: string | (() => string | Promise<string>)
  /** The topic events go to (the relay's policy must allow it). */
  topic: string
  /** Replaces the WebSocket transport (tests, or a custom relay client). */
  transport?: Transport
  /** Injected WebSocket constructor for the default transport (Node 20 has none). */
  WebSocket?: WebSocketConstructor
  /** Extra producer settings (Java names). */
  producer?: ProducerSettings
  /**
   * Where the outbox lives: 'indexeddb' (the default where the page has it), a Web Storage object
   * (the default otherwise: localStorage), or 'memory' (nothing survives a reload).
   */
  storage?: 'indexeddb' | 'memory' | StorageLike
  /** Storage, lock and channel namespace; default `kafka-edge:<topic>`. */
  namespace?: string
  /** Batching window: how long a tracked event waits before it is sent (default 1000 ms). */
  flushIntervalMs?: number
  /** Send at once when this many events wait (default 200). */
  maxBatchEvents?: number
  /** Most events the origin's outbox holds; track() rejects with OutboxFullError beyond (default 10000). */
  maxOutboxEvents?: number
  /** First delay before re-sending events whose send failed; doubles up to retryBackoffMaxMs (defaults 1000 / 30000). */
  retryBackoffMs?: number
  retryBackoffMaxMs?: number
  /**
   * How long after its last save a checkpoint is left alone before a new sender takes it over
   * (default 5000 ms): batches a dead page had on the wire land meanwhile (see docs/browser.md).
   */
  takeoverSettleMs?: number
  /** Elects the one tab that sends (default navigator.locks). null: this instance always sends. */
  locks?: LockManagerLike | null
  /** Where pagehide / visibilitychange / online fire; default globalThis (the window). null: none. */
  lifecycle?: EventTarget | null
  /** For visibilitychange: reads visibilityState (default globalThis.document). */
  document?: { readonly visibilityState: string } | null
  /** Derives a record key from an event that has none. */
  key?: (event: AnalyticsEvent) => string | null | undefined
  /** The relay's page-hide route; default relayUrl with http(s) and `/beacon` appended. null: no beacon. */
  beaconUrl?: string | null
  /** Called with send errors (the events stay in the outbox and are retried). */
  onError?: (error: Error) => void
  /** The compiled core module, for a page that does not load core-lz4.wasm from next to its bundle (see docs/browser.md). */
  wasm?: WebAssembly.Module
}

export interface AnalyticsStats {
  /** Events this instance stored in the outbox. */
  tracked: number
  /** Events acknowledged while this instance was the sender (any tab's). */
  acked: number
  /** Failed attempts to reach Kafka (connect, or a send that put its event back for a retry). */
  retries: number
  /** Page-hide beacons: Produce requests of the checkpoint's unacknowledged batches handed to fetch({ keepalive }). */
  beacons: number
  /** Times this tab stopped sending because another sender had saved the checkpoint (two senders at once). */
  conflicts: number
  /** 'owner': this tab sends for the origin; 'follower': another tab does. */
  role: 'owner' | 'follower'
  /** What this tab's producer did with the checkpoint it found on taking over: resumed the identity, or relabelled. */
  resume?: ResumeOutcome
}


const utf8 = new TextDecoder()
const TYPE = /^[A-Za-z0-9_.:/-]{1,100}$/
const READ_CHUNK = 500
const MAX_IN_FLIGHT = 5000

interface Waiter { ids: Set<string>; resolve(): void; reject(e: Error): void }
interface Queued { e: OutboxEntry; resolve(id: string): void; reject(e: Error): void }
type Message = { added: 1 } | { acked: string[] }

/**
 * Browser analytics over kafka-edge with exactly-once delivery: see docs/browser.md.
 *
 * Every tab of an origin writes its events to one outbox (IndexedDB); one tab, elected with a Web
 * Lock, owns the producer and sends for all of them. The producer checkpoints its identity and the
 * encoded batches it has not had acknowledged into the same database, so the next owner (a reload,
 * another tab) resends those exact batches under their original sequences and Kafka drops the
 * copies it already has.
 */
export class Analytics {
  readonly topic: string
  private readonly o: AnalyticsOptions
  private readonly outbox: Outbox
  /** The producer's core (options.wasm, else the lz4-only build); the SDK reads the checkpoint's batches with the same instance. */
  private wasm: CoreSource | Promise<CoreSource> | undefined
  /** The producer side of the SDK (sender.ts), imported once this tab is elected to send; a failed load is tried again by the next send. */
  private sender: Promise<SenderModule> | null = null
  private s: SenderModule | null = null
  private readonly channel: BroadcastChannel | null
  private readonly abort = new AbortController()
  private role: 'owner' | 'follower' = 'follower'
  private unlock: (() => void) | null = null
  private producer: Producer | null = null
  /** Which save wrote the checkpoint this sender last loaded or saved: its next save expects it still there. */
  private cpWriter: string | null = null
  private saves = 0
  private readonly writerId = Math.random().toString(36).slice(2)
  /** A save met another sender's: this tab steps down and waits for the lock again. */
  private conflicted = false
  /** A producer being closed: the next one waits for it (one identity, one producer at a time). */
  private retiring: Promise<void> = Promise.resolve()
  private queue: Queued[] = []
  private storing: Promise<void> = Promise.resolve()
  /** Highest outbox key handed to the producer. */
  private lastKey = 0
  /** Events handed to the producer, by id; `gone`: another sender's checkpoint took them (a save conflict). */
  private readonly inflight = new Map<string, OutboxEntry & { gone?: true }>()
  private readonly waiters = new Set<Waiter>()
  private readonly mine = new Set<string>()
  private decoded = new Set<string>()
  /** The last checkpoint saved and the last token used: what a page-hide beacon is made of (it cannot wait for either). */
  private lastCp: ProducerCheckpoint | undefined
  /** The page hid: the next save that adds batches (the flush the hide started) sends them by beacon too. */
  private hidBeforeSave = false
  private lastToken: string | undefined
  private ackedIds: string[] = []
  private ackedKeys: number[] = []
  private timer: unknown = null
  private pumping = false
  private again = false
  private backoffMs = 0
  private retryAt = 0
  private closed = false
  private readonly listeners: Array<[string, (e: Event) => void]> = []
  private readonly statsData = { tracked: 0, acked: 0, retries: 0, beacons: 0, conflicts: 0 }
  private readonly locks: LockManagerLike | null
  private readonly ns: string

  constructor(options: AnalyticsOptions) {
    if (!options || typeof options.topic !== 'string' || !/^[a-zA-Z0-9._-]{1,249}$/.test(options.topic)) throw new KafkaEdgeError(`createAnalytics: topic must be a Kafka topic name, got ${JSON.stringify(options?.topic)}`)
    if (!options.transport && typeof options.relayUrl !== 'string') throw new KafkaEdgeError('createAnalytics: relayUrl is required (e.g. wss://relay.example/kafka)')
    this.o = options
    this.topic = options.topic
    this.wasm = options.wasm
    const ns = options.namespace ?? `kafka-edge:${options.topic}`
    const g = globalThis as { indexedDB?: IDBFactory; localStorage?: StorageLike; navigator?: { locks?: LockManagerLike } }
    const s = options.storage ?? (g.indexedDB ? 'indexeddb' : g.localStorage ?? 'memory')
    this.outbox = s === 'indexeddb' ? new IndexedDbOutbox(g.indexedDB!, ns) : new WebStorageOutbox(s === 'memory' ? new MemoryStorage() : s, ns)
    this.channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel(ns) : null
    if (this.channel) this.channel.onmessage = (m: MessageEvent<Message>) => this.received(m.data)
    const locks = options.locks === undefined ? g.navigator?.locks : options.locks
    this.locks = locks ?? null
    this.ns = ns
    this.elect()
    this.listen()
  }

  /**
   * Stores the event in the outbox and resolves with its id once it is durable there: the write is
   * issued before track() returns (with the other events tracked in the same task, in one
   * IndexedDB transaction) and the promise settles when that transaction committed. An app that
   * does not await it loses nothing unless the page dies within those few milliseconds.
   * Throws at once on an invalid event; rejects with OutboxFullError when the outbox is full.
   */
  track(event: AnalyticsEvent): Promise<string> {
    if (this.closed) throw new KafkaEdgeError('track() after close()')
    if (!event || typeof event !== 'object') throw new KafkaEdgeError('track() takes an event object like { type: "click", data: {...} }')
    if (typeof event.type !== 'string' || !TYPE.test(event.type)) {
      throw new KafkaEdgeError(`event type must be 1-100 characters of A-Z a-z 0-9 _ . : / -, got ${JSON.stringify(event.type)}`)
    }
    const id = event.id ?? crypto.randomUUID()
    const timestamp = event.timestamp ?? Date.now()
    if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new KafkaEdgeError(`event timestamp must be integer ms since the epoch, got ${event.timestamp}`)
    const key = event.key ?? this.o.key?.(event) ?? null
    const value = JSON.stringify({ id, type: event.type, timestamp, ...(key !== null ? { key } : {}), ...(event.data !== undefined ? { data: event.data } : {}) })
    if (this.queue.length === 0) this.storing = new Promise((r) => queueMicrotask(() => void this.store().then(r)))
    return new Promise<string>((resolve, reject) => this.queue.push({ e: { id, topic: this.topic, key, value, timestamp, type: event.type }, resolve, reject }))
  }

  /**
   * Resolves once every event this instance tracked before the call is acknowledged by Kafka
   * (whichever tab sent it). Rejects with a send error for one of them (they stay queued and are retried).
   */
  async flush(): Promise<void> {
    await this.storing
    const ids = new Set(this.mine)
    if (ids.size === 0) return
    const p = new Promise<void>((resolve, reject) => this.waiters.add({ ids, resolve, reject }))
    this.retryAt = 0
    this.wake(0)
    await p
    // The acknowledged batches leave the checkpoint with the producer's next save; its flush() makes it now.
    await this.producer?.flush()
  }

  /** Events of the origin not yet acknowledged: in the outbox, or in the checkpoint's unacknowledged batches. */
  async pending(): Promise<number> {
    const cp = await this.outbox.load<ProducerCheckpoint>()
    return await this.outbox.count() + (cp?.pending.reduce((n, b) => n + b.recordCount, 0) ?? 0)
  }

  stats(): AnalyticsStats {
    const resume = this.producer?.resumeOutcome
    return { ...this.statsData, role: this.role, ...(resume ? { resume } : {}) }
  }

  /** The producer's metrics (Java names), or {} in a tab that is not the sender. */
  metrics(): Record<string, number> { return this.producer?.metrics() ?? {} }

  /**
   * Waits up to timeoutMs (default 5000) for what this instance tracked to be acknowledged, then
   * stops and hands the sending over to another tab. Nothing is lost: the outbox keeps the rest.
   */
  async close(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (this.closed) return
    await Promise.race([this.flush().catch(() => {}), new Promise((r) => setTimeout(r, opts.timeoutMs ?? 5000))])
    this.closed = true
    if (this.timer) systemClock.clearTimeout(this.timer)
    for (const [type, fn] of this.listeners) this.o.lifecycle?.removeEventListener(type, fn)
    const p = this.producer
    this.producer = null
    await p?.close({ timeoutMs: 0 }).catch(() => {})
    this.abort.abort()
    this.unlock?.()
    this.channel?.close()
    for (const w of this.waiters) w.reject(new KafkaEdgeError('closed before the events were acknowledged; they stay in the outbox'))
    this.waiters.clear()
  }

  // ---- internals -------------------------------------------------------------------------------

  /** Writes what track() queued in this task, in one transaction. */
  private async store(): Promise<void> {
    const q = this.queue
    this.queue = []
    let n = 0
    let err: Error = new OutboxFullError(`the analytics outbox holds maxOutboxEvents (${this.o.maxOutboxEvents ?? 10_000}) events `
      + 'not yet acknowledged: Kafka or the relay is unreachable, or events come faster than they can be sent')
    try {
      n = await this.outbox.add(q.map((x) => x.e), this.o.maxOutboxEvents ?? 10_000)
    } catch (e) {
      err = e as Error
    }
    for (const [i, x] of q.entries()) {
      if (i >= n) { x.reject(err); continue }
      this.mine.add(x.e.id)
      x.resolve(x.e.id)
    }
    this.statsData.tracked += n
    if (n === 0) return
    if (this.role === 'owner') this.wake(n >= (this.o.maxBatchEvents ?? 200) ? 0 : this.o.flushIntervalMs ?? 1000)
    else this.channel?.postMessage({ added: 1 } satisfies Message)
  }

  private received(m: Message): void {
    if ('acked' in m) this.settle(m.acked)
    else if (this.role === 'owner') this.wake(this.o.flushIntervalMs ?? 1000)
  }

  private settle(ids: string[]): void {
    for (const id of ids) this.mine.delete(id)
    for (const w of this.waiters) {
      for (const id of ids) w.ids.delete(id)
      if (w.ids.size === 0) { this.waiters.delete(w); w.resolve() }
    }
  }

  /**
   * Queues for the origin's lock. It is held until close(), until the page is gone (the browser
   * releases it with the document, a crashed renderer included), or until a save finds another
   * sender's; the next tab waiting for it becomes the sender.
   */
  private elect(): void {
    if (!this.locks) { this.own(); return }
    this.locks.request(this.ns, { signal: this.abort.signal }, () => new Promise<void>((resolve) => { this.unlock = resolve; this.own() })).catch(() => {})
  }

  /**
   * Another sender saved since this one loaded the checkpoint: it may be this tab's zombie
   * predecessor, or this tab may be the zombie. Either way this tab stops sending, closes its producer
   * and queues for the lock again; whoever holds the lock next loads the checkpoint as it now is.
   */
  private stepDown(producer: Producer): void {
    this.conflicted = false
    this.statsData.conflicts++
    // A sender that saved after this one loaded this one's checkpoint and carries its batches: the
    // events that left the outbox with them are that sender's to deliver now.
    for (const e of this.inflight.values()) if (e.k === undefined) e.gone = true
    if (this.producer === producer) this.producer = null
    this.retiring = producer.close({ timeoutMs: 0 }).catch(() => {})
    this.lastKey = 0
    if (!this.locks) { this.backoff(); this.wake(0); return }
    this.role = 'follower'
    const unlock = this.unlock
    this.unlock = null
    unlock?.()
    if (!this.closed) this.elect()
  }

  /** This tab won the lock: it sends the origin's outbox, resuming the producer from its checkpoint. */
  private own(): void {
    if (this.closed) { this.unlock?.(); return }
    this.role = 'owner'
    this.wake(0)
  }

  private listen(): void {
    const target = this.o.lifecycle === undefined ? (globalThis as { addEventListener?: unknown }).addEventListener ? globalThis as unknown as EventTarget : null : this.o.lifecycle
    if (!target) return
    const doc = this.o.document === undefined ? (globalThis as { document?: { visibilityState: string } }).document ?? null : this.o.document
    const on = (type: string, fn: (e: Event) => void) => { target.addEventListener(type, fn); this.listeners.push([type, fn]) }
    this.o.lifecycle = target
    // The page may be going away: send what waits now instead of at the end of the batching window.
    const now = () => { this.retryAt = 0; this.backoffMs = 0; this.wake(0) }
    const hide = () => { this.hidBeforeSave = true; this.beacon(); now() }
    on('pagehide', hide)
    on('visibilitychange', () => { if (!doc || doc.visibilityState === 'hidden') hide(); else this.hidBeforeSave = false })
    on('online', now)
  }

  /**
   * The page may be going away with batches in flight: send them once more, as they are (same
   * producer id, epoch and sequences), to the relay's HTTP route with fetch({ keepalive: true }),
   * which outlives the page. A batch that already arrived is answered as a duplicate; whatever the
   * beacon does not deliver, the next page load resends from the checkpoint. Kafka takes one batch
   * per partition per request, so the k-th batch of every partition goes in the k-th Produce request
   * to its leader; a leader's requests travel in one body, in order, and the bodies together stop at
   * the browsers' 64 KiB keepalive budget.
   */
  private beacon(): void {
    const p = this.producer
    const s = this.s
    const cp = this.lastCp
    const url = this.o.beaconUrl === undefined ? `${this.o.relayUrl.replace(/^ws/, 'http')}/beacon` : this.o.beaconUrl
    if (!p || !s || !cp?.pending.length || url === null || this.o.transport || this.lastToken === undefined) return
    const rounds: Array<Map<string, PendingBatch[]>> = []
    const next = new Map<string, number>()
    // Batches whose records are being re-sent as new records never go out as they are again.
    for (const b of cp.pending.filter((x) => !x.relabelled).sort(s.pendingOrder)) {
      const broker = p.leaderAddress(b.topic, b.partition)
      if (!broker) continue
      const tp = `${b.topic}\0${b.partition}`
      const k = next.get(tp) ?? 0
      next.set(tp, k + 1)
      const to = `${broker.host.includes(':') ? `[${broker.host}]` : broker.host}:${broker.port}`
      const round = rounds[k] ??= new Map()
      round.set(to, [...round.get(to) ?? [], b])
    }
    // One request per leader carrying its rounds in order: the relay sends them one after another on
    // one connection, so a partition's later batch never reaches the broker before its earlier one.
    const bodies = new Map<string, Uint8Array[]>()
    let budget = 64 * 1024
    fill: for (const round of rounds) {
      for (const [broker, batches] of round) {
        const topicData = [...new Set(batches.map((b) => b.topic))].map((name) => ({
          name, partitionData: batches.filter((b) => b.topic === name).map((b) => ({ index: b.partition, records: b.bytes })),
        }))
        const frame = s.encodeRequest(s.Produce, 9, 0, 'kafka-edge-beacon', { transactionalId: null, acks: -1, timeoutMs: 10_000, topicData })
        const parts = bodies.get(broker) ?? [new TextEncoder().encode(`${JSON.stringify({ token: this.lastToken, ticket: cp.ticket, broker })}\n`)]
        budget -= frame.length + (parts.length === 1 ? parts[0]!.length : 0)
        if (budget < 0) break fill
        parts.push(frame)
        bodies.set(broker, parts)
      }
    }
    for (const parts of bodies.values()) {
      if (parts.length < 2) continue
      fetch(url, { method: 'POST', body: new Blob(parts as BlobPart[]), keepalive: true, mode: 'no-cors' }).catch(() => {})
      this.statsData.beacons++
    }
  }

  private wake(ms: number): void {
    if (this.closed || this.role !== 'owner') return
    const at = Math.max(Date.now() + ms, this.retryAt)
    if (this.timer) {
      if (ms > 0) return // an earlier send is already due
      systemClock.clearTimeout(this.timer)
    }
    // A hidden tab may be the origin's sender: its "now" must not wait out a clamped timer (clock.ts).
    this.timer = systemClock.setTimeout(() => { this.timer = null; void this.pump() }, Math.max(0, at - Date.now()))
  }

  private async getProducer(): Promise<Producer> {
    if (this.producer && !this.producer.state.fatal) return this.producer
    const old = this.producer
    if (old) this.retiring = old.close({ timeoutMs: 0 }).catch(() => {})
    // The old producer must be done (its checkpoint frozen, its sender stopped) before the new one
    // loads the checkpoint: two producers under one identity would stamp the same sequences.
    await this.retiring
    const o = this.o
    const s = this.s ??= await (this.sender ??= import('./sender.js').catch((err: unknown) => { this.sender = null; throw err }))
    this.wasm ??= s.bundledLz4Core()
    // A resumed producer id is accepted by a relay that never saw it (restarted, another instance)
    // on the relay's ticket, which the producer keeps in the checkpoint beside the id.
    this.producer = s.createProducer({
      // The relay connects bootstrap requests to its own brokers: any placeholder address works.
      'bootstrap.servers': 'relay:443',
      transport: o.transport ?? s.websocket({
        url: o.relayUrl,
        token: async () => (this.lastToken = typeof o.token === 'string' ? o.token : await o.token()),
        WebSocket: o.WebSocket,
      }),
      'client.id': 'kafka-edge-analytics',
      'linger.ms': 20,
      'compression.type': 'lz4',
      'max.block.ms': 30_000,
      // A batch given up on would have to go out again under new sequences, which the broker cannot
      // recognise as a copy: keep retrying it until acknowledged, through any outage.
      'delivery.timeout.ms': 2_147_483_647,
      wasm: this.wasm,
      ...o.producer,
      checkpoint: {
        load: async () => {
          const cp = await this.outbox.load<ProducerCheckpoint>()
          this.cpWriter = checkpointWriter(cp)
          return cp
        },
        save: (cp) => this.checkpoint(cp),
      } satisfies CheckpointStore,
    })
    return this.producer
  }

  /**
   * The producer's checkpoint store: the events inside the batches it is about to send leave the
   * outbox in the same transaction that saves those batches, so after a crash each event is in
   * exactly one of the two places (the checkpoint's batches are resent under their sequences, the
   * outbox's events are sent anew).
   */
  private async checkpoint(cp: ProducerCheckpoint): Promise<void> {
    const take: number[] = []
    const taken: Array<[OutboxEntry & { gone?: true }, number]> = []
    const seen = new Set<string>()
    if (this.inflight.size > 0 && cp.pending.length > 0) {
      // Saves come from the producer, so the sender module is loaded.
      const s = this.s!
      const core = await s.loadCore(this.wasm as CoreSource)
      for (const b of cp.pending) {
        // A batch read at an earlier save has given up its events already.
        const stamp = stampOf(b)
        seen.add(stamp)
        if (this.decoded.has(stamp)) continue
        for (const r of s.readBatchRecords(core, b.bytes)) {
          const e = this.inflight.get((JSON.parse(utf8.decode(r.value!)) as { id: string }).id)
          if (e?.k !== undefined) { take.push(e.k); taken.push([e, e.k]); delete e.k }
        }
      }
    }
    const before = new Set(this.lastCp?.pending.map(stampOf))
    const stored: ProducerCheckpoint & { writer: string } = { ...cp, writer: `${this.writerId}.${++this.saves}` }
    try {
      await this.outbox.save(stored, take, this.cpWriter)
    } catch (err) {
      // Nothing was stored: the events stay where they were, in this outbox's rows or (`missing`) in
      // the other sender's checkpoint, which now carries them.
      const missing = err instanceof CheckpointConflictError ? new Set(err.missing) : new Set<number>()
      for (const [e, k] of taken) if (missing.has(k)) e.gone = true; else e.k = k
      if (err instanceof CheckpointConflictError) this.conflicted = true
      throw err
    }
    this.cpWriter = stored.writer
    this.decoded = seen
    this.lastCp = stored
    // The batches the hide's flush built may never leave on the WebSocket before the page goes; a
    // keepalive fetch outlives it (the beacon at the hide itself found only the older batches).
    if (this.hidBeforeSave && stored.pending.some((b) => !before.has(stampOf(b)))) {
      this.hidBeforeSave = false
      this.beacon()
    }
  }

  private async pump(): Promise<void> {
    if (this.closed || this.role !== 'owner') return
    if (this.pumping) { this.again = true; return }
    if (this.retryAt > Date.now()) { this.wake(0); return }
    this.pumping = true
    try {
      const producer = await this.getProducer()
      if (producer.resumeOutcome === undefined) await this.settleTakeover()
      // Takes over the checkpoint (resending its batches) even when the outbox holds nothing new.
      await producer.connect()
      while (this.inflight.size < MAX_IN_FLIGHT && !this.closed) {
        const batch = await this.outbox.read(this.lastKey, READ_CHUNK)
        for (const e of batch) {
          this.lastKey = e.k!
          if (this.inflight.has(e.id)) continue // the same id tracked twice: sent once
          this.inflight.set(e.id, e)
          const headers = { 'event-type': e.type, ...(e.dup ? { [POSSIBLE_DUPLICATE_HEADER]: '1' } : {}) }
          producer.send({ topic: e.topic, key: e.key, value: e.value, timestamp: e.timestamp, headers }).then(
            () => this.acked(e),
            (err: Error) => this.failed(e, err as KafkaEdgeError, producer),
          )
        }
        if (batch.length < READ_CHUNK) break
      }
    } catch (err) {
      this.statsData.retries++
      this.report(err as Error)
      this.backoff()
    } finally {
      this.pumping = false
      if (this.again) { this.again = false; this.wake(0) }
    }
  }

  /**
   * Before taking over a checkpoint saved moments ago: the page that saved it may have died with its
   * batches on the wire (or in its page-hide beacon). Until they land, the broker does not know the
   * producer, and the takeover would take that for an expiry and resend them under a new id (a
   * labelled second copy). Requests already sent land within a few seconds or not at all.
   */
  private async settleTakeover(): Promise<void> {
    const cp = await this.outbox.load<ProducerCheckpoint>()
    const settle = this.o.takeoverSettleMs ?? 5000
    const wait = cp?.pending.length ? cp.savedAt + settle - Date.now() : 0
    if (wait > 0) await new Promise((r) => setTimeout(r, Math.min(wait, settle)))
  }

  private acked(e: OutboxEntry): void {
    this.inflight.delete(e.id)
    this.statsData.acked++
    this.backoffMs = 0
    if (e.k !== undefined) this.ackedKeys.push(e.k)
    this.ackedIds.push(e.id)
    if (this.ackedIds.length > 1) return
    // Acknowledgements arrive per record; removals and notices go out once per task.
    nextTask(() => {
      const ids = this.ackedIds
      const keys = this.ackedKeys
      this.ackedIds = []
      this.ackedKeys = []
      if (keys.length) this.outbox.remove(keys).catch((err: Error) => this.report(err))
      this.settle(ids)
      if (!this.closed) this.channel?.postMessage({ acked: ids } satisfies Message)
      if (this.inflight.size < MAX_IN_FLIGHT / 2) this.wake(0)
    })
  }

  /**
   * A send failed for good (the producer gave up on its batch): the event goes back to the end of
   * the outbox, marked as a possible duplicate when the failed send may have reached the log.
   */
  private failed(e: OutboxEntry & { gone?: true }, err: KafkaEdgeError, producer: Producer): void {
    this.inflight.delete(e.id)
    if (this.closed) return
    if (this.conflicted && this.producer === producer) this.stepDown(producer)
    // Another sender's checkpoint carries it: that sender delivers it (and broadcasts the ack).
    if (e.gone) return
    this.statsData.retries++
    if (this.producer === producer && (producer.state.fatal || err.name === 'ClosedError')) {
      this.producer = null
      this.retiring = producer.close({ timeoutMs: 0 }).catch(() => {})
    }
    // No key: the event left the outbox in a checkpointed batch. Whether that batch also stays in the
    // checkpoint (a producer closed under it keeps it for the next one) is not known here, so the
    // copy going back into the outbox is labelled: a second copy may come, never an unlabelled one.
    const old = e.k === undefined ? [] : [e.k]
    const again: OutboxEntry = { ...e, ...(err.mayHaveBeenWritten || e.dup || e.k === undefined ? { dup: 1 } : {}) }
    this.outbox.remove(old, [again]).catch((x: Error) => this.report(x))
    if (this.retryAt <= Date.now()) { this.report(err); this.backoff() }
    for (const w of this.waiters) if (w.ids.has(e.id)) { this.waiters.delete(w); w.reject(err) }
    this.wake(0)
  }

  /** One backoff step per failed round, not per event of the round. */
  private backoff(): void {
    if (this.retryAt > Date.now()) return
    this.backoffMs = Math.min(this.o.retryBackoffMaxMs ?? 30_000, this.backoffMs ? this.backoffMs * 2 : this.o.retryBackoffMs ?? 1000)
    this.retryAt = Date.now() + this.backoffMs * (0.8 + Math.random() * 0.4)
    this.wake(0)
  }

  private report(err: Error): void {
    try { this.o.onError?.(err) } catch { /* the callback's own problem */ }
  }
}

export function createAnalytics(options: AnalyticsOptions): Analytics {
  return new Analytics(options)
}

export { OutboxFullError }
