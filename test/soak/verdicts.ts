// The soak's verdicts, computed from what was recorded. A run of D seconds is cut in thirds by time:
// the first is warm-up (JIT, pools, caches filling) and is not judged; the middle (B) and the last
// (C) are compared.
//   memory flat: the least-squares line through every sample of B+C rises by at most `riseMB` over
//     that span, and the highest sample of C is within `lastThirdPct` % of the highest of B. RSS is
//     judged as sampled; the heap by its floor per sample interval (what survived the collections).
//   no handle growth: the median of C exceeds the median of B by at most `handleSlack`, for open
//     file descriptors, active libuv resources and TCP sockets (medians: a fault in progress when a
//     sample is taken moves one sample, a leak moves them all).
//   exactly once: per stream, every record read once; nothing read twice; nothing read that was never
//     sent or from an aborted transaction (whose records the next transaction sent again); no send
//     failed.
export interface Sample {
  /** seconds since the traffic started */
  t: number
  proc: string
  /** the relay's process number among its restarts (0 for processes never restarted) */
  incarnation: number
  rss: number
  heapUsed: number
  heapFloor: number
  heapPeak: number
  heapTotal: number
  external: number
  arrayBuffers: number
  fds: number
  resources: number
  sockets: number
  resourceTypes: Record<string, number>
  eld: { p50: number; p99: number; max: number; mean: number }
}

export const LIMITS = { rssRiseMB: 16, rssLastThirdPct: 10, heapRiseMB: 8, heapLastThirdPct: 15, handleSlack: 3 } as const

export interface Check { name: string; pass: boolean; detail: string }

const MB = 1024 * 1024
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d

/** Slope (y per unit of x) of the least-squares line. */
export function slope(xs: readonly number[], ys: readonly number[]): number {
  const n = xs.length
  if (n < 2) return 0
  const mx = xs.reduce((a, b) => a + b, 0) / n
  const my = ys.reduce((a, b) => a + b, 0) / n
  let num = 0
  let den = 0
  for (let i = 0; i < n; i++) { num += (xs[i]! - mx) * (ys[i]! - my); den += (xs[i]! - mx) ** 2 }
  return den === 0 ? 0 : num / den
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  if (s.length === 0) return NaN
  const m = s.length >> 1
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

export function thirds(samples: readonly Sample[], durationS: number): { b: Sample[]; c: Sample[] } {
  return {
    b: samples.filter((s) => s.t >= durationS / 3 && s.t < (2 * durationS) / 3),
    c: samples.filter((s) => s.t >= (2 * durationS) / 3),
  }
}

export function memoryChecks(proc: string, samples: readonly Sample[], durationS: number): Check[] {
  const { b, c } = thirds(samples, durationS)
  if (b.length < 3 || c.length < 3) return [{ name: `${proc} memory`, pass: false, detail: `too few samples after warm-up (${b.length} + ${c.length})` }]
  const judged = [...b, ...c]
  const spanH = (judged.at(-1)!.t - judged[0]!.t) / 3600
  const out: Check[] = []
  for (const [key, riseMB, pct] of [['rss', LIMITS.rssRiseMB, LIMITS.rssLastThirdPct], ['heapFloor', LIMITS.heapRiseMB, LIMITS.heapLastThirdPct]] as const) {
    const perHour = slope(judged.map((s) => s.t / 3600), judged.map((s) => s[key] / MB))
    const rise = perHour * spanH
    const maxB = Math.max(...b.map((s) => s[key])) / MB
    const maxC = Math.max(...c.map((s) => s[key])) / MB
    const pass = rise <= riseMB && maxC <= maxB * (1 + pct / 100)
    out.push({
      name: `${proc} ${key === 'rss' ? 'RSS' : 'heap floor'} flat`, pass,
      detail: `fit ${round(perHour)} MB/h = ${round(rise)} MB over ${round(spanH * 60)} min (limit ${riseMB} MB); max last third ${round(maxC)} MB vs middle ${round(maxB)} MB (limit +${pct}%)`,
    })
  }
  return out
}

export function handleChecks(proc: string, samples: readonly Sample[], durationS: number): Check[] {
  const { b, c } = thirds(samples, durationS)
  if (b.length < 3 || c.length < 3) return [{ name: `${proc} handles`, pass: false, detail: `too few samples after warm-up (${b.length} + ${c.length})` }]
  return (['fds', 'resources', 'sockets'] as const).map((key) => {
    const mb = median(b.map((s) => s[key]))
    const mc = median(c.map((s) => s[key]))
    return {
      name: `${proc} ${key} no growth`, pass: mc - mb <= LIMITS.handleSlack,
      detail: `median middle third ${mb}, last third ${mc} (limit +${LIMITS.handleSlack}); max ${Math.max(...samples.map((s) => s[key]))}`,
    }
  })
}

export interface StreamCount {
  stream: string
  topic: string
  sent: number
  acknowledged: number
  read: number
  distinct: number
  duplicates: number
  missing: number
  /** read but never sent, or read from an aborted transaction */
  unexpected: number
  abortedTransactions: number
  failed: number
  /** offsets of one key's records that go down while their n goes up (order per partition) */
  orderViolations: number
  errors?: string[]
}

/** Count one stream's reads, given in log order per partition: each record's n, and its transaction's number. */
export function countStream(o: {
  stream: string; topic: string; sent: number; failed: readonly number[]; abortedTxns?: readonly number[]; errors?: string[]
  reads: ReadonlyArray<{ n: number; partition: number; key: string; txn?: number }>
}): StreamCount {
  const seen = new Map<number, number>()
  const bad = new Set<number>(o.failed)
  const aborted = new Set(o.abortedTxns)
  let unexpected = 0
  let orderViolations = 0
  const last = new Map<string, number>()
  for (const r of o.reads) {
    seen.set(r.n, (seen.get(r.n) ?? 0) + 1)
    if (!(r.n >= 0 && r.n < o.sent) || (r.txn !== undefined && aborted.has(r.txn))) unexpected++
    const k = `${r.partition}/${r.key}`
    if ((last.get(k) ?? -1) > r.n) orderViolations++
    last.set(k, r.n)
  }
  let missing = 0
  for (let n = 0; n < o.sent; n++) if (!bad.has(n) && !seen.has(n)) missing++
  return {
    stream: o.stream, topic: o.topic, sent: o.sent, acknowledged: o.sent - bad.size, read: o.reads.length, distinct: seen.size,
    duplicates: [...seen.values()].filter((c) => c > 1).length, missing, unexpected, abortedTransactions: aborted.size, failed: o.failed.length, orderViolations,
    ...(o.errors?.length ? { errors: o.errors } : {}),
  }
}

export function exactlyOnceCheck(s: StreamCount): Check {
  const pass = s.sent > 0 && s.duplicates === 0 && s.missing === 0 && s.unexpected === 0 && s.failed === 0 && s.orderViolations === 0
  return {
    name: `${s.stream} exactly once`, pass,
    detail: `sent ${s.sent}, acknowledged ${s.acknowledged}, read ${s.read} (${s.distinct} distinct), duplicates ${s.duplicates}, missing ${s.missing}, `
      + `unexpected ${s.unexpected}, failed ${s.failed}, order violations ${s.orderViolations}, aborted transactions ${s.abortedTransactions} (sent again)`,
  }
}
