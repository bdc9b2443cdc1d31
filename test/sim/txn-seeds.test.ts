import { beforeAll, describe, expect, it } from 'vitest'
import { World } from './harness.js'
import { runTxnSeed } from './txn-harness.js'

// Randomized transactional runs (cluster shape, transaction version, settings, the application's
// transactions, a second instance fencing the first, network, broker and coordinator faults, all
// from the seed). A failure names the seed; replay it with:
//   npm run test:sim -- --txn --seed <n> --verbose
const SEEDS = 3000
const CHUNK = 500

beforeAll(async () => { await World.preload() })

describe(`deterministic transactional simulation: ${SEEDS} seeds`, () => {
  for (let from = 1; from <= SEEDS; from += CHUNK) {
    it(`seeds ${from}-${from + CHUNK - 1}: read_committed sees exactly the committed transactions, once, in order; nothing hangs; failures are honest`, async () => {
      const failures: string[] = []
      let committed = 0
      let txns = 0
      for (let s = from; s < from + CHUNK; s++) {
        const res = await runTxnSeed(s)
        committed += res.stats.txns.committed
        txns += Object.values(res.stats.txns).reduce((a, b) => a + b, 0)
        if (!res.ok) failures.push(`seed ${s}: ${res.violations.slice(0, 3).join('; ')} (replay: npm run test:sim -- --txn --seed ${s} --verbose)`)
      }
      expect(failures).toEqual([])
      // The faults must not starve the workload: most transactions the application meant to commit commit.
      expect(committed).toBeGreaterThan(txns / 2)
    })
  }

  it('a seed replays exactly', async () => {
    // Seed 4432: transaction v2, faults for 5 s, a second instance that fences the first, offsets in transactions.
    const a = await runTxnSeed(4432)
    const b = await runTxnSeed(4432)
    expect(b.stats).toEqual(a.stats)
    expect(b.description).toBe(a.description)
    expect(a.stats.incarnations).toBeGreaterThan(1)
    expect(a.stats.offsetCommits).toBeGreaterThan(0)
    expect(a.stats.txns.committed).toBeGreaterThan(0)
    expect(a.stats.timers).toBeGreaterThan(100)
  })
})
