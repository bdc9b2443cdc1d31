// Durable accept under faults, at a size CI runs in a few minutes (the 100,000-event version is
// `npm run bench -- worker`, bench/worker.ts): 10,000 events from 50 clients over 4 shards, the
// wrangler dev process restarted and a broker killed while they arrive. The Java consumer (no
// dedupe) must read every event a 202 accepted exactly once, each key in order.
import { beforeAll, expect, it } from 'vitest'
import { ensureCluster, type Cluster } from '../helpers/kafka.js'
import { runWorkerLoad } from './worker-load.js'

let cluster: Cluster
beforeAll(async () => { cluster = await ensureCluster({ nodes: 3, name: 'faults' }) })

it('10,000 events, 4 shards, wrangler dev restarted and a broker killed: every accepted event read exactly once, in order per key', async () => {
  const r = await runWorkerLoad(cluster, {
    events: 10_000, clients: 50, perRequest: 20, shards: 4, partitions: 6, restartAt: 0.3, killBrokerAt: 0.6, brokerDownMs: 8000,
    log: (m) => console.log(`[worker-eo] ${m}`),
  })
  console.log(`[worker-eo] ${JSON.stringify({ ...r, duplicates: r.duplicates.length, missing: r.missing.length })}`)
  expect(r.faults.filter((f) => /restarted at|killed/.test(f))).toHaveLength(2)
  expect(r.accepted).toBe(10_000)
  expect(r.missing).toEqual([])
  expect(r.duplicates).toEqual([])
  expect(r.outOfOrderKeys).toEqual([])
  expect(r.read).toBe(10_000)
  // After the restart every shard whose producer had started before it took over the checkpoint its
  // predecessor saved; a shard whose producer had not yet started (slow on a loaded machine) had none.
  expect(r.hadProducerAtRestart).toHaveLength(r.resumed.length)
  r.resumed.forEach((s, i) => expect(s?.mode, `shard ${i}`).toMatch(r.hadProducerAtRestart[i] ? /^(resumed|relabelled)$/ : /^(none|resumed|relabelled)$/))
  expect(r.hadProducerAtRestart.some(Boolean)).toBe(true)
}, 900_000)
