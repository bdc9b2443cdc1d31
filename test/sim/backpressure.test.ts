import { beforeAll, describe, expect, it } from 'vitest'
import { NO_NET_FAULTS, World } from './harness.js'

// buffer.memory on one JS thread: send() cannot block its caller as Java's does, so sends that wait
// for buffer space keep copies under a budget of their own, and memory stays bounded however fast
// an application calls send() without awaiting.

beforeAll(async () => { await World.preload() })

describe('buffer.memory backpressure', () => {
  it('a flood of sends against a broker that stopped answering holds at most two buffer.memory budgets, and every send settles with a typed error', async () => {
    const bufferMemory = 20_000
    const w = new World(3, {
      model: { brokers: 1, topics: { t: 1 } },
      producer: { 'buffer.memory': bufferMemory, 'batch.size': 1000, 'linger.ms': 0, 'max.block.ms': 2000, 'request.timeout.ms': 1000, 'delivery.timeout.ms': 5000 },
    })
    w.send('t')
    expect(await w.settle()).toBe(true)
    // Every answer from now on is lost: batches stay in flight or queued, and the buffer fills.
    w.net.faults = { ...NO_NET_FAULTS, dropResponse: 1 }
    w.net.faultsOn = true
    const flood = Array.from({ length: 3000 }, () => w.send('t', { pad: 80 }))
    await w.clock.run({ until: w.clock.now() + 1 })
    const refusedAtOnce = flood.filter((o) => o.status === 'failed')
    expect(refusedAtOnce.length).toBeGreaterThan(0)
    for (const o of refusedAtOnce) {
      expect(o.error!.name).toBe('BufferExhaustedException')
      expect(o.error!.message).toMatch(/await your sends/)
      expect((o.error as { mayHaveBeenWritten?: boolean }).mayHaveBeenWritten).toBe(false)
    }
    // Taken in: what fits the accumulator's budget plus the waiting budget (each record is ~100 bytes).
    const takenIn = flood.length - refusedAtOnce.length
    expect(takenIn * 100).toBeLessThanOrEqual(2 * bufferMemory + 2000)
    expect(takenIn * 100).toBeGreaterThan(bufferMemory)
    // The rest settle by max.block.ms (still waiting) or delivery.timeout.ms (queued or in flight).
    expect(await w.settle(20_000)).toBe(true)
    for (const o of flood) expect(['failed', 'acked']).toContain(o.status)
    w.net.faultsOn = false
    const after = w.send('t')
    expect(await w.settle()).toBe(true)
    expect(after.status).toBe('acked')
    expect(w.violations()).toEqual([])
  })

  it('thousands of sends waiting for buffer space go into the log in send order, each once', async () => {
    const bufferMemory = 100_000
    const w = new World(4, {
      model: { brokers: 1, topics: { t: 1 } },
      producer: { 'buffer.memory': bufferMemory, 'batch.size': 4000, 'linger.ms': 0, 'max.block.ms': 60_000, 'delivery.timeout.ms': 120_000 },
    })
    w.send('t')
    expect(await w.settle()).toBe(true)
    // Small records: a few thousand fill the buffer and as many again wait, more than the 1,024 the
    // waiting queue takes from its head before it compacts.
    const flood = Array.from({ length: 14_000 }, () => w.send('t'))
    await w.clock.run({ until: w.clock.now() + 1 })
    expect(flood.filter((o) => o.status === 'failed')).toEqual([])
    expect(await w.settle()).toBe(true)
    expect(w.producer.metrics()['bufferpool-wait-ratio']).toBeGreaterThan(0)
    expect(flood.every((o) => o.status === 'acked')).toBe(true)
    const offsets = flood.map((o) => o.md!.offset)
    expect(offsets).toEqual([...offsets].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)))
    expect(w.violations()).toEqual([])
  })
})
