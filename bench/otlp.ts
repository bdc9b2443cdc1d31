// npm run bench -- otlp [--requests N] [--spans N]: the OTLP routes' cost.
//   1. V8 in Node, CPU per 1,000 spans: the app's route (body check or JSON transcoding, objects stubbed)
//      and the object's record making (toRecords), for protobuf passthrough and for JSON bodies;
//   2. under wrangler dev with Kafka 4.4, one shard: workerd CPU per 1,000 spans (every workerd process of
//      the dev server, so Worker and object together) and spans/s accepted (sequential requests) and
//      produced (until the backlog is empty), for protobuf and JSON bodies;
//   3. the same requests again under the V8 profiler through wrangler dev's inspector, as `bench --
//      worker` measures the Worker: the isolate's busy time per 1,000 spans (Worker and object share
//      the isolate under wrangler dev), an upper bound of what Cloudflare bills, and its top frames.
import { loadavg } from 'node:os'
import { printTable, report, workerdCpuMs, writeReport, type BenchResult } from './lib.js'
import { telemetryApp } from '../src/edge/worker/app.js'
import type { DurableObjectNamespace, Env } from '../src/edge/worker/env.js'
import { toRecords } from '../src/edge/otlp/records.js'
import { jsonToProto } from '../src/edge/otlp/transcode.js'
import { bs, createTopic, ensureCluster, readTopic, uniqueTopic } from '../test/helpers/kafka.js'
import { startWrangler } from '../test/e2e/wrangler.js'
import { Inspector, summarize, type IsolateProfile } from './inspector.js'

const arg = (args: string[], name: string, d: number) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 ? Number(args[i + 1]) : d
}

const id = (n: number, bytes: number) => n.toString(16).padStart(bytes * 2, '0')
function traces(spans: number, r: number) {
  return { resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'bench' } }, { key: 'host.name', value: { stringValue: `h-${r}` } }] },
    scopeSpans: [{ scope: { name: 'bench', version: '1' }, spans: Array.from({ length: spans }, (_, i) => ({
      traceId: id(r * 100_000 + 1 + (i % 50), 16), spanId: id(r * 100_000 + 1 + i, 8), parentSpanId: i % 5 ? id(r * 100_000 + i, 8) : '', name: `GET /api/items/${i % 20}`, kind: 2,
      startTimeUnixNano: String(1764626400000000000n + BigInt(i) * 1000n), endTimeUnixNano: String(1764626400000500000n + BigInt(i) * 1000n),
      attributes: [{ key: 'http.request.method', value: { stringValue: 'GET' } }, { key: 'http.response.status_code', value: { intValue: '200' } }, { key: 'url.path', value: { stringValue: `/api/items/${i}` } }],
      status: { code: 1 },
    })) }] }] }
}

function cpuMs<T>(fn: () => T): number {
  const c0 = process.cpuUsage()
  fn()
  const c = process.cpuUsage(c0)
  return (c.user + c.system) / 1000
}

async function handlerCpuPer1000(spans: number, requests: number, type: 'protobuf' | 'json'): Promise<number> {
  const ns: DurableObjectNamespace = { idFromName: (n) => n, get: () => ({ fetch: async () => new Response('{"records":1,"items":0,"rejected":0}') }) }
  const app = telemetryApp()
  const env = { PRODUCER: ns, KAFKA_BOOTSTRAP: 'b:1', TELEMETRY_TOPIC: 't' } as Env
  const bodies = Array.from({ length: requests }, (_, r) => (type === 'json' ? JSON.stringify(traces(spans, r)) : jsonToProto(traces(spans, r), 'TracesData')))
  const post = (b: string | Uint8Array<ArrayBuffer>) => app.request('/v1/traces', { method: 'POST', body: b, headers: { 'content-type': type === 'json' ? 'application/json' : 'application/x-protobuf' } }, env)
  for (const b of bodies.slice(0, 5)) await (await post(b)).arrayBuffer()
  const c0 = process.cpuUsage()
  for (const b of bodies) await (await post(b)).arrayBuffer()
  const c = process.cpuUsage(c0)
  return (c.user + c.system) / 1000 / (requests * spans / 1000)
}

export default async function run(args: string[]): Promise<void> {
  const loadAtStart = loadavg()
  const spans = arg(args, 'spans', 1000)
  const requests = arg(args, 'requests', 50)
  const results: BenchResult[] = []
  for (const type of ['protobuf', 'json'] as const) {
    results.push({ impl: `app route, ${type} body (V8 in Node, objects stubbed)`, metric: 'CPU per 1,000 spans', unit: 'ms', value: await handlerCpuPer1000(spans, requests, type) })
  }
  const proto = jsonToProto(traces(spans, 0), 'TracesData')
  for (let i = 0; i < 5; i++) toRecords('traces', proto, { encoding: 'otlp_proto', maxRecordBytes: 1 << 20 })
  const rounds = 20
  results.push({ impl: 'object: toRecords, otlp_proto (V8 in Node)', metric: 'CPU per 1,000 spans', unit: 'ms', value: cpuMs(() => { for (let i = 0; i < rounds; i++) toRecords('traces', proto, { encoding: 'otlp_proto', maxRecordBytes: 1 << 20 }) }) / (rounds * spans / 1000) })
  results.push({ impl: 'object: toRecords, partition_traces_by_id (V8 in Node)', metric: 'CPU per 1,000 spans', unit: 'ms', value: cpuMs(() => { for (let i = 0; i < rounds; i++) toRecords('traces', proto, { encoding: 'otlp_proto', maxRecordBytes: 1 << 20, partitionTracesById: true }) }) / (rounds * spans / 1000) })

  const cluster = await ensureCluster()
  const isolates: Record<string, IsolateProfile> = {}
  for (const type of ['protobuf', 'json'] as const) {
    const topic = uniqueTopic('otlp_bench')
    await createTopic(cluster, topic, { partitions: 3 })
    const dev = await startWrangler({ KAFKA_BOOTSTRAP: bs(cluster), TELEMETRY_TOPIC: 'unused', OTLP_TRACES_TOPIC: topic })
    try {
      const bodiesFrom = (first: number) => Array.from({ length: requests }, (_, r) => (type === 'json' ? JSON.stringify(traces(spans, first + r)) : jsonToProto(traces(spans, first + r), 'TracesData')))
      const post = (b: string | Uint8Array<ArrayBuffer>) => fetch(`${dev.url}/v1/traces`, { method: 'POST', body: b, headers: { 'content-type': type === 'json' ? 'application/json' : 'application/x-protobuf' } })
      /** Posts the bodies one after another, then waits for the backlog to empty: [accepted, produced] in ms. */
      const pass = async (bodies: Array<string | Uint8Array<ArrayBuffer>>) => {
        const t0 = performance.now()
        for (const b of bodies) {
          const res = await post(b)
          await res.arrayBuffer()
          if (res.status !== 200) throw new Error(`${type}: ${res.status}`)
        }
        const accepted = performance.now() - t0
        for (;;) {
          const h = await (await fetch(`${dev.url}/healthz`)).json() as { backlog: number }
          if (h.backlog === 0) break
          await new Promise((r) => setTimeout(r, 100))
        }
        return [accepted, performance.now() - t0] as const
      }
      // Warm-up: the object's producer connects on the first request.
      await (await post(type === 'json' ? JSON.stringify(traces(10, 0)) : jsonToProto(traces(10, 0), 'TracesData'))).arrayBuffer()
      const cpu0 = workerdCpuMs(dev.pgid)
      const [accepted, produced] = await pass(bodiesFrom(1))
      const cpu = workerdCpuMs(dev.pgid) - cpu0
      const total = requests * spans
      const profiled = bodiesFrom(1 + requests)
      const inspector = await Inspector.connect(dev.inspectorPort)
      let isolate: IsolateProfile
      try {
        isolate = summarize(await inspector.profile(async () => { await pass(profiled) }, 100), total / 1000)
      } finally { inspector.close() }
      isolates[type] = isolate
      const read = await readTopic(cluster, topic, { isolation: 'read_uncommitted' })
      if (read.length !== 2 * requests + 1) throw new Error(`${type}: ${read.length} records read, ${2 * requests + 1} sent`)
      const impl = `wrangler dev, one shard, ${type} bodies`
      results.push({ impl, metric: 'spans/s accepted', unit: 'spans/s', value: total / (accepted / 1000) })
      results.push({ impl, metric: 'spans/s produced', unit: 'spans/s', value: total / (produced / 1000) })
      results.push({ impl, metric: 'workerd CPU per 1,000 spans', unit: 'ms', value: cpu / (total / 1000) })
      results.push({ impl, metric: 'isolate CPU per 1,000 spans (profile, non-idle; upper bound)', unit: 'ms', value: isolate.nonIdleMs })
      results.push({ impl, metric: 'isolate JavaScript per 1,000 spans (profile)', unit: 'ms', value: isolate.jsMs })
      results.push({ impl, metric: 'isolate JavaScript per 1,000 spans: the app Worker (billed as CPU time)', unit: 'ms', value: isolate.appMs })
    } finally {
      await dev.stop()
    }
  }
  printTable(results, results[0]!.impl)
  for (const [type, p] of Object.entries(isolates)) {
    console.log(`isolate, ${type} bodies: ${p.nonIdleMs.toFixed(2)} ms per 1,000 spans (tick ${p.periodUs} µs); top frames:`)
    for (const t of p.top.slice(0, 8)) console.log(`  ${(t.share * 100).toFixed(1).padStart(5)}%  ${t.frame}`)
  }
  console.log(writeReport(report('otlp', { spans, requests, load: { start: loadAtStart, end: loadavg() }, isolates }, results)))
}
