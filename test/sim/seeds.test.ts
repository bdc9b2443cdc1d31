import { beforeAll, describe, expect, it } from 'vitest'
import { World, runSeed } from './harness.js'

// 2,000 randomized runs (cluster shape, settings, workload, network and broker faults all from the
// seed). A failure names the seed; replay it with: npm run test:sim -- --seed <n> --verbose
const SEEDS = 2000
const CHUNK = 250

beforeAll(async () => { await World.preload() })

describe(`deterministic simulation: ${SEEDS} seeds`, () => {
  for (let from = 1; from <= SEEDS; from += CHUNK) {
    it(`seeds ${from}-${from + CHUNK - 1}: exactly once, in order, every send settled, honest failures`, async () => {
      const failures: string[] = []
      let acked = 0
      for (let s = from; s < from + CHUNK; s++) {
        const res = await runSeed(s)
        acked += res.stats.acked
        if (!res.ok) failures.push(`seed ${s}: ${res.violations.slice(0, 3).join('; ')} (replay: npm run test:sim -- --seed ${s} --verbose)`)
      }
      expect(failures).toEqual([])
      // The faults must not starve the workload: most records get through.
      expect(acked).toBeGreaterThan(CHUNK * 10)
    })
  }

  it('a seed replays exactly', async () => {
    const a = await runSeed(4242)
    const b = await runSeed(4242)
    expect(b.stats).toEqual(a.stats)
    expect(a.stats.timers).toBeGreaterThan(10)
  })
})
