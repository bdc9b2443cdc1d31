// The soak's verdicts must be able to fail: a leak, a handle per fault and a duplicate each turn one red.
import { describe, expect, it } from 'vitest'
import { countStream, exactlyOnceCheck, handleChecks, memoryChecks, slope, type Sample } from './verdicts.js'

const MB = 1024 * 1024

/** One sample every 10 s for an hour; `rss`/`fds` give the value at t seconds. */
function run(rss: (t: number) => number, fds: (t: number) => number = () => 30, heap: (t: number) => number = () => 20 * MB): Sample[] {
  return Array.from({ length: 361 }, (_, i) => {
    const t = i * 10
    return {
      t, proc: 'p', incarnation: 0, rss: rss(t), heapUsed: heap(t), heapFloor: heap(t), heapPeak: heap(t), heapTotal: 0, external: 0, arrayBuffers: 0,
      fds: fds(t), resources: fds(t) - 20, sockets: fds(t) - 25, resourceTypes: {}, eld: { p50: 10, p99: 20, max: 30, mean: 11 },
    }
  })
}
const noise = (t: number) => ((t * 7919) % 13) * 0.3 * MB // deterministic, +-2 MB

describe('soak verdicts', () => {
  it('slope is the least-squares fit', () => {
    expect(slope([0, 1, 2, 3], [1, 3, 5, 7])).toBeCloseTo(2)
    expect(slope([0, 1, 2], [4, 4, 4])).toBe(0)
  })

  it('memory: flat after a warm-up ramp passes; 1 MB a minute fails; so does a heap that keeps growing', () => {
    const warm = (t: number) => (t < 600 ? 60 + t / 60 : 70) * MB + noise(t)
    expect(memoryChecks('p', run(warm), 3600).every((c) => c.pass)).toBe(true)
    const leak = (t: number) => 70 * MB + (t / 60) * MB
    expect(memoryChecks('p', run(leak), 3600).find((c) => c.name === 'p RSS flat')!.pass).toBe(false)
    const heap = memoryChecks('p', run(warm, undefined, (t) => 20 * MB + t * 4000), 3600)
    expect(heap.find((c) => c.name === 'p heap floor flat')!.pass).toBe(false)
    expect(memoryChecks('p', run(warm).slice(0, 200), 3600)[0]!.pass).toBe(false) // too few samples after warm-up
  })

  it('handles: a spike during a fault passes; one descriptor kept per fault (every 2 min) fails', () => {
    const spike = (t: number) => 30 + (t % 120 < 10 ? 12 : 0)
    expect(handleChecks('p', run(() => 70 * MB, spike), 3600).every((c) => c.pass)).toBe(true)
    const leak = (t: number) => 30 + Math.floor(t / 120)
    expect(handleChecks('p', run(() => 70 * MB, leak), 3600).find((c) => c.name === 'p fds no growth')!.pass).toBe(false)
  })

  it('exactly once: a duplicate, a missing record, a read aborted record, a failed send each fail', () => {
    const reads = (ns: number[]) => ns.map((n) => ({ n, partition: 0, key: 'k' }))
    const base = { stream: 's', topic: 't', sent: 4, failed: [] as number[] }
    expect(exactlyOnceCheck(countStream({ ...base, reads: reads([0, 1, 2, 3]) })).pass).toBe(true)
    expect(countStream({ ...base, reads: reads([0, 1, 1, 2, 3]) }).duplicates).toBe(1)
    expect(countStream({ ...base, reads: reads([0, 1, 3]) }).missing).toBe(1)
    const fromAborted = [...reads([0, 1, 2]), { n: 3, partition: 0, key: 'k', txn: 7 }]
    expect(countStream({ ...base, abortedTxns: [7], reads: fromAborted }).unexpected).toBe(1)
    expect(countStream({ ...base, abortedTxns: [6], reads: fromAborted }).unexpected).toBe(0)
    expect(countStream({ ...base, reads: reads([0, 2, 1, 3]) }).orderViolations).toBe(1)
    const failed = countStream({ ...base, failed: [3], reads: reads([0, 1, 2]) })
    expect([failed.missing, failed.failed, exactlyOnceCheck(failed).pass]).toEqual([0, 1, false])
  })
})
