// The endurance run: steady traffic for N minutes through two relays and straight to the broker, from
// idempotent and transactional producers (test/soak/load.ts, a process of their own) and from browser
// tabs running the analytics SDK (headless Chromium), while faults come in rotation every few
// minutes: a relay restart (SIGTERM drain and SIGKILL crash in turn), a broker kill -9 + restart, and
// a network stall (the fault proxy in front of the broker swallows every frame for a while).
//
//   npm run soak -- --minutes 60        (writes bench/results/soak-60m.json, prints the summary)
//   npm run soak -- --seconds 90 --fault-every 20 --stall 6 --sample-ms 2000
//
// Processes: this one (faults, browser, Java reads), the producers, and each relay (`kafka-edge
// bridge`, the shipped CLI) on its own, so their memory is measured apart. test/soak/probe.mjs,
// preloaded into the producers and the relays, reports their RSS, heap, descriptors, libuv resources
// and event-loop delay every sample interval. Relay "steady" is never restarted: its memory and
// handles are judged over the whole run. Relay "restarted" takes the relay restarts, and the browser
// tabs send through it. The verdicts are defined in test/soak/verdicts.ts.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { signToken } from '../../src/bridge/index.js'
import { FaultProxy } from '../helpers/fault-proxy.js'
import { createTopic, ensureCluster, killNode, readTopic, restartNode, stopCluster, uniqueTopic, waitFor, type Cluster, type ReadRecord } from '../helpers/kafka.js'
import { bundleSdk, launch, servePage, type Browser, type Page, type PageServer } from '../e2e/browser.js'
import { ROOT, freePort } from '../e2e/wrangler.js'
import type { LoadConfig, LoadResult } from './load.js'
import { countStream, exactlyOnceCheck, handleChecks, memoryChecks, type Check, type Sample, type StreamCount } from './verdicts.js'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const PROBE = path.join(HERE, 'probe.mjs')
const SECRET = 'soak-secret-0123456789-abcdefghijklmnop'
const AUDIENCE = 'kafka-edge-soak'
const FAULT_KINDS = ['relay-restart', 'broker-kill', 'network-stall'] as const
type FaultKind = typeof FAULT_KINDS[number]

export interface SoakOptions {
  seconds: number
  /** records per second per producer stream (six streams) */
  rate: number
  /** browser events per second (all tabs together) */
  browserRate: number
  tabs: number
  sampleMs: number
  faultEveryS: number
  /** at most this many faults (the short run: one of each kind) */
  maxFaults: number
  /**
   * keep the traffic going until at least this many times the moment the last fault ended: 3 puts
   * every fault in the warm-up third (the short run, too short to spread them over the judged thirds)
   */
  tailRatio: number
  stallS: number
  cluster: string
  /** stop the cluster at the end (the CLI does; under vitest the global teardown does) */
  stopCluster: boolean
  out?: string
  log: (line: string) => void
}

type Triple = [number, number, number]

export interface FaultEvent { t: number; kind: FaultKind; detail: string; tookMs: number }

export interface SoakReport {
  options: Omit<SoakOptions, 'log'>
  startedAt: string
  endedAt: string
  /** seconds of traffic (from the producers' start to 'stop') */
  trafficS: number
  node: string
  load: string
  faults: FaultEvent[]
  faultCounts: Record<FaultKind, number>
  samples: Sample[]
  progress: Array<{ t: number; streams: Record<string, { sent: number; acked: number; failed: number; lastError?: string }> }>
  streams: StreamCount[]
  browser: { tabs: number; tracked: number; refused: number; trackErrors: Record<string, number>; pageErrors: string[]; version: string } | null
  producersAfterClose: LoadResult['afterClose']
  /** per process: [first sample, the one at the end of warm-up, last] */
  summary: Record<string, {
    samples: number; rssMB: Triple; heapFloorMB: Triple; fds: Triple; sockets: Triple; resources: Triple
    eldP99Ms: { median: number; max: number }; eldMaxMs: number
  }>
  relayIncarnations: Array<{ incarnation: number; samples: number; rssMB: [number, number]; fds: [number, number]; sockets: [number, number] }>
  relayLog: Record<string, { lines: number; last: string[] }>
  checks: Check[]
  pass: boolean
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const MB = 1024 * 1024
const r1 = (x: number) => Math.round(x * 10) / 10

/** A child process whose probe samples land in `samples`. */
class Measured {
  readonly lines: string[] = []
  lineCount = 0
  child: ChildProcess | null = null
  incarnation = -1
  constructor(
    readonly name: string, private readonly argv: () => string[], private readonly env: NodeJS.ProcessEnv,
    private readonly sink: (s: Sample) => void, private readonly t0: () => number, private readonly onMessage: (m: Record<string, unknown>) => void = () => {},
  ) {}

  start(): ChildProcess {
    this.incarnation++
    const incarnation = this.incarnation
    const child = spawn(process.execPath, this.argv(), { cwd: ROOT, env: { ...process.env, ...this.env }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] })
    const keep = (d: Buffer) => {
      for (const l of d.toString('utf8').split('\n').filter(Boolean)) {
        this.lineCount++
        this.lines.push(l.slice(0, 500))
        if (this.lines.length > 40) this.lines.shift()
      }
    }
    child.stdout!.on('data', keep)
    child.stderr!.on('data', keep)
    child.on('message', (m: Record<string, unknown>) => {
      const s = m.soakSample as Omit<Sample, 't' | 'proc' | 'incarnation'> & { at: number } | undefined
      if (s) {
        const { at, ...rest } = s
        this.sink({ t: r1((at - this.t0()) / 1000), proc: this.name, incarnation, ...rest })
      } else this.onMessage(m)
    })
    this.child = child
    return child
  }

  /** Signal the process and wait for it to exit (SIGKILL after `graceMs`). */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 15_000): Promise<void> {
    const c = this.child
    if (!c || c.exitCode !== null || c.signalCode !== null) return
    const exited = new Promise<void>((r) => c.once('exit', () => r()))
    c.kill(signal)
    const t = setTimeout(() => c.kill('SIGKILL'), graceMs)
    await exited
    clearTimeout(t)
  }
}

async function untilListening(port: number, timeoutMs = 30_000): Promise<void> {
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status > 0, { timeoutMs, intervalMs: 100, what: `relay on port ${port}` })
}


export async function runSoak(o: SoakOptions): Promise<SoakReport> {
  const log = o.log
  const startedAt = new Date()
  const cluster: Cluster = await ensureCluster({ name: o.cluster })
  const topics = { idempotent: uniqueTopic('soak-idem'), transactional: uniqueTopic('soak-txn'), browser: uniqueTopic('soak-browser') }
  for (const t of Object.values(topics)) await createTopic(cluster, t, { partitions: 3 })
  const node = cluster.nodes[0]!
  const proxy = await FaultProxy.start(cluster.nodes.map((n) => ({ host: n.host, port: n.port })), { advertiseProxy: true })
  const proxyMap = Object.fromEntries(cluster.nodes.map((n) => [`${n.host}:${n.port}`, proxy.resolve({ host: n.host, port: n.port, nodeId: n.id }).port]))
  const site: PageServer | null = o.tabs > 0 ? await servePage(await bundleSdk()) : null
  const origin = site?.origin ?? 'https://app.example'
  const samples: Sample[] = []
  const progress: SoakReport['progress'] = []
  let t0 = Date.now()
  const now = () => r1((Date.now() - t0) / 1000)
  const probeEnv = { SOAK_PROBE_MS: String(o.sampleMs), KAFKA_EDGE_BRIDGE_SECRET: SECRET }
  const relayPorts = { steady: await freePort(), restarted: await freePort() }
  const relays = Object.fromEntries(Object.entries(relayPorts).map(([name, port]) => [name, new Measured(`relay-${name}`, () => [
    '--import', PROBE, path.join(ROOT, 'bin', 'kafka-edge.js'), 'bridge', '--listen', `127.0.0.1:${port}`, '--brokers', proxy.proxyBootstrap,
    '--origins', origin, '--audience', AUDIENCE, '--log-level', 'warn',
  ], probeEnv, (s) => samples.push(s), () => t0)])) as Record<keyof typeof relayPorts, Measured>
  const exp = Math.floor(Date.now() / 1000) + o.seconds + 3 * 3600
  const token = signToken({ sub: 'soak', aud: AUDIENCE, exp, topics: [topics.idempotent, topics.transactional], transactional_ids: ['soak-*'] }, SECRET)
  const pageToken = signToken({ sub: 'soak-page', aud: AUDIENCE, exp, topics: [topics.browser] }, SECRET)
  let result: LoadResult | null = null
  const loadCfg: LoadConfig = {
    bootstrap: `${node.host}:${node.port}`, proxy: proxyMap, token, topics,
    relays: Object.fromEntries(Object.entries(relayPorts).map(([name, port]) => [name, `ws://127.0.0.1:${port}/kafka`])),
    rate: o.rate, progressMs: o.sampleMs,
  }
  const load = new Measured('producers', () => ['--import', 'tsx', '--import', PROBE, path.join(HERE, 'load.ts')], { ...probeEnv, SOAK_LOAD: JSON.stringify(loadCfg) }, (s) => samples.push(s), () => t0, (m) => {
    if (m.soakProgress) {
      const p = m.soakProgress as { at: number; streams: SoakReport['progress'][number]['streams'] }
      progress.push({ t: r1((p.at - t0) / 1000), streams: p.streams })
    }
    if (m.soakResult) result = m.soakResult as LoadResult
  })
  let browser: Browser | null = null
  const tabs: Page[] = []
  const faults: FaultEvent[] = []
  const tracked = { sent: 0, refused: new Set<number>(), errors: {} as Record<string, number> }
  let trafficS = 0
  try {
    for (const r of Object.values(relays)) r.start()
    await Promise.all(Object.values(relayPorts).map((p) => untilListening(p)))
    if (site) {
      browser = await launch('chromium')
      const q = new URLSearchParams({ relay: `ws://127.0.0.1:${relayPorts.restarted}/kafka`, token: pageToken, topic: topics.browser, flushMs: '200', backoffMs: '500' })
      for (let i = 0; i < o.tabs; i++) tabs.push(await browser.newPage(`${site.origin}/?${q}`))
    }
    t0 = Date.now()
    load.start()
    log(`traffic started: ${o.rate}/s on each of 6 producer streams, ${o.tabs ? `${o.browserRate}/s from ${o.tabs} browser tabs` : 'no browser'}; topics ${Object.values(topics).join(', ')}`)
    let stopping = false
    // The tabs take turns tracking one second's events each second (track resolves once they are stored).
    let tabsError: Error | null = null
    const tabsDone = (async () => {
      for (let s = 1; !stopping && tabs.length; s++) {
        const from = tracked.sent
        const to = Math.floor(s * o.browserRate)
        tracked.sent = to
        const errs = await tabs[s % tabs.length]!.evaluate((a, b) => (window as unknown as { track(f: number, t: number, p: string): Promise<string[]> }).track(a, b, 'b'), from, to)
        for (const e of errs) {
          const [id, name] = e.split(' ')
          tracked.refused.add(Number(id!.slice(2)))
          const k = name!.replace(/:$/, '')
          tracked.errors[k] = (tracked.errors[k] ?? 0) + 1
        }
        await sleep(Math.max(0, t0 + s * 1000 - Date.now()))
      }
    })().catch((e: Error) => { tabsError = e })
    const schedule: number[] = []
    for (let k = 1; k * o.faultEveryS <= o.seconds - o.stallS - 5 && k <= o.maxFaults; k++) schedule.push(k * o.faultEveryS)
    let relayRestarts = 0
    for (let k = 0; k < schedule.length; k++) {
      await sleep(Math.max(0, t0 + schedule[k]! * 1000 - Date.now()))
      const kind = FAULT_KINDS[k % FAULT_KINDS.length]!
      const at = now()
      const started = Date.now()
      let detail = ''
      if (kind === 'relay-restart') {
        const signal = relayRestarts++ % 2 === 0 ? 'SIGTERM' : 'SIGKILL'
        await relays.restarted.stop(signal)
        relays.restarted.start()
        await untilListening(relayPorts.restarted)
        detail = `relay "restarted" ${signal === 'SIGTERM' ? 'drained (SIGTERM)' : 'crashed (SIGKILL)'} and started again as process ${relays.restarted.incarnation}`
      } else if (kind === 'broker-kill') {
        await killNode(cluster, node.id)
        await sleep(2000)
        // On a loaded machine a restart can miss kafka.mjs's 90 s deadline: try again rather than lose the run.
        let attempts = 1
        for (;; attempts++) {
          try { await restartNode(cluster, node.id); break } catch (e) {
            if (attempts >= 3) throw e
            log(`broker restart attempt ${attempts} failed: ${(e as Error).message.split('\n')[0]}`)
          }
        }
        detail = `kill -9 of broker ${node.id}, restarted after 2 s${attempts > 1 ? ` (${attempts} attempts)` : ''}`
      } else {
        proxy.blackhole()
        await sleep(o.stallS * 1000)
        proxy.unblackhole()
        detail = `every frame to and from the broker swallowed for ${o.stallS} s, then those connections closed`
      }
      faults.push({ t: at, kind, detail, tookMs: Date.now() - started })
      log(`${at}s fault ${kind}: ${detail} (${((Date.now() - started) / 1000).toFixed(1)} s)`)
    }
    await sleep(Math.max(0, t0 + o.seconds * 1000 - Date.now(), (Date.now() - t0) * (o.tailRatio - 1)))
    trafficS = now()
    stopping = true
    log(`${trafficS}s stopping the traffic; waiting for every send and transaction to settle`)
    load.child!.send('stop')
    await tabsDone
    if (tabsError) throw tabsError
    await waitFor(() => result, { timeoutMs: 300_000, intervalMs: 500, what: 'the producers\' result' })
    const lr = result as unknown as LoadResult
    log(`${now()}s the producers settled`)
    const pending = async () => (await Promise.all(tabs.map((t) => t.evaluate('window.analytics.pending()') as Promise<number>))).reduce((a, b) => a + b, 0)
    if (tabs.length) await waitFor(async () => (await pending()) === 0, { timeoutMs: 180_000, intervalMs: 1000, what: 'empty browser outbox' }).catch((e: Error) => log(e.message))
    const pageErrors = tabs.length ? [...new Set((await Promise.all(tabs.map((t) => t.evaluate('window.errors') as Promise<string[]>))).flat())].slice(0, 10) : []
    log(`${now()}s every send settled; reading every topic with the Java consumer`)
    const readTimeout = 120_000 + o.seconds * 50
    const [idem, txn, web] = await Promise.all([
      readTopic(cluster, topics.idempotent, { isolation: 'read_uncommitted', timeoutMs: readTimeout }),
      readTopic(cluster, topics.transactional, { isolation: 'read_committed', timeoutMs: readTimeout }),
      tabs.length ? readTopic(cluster, topics.browser, { isolation: 'read_uncommitted', timeoutMs: readTimeout }) : Promise.resolve([] as ReadRecord[]),
    ])
    log(`${now()}s read ${idem.length + txn.length + web.length} records`)
    const dec = new TextDecoder()
    const byStream = new Map<string, Array<{ n: number; partition: number; key: string }>>()
    for (const r of [...idem, ...txn]) {
      const m = /^(.+):(\d+)(?:@(\d+))?$/.exec(dec.decode(r.value!))
      const s = m?.[1] ?? '?'
      const n = Number(m?.[2] ?? -1)
      const list = byStream.get(s) ?? []
      if (!byStream.has(s)) byStream.set(s, list)
      list.push({ n, partition: r.partition, key: `k${n % 16}`, ...(m?.[3] ? { txn: Number(m[3]) } : {}) })
    }
    const streams = lr.streams.map((s) => countStream({ ...s, reads: byStream.get(s.stream) ?? [] }))
    const strays = [...byStream.keys()].filter((k) => !lr.streams.some((s) => s.stream === k))
    if (tabs.length) {
      // Tabs share one outbox and take turns, so events carry no order across them: one key per event.
      const reads = web.map((r) => { const n = Number((JSON.parse(dec.decode(r.value!)) as { id: string }).id.slice(2)); return { n, partition: r.partition, key: String(n) } })
      streams.push(countStream({ stream: 'browser', topic: topics.browser, sent: tracked.sent, failed: [...tracked.refused], reads }))
    }
    const checks: Check[] = []
    for (const proc of ['producers', 'relay-steady']) {
      const mine = samples.filter((s) => s.proc === proc && s.t <= trafficS)
      checks.push(...memoryChecks(proc, mine, trafficS), ...handleChecks(proc, mine, trafficS))
    }
    checks.push(...streams.map(exactlyOnceCheck))
    if (strays.length) checks.push({ name: 'no stray records', pass: false, detail: `values from unknown streams: ${strays.join(', ')}` })
    const faultCounts = Object.fromEntries(FAULT_KINDS.map((k) => [k, faults.filter((f) => f.kind === k).length])) as Record<FaultKind, number>
    checks.push({ name: 'every fault kind injected', pass: FAULT_KINDS.every((k) => faultCounts[k] > 0), detail: FAULT_KINDS.map((k) => `${k} ${faultCounts[k]}`).join(', ') })

    const triple = (xs: number[]): Triple => [xs[0] ?? NaN, xs[Math.floor(xs.length / 3)] ?? NaN, xs.at(-1) ?? NaN]
    const summary: SoakReport['summary'] = {}
    for (const proc of ['producers', 'relay-steady', 'relay-restarted']) {
      const mine = samples.filter((s) => s.proc === proc && s.t <= trafficS)
      const p99s = mine.map((s) => s.eld.p99).sort((a, b) => a - b)
      summary[proc] = {
        samples: mine.length,
        rssMB: triple(mine.map((s) => r1(s.rss / MB))), heapFloorMB: triple(mine.map((s) => r1(s.heapFloor / MB))),
        fds: triple(mine.map((s) => s.fds)), sockets: triple(mine.map((s) => s.sockets)), resources: triple(mine.map((s) => s.resources)),
        eldP99Ms: { median: p99s[p99s.length >> 1] ?? NaN, max: p99s.at(-1) ?? NaN }, eldMaxMs: Math.max(...mine.map((s) => s.eld.max)),
      }
    }
    const relayIncarnations = [...new Set(samples.filter((s) => s.proc === 'relay-restarted').map((s) => s.incarnation))].map((incarnation) => {
      const mine = samples.filter((s) => s.proc === 'relay-restarted' && s.incarnation === incarnation)
      const ends = (f: (s: Sample) => number): [number, number] => [f(mine[0]!), f(mine.at(-1)!)]
      return { incarnation, samples: mine.length, rssMB: ends((s) => r1(s.rss / MB)), fds: ends((s) => s.fds), sockets: ends((s) => s.sockets) }
    })
    const { log: _log, ...options } = o
    const report: SoakReport = {
      options, startedAt: startedAt.toISOString(), endedAt: new Date().toISOString(), trafficS, node: process.version, load: os.loadavg().map((x) => x.toFixed(2)).join(' '),
      faults, faultCounts, samples, progress, streams,
      browser: browser
        ? {
          tabs: tabs.length, tracked: tracked.sent - tracked.refused.size, refused: tracked.refused.size, trackErrors: tracked.errors, pageErrors,
          version: await browser.browser.version(),
        }
        : null,
      producersAfterClose: lr.afterClose, summary, relayIncarnations,
      relayLog: Object.fromEntries([...Object.values(relays), load].map((m) => [m.name, { lines: m.lineCount, last: m.lines.slice(-10) }])),
      checks, pass: checks.every((c) => c.pass),
    }
    if (o.out) {
      mkdirSync(path.dirname(o.out), { recursive: true })
      writeFileSync(o.out, `${JSON.stringify(report, null, 1)}\n`)
    }
    return report
  } catch (e) {
    // An hour of samples is not thrown away with the run: what was recorded is written with the error.
    if (o.out) writeFileSync(o.out, `${JSON.stringify({ error: String((e as Error)?.stack ?? e), trafficS, faults, samples, progress, relayLog: Object.fromEntries([...Object.values(relays), load].map((m) => [m.name, m.lines])) }, null, 1)}\n`)
    throw e
  } finally {
    await load.stop('SIGKILL', 1000).catch(() => {})
    await browser?.close()
    await Promise.all(Object.values(relays).map((r) => r.stop('SIGTERM', 10_000).catch(() => {})))
    await site?.close()
    await proxy.close()
    if (o.stopCluster) await stopCluster(cluster).catch(() => {})
  }
}

/** The summary table (also in docs/relay.md, Endurance). */
export function formatReport(r: SoakReport): string {
  const lines: string[] = []
  const pad = (s: unknown, n: number) => String(s).padEnd(n)
  lines.push(`soak: ${r.trafficS} s of traffic, ${r.samples.length} samples; faults ${Object.entries(r.faultCounts).map(([k, v]) => `${k} ${v}`).join(', ')}`)
  lines.push(`${pad('process', 16)}${pad('samples', 9)}${pad('RSS MB first/warm/last', 24)}${pad('heap floor MB', 20)}${pad('fds', 14)}${pad('sockets', 12)}${pad('resources', 14)}event-loop p99 ms median/max, max`)
  for (const [proc, s] of Object.entries(r.summary)) {
    lines.push(`${pad(proc, 16)}${pad(s.samples, 9)}${pad(s.rssMB.join(' / '), 24)}${pad(s.heapFloorMB.join(' / '), 20)}${pad(s.fds.join(' / '), 14)}${pad(s.sockets.join(' / '), 12)}${pad(s.resources.join(' / '), 14)}${s.eldP99Ms.median} / ${s.eldP99Ms.max}, ${s.eldMaxMs}`)
  }
  lines.push(`${pad('stream', 18)}${pad('sent', 9)}${pad('acked', 9)}${pad('read', 9)}${pad('dups', 6)}${pad('missing', 9)}${pad('unexp', 7)}${pad('failed', 8)}order`)
  for (const s of r.streams) lines.push(`${pad(s.stream, 18)}${pad(s.sent, 9)}${pad(s.acknowledged, 9)}${pad(s.read, 9)}${pad(s.duplicates, 6)}${pad(s.missing, 9)}${pad(s.unexpected, 7)}${pad(s.failed, 8)}${s.orderViolations}`)
  for (const s of r.streams) for (const e of s.errors?.slice(0, 3) ?? []) lines.push(`  ${s.stream} error: ${e}`)
  for (const c of r.checks) lines.push(`${c.pass ? 'PASS' : 'FAIL'} ${c.name}: ${c.detail}`)
  lines.push(r.pass ? 'verdict: PASS' : 'verdict: FAIL')
  return lines.join('\n')
}

const isMain = process.argv[1] === fileURLToPath(import.meta.url)
if (isMain) {
  const args = process.argv.slice(2)
  const arg = (name: string): string | undefined => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : undefined }
  const num = (name: string, dflt: number) => { const v = arg(name); return v === undefined ? dflt : Number(v) }
  const seconds = arg('seconds') !== undefined ? num('seconds', 90) : num('minutes', 60) * 60
  const label = seconds % 60 === 0 ? `${seconds / 60}m` : `${seconds}s`
  const o: SoakOptions = {
    seconds, rate: num('rate', 25), browserRate: num('browser-rate', 10), tabs: num('tabs', 2), sampleMs: num('sample-ms', 10_000),
    faultEveryS: num('fault-every', 120), maxFaults: num('max-faults', Infinity), tailRatio: num('tail-ratio', 1), stallS: num('stall', 20), cluster: arg('cluster') ?? 'soak', stopCluster: !args.includes('--keep-cluster'),
    out: arg('out') ?? path.join(ROOT, 'bench', 'results', `soak-${label}.json`),
    log: (l) => console.error(`[soak ${new Date().toISOString().slice(11, 19)}] ${l}`),
  }
  const report = await runSoak(o)
  console.log(formatReport(report))
  console.error(`written to ${o.out}`)
  process.exit(report.pass ? 0 : 1)
}
