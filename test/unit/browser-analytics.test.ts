// The analytics SDK's outbox logic with a fake transport: the real producer talks the real protocol
// to the model broker of test/sim (one node, idempotence rules as in Kafka) over an in-process
// "relay" that can go offline. Web Storage is a Map; lifecycle events are dispatched by hand.
// Chromium + the real relay + real Kafka: test/e2e/browser.test.ts.
import { afterEach, describe, expect, it } from 'vitest'
import { createAnalytics, OutboxFullError, WebStorageOutbox, type Analytics, type AnalyticsOptions, type StorageLike } from '../../src/edge/browser/index.js'
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
    flushIntervalMs: 10, retryBackoffMs: 30, retryBackoffMaxMs: 100, ownerStaleMs: 60_000,
    producer: { 'compression.type': 'none', 'max.block.ms': 200, 'retry.backoff.ms': 10 },
    onError: (e) => errors.push(e),
    ...extra,
  })
  live.push(a)
  return { a, page, errors }
}
const until = async (cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms
  while (!cond()) { if (Date.now() > end) throw new Error('timed out'); await new Promise((r) => setTimeout(r, 5)) }
}

describe('browser analytics SDK: outbox', () => {
  it('track() persists before sending; acked events leave the outbox; the broker holds each exactly once', async () => {
    const relay = new FakeRelay()
    const storage = new MapStorage()
    const { a } = make(relay, storage)
    const ids = Array.from({ length: 30 }, (_, i) => a.track({ type: 'click', data: { i }, key: i % 3 === 0 ? `user-${i}` : undefined }))
    // durable synchronously, before any network activity
    expect(storage.entries()).toHaveLength(30)
    expect(a.pending).toBe(30)
    await a.flush()
    expect(a.pending).toBe(0)
    expect(storage.entries()).toHaveLength(0)
    const got = relay.values()
    expect(got.map((v) => v.id).sort()).toEqual([...ids].sort())
    expect(got.find((v) => v.id === ids[7])).toMatchObject({ type: 'click', data: { i: 7 } })
    expect(a.stats()).toMatchObject({ tracked: 30, acked: 30, pending: 0, recovered: 0, retries: 0 })
    expect(a.metrics()['record-send-total']).toBe(30)
  })

  it('batches within flushIntervalMs: many track() calls, few produce requests', async () => {
    const relay = new FakeRelay()
    const { a } = make(relay, new MapStorage(), { flushIntervalMs: 50 })
    for (let i = 0; i < 100; i++) a.track({ type: 'scroll', data: i })
    await a.flush()
    const produces = relay.cluster.produceLog.length
    expect(produces).toBeGreaterThan(0)
    expect(produces).toBeLessThanOrEqual(4)
  })

  it('offline: events stay in the outbox, errors are reported and retried; back online they are delivered once', async () => {
    const relay = new FakeRelay()
    relay.online = false
    const storage = new MapStorage()
    const { a, page, errors } = make(relay, storage)
    const ids = [a.track({ type: 'a' }), a.track({ type: 'b' }), a.track({ type: 'c' })]
    await until(() => a.stats().retries >= 3)
    expect(errors.length).toBeGreaterThan(0)
    expect(errors[0]!.name).toMatch(/Exception/)
    expect(a.pending).toBe(3)
    expect(storage.entries()).toHaveLength(3)
    relay.online = true
    page.dispatchEvent(new Event('online'))
    await until(() => a.pending === 0)
    expect(relay.values().map((v) => v.id).sort()).toEqual([...ids].sort())
  })

  it('reload: events not acknowledged before pagehide are resent by the next page (same storage), exactly once', async () => {
    const relay = new FakeRelay()
    const storage = new MapStorage()
    // the first page never reaches the relay (its own link stays down: the page is gone)
    const dead = new FakeRelay()
    dead.online = false
    const first = make(dead, storage, { flushIntervalMs: 60_000 })
    const ids = Array.from({ length: 5 }, (_, i) => first.a.track({ type: 'view', data: { i } }))
    first.page.dispatchEvent(new Event('pagehide')) // tries at once, fails, releases its entries
    expect(storage.entries()).toHaveLength(5)
    const second = make(relay, storage)
    expect(second.a.stats().recovered).toBe(5)
    await until(() => second.a.pending === 0)
    expect(relay.values().map((v) => v.id).sort()).toEqual([...ids].sort())
    expect(storage.entries()).toHaveLength(0)
  })

  it('an ack lost with the page means the event is sent again by the next page, under the same id (dedupe on it)', async () => {
    const relay = new FakeRelay()
    const storage = new MapStorage()
    const first = make(relay, storage, { flushIntervalMs: 60_000 })
    const id = first.a.track({ type: 'purchase', data: { sku: 'x' } })
    // the broker appends, but the page dies before the answer arrives: hold answers by going offline right after the write
    const origHandle = relay.cluster.handle.bind(relay.cluster)
    let appended = false
    relay.cluster.handle = (node, frame) => {
      const res = origHandle(node, frame)
      if (relay.cluster.produceLog.length > 0 && !appended) { appended = true; relay.online = false; return null }
      return res
    }
    first.page.dispatchEvent(new Event('pagehide'))
    await until(() => appended)
    relay.cluster.handle = origHandle
    relay.online = true
    const second = make(relay, storage)
    await until(() => second.a.pending === 0)
    const got = relay.values().filter((v) => v.id === id)
    expect(got).toHaveLength(2) // at least once across page loads...
    expect(new Set(got.map((v) => JSON.stringify(v))).size).toBe(1) // ...as the same event, same id
  })

  it('visibilitychange to hidden sends at once instead of waiting for the batching window', async () => {
    const relay = new FakeRelay()
    const { a, page } = make(relay, new MapStorage(), { flushIntervalMs: 60_000 })
    a.track({ type: 'x' })
    a.track({ type: 'y' })
    await new Promise((r) => setTimeout(r, 50))
    expect(relay.values()).toHaveLength(0)
    page.dispatchEvent(new Event('visibilitychange'))
    await until(() => a.pending === 0, 2000)
    expect(relay.values()).toHaveLength(2)
  })

  it('a live tab does not take another live tab\'s events; a tab that stopped beating is taken over', async () => {
    const relay = new FakeRelay()
    const storage = new MapStorage()
    const dead = new FakeRelay() // the crashed tab's network: it never gets anything out
    dead.online = false
    const crashed = make(dead, storage, { flushIntervalMs: 60_000, ownerStaleMs: 60_000 })
    const ids = [crashed.a.track({ type: 'a' }), crashed.a.track({ type: 'b' })]
    // another tab with a short staleness window: crashed's heartbeat is fresh at first
    const other = make(relay, storage, { ownerStaleMs: 300 })
    expect(other.a.stats().recovered).toBe(0)
    await new Promise((r) => setTimeout(r, 50))
    expect(relay.values()).toHaveLength(0)
    // no pagehide, no more heartbeats from `crashed` within 300 ms: `other` claims and sends
    await until(() => other.a.stats().recovered === 2, 3000)
    await until(() => other.a.pending === 0)
    expect(relay.values().map((v) => v.id).sort()).toEqual([...ids].sort())
  })

  it('rejects invalid events synchronously and refuses to grow the outbox past maxOutboxEvents', () => {
    const relay = new FakeRelay()
    relay.online = false
    const { a } = make(relay, new MapStorage(), { maxOutboxEvents: 3, flushIntervalMs: 60_000 })
    expect(() => a.track({ type: 'has space' })).toThrow(/event type must be/)
    expect(() => a.track({ type: 'x', timestamp: -1 })).toThrow(/timestamp/)
    a.track({ type: 'x' }); a.track({ type: 'x' }); a.track({ type: 'x' })
    expect(() => a.track({ type: 'x' })).toThrow(OutboxFullError)
    expect(() => createAnalytics({ relayUrl: 'ws://x', token: 't', topic: 'bad topic!' })).toThrow(/topic must be/)
  })

  it('WebStorageOutbox: a storage quota error surfaces as OutboxFullError from track()', () => {
    const storage = new MapStorage()
    storage.setItem = () => { throw Object.assign(new Error('quota'), { name: 'QuotaExceededError' }) }
    const store = new WebStorageOutbox(storage, 'ns', 'me')
    expect(() => store.put({ seq: '1', id: 'i', topic: 't', key: null, value: '{}', timestamp: 1, type: 'x' })).toThrow(/QuotaExceededError/)
  })
})
