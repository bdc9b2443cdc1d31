// Preloaded (node --import) into each process the soak measures: the relay and the producers. Every
// SOAK_PROBE_MS it sends the parent, over the IPC channel, what the process holds: RSS and heap, the
// open file descriptors, the active libuv resources by type, and the event-loop delay since the
// last sample. It takes no part in the process's work: its timers and the channel are unref'd, so
// the process exits as it would without it; and when the soak itself dies (its channel closes) the
// process goes with it instead of serving on, orphaned.
import { readdirSync } from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'

const every = Number(process.env.SOAK_PROBE_MS ?? 0)
if (process.send && every > 0) {
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  // heapUsed is a sawtooth between collections; its floor over an interval is what survives them.
  let heapFloor = Infinity
  let heapPeak = 0
  const watchHeap = () => {
    const h = process.memoryUsage().heapUsed
    if (h < heapFloor) heapFloor = h
    if (h > heapPeak) heapPeak = h
  }
  setInterval(watchHeap, Math.max(100, Math.floor(every / 20))).unref()
  const ms = (ns) => Math.round(ns / 1e4) / 100
  setInterval(() => {
    watchHeap()
    const m = process.memoryUsage()
    const types = {}
    for (const t of process.getActiveResourcesInfo()) types[t] = (types[t] ?? 0) + 1
    let fds = -1
    try { fds = readdirSync('/proc/self/fd').length } catch { /* not Linux */ }
    process.send({
      soakSample: {
        at: Date.now(), rss: m.rss, heapUsed: m.heapUsed, heapFloor, heapPeak, heapTotal: m.heapTotal,
        external: m.external, arrayBuffers: m.arrayBuffers, fds,
        resources: Object.values(types).reduce((a, b) => a + b, 0), sockets: types.TCPSocketWrap ?? 0, resourceTypes: types,
        eld: { p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), max: ms(delay.max), mean: ms(delay.mean) },
      },
    }, undefined, undefined, () => {})
    delay.reset()
    heapFloor = Infinity
    heapPeak = 0
  }, every).unref()
  process.channel?.unref()
  process.once('disconnect', () => process.exit(0))
}
