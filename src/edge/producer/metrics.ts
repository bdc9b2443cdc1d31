import type { Clock } from '../clock.js'

const WINDOW_MS = 30_000
const BUCKETS = 30

/** A windowed stat (Java's SampledStat): avg, max and rate over the last 30 seconds. */
class Sampled {
  private readonly sums = new Float64Array(BUCKETS)
  private readonly counts = new Float64Array(BUCKETS)
  private readonly maxes = new Float64Array(BUCKETS).fill(-Infinity)
  private readonly stamps = new Float64Array(BUCKETS).fill(-Infinity)

  constructor(private readonly clock: Clock) {}

  record(value: number): void {
    const now = this.clock.now()
    const i = Math.floor(now / (WINDOW_MS / BUCKETS)) % BUCKETS
    const start = Math.floor(now / (WINDOW_MS / BUCKETS)) * (WINDOW_MS / BUCKETS)
    if (this.stamps[i] !== start) { this.stamps[i] = start; this.sums[i] = 0; this.counts[i] = 0; this.maxes[i] = -Infinity }
    this.sums[i]! += value
    this.counts[i]! += 1
    if (value > this.maxes[i]!) this.maxes[i] = value
  }

  private live(): number[] {
    const now = this.clock.now()
    const out: number[] = []
    for (let i = 0; i < BUCKETS; i++) if (now - this.stamps[i]! < WINDOW_MS) out.push(i)
    return out
  }

  avg(): number {
    let s = 0, c = 0
    for (const i of this.live()) { s += this.sums[i]!; c += this.counts[i]! }
    return c === 0 ? 0 : s / c
  }

  max(): number {
    let m = -Infinity
    for (const i of this.live()) m = Math.max(m, this.maxes[i]!)
    return m === -Infinity ? 0 : m
  }

  /** Sum of values per second over the window. */
  rate(): number {
    let s = 0
    for (const i of this.live()) s += this.sums[i]!
    return s / (WINDOW_MS / 1000)
  }
}

/** Producer metrics under the Java client's names (producer-metrics group). */
export class ProducerMetrics {
  readonly batchSize: Sampled
  readonly compressionRate: Sampled
  readonly recordsPerRequest: Sampled
  readonly recordRetry: Sampled
  readonly recordError: Sampled
  readonly recordSend: Sampled
  readonly requestLatency: Sampled
  readonly throttleTime: Sampled
  readonly recordQueueTime: Sampled
  epochBumps = 0
  totals = { recordsSent: 0, recordErrors: 0, recordRetries: 0, requests: 0 }

  constructor(clock: Clock) {
    this.batchSize = new Sampled(clock)
    this.compressionRate = new Sampled(clock)
    this.recordsPerRequest = new Sampled(clock)
    this.recordRetry = new Sampled(clock)
    this.recordError = new Sampled(clock)
    this.recordSend = new Sampled(clock)
    this.requestLatency = new Sampled(clock)
    this.throttleTime = new Sampled(clock)
    this.recordQueueTime = new Sampled(clock)
  }

  snapshot(extra: { bufferAvailable: number; bufferTotal: number; bufferWaitMs: number; uptimeMs: number; inFlight: number }): Record<string, number> {
    return {
      'batch-size-avg': this.batchSize.avg(),
      'batch-size-max': this.batchSize.max(),
      'compression-rate-avg': this.compressionRate.avg(),
      'records-per-request-avg': this.recordsPerRequest.avg(),
      'record-send-rate': this.recordSend.rate(),
      'record-send-total': this.totals.recordsSent,
      'record-retry-rate': this.recordRetry.rate(),
      'record-retry-total': this.totals.recordRetries,
      'record-error-rate': this.recordError.rate(),
      'record-error-total': this.totals.recordErrors,
      'record-queue-time-avg': this.recordQueueTime.avg(),
      'request-latency-avg': this.requestLatency.avg(),
      'request-latency-max': this.requestLatency.max(),
      'request-total': this.totals.requests,
      'produce-throttle-time-avg': this.throttleTime.avg(),
      'produce-throttle-time-max': this.throttleTime.max(),
      'requests-in-flight': extra.inFlight,
      'buffer-available-bytes': extra.bufferAvailable,
      'buffer-total-bytes': extra.bufferTotal,
      'bufferpool-wait-ratio': extra.uptimeMs > 0 ? Math.min(1, extra.bufferWaitMs / extra.uptimeMs) : 0,
      'producer-epoch-bumps-total': this.epochBumps,
    }
  }
}
