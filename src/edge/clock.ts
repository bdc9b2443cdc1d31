/**
 * Time is injected so the producer's state machines can run on a virtual clock in simulation.
 * Nothing under producer/ or client/ calls Date.now or setTimeout directly.
 */
export interface Clock {
  now(): number
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
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
}

/** Resolves after ms on the given clock. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms))
}
