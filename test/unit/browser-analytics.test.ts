// The analytics SDK's outbox logic with a fake transport: the real producer talks the real protocol
// to the model broker of test/sim (one node, idempotence rules as in Kafka) over an in-process
// "relay" that can go offline. Web Storage is a Map; lifecycle events are dispatched by hand; Web
// Locks are a small in-process lock manager with the same grant order (IndexedDB, real locks and
// real tabs: test/e2e/browser.test.ts, Chromium and Firefox through the real relay to Kafka).
import { afterEach, describe, expect, it } from 'vitest'
import { CheckpointConflictError, createAnalytics, OutboxFullError, WebStorageOutbox, type Analytics, type AnalyticsOptions, type LockManagerLike, type StorageLike } from '../../src/edge/browser/index.js'
import { NetworkException } from '../../src/edge/errors.js'
import type { BrokerAddress, Link, LinkHandlers, Transport } from '../../src/edge/transport/transport.js'
import { ModelCluster } from '../sim/model-broker.js'

class MapStorage implements StorageLike {
  readonly m = new Map<string, string>()
  get length() { return this.m.size }
  key(i: number) { return [...this.m.keys()][i] ?? null }
  getItem(k: string) { return this.m.get(k) ?? null }
  setItem(k: string, v: string) { this.m.set(k, String(v)) }
  removeItem(k: string) { this.m.delete(k) }
  entries() { return [...this.m.keys()].filter((k) => k.includes(':e:')) }
}

/** navigator.locks for one exclusive lock name at a time: granted in request order, released when the callback's promise settles. */
class Locks implements LockManagerLike {
  private readonly queues = new Map<string, Array<() => void>>()
  private readonly held = new Set<string>()
  request(name: string, options: { signal?: AbortSignal }, callback: () => Promise<void>): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const grant = () => { this.held.add(name); void callback().finally(() => { this.held.delete(name); this.queues.get(name)?.shift()?.() ; resolve(undefined) }) }
      if (!this.held.has(name)) { grant(); return }
      const q = this.queues.get(name) ?? []
      this.queues.set(name, q)
      q.push(grant)
      options.signal?.addEventListener('abort', () => { const i = q.indexOf(grant); if (i >= 0) { q.splice(i, 1); reject(new Error('AbortError')) } })
    })
  }
}

/** One lock the "browser" can take from its holder without telling it (a page being torn down). */
class RevocableLocks implements LockManagerLike {
  private holder: symbol | null = null
  private readonly queue: Array<() => void> = []
  request(_name: string, _options: { signal?: AbortSignal }, callback: () => Promise<void>): Promise<unknown> {
    return new Promise((resolve) => {
      const token = Symbol('holder')
      const grant = () => { this.holder = token; void callback().finally(() => { if (this.holder === token) this.next(); resolve(undefined) }) }
      if (this.holder === null) grant(); else this.queue.push(grant)
    })
  }

  /** The next waiter gets the lock; the holder still runs and still thinks it holds it. */
  revoke(): void { this.next() }

  private next(): void {
    this.holder = null
    this.queue.shift()?.()
  }
}

/** A relay in a box: frames go to the model cluster; `online = false` refuses and cuts connections. */
class FakeRelay implements Transport {
  readonly name = 'fake-relay'
  readonly cluster = new ModelCluster({ brokers: 1, topics: { clicks: 2 } }, Math.random, Date.now)
  private links = new Set<{ handlers: LinkHandlers; closed: boolean }>()
  opened = 0
  private isOnline = true

  get online() { return this.isOnline }
  set online(v: boolean) {
    this.isOnline = v
    if (!v) for (const l of [...this.links]) { l.closed = true; this.links.delete(l); l.handlers.onClose(new NetworkException('offline (fake)')) }
  }

  async open(address: BrokerAddress, handlers: LinkHandlers): Promise<Link> {
    await new Promise((r) => setTimeout(r, 1))
    if (!this.isOnline) throw new NetworkException('relay unreachable (fake offline)')
    const node = address.nodeId < 0 ? 0 : this.cluster.nodeFor(address.host, address.port)
    const link = { handlers, closed: false }
    this.links.add(link)
    this.opened++
    return {
      write: async (frame) => {
        if (link.closed) throw new NetworkException('closed')
        const copy = frame.slice()
        setTimeout(() => {
          if (link.closed) return
          const res = this.cluster.handle(node, copy)
          if (res) handlers.onFrame(res.subarray(4))
        }, 1)
      },
      close: () => { link.closed = true; this.links.delete(link) },
    }
  }

  /** Every record value the broker appended, parsed. */
  values(): Array<{ id: string; type: string; data?: unknown; timestamp: number }> {
    return this.cluster.partitions.get('clicks')!.flatMap((p) => p.values()).map((v) => JSON.parse(v))
  }
}

const live: Analytics[] = []
afterEach(async () => { await Promise.all(live.splice(0).map((a) => a.close({ timeoutMs: 0 }))) })

function make(relay: FakeRelay, storage: StorageLike, extra: Partial<AnalyticsOptions> = {}): { a: Analytics; page: EventTarget; errors: Error[] } {
  const page = new EventTarget()
  const errors: Error[] = []
  const a = createAnalytics({
    relayUrl: 'ws://unused', token: 't', topic: 'clicks', transport: relay, storage, lifecycle: page, document: { visibilityState: 'hidden' },
    flushIntervalMs: 10, retryBackoffMs: 30, retryBackoffMaxMs: 100, locks: null, takeoverSettleMs: 0,
    producer: { 'compression.type': 'none', 'max.block.ms': 200, 'retry.backoff.ms': 10 },
    onError: (e) => errors.push(e),
    ...extra,
  })
  live.push(a)
  return { a, page, errors }
}
const until = async (cond: () => boolean | Promise<boolean>, ms = 5000) => {
  const end = Date.now() + ms
  while (!await cond()) { if (Date.now() > end) throw new Error('timed out'); await new Promise((r) => setTimeout(r, 5)) }
}

describe('browser analytics SDK: outbox and sender election', () => {
  it('track() resolves once the event is stored; acked events leave the outbox; the broker holds each exactly once', async () => {
    const relay = new FakeRelay()
    const storage = new MapStorage()
    const { a } = make(relay, storage)
    const tracking = Array.from({ length: 30 }, (_, i) => a.track({ type: 'click', data: { i }, key: i % 3 === 0 ? `user-${i}` : undefined }))
    const ids = await Promise.all(tracking)
    expect(storage.entries().length).toBeGreaterThan(0) // in the outbox before Kafka acknowledged
    await a.flush()
    expect(await a.pending()).toBe(0)
    expect(storage.entries()).toHaveLength(0)
    const got = relay.values()
    expect(got.map((v) => v.id).sort()).toEqual([...ids].sort())
    expect(got.find((v) => v.id === ids[7])).toMatchObject({ type: 'click', data: { i: 7 } })
    expect(a.stats()).toMatchObject({ tracked: 30, acked: 30, retries: 0, role: 'owner' })
    expect(a.metrics()['record-send-total']).toBe(30)
  })

  it('batches within flushIntervalMs: many track() calls, few produce requests', async () => {
    const relay = new FakeRelay()
    const { a } = make(relay, new MapStorage(), { flushIntervalMs: 50 })
    for (let i = 0; i < 100; i++) void a.track({ type: 'scroll', data: i })
    await a.flush()
    const produces = relay.cluster.produceLog.length
    expect(produces).toBeGreaterThan(0)
    expect(produces).toBeLessThanOrEqual(4)
  })

  it('offline: events stay in the outbox, errors are reported and retried; back online they are delivered once', async () => {
    const relay = new FakeRelay()
    relay.online = false
    const storage = new MapStorage()
    const { a, page, errors } = make(relay, storage, { producer: { 'compression.type': 'none', 'max.block.ms': 200, 'retry.backoff.ms': 10, 'delivery.timeout.ms': 300, 'request.timeout.ms': 100, 'linger.ms': 0 } })
    const ids = await Promise.all([a.track({ type: 'a' }), a.track({ type: 'b' }), a.track({ type: 'c' })])
    await until(() => a.stats().retries >= 3)
    expect(errors.length).toBeGreaterThan(0)
    expect(errors[0]!.name).toMatch(/Exception/)
    expect(await a.pending()).toBe(3)
    relay.online = true
    page.dispatchEvent(new Event('online'))
    await a.flush()
    expect(relay.values().map((v) => v.id).sort()).toEqual([...ids].sort())
    expect(storage.entries()).toHaveLength(0)
  })

  it('reload: events not acknowledged before the page went away are sent by the next page (same storage)', async () => {
    const relay = new FakeRelay()
    const storage = new MapStorage()
    const dead = new FakeRelay() // the first page never reaches the relay
    dead.online = false
    const first = make(dead, storage, { flushIntervalMs: 60_000 })
    const ids = await Promise.all(Array.from({ length: 5 }, (_, i) => first.a.track({ type: 'view', data: { i } })))
    await first.a.close({ timeoutMs: 0 })
    expect(storage.entries()).toHaveLength(5)
    const second = make(relay, storage)
    await until(() => relay.values().length === 5)
    expect(relay.values().map((v) => v.id).sort()).toEqual([...ids].sort())
    await until(() => storage.entries().length === 0)
    expect(second.a.stats().acked).toBe(5)
  })

  it('an acknowledgement lost with the page: the next page learns from the leader that the checkpointed batch is in the log and does not send it again', async () => {
    const relay = new FakeRelay()
    const storage = new MapStorage()
    const first = make(relay, storage, { flushIntervalMs: 60_000 })
    await new Promise((r) => setTimeout(r, 20))
    const ids = await Promise.all(Array.from({ length: 4 }, (_, i) => first.a.track({ type: 'purchase', data: { i } })))
    // the broker appends, but the page dies before the answer arrives
    const origHandle = relay.cluster.handle.bind(relay.cluster)
    let appended = false
    relay.cluster.handle = (node, frame) => {
      const res = origHandle(node, frame)
      if (relay.cluster.produceLog.length > 0 && !appended) { appended = true; relay.online = false; return null }
      return res
    }
    first.page.dispatchEvent(new Event('pagehide'))
    await until(() => appended)
    await first.a.close({ timeoutMs: 0 })
    expect(storage.entries()).toHaveLength(0) // the events left the outbox with the batch that carries them...
    expect(storage.getItem('kafka-edge:clicks:cp')).toContain('"pending":[{') // ...into the checkpoint
    relay.cluster.handle = origHandle
    relay.online = true
    const produced = relay.cluster.produceLog.length
    const second = make(relay, storage)
    await until(async () => (await second.a.pending()) === 0)
    // DescribeProducers: the leader's last sequence covers the batch, so it is in the log already.
    expect(second.a.stats().resume).toMatchObject({ mode: 'resumed', batches: 1, written: 1 })
    expect(relay.cluster.produceLog.length).toBe(produced)
    expect(relay.values().map((v) => v.id).sort()).toEqual([...ids].sort())
  })

  it('visibilitychange to hidden sends at once instead of waiting for the batching window', async () => {
    const relay = new FakeRelay()
    const { a, page } = make(relay, new MapStorage(), { flushIntervalMs: 60_000 })
    await new Promise((r) => setTimeout(r, 20)) // past the new owner's first look at the outbox
    await Promise.all([a.track({ type: 'x' }), a.track({ type: 'y' })])
    await new Promise((r) => setTimeout(r, 50))
    expect(relay.values()).toHaveLength(0)
    page.dispatchEvent(new Event('visibilitychange'))
    await until(() => relay.values().length === 2, 2000)
  })

  it('one sender per origin: the lock holder sends every tab\'s events; when it closes the next tab takes over', async () => {
    const relay = new FakeRelay()
    const storage = new MapStorage()
    const locks = new Locks()
    const tabs = [0, 1, 2].map(() => make(relay, storage, { locks, namespace: 'shared' }))
    expect(tabs.map((t) => t.a.stats().role)).toEqual(['owner', 'follower', 'follower'])
    const ids = await Promise.all(tabs.flatMap((t, i) => [t.a.track({ type: `tab${i}` }), t.a.track({ type: `tab${i}` })]))
    await tabs[2]!.a.flush() // a follower's flush resolves on the owner's acknowledgements (BroadcastChannel)
    expect(tabs[1]!.a.metrics()).toEqual({}) // followers never made a producer
    expect(tabs[2]!.a.metrics()).toEqual({})
    await tabs[0]!.a.close()
    await until(() => tabs[1]!.a.stats().role === 'owner')
    expect(tabs[2]!.a.stats().role).toBe('follower')
    ids.push(await tabs[2]!.a.track({ type: 'after' }))
    await tabs[2]!.a.flush()
    expect(relay.values().map((v) => v.id).sort()).toEqual([...ids].sort())
    expect(tabs[1]!.a.stats().acked).toBe(1)
  })

  it('two senders at once (the browser let go of a closing page\'s lock while its script still ran): the checkpoint compare-and-swap lets one deliver each event, once', async () => {
    for (const revokeAtSave of [1, 2, 3]) {
      const relay = new FakeRelay()
      const locks = new RevocableLocks()
      const storage = new MapStorage()
      // The browser releases the first tab's lock at its n-th checkpoint save: from then on both send.
      let saves = 0
      const setItem = storage.setItem.bind(storage)
      storage.setItem = (k, v) => { setItem(k, v); if (k.endsWith(':cp') && ++saves === revokeAtSave) locks.revoke() }
      const first = make(relay, storage, { locks })
      const second = make(relay, storage, { locks })
      const ids = await Promise.all(Array.from({ length: 300 }, (_, i) => first.a.track({ type: 'purchase', data: { i } })))
      ids.push(...await Promise.all(Array.from({ length: 100 }, (_, i) => second.a.track({ type: 'view', data: { i } }))))
      await until(async () => (await second.a.pending()) === 0 && relay.values().length >= ids.length, 10_000)
      await new Promise((r) => setTimeout(r, 200))
      const got = relay.values().map((v) => v.id)
      expect(got.length, `revoked at save ${revokeAtSave}`).toBe(ids.length)
      expect(new Set(got)).toEqual(new Set(ids))
      // The lock moved to the second tab.
      expect(second.a.stats().role).toBe('owner')
      await Promise.all([first.a.close({ timeoutMs: 0 }), second.a.close({ timeoutMs: 0 })])
    }
  })

  it('a checkpoint save fails without storing anything when another sender saved since, or took its events', async () => {
    const store = new WebStorageOutbox(new MapStorage(), 'ns')
    await store.add([{ id: 'a', topic: 't', key: null, value: '{}', timestamp: 1, type: 'x' }, { id: 'b', topic: 't', key: null, value: '{}', timestamp: 1, type: 'x' }], 10)
    const [a, b] = await store.read(0, 10)
    await store.save({ pending: [], writer: 'one.1' }, [a!.k!], null)
    // Expected no checkpoint, found one.1; and event a is gone.
    const err = await store.save({ pending: [], writer: 'two.1' }, [a!.k!, b!.k!], null).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(CheckpointConflictError)
    expect((err as CheckpointConflictError).missing).toEqual([a!.k])
    expect((await store.load())!.writer).toBe('one.1')
    expect((await store.read(0, 10)).map((e) => e.id)).toEqual(['b'])
    await store.save({ pending: [], writer: 'one.2' }, [b!.k!], 'one.1')
    expect(await store.count()).toBe(0)
  })

  it('rejects invalid events at once and refuses to grow the outbox past maxOutboxEvents with OutboxFullError', async () => {
    const relay = new FakeRelay()
    relay.online = false
    const { a } = make(relay, new MapStorage(), { maxOutboxEvents: 3, flushIntervalMs: 60_000 })
    expect(() => a.track({ type: 'has space' })).toThrow(/event type must be/)
    expect(() => a.track({ type: 'x', timestamp: -1 })).toThrow(/timestamp/)
    const r = await Promise.allSettled([a.track({ type: 'x' }), a.track({ type: 'x' }), a.track({ type: 'x' }), a.track({ type: 'x' })])
    expect(r.map((x) => x.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected'])
    const err = (r[3] as PromiseRejectedResult).reason as Error
    expect(err).toBeInstanceOf(OutboxFullError)
    expect(err.name).toBe('OutboxFullError')
    expect(err.message).toMatch(/maxOutboxEvents \(3\)/)
    await expect(a.track({ type: 'x' })).rejects.toThrow(OutboxFullError)
    expect(() => createAnalytics({ relayUrl: 'ws://x', token: 't', topic: 'bad topic!' })).toThrow(/topic must be/)
  })

  it('a storage quota error surfaces as OutboxFullError from track()', async () => {
    const storage = new MapStorage()
    storage.setItem = () => { throw Object.assign(new Error('quota'), { name: 'QuotaExceededError' }) }
    const store = new WebStorageOutbox(storage, 'ns')
    await expect(store.add([{ id: 'i', topic: 't', key: null, value: '{}', timestamp: 1, type: 'x' }], 10)).rejects.toThrow(OutboxFullError)
    const relay = new FakeRelay()
    const { a } = make(relay, storage)
    await expect(a.track({ type: 'x' })).rejects.toMatchObject({ name: 'OutboxFullError', cause: { name: 'QuotaExceededError' } })
  })
})
