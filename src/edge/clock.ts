/**
 * Time is injected so the producer's state machines can run on a virtual clock in simulation.
 * Nothing under producer/ or client/ calls Date.now or setTimeout directly.
 */
export interface Clock {
  now(): number
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
  /**
   * Keeps the process alive until the returned release is called (Node: a referenced timer). The
   * producer holds it while a send is unsettled, as the Java producer's pending futures keep a
   * caller's main thread waiting; without it a script awaiting a send to a down broker would exit
   * silently (code 13) because every other timer is unreferenced. Absent on virtual clocks.
   */
  hold?(): () => void
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms) as unknown as { unref?: () => void }
    // A pending linger or retry timer must not keep a Node process alive on its own.
    t.unref?.()
    return t
  },
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
  hold: () => {
    const t = setInterval(() => {}, 0x7fffffff)
    return () => clearInterval(t)
  },
}

/** Resolves after ms on the given clock. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms))
}
