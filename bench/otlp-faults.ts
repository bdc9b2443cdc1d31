// npm run bench -- otlp-faults [--spans N] [--clients N] [--per-request N]
//
// The OTLP routes' exactly-once run: N spans (100,000 by default) posted to /v1/traces of the telemetry
// Worker under `wrangler dev` (durable accept, 4 shards) by concurrent clients, as protobuf, JSON and
// gzip'd protobuf in turn, while the wrangler dev process is restarted and a broker is killed. The
// independent reader is the OpenTelemetry Collector (contrib kafkareceiver -> fileexporter, built by
// scripts/otelcol). Verdict: every span of a request answered 200 is read once.
//
// A client resends a request until it is answered 200, as OTel exporters do. When an earlier attempt
// got no answer at all (the Worker restarted under it), that attempt may have been stored, and its
// spans may then be read twice: OTLP has no request id to dedupe on, so those are counted apart
// (`resentAfterLostAnswer`), not as the Worker's duplicates. Every other span read twice is one.
import { gzipSync } from 'node:zlib'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { jsonToProto } from '../src/edge/otlp/transcode.js'
import { bs, createTopic, ensureCluster, uniqueTopic } from '../test/helpers/kafka.js'
import { collectorBinary, startCollector, type Collector } from '../test/e2e/otelcol.js'
import { drainBacklog, scheduleFaults } from '../test/e2e/worker-load.js'
import { freePort, startWrangler, type WranglerDev } from '../test/e2e/wrangler.js'
import { printTable, report, writeReport, type BenchResult } from './lib.js'

const TOKEN = 'otlp-faults-secret'
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const hex = (n: number, bytes: number) => n.toString(16).padStart(bytes * 2, '0')

function arg(args: string[], name: string, dflt: number): number {
  const i = args.indexOf(`--${name}`)
  return i >= 0 ? Number(args[i + 1]) : dflt
}

/** One request's OTLP/JSON: `count` spans named `${label}-s${i}`, one trace per request. */
function traces(label: string, trace: number, count: number): object {
  return {
    resourceSpans: [{
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'otlp-faults' } }] },
      scopeSpans: [{
        scope: { name: 'bench', version: '1' },
        spans: Array.from({ length: count }, (_, i) => ({
          traceId: hex(trace, 16), spanId: hex(trace * 1000 + i + 1, 8), name: `${label}-s${i}`, kind: 2,
          startTimeUnixNano: '1764626400000000000', endTimeUnixNano: '1764626400250000000',
          attributes: [{ key: 'http.route', value: { stringValue: '/checkout' } }, { key: 'i', value: { intValue: String(i) } }],
        })),
      }],
    }],
  }
}

function spanNames(line: Record<string, unknown>): string[] {
  const out: string[] = []
  for (const rs of (line.resourceSpans as Array<{ scopeSpans?: Array<{ spans?: Array<{ name: string }> }> }> | undefined) ?? []) {
    for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) out.push(s.name)
  }
  return out
}

export default async function run(args: string[]): Promise<void> {
  const spans = arg(args, 'spans', 100_000)
  const clients = arg(args, 'clients', 20)
  const perRequest = arg(args, 'per-request', 100)
  const built = collectorBinary()
  if ('missing' in built) throw new Error(`the Collector is needed as the reader: ${built.missing}`)
  const cluster = await ensureCluster({ nodes: 3, name: 'faults' })
  const topics = { traces: uniqueTopic('otlp_spans'), logs: uniqueTopic('otlp_logs'), metrics: uniqueTopic('otlp_metrics') }
  await createTopic(cluster, topics.traces, { partitions: 6, minIsr: 2 })
  for (const t of [topics.logs, topics.metrics]) await createTopic(cluster, t, { partitions: 1 })
  const state = mkdtempSync(path.join(os.tmpdir(), 'kafka-edge-otlp-faults-'))
  const port = await freePort()
  const vars = {
    KAFKA_BOOTSTRAP: bs(cluster), TELEMETRY_TOPIC: uniqueTopic('unused'), SHARDS: '4',
    OTLP_TRACES_TOPIC: topics.traces, OTLP_LOGS_TOPIC: topics.logs, OTLP_METRICS_TOPIC: topics.metrics,
  }
  const start = () => startWrangler(vars, { port, state, secrets: { OTLP_AUTH_TOKEN: TOKEN } })
  let dev: WranglerDev | null = await start()
  const url = dev.url
  let collector: Collector | null = null

  const accepted = new Set<string>()
  /** Requests with an attempt that got no answer, by their label. */
  const lostAnswer = new Set<string>()
  const retries: Record<string, number> = {}
  let requests = 0
  const perClient = Math.ceil(spans / clients / perRequest)
  const t0 = Date.now()

  const client = async (c: number) => {
    for (let r = 0; r < perClient; r++) {
      const label = `c${c}-r${r}`
      const json = traces(label, c * 100_000 + r + 1, perRequest)
      const kind = r % 3
      const body = kind === 1 ? new TextEncoder().encode(JSON.stringify(json)) : kind === 2 ? new Uint8Array(gzipSync(jsonToProto(json, 'TracesData'))) : jsonToProto(json, 'TracesData')
      const headers: Record<string, string> = { 'content-type': kind === 1 ? 'application/json' : 'application/x-protobuf', authorization: `Bearer ${TOKEN}` }
      if (kind === 2) headers['content-encoding'] = 'gzip'
      for (;;) {
        let status = 0
        let retryAfter = 0
        try {
          requests++
          const res = await fetch(`${url}/v1/traces`, { method: 'POST', body, headers, signal: AbortSignal.timeout(30_000) })
          status = res.status
          retryAfter = Number(res.headers.get('retry-after') ?? 0)
          await res.arrayBuffer()
        } catch (e) {
          lostAnswer.add(label)
          retries[(e as Error).name] = (retries[(e as Error).name] ?? 0) + 1
        }
        if (status === 200) {
          for (let i = 0; i < perRequest; i++) accepted.add(`${label}-s${i}`)
          break
        }
        if (status) retries[String(status)] = (retries[String(status)] ?? 0) + 1
        await sleep(retryAfter > 0 ? retryAfter * 1000 : 250)
      }
    }
  }

  const total = perClient * clients * perRequest
  const faultRun = scheduleFaults(cluster, topics.traces, { restartAt: 0.3, killBrokerAt: 0.6, brokerDownMs: 8000 }, () => accepted.size / total, async () => {
    await dev!.stop()
    dev = null
    dev = await start()
  }, () => `${accepted.size} spans accepted`, (m) => console.log(`[otlp-faults] ${m}`))

  try {
    await Promise.all([...Array.from({ length: clients }, (_, c) => client(c)), faultRun.done])
    const postSeconds = (Date.now() - t0) / 1000
    console.log(`[otlp-faults] ${accepted.size} spans accepted in ${postSeconds.toFixed(1)} s; waiting for the backlog to drain`)
    const drainSeconds = await drainBacklog(url)
    await faultRun.brokerBack()

    collector = await startCollector(built.bin, { brokers: bs(cluster), topics })
    let seen = new Map<string, number>()
    let last = -1
    let stableSince = Date.now()
    const readStart = Date.now()
    // Read until every accepted span is in, or nothing new arrived for 20 s.
    for (;;) {
      seen = new Map()
      for (const line of collector.read('traces')) for (const n of spanNames(line)) seen.set(n, (seen.get(n) ?? 0) + 1)
      const count = [...seen.values()].reduce((a, b) => a + b, 0)
      if (count !== last) { last = count; stableSince = Date.now() }
      if ([...accepted].every((n) => seen.has(n)) && Date.now() - stableSince > 3000) break
      // The first records wait for the receiver's group to form; after them, 20 s without news ends it.
      if ((count > 0 && Date.now() - stableSince > 20_000) || Date.now() - readStart > 300_000) break
      await sleep(1000)
    }
    const requestOf = (name: string) => name.slice(0, name.lastIndexOf('-s'))
    const twice = [...seen].filter(([, k]) => k > 1).map(([n]) => n)
    const summary = {
      spans: total, accepted: accepted.size, read: last,
      missing: [...accepted].filter((n) => !seen.has(n)).length,
      duplicates: twice.filter((n) => !lostAnswer.has(requestOf(n))).length,
      resentAfterLostAnswer: twice.filter((n) => lostAnswer.has(requestOf(n))).length,
      requestsWithLostAnswer: lostAnswer.size,
      notAccepted: [...seen.keys()].filter((n) => !accepted.has(n)).length,
      requests, retries, faults: faultRun.faults, postSeconds, drainSeconds,
    }
    console.log(`[otlp-faults] ${JSON.stringify(summary)}`)
    if (summary.missing > 0) console.log(`[otlp-faults] the Collector's log ends:\n${collector.log().slice(-3000)}`)
    const results: BenchResult[] = [
      { impl: 'kafka-edge Worker, 4 shards, faults', metric: 'spans accepted/s', unit: 'spans/s', value: accepted.size / postSeconds },
      { impl: 'kafka-edge Worker, 4 shards, faults', metric: 'accepted spans missing', unit: 'spans', value: summary.missing },
      { impl: 'kafka-edge Worker, 4 shards, faults', metric: 'accepted spans read twice (not resent by the client)', unit: 'spans', value: summary.duplicates },
    ]
    printTable(results, 'kafka-edge Worker, 4 shards, faults')
    console.log(writeReport({ ...report('otlp-faults', { spans, clients, perRequest, shards: 4 }, results), summary } as ReturnType<typeof report>))
    if (summary.missing > 0 || summary.duplicates > 0) process.exitCode = 1
  } finally {
    await collector?.stop()
    await dev?.stop()
    rmSync(state, { recursive: true, force: true })
  }
}
