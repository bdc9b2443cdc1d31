// The real OpenTelemetry Collector as the independent reader of the Worker's OTLP records: the
// contrib kafkareceiver into the contrib fileexporter, built by scripts/otelcol/build.mjs from the Go
// module proxy (cached). Its file output is the pdata JSON of every record it decoded.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createTopic, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { ROOT } from './wrangler.js'

/**
 * The Collector binary's path, or why there is none. Under CI it is built when needed (.ci/run builds
 * it before the tests); elsewhere only a cached build is used, since the first build takes minutes:
 * `node scripts/otelcol/build.mjs`.
 */
export function collectorBinary(): { bin: string } | { missing: string } {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' })
  } catch {
    return { missing: 'go is not installed (.ci/run installs it from the Go module proxy)' }
  }
  const args = [path.join(ROOT, 'scripts/otelcol/build.mjs'), ...process.env.CI ? [] : ['--cached']]
  try {
    const out = execFileSync('node', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 1_800_000 })
    return { bin: out.trim().split('\n').pop()! }
  } catch (e) {
    if ((e as { status?: number }).status === 3) return { missing: 'the Collector is not built yet: run node scripts/otelcol/build.mjs (minutes, once)' }
    throw e
  }
}

/** The pdata tool (scripts/otelcol/pdata: xhash keys, pdata's protobuf decoding), built when needed; null when Go is not installed. */
export function pdataBinary(): string | null {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' })
  } catch {
    return null
  }
  return execFileSync('node', [path.join(ROOT, 'scripts/otelcol/build.mjs'), 'pdata'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 1_200_000 }).trim().split('\n').pop()!
}

/** Record values decoded by pdata's protobuf unmarshaler (the kafkareceiver's otlp_proto), as pdata JSON. */
export function pdataDecode(bin: string, signal: Signal, values: Uint8Array[]): Array<Record<string, unknown>> {
  if (values.length === 0) return []
  const input = values.map((v) => Buffer.from(v).toString('base64')).join('\n') + '\n'
  return execFileSync(bin, ['decode', signal], { input, encoding: 'utf8', maxBuffer: 256 << 20 }).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
}

export type Signal = 'traces' | 'logs' | 'metrics'

/** A topic per signal, named from `prefix` (otlp_spans, otlp_logs, otlp_metrics, as the exporter's defaults), 3 partitions each. */
export async function createOtlpTopics(cluster: Cluster, prefix = 'otlp'): Promise<Record<Signal, string>> {
  const topics = { traces: uniqueTopic(`${prefix}_spans`), logs: uniqueTopic(`${prefix}_logs`), metrics: uniqueTopic(`${prefix}_metrics`) }
  for (const t of Object.values(topics)) await createTopic(cluster, t, { partitions: 3 })
  return topics
}

export interface Collector {
  /** Every JSON line the file exporter wrote for a signal so far, parsed. */
  read(signal: Signal): Array<Record<string, unknown>>
  log(): string
  stop(): Promise<void>
}

export interface CollectorOptions {
  /** Bootstrap servers, comma-separated. */
  brokers: string
  topics: Record<Signal, string>
  encoding?: 'otlp_proto' | 'otlp_json'
  /** Record headers the receiver adds as resource attributes (kafka.header.<name>). */
  headers?: string[]
}

export async function startCollector(bin: string, o: CollectorOptions): Promise<Collector> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kafka-edge-otelcol-'))
  const file = (s: Signal) => path.join(dir, `${s}.jsonl`)
  const signals: Signal[] = ['traces', 'logs', 'metrics']
  const encoding = o.encoding ?? 'otlp_proto'
  const config = {
    receivers: {
      kafka: {
        brokers: o.brokers.split(','),
        group_id: `kafka-edge-test-${process.pid}-${Date.now()}`,
        initial_offset: 'earliest',
        ...Object.fromEntries(signals.map((s) => [s, { topics: [o.topics[s]], encoding }])),
        ...(o.headers ? { header_extraction: { extract_headers: true, headers: o.headers } } : {}),
      },
    },
    exporters: Object.fromEntries(signals.map((s) => [`file/${s}`, { path: file(s), format: 'json', flush_interval: '100ms' }])),
    service: {
      telemetry: { metrics: { level: 'none' }, logs: { level: 'info' } },
      pipelines: Object.fromEntries(signals.map((s) => [s, { receivers: ['kafka'], exporters: [`file/${s}`] }])),
    },
  }
  // JSON is YAML: the Collector's file provider reads it as is.
  writeFileSync(path.join(dir, 'config.yaml'), JSON.stringify(config, null, 2))
  const child: ChildProcess = spawn(bin, ['--config', `file:${path.join(dir, 'config.yaml')}`], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout!.on('data', (d) => { out += d })
  child.stderr!.on('data', (d) => { out += d })
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  const deadline = Date.now() + 60_000
  while (!/Everything is ready/.test(out)) {
    if (child.exitCode !== null) throw new Error(`the Collector exited:\n${out}`)
    if (Date.now() > deadline) { child.kill('SIGKILL'); throw new Error(`the Collector did not start within 60 s:\n${out}`) }
    await new Promise((r) => setTimeout(r, 200))
  }
  return {
    // Complete lines only: the exporter may be writing the last one.
    read: (s) => (existsSync(file(s)) ? readFileSync(file(s), 'utf8').split('\n').slice(0, -1).filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) : []),
    log: () => out,
    stop: async () => {
      child.kill('SIGTERM')
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))])
      if (child.exitCode === null) child.kill('SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** The items of OTLP/JSON data, each as canonical JSON with its resource and scope: equal multisets mean equal data. */
export function items(signal: Signal, data: Record<string, unknown>): string[] {
  const [outer, inner, leaf] = signal === 'traces' ? ['resourceSpans', 'scopeSpans', 'spans'] : signal === 'logs' ? ['resourceLogs', 'scopeLogs', 'logRecords'] : ['resourceMetrics', 'scopeMetrics', 'metrics']
  const out: string[] = []
  for (const r of (data[outer] as Array<Record<string, unknown>> | undefined) ?? []) {
    for (const s of (r[inner!] as Array<Record<string, unknown>> | undefined) ?? []) {
      for (const item of (s[leaf!] as unknown[] | undefined) ?? []) {
        out.push(JSON.stringify(canonical({ resource: r.resource, resourceSchema: r.schemaUrl, scope: s.scope, scopeSchema: s.schemaUrl, item })))
      }
    }
  }
  return out
}

/** Defaults dropped, keys sorted, integers as strings (pdata writes int64 as strings, the senders either way). */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) { const a = v.map(canonical); return a.length === 0 ? undefined : a }
  if (v !== null && typeof v === 'object') {
    const o: Record<string, unknown> = {}
    for (const k of Object.keys(v).sort()) {
      const c = canonical((v as Record<string, unknown>)[k])
      if (c !== undefined) o[k] = c
    }
    return Object.keys(o).length === 0 ? undefined : o
  }
  if (v === '' || v === 0 || v === '0' || v === false || v === null) return undefined
  if (typeof v === 'number' && Number.isInteger(v)) return String(v)
  return v
}
