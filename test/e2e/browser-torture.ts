// The browser SDK's torture run: events tracked across several tabs of one real browser (Chromium,
// Firefox or WebKitGTK) while the harness reloads pages, closes tabs, crashes renderers, cuts the network,
// restarts the relay and restarts the broker; then the Java consumer (read_uncommitted, no dedupe)
// reads the topic and every tracked event must be there exactly once.
//
// test/e2e/browser.test.ts runs a small one in `npm test`; the full one is manual:
//   npm run torture:browser -- [--browser chromium|firefox|webkit|both|all] [--events 20000] [--tabs 3] [--faults 60] [--kinds reload,offline,...]
// It prints the result as JSON (counts per fault kind, missing and duplicated events).
import { createTopic, bs, dumpBatches, endOffsets, ensureCluster, killNode, readTopic, restartNode, uniqueTopic, waitFor, type Cluster } from '../helpers/kafka.js'
import { NetSwitch, Relay, bundleSdk, launchEngine, pageToken, servePage, type Engine, type EngineName, type Tab } from './browser.js'

export const FAULT_KINDS = ['reload', 'close-tab', 'renderer-crash', 'offline', 'relay-restart', 'broker-restart'] as const
export type FaultKind = typeof FAULT_KINDS[number]
/**
 * WebKitWebDriver deletes its session when a web process dies ("session deleted because of page
 * crash or hang"), taking MiniBrowser and its ephemeral storage with it: a renderer crash there
 * cannot be survived by the harness, so WebKitGTK runs every other kind.
 */
export const faultKindsFor = (engine: EngineName): readonly FaultKind[] => engine === 'webkit' ? FAULT_KINDS.filter((k) => k !== 'renderer-crash') : FAULT_KINDS

export interface TortureOptions {
  browser: EngineName
  events: number
  tabs: number
  /** Faults applied in all, spread over the run, kinds in rotation. */
  faults: number
  kinds?: readonly FaultKind[]
  /** Kafka cluster name (its single broker is restarted). */
  cluster?: string
  log?: (line: string) => void
  /** The producer's debug contexts (e.g. 'epoch,retry'): their lines are returned in producerLog. */
  debug?: string
}

export interface TortureResult {
  browser: EngineName
  version: string
  /** Events whose track() resolved (stored); the rest were refused with the error in trackErrors. */
  tracked: number
  read: number
  distinct: number
  missing: number
  missingIds?: string[]
  duplicated: number
  /** Records carrying the possible-duplicate header (resent after the broker may have lost the producer's state). */
  labelledPossibleDuplicates: number
  faults: Record<FaultKind, number>
  /** Owners that took over a checkpoint: how many resumed its identity (batches and records resent under their sequences) or relabelled. */
  takeovers: { resumed: number; resumedBatches: number; resumedRecords: number; relabelled: number; relabelReasons: string[] }
  /** track() refusals by error name (OutboxFullError when the outbox holds maxOutboxEvents). */
  trackErrors: Record<string, number>
  /** Refused events that were read anyway (a refusal must mean "not stored"): should be absent. */
  readRefused?: number
  /** For the first duplicated events: where each copy is (partition/offset, producer id/epoch/sequence, labelled or not). */
  duplicates: string[]
  /** The producers' debug lines (with `debug`), in time order. */
  producerLog?: string[]
  /** onError reports of the tabs open at the end (distinct, first 10). */
  pageErrors: string[]
  durationMs: number
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export async function runTorture(o: TortureOptions): Promise<TortureResult> {
  const t0 = Date.now()
  const log = o.log ?? (() => {})
  const kinds = o.kinds ?? faultKindsFor(o.browser)
  const cluster: Cluster = await ensureCluster({ name: o.cluster ?? 'browser-torture' })
  const topic = uniqueTopic('torture')
  await createTopic(cluster, topic, { partitions: 3 })
  const site = await servePage(await bundleSdk())
  const relay = await Relay.start(bs(cluster), site.origin)
  const net = await NetSwitch.start(relay.port)
  const q = new URLSearchParams({ relay: `ws://127.0.0.1:${net.port}/kafka`, token: pageToken(topic), topic, flushMs: '100', backoffMs: '200', ...(o.debug ? { debug: o.debug } : {}) })
  const url = `${site.origin}/?${q}`
  const b: Engine = await launchEngine(o.browser)
  const faults = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>
  const refused = new Set<string>()
  const trackErrors: Record<string, number> = {}
  const tabs: Tab[] = []
  const open = async () => { tabs.push(await b.newTab(url)) }
  // A crashed tab's close() may never be answered: do not wait on it for long.
  const replace = async (i: number) => { await Promise.race([tabs[i]!.close().catch(() => {}), sleep(3000)]); tabs[i] = await b.newTab(url) }
  let background: Promise<void> = Promise.resolve()
  try {
    for (let i = 0; i < o.tabs; i++) await open()
    const chunk = Math.max(10, Math.floor(o.events / (o.faults * 2 + 2)))
    const faultEvery = Math.max(1, Math.floor(o.events / (o.faults + 1)))
    let nextFault = faultEvery
    let applied = 0
    for (let i = 0; i < o.events;) {
      const n = Math.min(o.events - i, Math.max(1, Math.round(chunk * (0.5 + Math.random()))))
      const tab = Math.floor(Math.random() * tabs.length)
      const errs = await tabs[tab]!.evaluate<string[]>((from: number, to: number) => (window as unknown as { track(f: number, t: number, p: string): Promise<string[]> }).track(from, to, 'e'), i, i + n)
      for (const e of errs) {
        const [id, name] = e.split(' ')
        refused.add(id!)
        trackErrors[name!.replace(/:$/, '')] = (trackErrors[name!.replace(/:$/, '')] ?? 0) + 1
      }
      i += n
      if (i < nextFault || applied >= o.faults) continue
      nextFault += faultEvery
      const kind = kinds[applied++ % kinds.length]!
      await background // the broker restart runs alongside the tracking, one at a time
      log(`${Math.round((Date.now() - t0) / 1000)}s event ${i}: ${kind}`)
      const victim = Math.floor(Math.random() * tabs.length)
      switch (kind) {
        case 'reload':
          await tabs[victim]!.reload()
          break
        case 'close-tab':
          await replace(victim)
          break
        case 'renderer-crash': {
          if (await b.crashRenderer() === 0) throw new Error(`no ${o.browser} renderer process found to crash`)
          await sleep(200)
          for (let t = 0; t < tabs.length; t++) await replace(t)
          break
        }
        case 'offline':
          net.offline()
          background = sleep(1000 + Math.random() * 2000).then(() => net.online())
          break
        case 'relay-restart':
          await relay.down()
          await sleep(300)
          await relay.up()
          break
        case 'broker-restart': {
          const id = cluster.nodes[0]!.id
          background = killNode(cluster, id).then(() => sleep(500)).then(() => restartNode(cluster, id))
          break
        }
      }
      faults[kind]++
    }
    await background
    // Everything tracked is durable somewhere in the origin's storage; the owner tab sends it.
    log(`${Math.round((Date.now() - t0) / 1000)}s all ${o.events} tracked; waiting for delivery`)
    const total = async () => Object.values(await endOffsets(cluster, topic)).reduce((a, b2) => a + b2, 0)
    await waitFor(async () => (await total()) >= o.events - refused.size, { timeoutMs: 180_000, intervalMs: 1000, what: `${o.events - refused.size} records in ${topic}` }).catch((e: Error) => log(e.message))
    await waitFor(async () => (await Promise.all(tabs.map((t) => t.evaluate<number>('window.analytics.pending()')))).every((n) => n === 0), { timeoutMs: 60_000, intervalMs: 500, what: 'empty outbox' })
      .catch((e: Error) => log(e.message))
    await sleep(3000) // a late duplicate would land now
    const records = await readTopic(cluster, topic, { isolation: 'read_uncommitted', timeoutMs: 60_000 })
    const seen = new Map<string, number>()
    const copies = new Map<string, string[]>()
    const batches = await dumpBatches(cluster, topic)
    const batchOf = (p: number, off: number) => batches.find((x) => x.partition === p && x.baseOffset <= off && off <= x.lastOffset)
    let labelled = 0
    for (const r of records) {
      const v = JSON.parse(new TextDecoder().decode(r.value!)) as { id: string }
      seen.set(v.id, (seen.get(v.id) ?? 0) + 1)
      const dup = r.headers.some((h) => h.key === 'kafka-edge.possible-duplicate')
      if (dup) labelled++
      const bt = batchOf(r.partition, r.offset)
      copies.set(v.id, [...copies.get(v.id) ?? [], `p${r.partition}@${r.offset} pid ${bt?.producerId}/${bt?.producerEpoch} seq ${bt?.baseSequence}${dup ? ' labelled' : ''}`])
    }
    const missingIds: string[] = []
    for (let i = 0; i < o.events; i++) if (!seen.has(`e-${i}`) && !refused.has(`e-${i}`)) missingIds.push(`e-${i}`)
    const missing = missingIds.length
    const readRefused = [...refused].filter((id) => seen.has(id)).length
    const outcomes = await tabs[0]!.evaluate<Array<{ mode: string; batches: number; records: number; reason?: string }>>(() => Object.keys(localStorage).filter((k) => k.startsWith('resume:')).map((k) => JSON.parse(localStorage.getItem(k)!)))
    const resumed = outcomes.filter((x) => x.mode === 'resumed')
    return {
      browser: o.browser,
      version: await b.version(),
      tracked: o.events - refused.size,
      read: records.length,
      distinct: seen.size,
      missing,
      ...(missing ? { missingIds: missingIds.slice(0, 20) } : {}),
      duplicated: [...seen.values()].filter((n) => n > 1).length,
      labelledPossibleDuplicates: labelled,
      faults,
      takeovers: {
        resumed: resumed.length, resumedBatches: resumed.reduce((n, x) => n + x.batches, 0), resumedRecords: resumed.reduce((n, x) => n + x.records, 0),
        relabelled: outcomes.filter((x) => x.mode === 'relabelled').length,
        relabelReasons: outcomes.filter((x) => x.mode === 'relabelled').map((x) => x.reason ?? ''),
      },
      trackErrors,
      ...(readRefused ? { readRefused } : {}),
      duplicates: [...copies].filter(([, c]) => c.length > 1).slice(0, 8).map(([id, c]) => `${id}: ${c.join(' | ')}`),
      ...(o.debug ? { producerLog: await tabs[0]!.evaluate<string[]>(() => Object.keys(localStorage).filter((k) => k.startsWith('log:')).sort().map((k) => `${k.split(':')[1]} ${localStorage.getItem(k)}`)) } : {}),
      pageErrors: [...new Set((await Promise.all(tabs.map((t) => t.evaluate<string[]>('window.errors')))).flat())].slice(0, 10),
      durationMs: Date.now() - t0,
    }
  } finally {
    await b.close()
    await net.close()
    await relay.down()
    await site.close()
  }
}

const isMain = process.argv[1]?.endsWith('browser-torture.ts')
if (isMain) {
  const arg = (name: string, dflt: string) => { const i = process.argv.indexOf(`--${name}`); return i > 0 ? process.argv[i + 1]! : dflt }
  const which = arg('browser', 'both')
  const browsers: EngineName[] = which === 'all' ? ['chromium', 'firefox', 'webkit'] : which === 'both' ? ['chromium', 'firefox'] : [which as EngineName]
  const results: TortureResult[] = []
  for (const browser of browsers) {
    results.push(await runTorture({
      browser, events: Number(arg('events', '20000')), tabs: Number(arg('tabs', '3')), faults: Number(arg('faults', '60')),
      kinds: arg('kinds', faultKindsFor(browser).join(',')).split(',') as FaultKind[], cluster: arg('cluster', 'browser-torture'),
      ...(process.argv.includes('--debug') ? { debug: arg('debug', 'epoch,retry') } : {}),
      log: (l) => console.error(`[${browser}] ${l}`),
    }))
    console.error(JSON.stringify(results.at(-1)))
  }
  console.log(JSON.stringify(results, null, 2))
  process.exit(results.every((r) => r.missing === 0 && r.duplicated === 0 && r.read === r.tracked) ? 0 : 1)
}
