// The soak's short version (the 60-minute run: `npm run soak -- --minutes 60`, docs/relay.md, Endurance):
// the same traffic with one fault of each kind from 8 s on, for three times as long as the faults
// took (about 100 s when a broker restarts in 20 s): the faults fall in the warm-up third, which a run
// this short cannot spread over the judged thirds. The same verdicts. It runs on a cluster of its
// own, since it kills the broker.
import os from 'node:os'
import path from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { hasChromium } from '../e2e/browser.js'
import { ensureCluster } from '../helpers/kafka.js'
import { formatReport, runSoak } from './soak.js'

const CLUSTER = 'soak-test'

describe('soak, short version', () => {
  beforeAll(async () => { await ensureCluster({ name: CLUSTER }) })

  // The relayed transactional streams that stopped after the first broker kill in the 53-minute run
  // (bench/results/soak-53m.json) are explained: their replacement producer's initTransactions(),
  // called while the broker was down, rejected at once with a NetworkException (it now waits up to
  // max.block.ms, as Java's does; test/bridge/txn-broker-kill.test.ts), and that run's first load.ts
  // did not call it again. With that fix this short version passed three times on 2026-12-02 (113 s
  // the last, load 3-4; every verdict PASS). On a machine at load 30-50 it needs more than its 600 s
  // (broker restarts of 60-107 s). A failing run prints every verdict above the assertions.
  it('a relay restart, a broker kill and a network stall, through the relays and direct: memory flat, no handle growth, every record read once', async () => {
    const report = await runSoak({
      seconds: 60, rate: 25, browserRate: 10, tabs: hasChromium ? 2 : 0, sampleMs: 2000,
      faultEveryS: 8, maxFaults: 3, tailRatio: 3, stallS: 6, cluster: CLUSTER, stopCluster: true,
      out: path.join(os.tmpdir(), `kafka-edge-soak-test-${process.pid}.json`),
      log: (l) => console.log(`[soak] ${l}`),
    })
    console.log(formatReport(report))
    expect(report.faultCounts).toEqual({ 'relay-restart': 1, 'broker-kill': 1, 'network-stall': 1 })
    expect(report.checks.filter((c) => !c.pass)).toEqual([])
    for (const s of report.streams) {
      expect(s.acknowledged, s.stream).toBeGreaterThan(0)
      expect([s.duplicates, s.missing, s.unexpected, s.failed], s.stream).toEqual([0, 0, 0, 0])
    }
    expect(report.streams.map((s) => s.stream)).toEqual(['direct-idem', 'direct-txn', 'steady-idem', 'steady-txn', 'restarted-idem', 'restarted-txn', ...(hasChromium ? ['browser'] : [])])
    // Once closed, the producers hold no sockets.
    expect(report.producersAfterClose.sockets).toBe(0)
  }, 600_000)
})
