// The analytics SDK in real browsers: Debian's Chromium and Firefox ESR (puppeteer-core) load a
// page from http://127.0.0.1 that creates the SDK (IndexedDB outbox, Web Locks, BroadcastChannel),
// which produces through the kafka-edge relay (in process) to a real Kafka 4.4 broker. The Java
// consumer reads read_uncommitted with no dedupe: every tracked event must be there exactly once.
// Per browser: live tracking with one sender for three tabs, 500 events then the page closed at
// once, and a small torture run (test/e2e/browser-torture.ts; the 20,000-event one is manual).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bs, createTopic, dumpBatches, endOffsets, ensureCluster, readTopic, uniqueTopic, waitFor, type Cluster } from '../helpers/kafka.js'
import { ENGINES, NetSwitch, Relay, bundleSdk, launchEngine, pageToken, servePage, type Engine, type PageServer, type Tab } from './browser.js'
import { faultKindsFor, runTorture } from './browser-torture.js'

interface PageWindow {
  errors: string[]
  track(from: number, to: number, prefix: string): Promise<string[]>
  analytics: {
    flush(): Promise<void>
    pending(): Promise<number>
    stats(): { tracked: number; acked: number; retries: number; beacons: number; role: 'owner' | 'follower'; resume?: { mode: string; reason?: string } }
  }
}

async function readIds(cluster: Cluster, topic: string, expected: number): Promise<Map<string, number>> {
  const records = await readTopic(cluster, topic, { expected, isolation: 'read_uncommitted', timeoutMs: 60_000 })
  const byId = new Map<string, number>()
  for (const r of records) {
    const v = JSON.parse(new TextDecoder().decode(r.value!)) as { id: string; type: string; timestamp: number }
    byId.set(v.id, (byId.get(v.id) ?? 0) + 1)
    expect(r.headers.find((h) => h.key === 'event-type')?.value).toEqual(new TextEncoder().encode(v.type))
    expect(r.timestamp).toBe(v.timestamp)
  }
  return byId
}

/** Where each copy of `ids` is: partition@offset, producer id/epoch, base sequence, labelled or not (DumpLogSegments). */
async function copiesOf(cluster: Cluster, topic: string, ids: string[]): Promise<string[]> {
  const records = await readTopic(cluster, topic, { isolation: 'read_uncommitted' })
  const batches = await dumpBatches(cluster, topic)
  return records.filter((r) => ids.includes((JSON.parse(new TextDecoder().decode(r.value!)) as { id: string }).id)).map((r) => {
    const b = batches.find((x) => x.partition === r.partition && x.baseOffset <= r.offset && r.offset <= x.lastOffset)
    return `${new TextDecoder().decode(r.value!).slice(8, 14)} p${r.partition}@${r.offset} pid ${b?.producerId}/${b?.producerEpoch} seq ${b?.baseSequence}+${b?.count} ${r.headers.map((h) => h.key).join(',')}`
  })
}

/** [] when each of `${prefix}-0..n-1` was read once; else how many were missing or repeated, and the first few. */
const exactlyOnce = (byId: Map<string, number>, prefix: string, n: number) => {
  const bad: string[] = []
  for (let i = 0; i < n; i++) if (byId.get(`${prefix}-${i}`) !== 1) bad.push(`${prefix}-${i} x${byId.get(`${prefix}-${i}`) ?? 0}`)
  return bad.length === 0 ? [] : [`${bad.filter((x) => x.endsWith(' x0')).length} missing, ${bad.filter((x) => !x.endsWith(' x0')).length} repeated`, ...bad.slice(0, 5)]
}

// WebKitGTK runs here only with KAFKA_EDGE_E2E_WEBKIT=1: over WebDriver at CI's load its six tests
// take minutes, past what npm test may add; the conformance suite and `npm run torture:browser --
// --browser webkit` cover it in CI and by hand (docs/browser.md, "WebKit").
const webkitE2e = process.env.KAFKA_EDGE_E2E_WEBKIT === '1'
for (const { name, present } of ENGINES) {
  const why = name === 'webkit' && !webkitE2e ? 'skipped unless KAFKA_EDGE_E2E_WEBKIT=1: minutes over WebDriver' : 'needs the Debian package; CI installs it in .ci/run'
  describe.skipIf(!present || (name === 'webkit' && !webkitE2e))(`analytics SDK in ${name} -> relay -> Kafka 4.4 (${why})`, () => {
    let cluster: Cluster
    let site: PageServer
    let relay: Relay
    let browser: Engine
    const url = (topic: string, extra: Record<string, string> = {}) =>
      `${site.origin}/?${new URLSearchParams({ relay: relay.url, token: pageToken(topic), topic, flushMs: '200', ...extra })}`

    beforeAll(async () => {
      cluster = await ensureCluster()
      site = await servePage(await bundleSdk())
      relay = await Relay.start(bs(cluster), site.origin)
      browser = await launchEngine(name)
    })

    afterAll(async () => {
      await browser?.close()
      await relay?.down()
      await site?.close()
    })

    it('three tabs, one sender: the Web Lock owner sends every tab\'s events; followers\' flush() resolves on its acks', async () => {
      const topic = uniqueTopic(`tabs-${name}`)
      await createTopic(cluster, topic, { partitions: 2 })
      const tabs: Tab[] = []
      const senderLoads = site.requests('/sender-')
      for (let i = 0; i < 3; i++) tabs.push(await browser.newTab(url(topic)))
      const roles = await Promise.all(tabs.map((t) => t.evaluate(() => (window as unknown as PageWindow).analytics.stats().role)))
      expect(roles.filter((r) => r === 'owner')).toHaveLength(1)
      for (const [i, t] of tabs.entries()) expect(await t.evaluate((i2) => (window as unknown as PageWindow).track(i2 * 100, i2 * 100 + 100, 't'), i)).toEqual([])
      // durable in IndexedDB before anything is acknowledged: the batching window is 200 ms
      expect(await tabs[0]!.evaluate(() => (window as unknown as PageWindow).analytics.pending())).toBeGreaterThan(0)
      await Promise.all(tabs.map((t) => t.evaluate(() => (window as unknown as PageWindow).analytics.flush())))
      expect(await tabs[0]!.evaluate(() => (window as unknown as PageWindow).analytics.pending())).toBe(0)
      const stats = await Promise.all(tabs.map((t) => t.evaluate(() => {
        const w = window as unknown as PageWindow
        return { ...w.analytics.stats(), errors: w.errors }
      })))
      expect(stats.map((s) => s.errors)).toEqual([[], [], []])
      expect(stats.find((s) => s.role === 'owner')!.acked).toBe(300)
      expect(stats.filter((s) => s.role === 'follower').map((s) => s.acked)).toEqual([0, 0])
      // only the sender tab fetched the producer chunk; the followers loaded the SDK's page part alone
      expect(site.requests('/sender-') - senderLoads).toBe(1)
      // the owner closes: another tab takes the lock and sends what is tracked next
      const owner = roles.indexOf('owner')
      await tabs[owner]!.close()
      const rest = tabs.filter((_, i) => i !== owner)
      await waitFor(async () => (await Promise.all(rest.map((t) => t.evaluate(() => (window as unknown as PageWindow).analytics.stats().role)))).includes('owner'), { what: 'a new owner', intervalMs: 50 })
      expect(await rest[0]!.evaluate(() => (window as unknown as PageWindow).track(300, 350, 't'))).toEqual([])
      await rest[0]!.evaluate(() => (window as unknown as PageWindow).analytics.flush())
      const newRoles = await Promise.all(rest.map((t) => t.evaluate(() => (window as unknown as PageWindow).analytics.stats().role)))
      expect(newRoles.sort()).toEqual(['follower', 'owner'])
      const byId = await readIds(cluster, topic, 350)
      expect(exactlyOnce(byId, 't', 350)).toEqual([])
      expect(byId.size).toBe(350)
      for (const t of rest) await t.close()
      // lz4 batches of many records each
      const batches = await dumpBatches(cluster, topic)
      for (const b of batches) { expect(b.compressCodec).toBe('lz4'); expect(b.crcValid).toBe(true) }
      expect(batches.length).toBeLessThan(350 / 5)
    })

    it('page hide: 500 events tracked and the page closed at once arrive exactly once (the next page load resends what the beacon did not deliver)', async () => {
      const topic = uniqueTopic(`hide-${name}`)
      await createTopic(cluster, topic, { partitions: 2 })
      const page = await browser.newTab(url(topic, { flushMs: '60000' }))
      expect(await page.evaluate(() => (window as unknown as PageWindow).track(0, 500, 'h'))).toEqual([])
      await page.close()
      const next = await browser.newTab(url(topic))
      await waitFor(async () => (await next.evaluate(() => (window as unknown as PageWindow).analytics.pending())) === 0, { timeoutMs: 60_000, what: 'the outbox and checkpoint to empty' })
      // What the first page had sent is resumed (or there was nothing to take over). Firefox may tear the
      // page down before any of the batches the pagehide flush built reaches a leader (seen once in a
      // full CI run): the leaders then hold no state for the producer, and the documented fallback
      // (new records, labelled) applies. Chromium delivers them before the page goes: never relabelled.
      const resume = await next.evaluate(() => (window as unknown as PageWindow).analytics.stats().resume ?? { mode: 'none' })
      if (name === 'firefox' && resume.mode === 'relabelled') {
        expect(resume.reason).toMatch(/holds no state for producer/)
        console.log(`firefox: no batch of the closed page reached a leader; its events went out labelled (${resume.reason})`)
      } else expect(resume.mode).not.toBe('relabelled')
      const byId = await readIds(cluster, topic, 500)
      const bad = exactlyOnce(byId, 'h', 500)
      const stats = JSON.stringify(await next.evaluate(() => (window as unknown as PageWindow).analytics.stats()))
      expect(bad.length ? [...bad, stats, ...await copiesOf(cluster, topic, [...byId].filter(([, n]) => n > 1).slice(0, 2).map(([id]) => id))] : []).toEqual([])
      expect(byId.size).toBe(500)
      await next.close()
    })

    /**
     * A page reached through a switch that stalls its WebSocket: event 0 is acknowledged, then the
     * socket stalls and events 1..events-1 are tracked. The beacon goes straight to the relay.
     */
    const stalledPage = async (prefix: string, events: number, flushMs: string) => {
      const topic = uniqueTopic(`${prefix}-${name}`)
      await createTopic(cluster, topic, { partitions: 2 })
      const sw = await NetSwitch.start(relay.port)
      const q = { relay: `ws://127.0.0.1:${sw.port}/kafka`, beacon: `http://127.0.0.1:${relay.port}/kafka/beacon` }
      const page = await browser.newTab(url(topic, { ...q, flushMs }))
      const id = prefix[0]!
      expect(await page.evaluate(async (p) => {
        const w = window as unknown as PageWindow
        const e = await w.track(0, 1, p)
        await w.analytics.flush()
        return e
      }, id)).toEqual([])
      sw.stall()
      expect(await page.evaluate((n, p) => (window as unknown as PageWindow).track(1, n, p), events, id)).toEqual([])
      const total = async () => Object.values(await endOffsets(cluster, topic)).reduce((x, y) => x + y, 0)
      return { topic, sw, q, page, total }
    }

    /** Closes the page, cuts and restores the switch, and loads the page again until its checkpoint is empty. */
    const nextLoadDrains = async (s: Awaited<ReturnType<typeof stalledPage>>) => {
      await s.page.close()
      s.sw.offline()
      s.sw.online()
      const next = await browser.newTab(url(s.topic, s.q))
      await waitFor(async () => (await next.evaluate(() => (window as unknown as PageWindow).analytics.pending())) === 0, { timeoutMs: 60_000, what: 'the checkpoint to empty' })
      return next
    }

    it('page hide with the WebSocket stalled: the beacon (fetch keepalive to the relay) delivers the checkpointed batches; the next load\'s resend of them is a duplicate', async () => {
      // connected, producer id issued, event 0 acknowledged; then 199 events on a stalled socket
      const stalled = await stalledPage('beacon', 200, '50')
      const { topic, page, total } = stalled
      try {
        // events move from the outbox into checkpointed batches, which go out on the stalled socket
        const checkpointed = () => page.evaluate(() => new Promise<number>((resolve) => {
          const r = indexedDB.open(`kafka-edge:${new URLSearchParams(location.search).get('topic')}`)
          r.onsuccess = () => {
            const g = r.result.transaction('cp').objectStore('cp').get(1)
            g.onsuccess = () => {
              resolve((g.result as { pending: Array<{ recordCount: number }> } | undefined)?.pending.reduce((n, b) => n + b.recordCount, 0) ?? 0)
              r.result.close()
            }
          }
        }))
        await waitFor(async () => (await checkpointed()) > 0, { what: 'batches in the checkpoint', intervalMs: 50 })
        await new Promise((r) => setTimeout(r, 500))
        const inFlight = await checkpointed()
        expect(await page.evaluate(() => (window as unknown as PageWindow).analytics.stats().acked)).toBe(1) // nothing answered over the WebSocket
        // The page hides (the event the SDK listens for, dispatched while the page still runs): the
        // beacon goes out. Whether a browser still sends a keepalive request while it tears a closing
        // page down is its own best effort (Chromium missed it about once in six runs on a loaded machine).
        await page.evaluate(() => window.dispatchEvent(new Event('pagehide')))
        expect((await page.evaluate(() => (window as unknown as PageWindow).analytics.stats())).beacons).toBeGreaterThan(0)
        // Only the beacon can have written them: the WebSocket carries nothing.
        // A leader's batches travel in one beacon, in sequence order, so the beacon writes all of them
        // or (the browser never sent it) none: a part would mean they reached the broker out of order
        // (seen while each round was its own request, racing the others). Firefox, even from the live
        // page, has not delivered it within 15 s in a full CI run; the next load's resend must then
        // still deliver each event once, which the end asserts.
        let beaconed = true
        try {
          await waitFor(async () => (await total()) === 1 + inFlight, { what: `the beacon's ${inFlight} records`, timeoutMs: 15_000 })
        } catch (e) {
          const seen = await total()
          if (name !== 'firefox' || seen !== 1) throw e
          beaconed = false
          console.log(`firefox: the page-hide beacon's ${inFlight} records did not arrive within 15 s (beacons sent: ` +
            `${(await page.evaluate(() => (window as unknown as PageWindow).analytics.stats())).beacons}); the next load resends them`)
        }
        if (beaconed) {
          const early = await readIds(cluster, topic, 1 + inFlight)
          expect({ distinct: early.size, copies: [...early.values()].reduce((x, y) => x + y, 0) }).toEqual({ distinct: 1 + inFlight, copies: 1 + inFlight })
        }
        // closing the page is a pagehide again: a second beacon of the same batches is a duplicate
        await (await nextLoadDrains(stalled)).close()
        const after = await readIds(cluster, topic, 200)
        expect(exactlyOnce(after, 'b', 200)).toEqual([])
        expect(after.size).toBe(200)
      } finally {
        await stalled.sw.close()
      }
    })

    it('page hide with events still in the outbox and the WebSocket stalled: the batches the hide\'s flush builds go out by beacon once saved', async () => {
      // A long batching window: the events wait in the outbox until the hide.
      const stalled = await stalledPage('flush', 100, '60000')
      const { topic, page, total } = stalled
      try {
        // The beacon at the hide finds no unacknowledged batch; the flush the hide starts saves some,
        // and that save sends them by beacon, since the stalled WebSocket carries nothing.
        await page.evaluate(() => window.dispatchEvent(new Event('pagehide')))
        await waitFor(async () => (await total()) === 100, { what: 'the 99 events by beacon', timeoutMs: 15_000 })
        expect((await page.evaluate(() => (window as unknown as PageWindow).analytics.stats())).beacons).toBeGreaterThan(0)
        const next = await nextLoadDrains(stalled)
        // the beacon wrote them: the takeover finds them in the log
        expect(await next.evaluate(() => (window as unknown as PageWindow).analytics.stats().resume?.mode)).toBe('resumed')
        await next.close()
        const after = await readIds(cluster, topic, 100)
        expect(exactlyOnce(after, 'f', 100)).toEqual([])
        expect(after.size).toBe(100)
      } finally {
        await stalled.sw.close()
      }
    })

    it('expiry: a page that comes back after producer.id.expiration.ms delivers its checkpoint under a new id, copies labelled, nothing lost', async () => {
      // The same broker settings as test/kafka/resume.test.ts, so a full run starts this cluster once.
      const expiring = await ensureCluster({ name: 'pid-expiry', brokerProps: { 'producer.id.expiration.ms': 5000, 'producer.id.expiration.check.interval.ms': 1000 } })
      const topic = uniqueTopic(`expiry-${name}`)
      await createTopic(expiring, topic, { partitions: 2 })
      const r2 = await Relay.start(bs(expiring), site.origin)
      const sw = await NetSwitch.start(r2.port)
      try {
        const q = { relay: `ws://127.0.0.1:${sw.port}/kafka`, beacon: `http://127.0.0.1:${r2.port}/kafka/beacon`, flushMs: '50' }
        const page = await browser.newTab(url(topic, q))
        expect(await page.evaluate(async () => { const e = await (window as unknown as PageWindow).track(0, 1, 'x'); await (window as unknown as PageWindow).analytics.flush(); return e })).toEqual([])
        sw.stall()
        expect(await page.evaluate(() => (window as unknown as PageWindow).track(1, 150, 'x'))).toEqual([])
        await waitFor(async () => (await page.evaluate(() => new Promise<number>((resolve) => {
          const r = indexedDB.open(`kafka-edge:${new URLSearchParams(location.search).get('topic')}`)
          r.onsuccess = () => { const g = r.result.transaction('cp').objectStore('cp').get(1); g.onsuccess = () => { resolve((g.result as { pending: unknown[] } | undefined)?.pending.length ?? 0); r.result.close() } }
        }))) > 0, { what: 'batches in the checkpoint', intervalMs: 50 })
        await new Promise((r) => setTimeout(r, 300))
        await page.close() // the beacon writes the checkpointed batches; their acknowledgement never reaches a page
        await waitFor(async () => Object.values(await endOffsets(expiring, topic)).reduce((a, b) => a + b, 0) > 1, { what: 'the beacon\'s records' })
        sw.offline()
        // the broker forgets the producer (expiration 5 s, checked every second)
        await new Promise((r) => setTimeout(r, 5000 + 2 * 1000 + 1000))
        sw.online()
        const next = await browser.newTab(url(topic, q))
        await waitFor(async () => (await next.evaluate(() => (window as unknown as PageWindow).analytics.pending())) === 0, { timeoutMs: 60_000, what: 'the outbox and checkpoint to empty' })
        const resume = await next.evaluate(() => (window as unknown as PageWindow).analytics.stats().resume)
        expect(resume?.mode).toBe('relabelled')
        await next.close()
        const records = await readTopic(expiring, topic, { isolation: 'read_uncommitted', timeoutMs: 30_000 })
        const copies = new Map<string, boolean[]>()
        for (const r of records) {
          const id = (JSON.parse(new TextDecoder().decode(r.value!)) as { id: string }).id
          copies.set(id, [...copies.get(id) ?? [], r.headers.some((h) => h.key === 'kafka-edge.possible-duplicate')])
        }
        expect(copies.size).toBe(150) // none lost
        let labelledCopies = 0
        for (const [id, c] of copies) {
          expect(c.filter((l) => !l).length, `${id}: unlabelled copies`).toBeLessThanOrEqual(1) // a second copy is always labelled
          expect(c.length, id).toBeLessThanOrEqual(2)
          if (c.length === 2) labelledCopies++
        }
        expect(labelledCopies).toBeGreaterThan(0) // the beacon had written them: the relabelled resend is a real, labelled copy
      } finally {
        await sw.close()
        await r2.down()
      }
    }, 120_000)

    it('torture (CI size): 1,500 events across 3 tabs with one fault of each kind; the Java reader sees each exactly once', async () => {
      const kinds = faultKindsFor(name)
      const r = await runTorture({ browser: name, events: 1500, tabs: 3, faults: kinds.length, cluster: 'browser-torture' })
      expect(Object.entries(r.faults).filter(([, n]) => n > 0)).toEqual(kinds.map((k) => [k, 1]))
      expect(r.trackErrors).toEqual({})
      expect({ missing: r.missing, duplicated: r.duplicated, read: r.read }).toEqual({ missing: 0, duplicated: 0, read: 1500 })
    }, 420_000)
  })
}
