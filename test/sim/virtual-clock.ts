import type { Clock } from '../../src/edge/clock.js'

interface Timer { id: number; at: number; seq: number; fn: () => void; stack?: string }

/** Lets every pending promise callback run: a real macrotask boundary drains the microtask queue. */
const DEBUG = typeof process !== 'undefined' && !!process.env.SIM_DEBUG_TIMERS

export const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/**
 * A Clock whose time moves only when the test says so. Timers due at the same instant fire in the
 * order they were created, and promise callbacks run to quiescence between timers, so a run depends
 * on nothing but its inputs and replays exactly from a seed.
 */
export class VirtualClock implements Clock {
  private time: number
  private seq = 0
  private nextId = 1
  private readonly timers = new Map<number, Timer>()
  /** Timers fired so far: a cheap measure of how much a run did. */
  fired = 0

  constructor(start = 1_700_000_000_000) { this.time = start }

  now(): number { return this.time }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++
    // Negative or NaN delays mean "as soon as possible", as with the real setTimeout.
    const delay = Number.isFinite(ms) && ms > 0 ? ms : 0
    this.timers.set(id, { id, at: this.time + delay, seq: this.seq++, fn, stack: DEBUG ? new Error().stack : undefined })
    return id
  }

  clearTimeout(handle: unknown): void {
    if (typeof handle === 'number') this.timers.delete(handle)
  }

  get pending(): number { return this.timers.size }

  /** The earliest timer (ties: creation order), or undefined when none is pending. */
  private earliest(): Timer | undefined {
    let best: Timer | undefined
    for (const t of this.timers.values()) {
      if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t
    }
    return best
  }

  /**
   * Fires timers in time order until `done()` holds, no timer is left, or virtual time would pass
   * `until`. Returns true when `done()` held.
   */
  async run(opts: { until?: number; done?: () => boolean; maxSteps?: number } = {}): Promise<boolean> {
    const until = opts.until ?? Infinity
    const maxSteps = opts.maxSteps ?? 1_000_000
    for (let step = 0; step < maxSteps; step++) {
      await settle()
      if (opts.done?.()) return true
      const t = this.earliest()
      if (!t || t.at > until) {
        if (Number.isFinite(until) && this.time < until) this.time = until
        await settle()
        return opts.done?.() ?? false
      }
      this.timers.delete(t.id)
      if (t.at > this.time) this.time = t.at
      this.fired++
      if (DEBUG && step > maxSteps - 20) console.log(`t=${this.time} delay=${t.at - this.time}`, t.stack?.split('\n').slice(2, 6).join(' | '))
      t.fn()
    }
    throw new Error(`virtual clock: no quiescence after ${maxSteps} timer firings (a timer loop?)`)
  }

  /** Advances by ms, firing everything due on the way. */
  advance(ms: number): Promise<boolean> { return this.run({ until: this.time + ms }) }
}
