import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { StickyPartitioner, partitionForKey } from '../../src/edge/producer/partitioner.js'
import { rng } from '../helpers/records.js'

describe('sticky keyless partitioning (KIP-480/794)', () => {
  it('sticks to one partition until batch.size bytes went there and its batch filled, then moves on', () => {
    const p = new StickyPartitioner(1000, false, rng(1))
    const all = [0, 1, 2, 3]
    const first = p.partition('t', 4, all, () => 0)
    for (let i = 0; i < 9; i++) {
      expect(p.partition('t', 4, all, () => 0)).toBe(first)
      p.onAppend('t', 100, false, 4, all, () => 0)
    }
    // 900 bytes: not yet. The 10th append reaches batch.size with a full batch: switch.
    p.onAppend('t', 100, true, 4, all, () => 0)
    expect(p.partition('t', 4, all, () => 0)).not.toBe(first)
  })

  it('switches at twice batch.size even if no batch reported full', () => {
    const p = new StickyPartitioner(1000, false, rng(2))
    const all = [0, 1, 2]
    const first = p.partition('t', 3, all, () => 0)
    p.onAppend('t', 1999, false, 3, all, () => 0)
    expect(p.partition('t', 3, all, () => 0)).toBe(first)
    p.onAppend('t', 1, false, 3, all, () => 0)
    expect(p.partition('t', 3, all, () => 0)).not.toBe(first)
  })

  it('picks only among partitions with a leader', () => {
    const p = new StickyPartitioner(10, false, rng(3))
    for (let i = 0; i < 50; i++) {
      expect([1, 3]).toContain(p.partition('t', 4, [1, 3], () => 0))
      p.onAppend('t', 10, true, 4, [1, 3], () => 0)
    }
  })

  it('adaptive: a partition with a long queue gets picked far less often', () => {
    const p = new StickyPartitioner(10, true, rng(4))
    const queues = [0, 0, 20, 0]
    const counts = [0, 0, 0, 0]
    for (let i = 0; i < 4000; i++) {
      const chosen = p.partition('t', 4, [0, 1, 2, 3], (q) => queues[q]!)
      counts[chosen]!++
      p.onAppend('t', 10, true, 4, [0, 1, 2, 3], (q) => queues[q]!)
    }
    // Weights are (max + 1 - queue): 21, 21, 1, 21.
    expect(counts[2]!).toBeLessThan(counts[0]! / 5)
    expect(counts[0]!).toBeGreaterThan(800)
  })
})

describe('keyed partitioning', () => {
  it('puts a string key where its UTF-8 bytes go (send() hashes strings without encoding them first)', () => {
    const enc = new TextEncoder()
    const key = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 100 }), fc.string({ unit: 'grapheme', maxLength: 20 }),
      fc.constantFrom('', '\ud800', 'k\udc00', 'é'.repeat(100), 'x'.repeat(1000)))
    fc.assert(fc.property(key, fc.integer({ min: 1, max: 1000 }), (k, n) => {
      expect(partitionForKey(k, n)).toBe(partitionForKey(enc.encode(k), n))
    }), { numRuns: 2000 })
  })
})
