/** Prometheus text exposition, hand-rolled: a handful of counters, gauges and one histogram. */
type Labels = Record<string, string>

/** Metric names the relay's parts count under. */
export const BRIDGE_METRICS = {
  connections: 'kafka_edge_bridge_connections_total',
  rejects: 'kafka_edge_bridge_rejects_total',
  upstreamErrors: 'kafka_edge_bridge_upstream_errors_total',
  latency: 'kafka_edge_bridge_request_duration_seconds',
} as const

const key = (name: string, labels?: Labels): string => {
  if (!labels) return name
  const parts = Object.keys(labels).sort().map((k) => `${k}="${labels[k]!.replace(/["\\\n]/g, '_')}"`)
  return parts.length ? `${name}{${parts.join(',')}}` : name
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

interface Histogram { buckets: number[]; sum: number; count: number }

export class Metrics {
  private readonly counters = new Map<string, number>()
  private readonly help = new Map<string, [string, 'counter' | 'gauge' | 'histogram']>()
  private readonly histograms = new Map<string, Histogram>()
  private readonly gauges = new Map<string, () => number>()

  constructor() {
    this.describe('kafka_edge_bridge_connections_total', 'WebSocket connections accepted (upgraded)', 'counter')
    this.describe('kafka_edge_bridge_connections_active', 'WebSocket connections open now', 'gauge')
    this.describe('kafka_edge_bridge_beacons_active', 'Page-hide beacons being served now (each holds a broker connection)', 'gauge')
    this.describe('kafka_edge_bridge_frames_total', 'Kafka frames relayed, by direction (in = client to broker)', 'counter')
    this.describe('kafka_edge_bridge_bytes_total', 'Frame bytes relayed, size prefix included, by direction', 'counter')
    this.describe('kafka_edge_bridge_rejects_total', 'Upgrades, connections and frames refused, by reason', 'counter')
    this.describe('kafka_edge_bridge_upstream_errors_total', 'Broker connection failures, by kind', 'counter')
    this.describe('kafka_edge_bridge_upstream_reauthentications_total', 'KIP-368 re-authentications of broker connections in place, by result', 'counter')
    this.describe('kafka_edge_bridge_request_duration_seconds', 'Request forwarded to response relayed, by API', 'histogram')
    this.describe('kafka_edge_bridge_faults_total', 'Faults injected (tests only: faults.enabled and KAFKA_EDGE_BRIDGE_FAULTS=1)', 'counter')
    this.describe('kafka_edge_bridge_learned_brokers', 'Broker endpoints learned from responses', 'gauge')
    this.describe('kafka_edge_bridge_process_resident_memory_bytes', 'Relay RSS', 'gauge')
    this.describe('kafka_edge_bridge_producer_ids_bound', 'Producer ids bound to a principal in this instance', 'gauge')
    this.describe('kafka_edge_bridge_producer_id_tickets_total', 'Producer-id tickets issued, accepted (presented and valid) and refused', 'counter')
    this.describe('kafka_edge_bridge_parse_budget_waiting', 'Connections not read because the relay-wide parse budget is spent', 'gauge')
    this.describe('kafka_edge_bridge_parse_budget_waits_total', 'Times a connection waited for a share of the parse budget', 'counter')
    this.describe('kafka_edge_bridge_parse_budget_bytes', 'Bytes of partly received messages held under the parse budget', 'gauge')
  }

  private describe(name: string, text: string, type: 'counter' | 'gauge' | 'histogram'): void { this.help.set(name, [text, type]) }

  /** A counter with fixed labels, its key built once: for per-frame counting. */
  counter(name: string, labels?: Labels): (by?: number) => void {
    const k = key(name, labels)
    return (by = 1) => { this.counters.set(k, (this.counters.get(k) ?? 0) + by) }
  }

  inc(name: string, labels?: Labels, by = 1): void {
    const k = key(name, labels)
    this.counters.set(k, (this.counters.get(k) ?? 0) + by)
  }

  get(name: string, labels?: Labels): number { return this.counters.get(key(name, labels)) ?? 0 }

  gauge(name: string, read: () => number): void { this.gauges.set(name, read) }

  observe(name: string, labels: Labels, seconds: number): void {
    this.observeKey(key(name, labels), seconds)
  }

  /** A histogram with fixed labels, its key built once. */
  histogram(name: string, labels: Labels): (seconds: number) => void {
    const k = key(name, labels)
    return (seconds) => this.observeKey(k, seconds)
  }

  private observeKey(k: string, seconds: number): void {
    let h = this.histograms.get(k)
    if (!h) { h = { buckets: new Array<number>(LATENCY_BUCKETS.length).fill(0), sum: 0, count: 0 }; this.histograms.set(k, h) }
    for (let i = 0; i < LATENCY_BUCKETS.length; i++) if (seconds <= LATENCY_BUCKETS[i]!) h.buckets[i]!++
    h.sum += seconds
    h.count++
  }

  render(): string {
    const out: string[] = []
    const byName = new Map<string, string[]>()
    const add = (name: string, line: string) => { if (!byName.has(name)) byName.set(name, []); byName.get(name)!.push(line) }
    for (const [k, v] of this.counters) add(k.split('{')[0]!, `${k} ${v}`)
    for (const [name, read] of this.gauges) add(name, `${name} ${read()}`)
    for (const [k, h] of this.histograms) {
      const brace = k.indexOf('{')
      const name = brace < 0 ? k : k.slice(0, brace)
      const labels = brace < 0 ? '' : k.slice(brace + 1, -1)
      const withLe = (le: string) => `${name}_bucket{${labels ? `${labels},` : ''}le="${le}"}`
      LATENCY_BUCKETS.forEach((b, i) => add(name, `${withLe(String(b))} ${h.buckets[i]}`))
      add(name, `${withLe('+Inf')} ${h.count}`)
      add(name, `${name}_sum${brace < 0 ? '' : k.slice(brace)} ${h.sum}`)
      add(name, `${name}_count${brace < 0 ? '' : k.slice(brace)} ${h.count}`)
    }
    for (const [name, [text, type]] of this.help) {
      out.push(`# HELP ${name} ${text}`, `# TYPE ${name} ${type}`)
      out.push(...(byName.get(name) ?? (type === 'counter' ? [`${name} 0`] : [])))
    }
    return out.join('\n') + '\n'
  }
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent'
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }

/** One JSON object per line on stdout (or an injected sink): what log shippers parse without a grammar. */
export class Logger {
  constructor(private readonly level: LogLevel, private readonly sink: (line: string) => void = (l) => process.stdout.write(l + '\n')) {}
  log(level: Exclude<LogLevel, 'silent'>, event: string, fields: Record<string, unknown> = {}): void {
    if (RANK[level] < RANK[this.level]) return
    this.sink(JSON.stringify({ time: new Date().toISOString(), level, event, ...fields }))
  }
  debug(e: string, f?: Record<string, unknown>) { this.log('debug', e, f) }
  info(e: string, f?: Record<string, unknown>) { this.log('info', e, f) }
  warn(e: string, f?: Record<string, unknown>) { this.log('warn', e, f) }
  error(e: string, f?: Record<string, unknown>) { this.log('error', e, f) }
}

/** Token bucket: `take` returns how long to wait (ms) before the taken amount is paid for. */
export class Bucket {
  private tokens: number
  private last = performance.now()
  constructor(private readonly rate: number, private readonly burst = rate) { this.tokens = burst }
  /** Refilled to its burst: holding it is the same as holding none. */
  full(): boolean {
    return this.tokens + ((performance.now() - this.last) * this.rate) / 1000 >= this.burst
  }

  take(n: number): number {
    if (this.rate <= 0) return 0
    const now = performance.now()
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.rate) / 1000)
    this.last = now
    this.tokens -= n
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.rate
  }
}
