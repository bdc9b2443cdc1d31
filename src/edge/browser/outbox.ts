/**
 * The analytics outbox, shared by every tab of an origin: each tracked event is written here before
 * anything is sent. An event leaves it when Kafka acknowledged it, or earlier, in the same atomic
 * step that saves the producer checkpoint holding the encoded batch it went out in (from then on the
 * checkpoint, which a later page resends under the same sequences, is what keeps it).
 *
 * IndexedDB where the page has it; Web Storage (localStorage) where it does not; a Map otherwise.
 */
import { KafkaEdgeError, nameClass } from '../errors.js'

export interface OutboxEntry {
  /** Storage key, assigned when the event is stored: tracking order across the origin's tabs. */
  k?: number
  /** The event id, also inside `value`. */
  id: string
  topic: string
  key: string | null
  /** The record value (the event as JSON). */
  value: string
  timestamp: number
  type: string
  /** 1 when an earlier send of this event may be in the log (its outcome was never confirmed). */
  dup?: 1
}

/**
 * What the outbox keeps of the producer checkpoint: opaque but for the encoded batches it carries and
 * `writer`, which names the save that wrote it (compared by the next save).
 */
export interface StoredCheckpoint { pending: Array<{ bytes: Uint8Array }>; writer?: string }

/** The outbox holds maxOutboxEvents events (or the browser's storage quota is used up). */
export class OutboxFullError extends KafkaEdgeError {}
nameClass(OutboxFullError, 'OutboxFullError')

/**
 * Another sender saved since this one last read the checkpoint, or took some of the events this save
 * would take (`missing`): two tabs were sending at once (a browser can release a closing page's Web
 * Lock while its script still runs). Nothing of this save was stored and its batches were not sent.
 */
export class CheckpointConflictError extends KafkaEdgeError {
  constructor(readonly missing: readonly number[]) {
    super(`another sender changed the checkpoint${missing.length ? ` and took ${missing.length} of these events` : ''}; this save was not stored`)
  }
}
nameClass(CheckpointConflictError, 'CheckpointConflictError')

/** Which save wrote a stored checkpoint (null: there is none). Checkpoints from before `writer` compare as one. */
export const checkpointWriter = (cp: StoredCheckpoint | undefined): string | null => (cp ? cp.writer ?? '-' : null)

export interface Outbox {
  /** Stores entries in order, assigning `k`; resolves once they are durable. Returns how many fitted under `max`. */
  add(entries: OutboxEntry[], max: number): Promise<number>
  /** Up to `limit` entries with a key above `after`, in key order. */
  read(after: number, limit: number): Promise<OutboxEntry[]>
  /** Removes entries by key and stores `add` (keys assigned) in one atomic step. */
  remove(keys: number[], add?: OutboxEntry[]): Promise<void>
  count(): Promise<number>
  load<C extends StoredCheckpoint>(): Promise<C | undefined>
  /**
   * Saves the producer checkpoint and removes the entries its batches carry, atomically, provided the
   * stored checkpoint is still the one `expect` names (checkpointWriter) and every entry is still
   * there; otherwise it stores nothing and rejects with CheckpointConflictError.
   */
  save(cp: StoredCheckpoint, remove: number[], expect: string | null): Promise<void>
}

const full = (cause?: unknown) => new OutboxFullError(
  'the analytics outbox is full: events stay in it until Kafka acknowledges them, so the relay or Kafka has been unreachable '
  + 'for a while (raise maxOutboxEvents or let the backlog drain)', { cause })

const req = <T>(r: IDBRequest<T>) => new Promise<T>((resolve, reject) => { r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error) })

/** Object stores: `e` (entries, auto-increment keys) and `cp` (the checkpoint under key 1). */
export class IndexedDbOutbox implements Outbox {
  private readonly db: Promise<IDBDatabase>

  constructor(idb: IDBFactory, name: string) {
    const r = idb.open(name, 1)
    r.onupgradeneeded = () => { r.result.createObjectStore('e', { autoIncrement: true }); r.result.createObjectStore('cp') }
    this.db = req(r)
  }

  /** Runs `fn` in one transaction; resolves with its result once the transaction committed. */
  private async tx<T>(stores: string[], mode: IDBTransactionMode, fn: (s: IDBObjectStore[]) => Promise<T> | T): Promise<T> {
    const t = (await this.db).transaction(stores, mode)
    const committed = new Promise<void>((resolve, reject) => {
      t.oncomplete = () => resolve()
      t.onabort = () => reject(t.error?.name === 'QuotaExceededError' ? full(t.error) : t.error ?? new KafkaEdgeError('IndexedDB transaction aborted'))
    })
    let out: T
    try {
      out = await fn(stores.map((s) => t.objectStore(s)))
    } catch (e) {
      try { t.abort() } catch { /* already finished */ }
      committed.catch(() => {})
      throw e
    }
    await committed
    return out
  }

  add(entries: OutboxEntry[], max: number): Promise<number> {
    return this.tx(['e'], 'readwrite', async ([s]) => {
      const n = Math.max(0, Math.min(entries.length, max - await req(s!.count())))
      for (const e of entries.slice(0, n)) void req(s!.add(e)).then((k) => { e.k = k as number })
      return n
    })
  }

  read(after: number, limit: number): Promise<OutboxEntry[]> {
    return this.tx(['e'], 'readonly', async ([s]) => {
      const range = IDBKeyRange.lowerBound(after, true)
      const [keys, values] = await Promise.all([req(s!.getAllKeys(range, limit)), req(s!.getAll(range, limit))])
      return (values as OutboxEntry[]).map((v, i) => ({ ...v, k: keys[i] as number }))
    })
  }

  remove(keys: number[], add: OutboxEntry[] = []): Promise<void> {
    return this.tx(['e'], 'readwrite', ([s]) => {
      for (const k of keys) s!.delete(k)
      for (const e of add) { delete e.k; void req(s!.add(e)).then((k) => { e.k = k as number }) }
    })
  }

  count(): Promise<number> { return this.tx(['e'], 'readonly', ([s]) => req(s!.count())) }

  load<C extends StoredCheckpoint>(): Promise<C | undefined> { return this.tx(['cp'], 'readonly', ([s]) => req(s!.get(1)) as Promise<C | undefined>) }

  save(cp: StoredCheckpoint, remove: number[], expect: string | null): Promise<void> {
    return this.tx(['e', 'cp'], 'readwrite', async ([e, c]) => {
      const [current, ...present] = await Promise.all([req(c!.get(1)) as Promise<StoredCheckpoint | undefined>, ...remove.map((k) => req(e!.count(k)))])
      const missing = remove.filter((_, i) => present[i] === 0)
      if (checkpointWriter(current) !== expect || missing.length > 0) throw new CheckpointConflictError(missing)
      c!.put(cp, 1)
      for (const k of remove) e!.delete(k)
    })
  }
}

/** The subset of the Web Storage API used (localStorage, sessionStorage, or a test double). */
export interface StorageLike {
  readonly length: number
  key(index: number): string | null
  getItem(key: string): string | null
  setItem(key: string, value: string): void
  removeItem(key: string): void
}

/** Web Storage under a namespace: `${ns}:n` next key, `${ns}:e:${k}` entries, `${ns}:cp` the checkpoint, `${ns}:cpw` its writer. */
export class WebStorageOutbox implements Outbox {
  constructor(private readonly storage: StorageLike, private readonly ns: string) {}

  private keys(): number[] {
    const prefix = `${this.ns}:e:`
    const out: number[] = []
    for (let i = 0; i < this.storage.length; i++) {
      const k = this.storage.key(i)
      if (k?.startsWith(prefix)) out.push(Number(k.slice(prefix.length)))
    }
    return out.sort((a, b) => a - b)
  }

  private put(e: OutboxEntry): void {
    const k = Number(this.storage.getItem(`${this.ns}:n`) ?? 1)
    delete e.k
    try {
      this.storage.setItem(`${this.ns}:e:${k}`, JSON.stringify(e))
      this.storage.setItem(`${this.ns}:n`, String(k + 1))
    } catch (err) {
      this.storage.removeItem(`${this.ns}:e:${k}`)
      throw full(err)
    }
    e.k = k
  }

  async add(entries: OutboxEntry[], max: number): Promise<number> {
    const n = Math.max(0, Math.min(entries.length, max - this.keys().length))
    for (const e of entries.slice(0, n)) this.put(e)
    return n
  }

  async read(after: number, limit: number): Promise<OutboxEntry[]> {
    const out: OutboxEntry[] = []
    for (const k of this.keys()) {
      if (k <= after) continue
      if (out.length >= limit) break
      const raw = this.storage.getItem(`${this.ns}:e:${k}`)
      if (raw !== null) out.push({ ...JSON.parse(raw) as OutboxEntry, k })
    }
    return out
  }

  async remove(keys: number[], add: OutboxEntry[] = []): Promise<void> {
    for (const k of keys) this.storage.removeItem(`${this.ns}:e:${k}`)
    for (const e of add) this.put(e)
  }

  async count(): Promise<number> { return this.keys().length }

  async load<C extends StoredCheckpoint>(): Promise<C | undefined> {
    const raw = this.storage.getItem(`${this.ns}:cp`)
    return raw === null ? undefined : JSON.parse(raw, (_, v: unknown) => (v as { b64?: string })?.b64 !== undefined
      ? Uint8Array.from(atob((v as { b64: string }).b64), (c) => c.charCodeAt(0)) : v) as C
  }

  async save(cp: StoredCheckpoint, remove: number[], expect: string | null): Promise<void> {
    const missing = remove.filter((k) => this.storage.getItem(`${this.ns}:e:${k}`) === null)
    // The writer is kept beside the checkpoint too, so the check does not parse the whole checkpoint.
    const current = this.storage.getItem(`${this.ns}:cp`) === null ? null : this.storage.getItem(`${this.ns}:cpw`) ?? '-'
    if (current !== expect || missing.length > 0) throw new CheckpointConflictError(missing)
    try {
      this.storage.setItem(`${this.ns}:cp`, JSON.stringify(cp, (_, v: unknown) => v instanceof Uint8Array
        ? { b64: btoa(Array.from(v, (c) => String.fromCharCode(c)).join('')) } : v))
      this.storage.setItem(`${this.ns}:cpw`, checkpointWriter(cp)!)
    } catch (err) {
      throw full(err)
    }
    await this.remove(remove)
  }
}

/** Web Storage semantics in a Map: nothing survives a reload (a Worker, tests). */
export class MemoryStorage implements StorageLike {
  private readonly m = new Map<string, string>()
  get length(): number { return this.m.size }
  key(i: number): string | null { return [...this.m.keys()][i] ?? null }
  getItem(k: string): string | null { return this.m.get(k) ?? null }
  setItem(k: string, v: string): void { this.m.set(k, String(v)) }
  removeItem(k: string): void { this.m.delete(k) }
}
