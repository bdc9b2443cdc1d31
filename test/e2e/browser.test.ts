// The analytics SDK in a real page: Debian Chromium (headless, playwright-core) loads a page that
// creates the SDK, which produces through the kafka-edge relay (in process, on 127.0.0.1) to a real
// Kafka 4.4 broker. The Java consumer is the reader. Covers: live tracking, an unreachable relay
// then a reload (the outbox is resent by the next page load), and a reload right after tracking
// (pagehide sends at once; whatever was not acknowledged is resent, under the same event ids).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveConfig, signToken, startBridge, type Bridge } from '../../src/bridge/index.js'
import { bs, createTopic, dumpBatches, ensureCluster, readTopic, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { bundleSdk, hasChromium, launchChromium, servePage, type Browser, type PageServer } from './browser.js'
import { freePort } from './wrangler.js'

const SECRET = 'e2e-browser-secret-0123456789abcdef'
const AUDIENCE = 'kafka-edge-e2e'

interface PageWindow {
  ready?: boolean
  errors: string[]
  analytics: {
    track(e: { type: string; data?: unknown; key?: string }): string
    flush(): Promise<void>
    readonly pending: number
    stats(): { tracked: number; acked: number; pending: number; recovered: number; retries: number }
  }
}

describe.skipIf(!hasChromium)('analytics SDK in Chromium -> relay -> real Kafka (needs /usr/bin/chromium; CI installs it in .ci/run)', () => {
  let cluster: Cluster
  let topic: string
  let relay: Bridge
  let site: PageServer
  let browser: Browser
  let deadPort: number
  const ids = { live: [] as string[], offline: [] as string[], reload: [] as string[] }

  const pageUrl = (opts: { relay?: string; flushMs?: number; maxBlockMs?: number; backoffMs?: number } = {}) => {
    const token = signToken({ sub: 'e2e-page', aud: AUDIENCE, exp: Math.floor(Date.now() / 1000) + 3600, topics: [topic] }, SECRET)
    const q = new URLSearchParams({ relay: opts.relay ?? relay.url, token, topic, flushMs: String(opts.flushMs ?? 200), maxBlockMs: String(opts.maxBlockMs ?? 30_000), backoffMs: String(opts.backoffMs ?? 500) })
    return `${site.origin}/?${q}`
  }

  beforeAll(async () => {
    cluster = await ensureCluster()
    topic = uniqueTopic('analytics')
    await createTopic(cluster, topic, { partitions: 2 })
    site = await servePage(await bundleSdk())
    relay = await startBridge(resolveConfig({
      listen: '127.0.0.1:0',
      brokers: [bs(cluster)],
      auth: { secret: SECRET, audience: AUDIENCE, clockSkewSec: 0 },
      origins: [site.origin],
      log: { level: 'silent' },
    }, {}))
    deadPort = await freePort() // nothing listens here: "the relay is unreachable"
    browser = await launchChromium()
  })

  afterAll(async () => {
    await browser?.close()
    await relay?.close()
    await site?.close()
  })

  it('tracks events from a page; flush() resolves once Kafka acknowledged them all', async () => {
    const page = await browser.context.newPage()
    await page.goto(pageUrl())
    await page.waitForFunction(() => (window as unknown as PageWindow).ready === true)
    const r = await page.evaluate(async () => {
      const w = window as unknown as PageWindow
      const out: string[] = []
      for (let i = 0; i < 40; i++) out.push(w.analytics.track({ type: 'page_view', data: { path: `/p/${i}`, i }, key: i % 4 === 0 ? `user-${i}` : undefined }))
      const storedBefore = Object.keys(localStorage).filter((k) => k.includes(':e:')).length
      await w.analytics.flush()
      return { ids: out, storedBefore, stats: w.analytics.stats(), storedAfter: Object.keys(localStorage).filter((k) => k.includes(':e:')).length, errors: w.errors }
    })
    expect(r.errors).toEqual([])
    expect(r.storedBefore).toBe(40) // in the outbox before anything was sent
    expect(r.stats).toMatchObject({ tracked: 40, acked: 40, pending: 0 })
    expect(r.storedAfter).toBe(0)
    ids.live = r.ids
    await page.close()
  })

  it('relay unreachable: events wait in localStorage; the next page load (relay back) sends them', async () => {
    const page = await browser.context.newPage()
    await page.goto(pageUrl({ relay: `ws://127.0.0.1:${deadPort}/kafka`, maxBlockMs: 1000, backoffMs: 60_000 }))
    await page.waitForFunction(() => (window as unknown as PageWindow).ready === true)
    ids.offline = await page.evaluate(() => {
      const w = window as unknown as PageWindow
      return Array.from({ length: 15 }, (_, i) => w.analytics.track({ type: 'offline_click', data: { i } }))
    })
    // the send fails (typed error reported), the events stay
    await page.waitForFunction(() => (window as unknown as PageWindow).errors.length > 0, undefined, { timeout: 20_000 })
    const before = await page.evaluate(() => ({ pending: (window as unknown as PageWindow).analytics.pending, errors: (window as unknown as PageWindow).errors }))
    expect(before.pending).toBe(15)
    expect(before.errors[0]).toMatch(/Exception/)
    // navigate (pagehide) to the page with a reachable relay: the new SDK instance resends the outbox
    await page.goto(pageUrl())
    await page.waitForFunction(() => (window as unknown as PageWindow).ready === true)
    await page.waitForFunction(() => (window as unknown as PageWindow).analytics.stats().recovered === 15 && (window as unknown as PageWindow).analytics.pending === 0, undefined, { timeout: 30_000 })
    expect(await page.evaluate(() => Object.keys(localStorage).filter((k) => k.includes(':e:')).length)).toBe(0)
    await page.close()
  })

  it('reload right after tracking: pagehide sends at once; nothing is lost', async () => {
    const page = await browser.context.newPage()
    await page.goto(pageUrl({ flushMs: 60_000 }))
    await page.waitForFunction(() => (window as unknown as PageWindow).ready === true)
    ids.reload = await page.evaluate(() => {
      const w = window as unknown as PageWindow
      return Array.from({ length: 25 }, (_, i) => w.analytics.track({ type: 'before_reload', data: { i } }))
    })
    await page.reload()
    await page.waitForFunction(() => (window as unknown as PageWindow).ready === true)
    await page.waitForFunction(() => (window as unknown as PageWindow).analytics.pending === 0 && Object.keys(localStorage).filter((k) => k.includes(':e:')).length === 0, undefined, { timeout: 30_000 })
    await page.close()
  })

  it('the Java consumer reads every tracked event; only events in flight at a reload may repeat (same id)', async () => {
    const all = [...ids.live, ...ids.offline, ...ids.reload]
    expect(all).toHaveLength(80)
    const records = await readTopic(cluster, topic, { expected: all.length, isolation: 'read_uncommitted' })
    const byId = new Map<string, number>()
    for (const r of records) {
      const v = JSON.parse(new TextDecoder().decode(r.value!)) as { id: string; type: string; timestamp: number }
      byId.set(v.id, (byId.get(v.id) ?? 0) + 1)
      expect(r.headers.find((h) => h.key === 'event-type')?.value).toEqual(new TextEncoder().encode(v.type))
      expect(r.timestamp).toBe(v.timestamp)
    }
    expect(new Set(byId.keys())).toEqual(new Set(all))
    for (const id of [...ids.live, ...ids.offline]) expect(byId.get(id), id).toBe(1)
    for (const id of ids.reload) expect(byId.get(id)).toBeLessThanOrEqual(2)
  })

  it('DumpLogSegments: the page\'s batches are lz4-compressed and hold many records each', async () => {
    const batches = await dumpBatches(cluster, topic)
    const records = batches.reduce((n, b) => n + b.count, 0)
    expect(records).toBeGreaterThanOrEqual(80)
    for (const b of batches) {
      expect(b.compressCodec).toBe('lz4')
      expect(b.crcValid).toBe(true)
      expect(b.producerId).toBeGreaterThanOrEqual(0)
    }
    expect(batches.length).toBeLessThan(records / 3)
  })
})
