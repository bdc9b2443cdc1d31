/**
 * The analytics outbox: every tracked event is written here before anything is sent, and removed
 * only after Kafka acknowledged it. It survives reloads, crashes and offline periods (Web Storage
 * is synchronous: an event tracked right before the page dies is already on disk).
 *
 * Several tabs of one origin share the storage, so entries carry an owner (one per SDK instance)
 * and owners keep a heartbeat. An instance resends only its own entries; entries of an owner that
 * released them (pagehide, close) or stopped beating (crashed tab) are claimed by the next instance
 * that looks (a reload, another tab). Two tabs claiming the same orphan at the same instant may both
 * send it: the event id in the value is what consumers dedupe on.
 */

export interface OutboxEntry {
  /** Ordering key: creation time + counter + random (sorts in tracking order). */
  seq: string
  /** The event id, also inside `value`: consumers dedupe on it. */
  id: string
  topic: string
  key: string | null
  /** The record value (the event as JSON). */
  value: string
  timestamp: number
  type: string
}

export interface OutboxStore {
  /** Claims orphaned entries (released or stale owners) and returns this owner's entries in seq order. */
  claim(now: number): OutboxEntry[]
  put(entry: OutboxEntry): void
  delete(seq: string): void
  has(seq: string): boolean
  /** Entries this owner holds. */
  readonly size: number
  /** Marks this owner alive. */
  beat(now: number): void
  /** Gives this owner's entries up to whoever loads next (pagehide, close). beat() takes them back. */
  release(): void
}

/** The subset of the Web Storage API used (localStorage, sessionStorage, or a test double). */
export interface StorageLike {
  readonly length: number
  key(index: number): string | null
  getItem(key: string): string | null
  setItem(key: string, value: string): void
  removeItem(key: string): void
}

export class OutboxFullError extends Error {
  constructor(message: string) { super(message); this.name = 'OutboxFullError' }
}

/**
 * Web Storage layout, under a namespace `ns`:
 *   `${ns}:e:${owner}:${seq}` -> entry JSON        `${ns}:hb:${owner}` -> last heartbeat (ms), 0 = released
 */
export class WebStorageOutbox implements OutboxStore {
  private readonly mine = new Set<string>()

  constructor(private readonly storage: StorageLike, private readonly ns: string, readonly owner: string, private readonly staleMs = 15_000) {}

  private entryKey(owner: string, seq: string): string { return `${this.ns}:e:${owner}:${seq}` }
  private hbKey(owner: string): string { return `${this.ns}:hb:${owner}` }

  get size(): number { return this.mine.size }

  has(seq: string): boolean { return this.mine.has(seq) && this.storage.getItem(this.entryKey(this.owner, seq)) !== null }

  claim(now: number): OutboxEntry[] {
    const prefix = `${this.ns}:e:`
    const keys: string[] = []
    for (let i = 0; i < this.storage.length; i++) {
      const k = this.storage.key(i)
      if (k !== null && k.startsWith(prefix)) keys.push(k)
    }
    const alive = new Map<string, boolean>()
    const isAlive = (owner: string) => {
      if (owner === this.owner) return true
      let a = alive.get(owner)
      if (a === undefined) {
        const hb = Number(this.storage.getItem(this.hbKey(owner)) ?? '0')
        a = hb > 0 && now - hb < this.staleMs
        alive.set(owner, a)
      }
      return a
    }
    const out: OutboxEntry[] = []
    for (const k of keys) {
      const rest = k.slice(prefix.length)
      const cut = rest.indexOf(':')
      if (cut < 0) continue
      const owner = rest.slice(0, cut)
      const seq = rest.slice(cut + 1)
      if (!isAlive(owner)) {
        const raw = this.storage.getItem(k)
        if (raw === null) continue // another tab claimed it first
        this.storage.setItem(this.entryKey(this.owner, seq), raw)
        this.storage.removeItem(k)
      } else if (owner !== this.owner) continue
      const raw = this.storage.getItem(this.entryKey(this.owner, seq))
      if (raw === null) continue
      try {
        out.push(JSON.parse(raw) as OutboxEntry)
        this.mine.add(seq)
      } catch {
        this.storage.removeItem(this.entryKey(this.owner, seq)) // unreadable: cannot be sent
      }
    }
    for (const [owner, a] of alive) if (!a) this.storage.removeItem(this.hbKey(owner))
    return out.sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0))
  }

  put(entry: OutboxEntry): void {
    try {
      this.storage.setItem(this.entryKey(this.owner, entry.seq), JSON.stringify(entry))
    } catch (e) {
      throw new OutboxFullError(`the outbox storage refused the event (${(e as Error).name}: ${(e as Error).message}); ` +
        'events are kept until Kafka acknowledges them, so the relay may be unreachable')
    }
    this.mine.add(entry.seq)
  }

  delete(seq: string): void {
    this.storage.removeItem(this.entryKey(this.owner, seq))
    this.mine.delete(seq)
  }

  beat(now: number): void {
    try { this.storage.setItem(this.hbKey(this.owner), String(now)) } catch { /* storage full: entries still count as ours until stale */ }
  }

  release(): void {
    try { this.storage.setItem(this.hbKey(this.owner), '0') } catch { /* ignore */ }
  }
}

/** Keeps entries in memory only (no Web Storage, e.g. a Worker or a test): nothing survives a reload. */
export class MemoryOutbox implements OutboxStore {
  private readonly entries = new Map<string, OutboxEntry>()
  get size(): number { return this.entries.size }
  claim(): OutboxEntry[] { return [...this.entries.values()].sort((a, b) => (a.seq < b.seq ? -1 : 1)) }
  put(entry: OutboxEntry): void { this.entries.set(entry.seq, entry) }
  delete(seq: string): void { this.entries.delete(seq) }
  has(seq: string): boolean { return this.entries.has(seq) }
  beat(): void {}
  release(): void {}
}
