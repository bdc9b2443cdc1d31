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

/**
 * Runs fn in a task of its own as soon as possible. Browsers clamp every setTimeout of a hidden tab
 * to at least one second (Firefox within seconds of the tab going to the background, Chromium under
 * its background throttling), so a sender woken "now" after each response would move one step per
 * second, and an analytics tab sending for the whole origin from the background would fall minutes
 * behind the tabs that track. A message posted to a MessageChannel is a task they do not throttle.
 * Elsewhere (Node, Deno, Bun, workerd, web workers) nothing throttles setTimeout(fn, 0).
 */
export const nextTask = /* @__PURE__ */ taskScheduler(globalThis)

/** nextTask for a global scope: exported so a test can give it a page's globals outside a browser. */
export function taskScheduler(g: { document?: unknown; MessageChannel?: typeof MessageChannel }): (fn: () => void) => unknown {
  if (typeof g.document !== 'object' || typeof g.MessageChannel !== 'function') return (fn) => setTimeout(fn, 0)
  const channel = new g.MessageChannel()
  const queue: Array<{ fn: (() => void) | null }> = []
  channel.port1.onmessage = () => { queue.shift()?.fn?.() }
  // Node's ports keep the process alive (only tests give it a document).
  ;(channel.port1 as { unref?: () => void }).unref?.()
  return (fn) => {
    const task = { fn }
    queue.push(task)
    channel.port2.postMessage(0)
    return task
  }
}

/** Cancels a setTimeout handle or a nextTask handle. */
export function cancelTask(handle: unknown): void {
  if (handle !== null && typeof handle === 'object' && 'fn' in handle) (handle as { fn: unknown }).fn = null
  else clearTimeout(handle as ReturnType<typeof setTimeout>)
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    if (ms <= 0) return nextTask(fn)
    const t = setTimeout(fn, ms) as unknown as { unref?: () => void }
    // A pending linger or retry timer must not keep a Node process alive on its own.
    t.unref?.()
    return t
  },
  clearTimeout: cancelTask,
  hold: () => {
    const t = setInterval(() => {}, 0x7fffffff)
    return () => clearInterval(t)
  },
}

/** Resolves after ms on the given clock. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms))
}
