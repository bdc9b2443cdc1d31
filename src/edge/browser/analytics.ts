import { KafkaEdgeError } from '../errors.js'
import { createProducer, type Producer } from '../producer/producer.js'
import type { ProducerSettings } from '../producer/config.js'
import type { Transport } from '../transport/transport.js'
import { websocket, type WebSocketConstructor } from '../transport/websocket.js'
import { MemoryOutbox, OutboxFullError, WebStorageOutbox, type OutboxEntry, type OutboxStore, type StorageLike } from './outbox.js'

export interface AnalyticsEvent {
  /** What happened: 1-100 characters of A-Z a-z 0-9 _ . : / - */
  type: string
  /** Any JSON value. */
  data?: unknown
  /** Kafka record key (partitioning); default: none (sticky partitioning) or options.key(event). */
  key?: string | null
  /** Your id for the event; default a random UUID. Consumers dedupe on it. */
  id?: string
  /** ms since the epoch; default now. */
  timestamp?: number
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
  /** Extra producer settings (Java names), e.g. { 'compression.type': 'gzip' }. */
  producer?: ProducerSettings
  /**
   * Where the outbox lives: a Web Storage object (default: localStorage when the page has one), an
   * OutboxStore, or 'memory' (nothing survives a reload).
   */
  storage?: StorageLike | OutboxStore | 'memory'
  /** Storage namespace; default `kafka-edge:<topic>`. */
  namespace?: string
  /** Batching window: how long track() waits before sending (default 1000 ms). */
  flushIntervalMs?: number
  /** Send at once when this many events wait (default 200). */
  maxBatchEvents?: number
  /** Most events kept unacknowledged; track() throws OutboxFullError beyond (default 10000). */
  maxOutboxEvents?: number
  /** First delay before re-sending events whose send failed; doubles up to retryBackoffMaxMs (defaults 1000 / 30000). */
  retryBackoffMs?: number
  retryBackoffMaxMs?: number
  /** An owner that has not beaten for this long is presumed dead and its events are resent (default 15000). */
  ownerStaleMs?: number
  /** Where pagehide / visibilitychange / pageshow / online fire; default globalThis (the window). null: none. */
  lifecycle?: EventTarget | null
  /** For visibilitychange: reads visibilityState (default globalThis.document). */
  document?: { readonly visibilityState: string } | null
  /** Derives a record key from an event that has none. */
  key?: (event: AnalyticsEvent) => string | null | undefined
  /** Called with send errors (the events stay in the outbox and are retried). */
  onError?: (error: Error) => void
  /** The compiled core module, for a page that does not load core.wasm from next to its bundle (see docs/browser.md). */
  wasm?: WebAssembly.Module
}

export interface AnalyticsStats {
  tracked: number
  acked: number
  /** Events in the outbox (not yet acknowledged). */
  pending: number
  /** Events found in the outbox at start or claimed from another owner, and resent. */
  recovered: number
  /** Failed sends that put events back for a retry. */
  retries: number
}

const TYPE = /^[A-Za-z0-9_.:/-]{1,100}$/

function randomId(): string {
  const c = (globalThis as { crypto?: Crypto }).crypto
  if (c?.randomUUID) return c.randomUUID()
  const b = new Uint8Array(16)
  if (c?.getRandomValues) c.getRandomValues(b)
  else for (let i = 0; i < 16; i++) b[i] = Math.floor(Math.random() * 256)
  b[6] = (b[6]! & 0x0f) | 0x40
  b[8] = (b[8]! & 0x3f) | 0x80
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

function isStore(s: unknown): s is OutboxStore {
  return typeof (s as OutboxStore).claim === 'function'
}

interface Waiter { seqs: Set<string>; resolve(): void; reject(e: Error): void }

/**
 * Browser analytics over kafka-edge. `track(event)` writes the event to the outbox (synchronously,
 * in Web Storage) and returns its id; events are batched (flushIntervalMs / maxBatchEvents) into an
 * idempotent producer that reaches Kafka through the relay. An event leaves the outbox only once
 * Kafka acknowledged it; on pagehide or when the page is hidden the SDK sends at once; whatever was
 * not acknowledged when the page went away is resent by the next page load (or another tab).
 *
 * Delivery is at least once across page loads: the idempotent producer removes duplicates of its
 * own retries, but a new page is a new producer, so an event whose ack was lost with the old page is
 * sent again. Every value carries the event id; dedupe on it downstream.
 */
export class Analytics {
  readonly topic: string
  private readonly o: AnalyticsOptions
  private readonly store: OutboxStore
  private producer: Producer | null = null
  private unsent: OutboxEntry[] = []
  private readonly inflight = new Map<string, OutboxEntry>()
  private readonly waiters = new Set<Waiter>()
  private timer: ReturnType<typeof setTimeout> | null = null
  private heartbeat: ReturnType<typeof setInterval> | null = null
  private backoffMs = 0
  private retryAt = 0
  private counter = 0
  private closed = false
  private readonly listeners: Array<[string, (e: Event) => void]> = []
  private readonly statsData = { tracked: 0, acked: 0, recovered: 0, retries: 0 }

  constructor(options: AnalyticsOptions) {
    if (!options || typeof options.topic !== 'string' || !/^[a-zA-Z0-9._-]{1,249}$/.test(options.topic)) throw new KafkaEdgeError(`createAnalytics: topic must be a Kafka topic name, got ${JSON.stringify(options?.topic)}`)
    if (!options.transport && typeof options.relayUrl !== 'string') throw new KafkaEdgeError('createAnalytics: relayUrl is required (e.g. wss://relay.example/kafka)')
    this.o = options
    this.topic = options.topic
    const ns = options.namespace ?? `kafka-edge:${options.topic}`
    const storage = options.storage ?? (globalThis as { localStorage?: StorageLike }).localStorage ?? 'memory'
    this.store = storage === 'memory' ? new MemoryOutbox() : isStore(storage) ? storage : new WebStorageOutbox(storage, ns, randomId(), options.ownerStaleMs ?? 15_000)
    this.store.beat(Date.now())
    this.adopt()
    const staleMs = options.ownerStaleMs ?? 15_000
    this.heartbeat = setInterval(() => { this.store.beat(Date.now()); this.adopt() }, Math.max(50, Math.floor(staleMs / 3)))
    ;(this.heartbeat as { unref?: () => void }).unref?.()
    this.listen()
  }

  /** Records an event; returns its id. Throws (synchronously) on an invalid event or a full outbox. */
  track(event: AnalyticsEvent): string {
    if (this.closed) throw new KafkaEdgeError('track() after close()')
    if (!event || typeof event !== 'object') throw new KafkaEdgeError('track() takes an event object like { type: "click", data: {...} }')
    if (typeof event.type !== 'string' || !TYPE.test(event.type)) {
      throw new KafkaEdgeError(`event type must be 1-100 characters of A-Z a-z 0-9 _ . : / -, got ${JSON.stringify(event.type)}`)
    }
    const max = this.o.maxOutboxEvents ?? 10_000
    if (this.store.size >= max) throw new OutboxFullError(`the outbox holds ${this.store.size} unacknowledged events (maxOutboxEvents ${max}); the relay or Kafka is unreachable`)
    const id = event.id ?? randomId()
    const timestamp = event.timestamp ?? Date.now()
    if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new KafkaEdgeError(`event timestamp must be integer ms since the epoch, got ${event.timestamp}`)
    const key = event.key ?? this.o.key?.(event) ?? null
    const value = JSON.stringify({ id, type: event.type, timestamp, ...(key !== null ? { key } : {}), ...(event.data !== undefined ? { data: event.data } : {}) })
    const seq = `${timestamp.toString(36).padStart(9, '0')}${(this.counter++ % 1679616).toString(36).padStart(4, '0')}${randomId().slice(0, 4)}`
    const entry: OutboxEntry = { seq, id, topic: this.topic, key, value, timestamp, type: event.type }
    this.store.put(entry) // durable before track() returns
    this.statsData.tracked++
    this.unsent.push(entry)
    if (this.unsent.length >= (this.o.maxBatchEvents ?? 200)) this.schedule(0)
    else this.schedule(this.o.flushIntervalMs ?? 1000)
    return id
  }

  /**
   * Sends everything now and resolves once every event tracked before the call is acknowledged.
   * Rejects with the first send error for one of them (they stay in the outbox and are retried).
   */
  flush(): Promise<void> {
    const seqs = new Set<string>([...this.unsent.map((e) => e.seq), ...this.inflight.keys()])
    if (seqs.size === 0) return Promise.resolve()
    const p = new Promise<void>((resolve, reject) => this.waiters.add({ seqs, resolve, reject }))
    this.retryAt = 0
    this.schedule(0)
    return p
  }

  /** Events tracked but not yet acknowledged (they are in the outbox). */
  get pending(): number { return this.store.size }

  stats(): AnalyticsStats { return { ...this.statsData, pending: this.store.size } }

  /** The producer's metrics (Java names), or {} before the first send. */
  metrics(): Record<string, number> { return this.producer?.metrics() ?? {} }

  /**
   * Sends what is queued (waiting up to timeoutMs, default 5000), then stops. Unacknowledged events
   * stay in the outbox for the next page load.
   */
  async close(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (this.closed) return
    const flushed = this.flush().catch(() => {})
    await Promise.race([flushed, new Promise((r) => setTimeout(r, opts.timeoutMs ?? 5000))])
    this.closed = true
    if (this.timer) clearTimeout(this.timer)
    if (this.heartbeat) clearInterval(this.heartbeat)
    for (const [type, fn] of this.listeners) this.o.lifecycle?.removeEventListener(type, fn)
    this.store.release()
    const p = this.producer
    this.producer = null
    await p?.close({ timeoutMs: 0 }).catch(() => {})
    for (const w of this.waiters) w.reject(new KafkaEdgeError('closed before the events were acknowledged; they stay in the outbox'))
    this.waiters.clear()
  }

  // ---- internals -------------------------------------------------------------------------------

  private listen(): void {
    const target = this.o.lifecycle === undefined ? (globalThis as { addEventListener?: unknown }).addEventListener ? globalThis as unknown as EventTarget : null : this.o.lifecycle
    if (!target) return
    const doc = this.o.document === undefined ? (globalThis as { document?: { visibilityState: string } }).document ?? null : this.o.document
    const on = (type: string, fn: (e: Event) => void) => { target.addEventListener(type, fn); this.listeners.push([type, fn]) }
    this.o.lifecycle = target
    // The page may be going away: send now. What is not acknowledged stays in the outbox, released
    // so that the next page load takes it over at once instead of waiting for the heartbeat to go stale.
    on('pagehide', () => { this.sendNow(); this.store.release() })
    on('visibilitychange', () => { if (!doc || doc.visibilityState === 'hidden') this.sendNow() })
    // Back from the back/forward cache: take our events back (another tab may have claimed some).
    on('pageshow', (e) => {
      if (!(e as { persisted?: boolean }).persisted) return
      this.store.beat(Date.now())
      this.unsent = this.unsent.filter((x) => this.store.has(x.seq))
      this.adopt()
      this.schedule(0)
    })
    on('online', () => { this.sendNow() })
  }

  private sendNow(): void {
    if (this.closed) return
    this.retryAt = 0
    this.backoffMs = 0
    this.pump()
  }

  /** Takes over entries of owners that released them or died, plus our own from a previous life. */
  private adopt(): void {
    const known = new Set([...this.unsent.map((e) => e.seq), ...this.inflight.keys()])
    const fresh = this.store.claim(Date.now()).filter((e) => !known.has(e.seq))
    if (fresh.length === 0) return
    this.statsData.recovered += fresh.length
    this.unsent = [...fresh, ...this.unsent].sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0))
    this.schedule(0)
  }

  private schedule(ms: number): void {
    if (this.closed) return
    const at = Math.max(Date.now() + ms, this.retryAt)
    if (this.timer) {
      if (ms > 0) return // an earlier send is already due
      clearTimeout(this.timer)
    }
    this.timer = setTimeout(() => { this.timer = null; this.pump() }, Math.max(0, at - Date.now()))
  }

  private getProducer(): Producer {
    if (this.producer && !this.producer.state.fatal) return this.producer
    const old = this.producer
    if (old) void old.close({ timeoutMs: 0 }).catch(() => {})
    const o = this.o
    this.producer = createProducer({
      // The relay connects bootstrap requests to its own brokers: any placeholder address works.
      'bootstrap.servers': 'relay:443',
      transport: o.transport ?? websocket({ url: o.relayUrl, token: o.token, WebSocket: o.WebSocket }),
      'client.id': 'kafka-edge-analytics',
      'linger.ms': 20,
      'compression.type': 'lz4',
      'max.block.ms': 30_000,
      'delivery.timeout.ms': 60_000,
      ...(o.wasm ? { wasm: o.wasm } : {}),
      ...o.producer,
    })
    return this.producer
  }

  private pump(): void {
    if (this.closed || this.unsent.length === 0) return
    if (this.retryAt > Date.now()) { this.schedule(0); return }
    let producer: Producer
    try {
      producer = this.getProducer()
    } catch (e) {
      this.report(e as Error)
      return
    }
    const batch = this.unsent
    this.unsent = []
    for (const e of batch) {
      if (!this.store.has(e.seq)) continue // claimed by another tab meanwhile
      this.inflight.set(e.seq, e)
      producer.send({ topic: e.topic, key: e.key, value: e.value, timestamp: e.timestamp, headers: { 'event-type': e.type } }).then(
        () => this.acked(e),
        (err: Error) => this.failed(e, err, producer),
      )
    }
  }

  private acked(e: OutboxEntry): void {
    this.inflight.delete(e.seq)
    this.store.delete(e.seq)
    this.statsData.acked++
    this.backoffMs = 0
    for (const w of this.waiters) {
      w.seqs.delete(e.seq)
      if (w.seqs.size === 0) { this.waiters.delete(w); w.resolve() }
    }
  }

  private failed(e: OutboxEntry, err: Error, producer: Producer): void {
    this.inflight.delete(e.seq)
    if (this.closed) return
    this.statsData.retries++
    // A producer that cannot go on (fatal state, closed) is replaced; otherwise it is reused.
    if (this.producer === producer && (producer.state.fatal || err.name === 'ClosedError')) {
      this.producer = null
      void producer.close({ timeoutMs: 0 }).catch(() => {})
    }
    if (this.store.has(e.seq)) {
      this.unsent.push(e)
      this.unsent.sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0))
    }
    // One backoff step per failed round, not per event of the round.
    if (this.retryAt <= Date.now()) {
      const base = this.o.retryBackoffMs ?? 1000
      this.backoffMs = Math.min(this.o.retryBackoffMaxMs ?? 30_000, this.backoffMs ? this.backoffMs * 2 : base)
      this.retryAt = Date.now() + this.backoffMs * (0.8 + Math.random() * 0.4)
      this.report(err)
    }
    for (const w of this.waiters) {
      if (w.seqs.has(e.seq)) { this.waiters.delete(w); w.reject(err) }
    }
    this.schedule(0)
  }

  private report(err: Error): void {
    try { this.o.onError?.(err) } catch { /* the callback's own problem */ }
  }
}

export function createAnalytics(options: AnalyticsOptions): Analytics {
  return new Analytics(options)
}

export { OutboxFullError }
