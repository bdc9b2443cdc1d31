// A V8 CPU profile of the Worker's isolate through `wrangler dev`'s inspector (Chrome DevTools
// protocol over WebSocket). Under wrangler dev the Worker and its Durable Objects are one workerd
// service, so they run in one isolate and one profile covers both: the accept and the produce.
import WebSocket from 'ws'

interface CallFrame { functionName: string; url: string; lineNumber: number; columnNumber: number }
interface ProfileNode { id: number; callFrame: CallFrame; children?: number[] }
export interface CpuProfile { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] }

export interface IsolateProfile {
  /** Samples times the sampler's period, ms. */
  sampledMs: number
  /** Profiler.start to Profiler.stop, ms. */
  wallMs: number
  /** The sampler's tick (median of the one-tick deltas between samples, see summarize), µs. */
  periodUs: number
  /** The median delta between samples, µs: the period before 2026-12-04's fix, for comparison. */
  medianDeltaUs: number
  /** Sampled time less `(idle)`: the isolate running JS, native code it called, GC, or V8's own work. */
  nonIdleMs: number
  /** nonIdleMs less `(program)` and `(garbage collector)`: samples with JavaScript on the stack. */
  jsMs: number
  programMs: number
  gcMs: number
  samples: number
  /** Frames by self time (ms), the pseudo-frames `(idle)`, `(program)`, `(garbage collector)` left out. */
  top: Array<{ frame: string; selfMs: number; share: number }>
  /** SQLite's `exec` self time (ms) by the first named JavaScript function above it (transactionSync skipped). */
  sqlBy: Array<{ caller: string; ms: number }>
  /**
   * Samples with the app's request handling on the stack (APP_FRAMES): the Worker's side of a
   * request, which Cloudflare bills as CPU time. The rest of jsMs is the Durable Object's (billed by
   * duration), its timers and socket callbacks included.
   */
  appMs: number
}

/**
 * The frames of the app Worker's request handling: hono's dispatch, the route handlers
 * src/edge/worker/app.ts names, and the async functions they await, whose code after an await runs
 * with no caller on the stack (reading the body; the OTLP JSON transcoding; the shard's answer).
 */
const APP_FRAMES = new Set(['#dispatch', 'telemetryEvents', 'toShard', 'readBodyLimited', 'telemetryOtlp', 'readOtlpBody', 'readCapped', 'discardBody'])

export class Inspector {
  private next = 1
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string } }
      const w = m.id === undefined ? undefined : this.waiting.get(m.id)
      if (!w) return
      this.waiting.delete(m.id!)
      if (m.error) w.reject(new Error(`inspector: ${m.error.message}`))
      else w.resolve(m.result)
    })
  }

  /** The first target wrangler dev lists (its one proxied "workers" target). */
  static async connect(port: number): Promise<Inspector> {
    const targets = await (await fetch(`http://127.0.0.1:${port}/json`)).json() as Array<{ webSocketDebuggerUrl: string }>
    if (!targets[0]) throw new Error(`no inspector target on port ${port}`)
    const ws = new WebSocket(targets[0].webSocketDebuggerUrl)
    await new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('error', reject) })
    return new Inspector(ws)
  }

  send<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.next++
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject })
      this.ws.send(JSON.stringify({ id, method, params }))
    })
  }

  /** Profiles `work` at `intervalUs` sampling. */
  async profile(work: () => Promise<void>, intervalUs = 100): Promise<CpuProfile> {
    await this.send('Profiler.enable')
    await this.send('Profiler.setSamplingInterval', { interval: intervalUs })
    await this.send('Profiler.start')
    try { await work() } catch (e) { await this.send('Profiler.stop').catch(() => {}); throw e }
    return (await this.send<{ profile: CpuProfile }>('Profiler.stop')).profile
  }

  close(): void { this.ws.close() }
}

const PSEUDO = new Set(['(idle)', '(program)', '(garbage collector)', '(root)'])

/**
 * Self time per frame. V8's sampler records a sample only while a thread holds the isolate: when
 * workerd releases it to wait for I/O no samples come, and the next sample's time delta spans the
 * wait. So a sample counts for one tick of the sampler, not for the delta after it. The tick is
 * not the requested interval (signals come late on a loaded machine), and not the median delta
 * either: deltas are whole multiples of the tick (about 175, 350, 525 µs on a 2-core machine), a
 * sample after a tick that found the isolate free has a longer one, and a Worker whose work comes
 * in short bursts has more of those than of one-tick deltas (the median then rose to 200 to 300 µs
 * while kafkajs's stayed at the tick). The tick is the median of the deltas under 1.5 times the
 * 10th percentile: the one-tick deltas. The sampler ticks on wall time, so a sample taken while the thread waits inside a native call that
 * holds the isolate (a SQLite write, storage.sync()) counts as busy: the figures are upper bounds of
 * the isolate's CPU.
 */
export function summarize(p: CpuProfile, per: number, topN = 15): IsolateProfile {
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const deltas = p.timeDeltas.slice(1).sort((a, b) => a - b)
  const oneTick = deltas.filter((d) => d < 1.5 * (deltas[Math.floor(deltas.length / 10)] ?? 0))
  const period = oneTick[Math.floor(oneTick.length / 2)] ?? 0
  const medianDeltaUs = deltas[Math.floor(deltas.length / 2)] ?? 0
  const self = new Map<number, number>()
  for (const id of p.samples) self.set(id, (self.get(id) ?? 0) + period)
  const byName = (name: string) => [...self].filter(([id]) => byId.get(id)!.callFrame.functionName === name).reduce((s, [, v]) => s + v, 0)
  const sampled = [...self.values()].reduce((a, b) => a + b, 0)
  const idle = byName('(idle)')
  const program = byName('(program)')
  const gc = byName('(garbage collector)')
  const frames = new Map<string, number>()
  for (const [id, us] of self) {
    const f = byId.get(id)!.callFrame
    if (PSEUDO.has(f.functionName)) continue
    const file = f.url.replace(/^.*\/(src|node_modules|worker)\//, '$1/').replace(/\?.*$/, '')
    const name = `${f.functionName || '(anonymous)'} ${file ? `${file}:${f.lineNumber + 1}` : '(native)'}`
    frames.set(name, (frames.get(name) ?? 0) + us)
  }
  const parent = new Map<number, number>()
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const sql = new Map<string, number>()
  for (const [id, us] of self) {
    const f = byId.get(id)!.callFrame
    if (f.functionName !== 'exec' || f.url) continue
    let at = parent.get(id)
    // The object's own exec (counting rows written) wraps SQLite's: look past it too.
    while (at !== undefined && ['', 'transactionSync', 'exec'].includes(byId.get(at)!.callFrame.functionName)) at = parent.get(at)
    const caller = at === undefined ? '(none)' : byId.get(at)!.callFrame.functionName
    sql.set(caller, (sql.get(caller) ?? 0) + us)
  }
  let app = 0
  for (const [id, us] of self) {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      if (APP_FRAMES.has(byId.get(at)!.callFrame.functionName)) { app += us; break }
    }
  }
  const nonIdle = sampled - idle
  const ms = (us: number) => us / 1000 / per
  return {
    sampledMs: ms(sampled), wallMs: ms(p.endTime - p.startTime), periodUs: period, medianDeltaUs,
    nonIdleMs: ms(nonIdle), jsMs: ms(nonIdle - program - gc), programMs: ms(program), gcMs: ms(gc), samples: p.samples.length,
    top: [...frames].sort((a, b) => b[1] - a[1]).slice(0, topN).map(([frame, us]) => ({ frame, selfMs: ms(us), share: nonIdle > 0 ? us / nonIdle : 0 })),
    sqlBy: [...sql].sort((a, b) => b[1] - a[1]).map(([caller, us]) => ({ caller, ms: ms(us) })),
    appMs: ms(app),
  }
}
