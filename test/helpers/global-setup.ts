// Kafka clusters are started lazily by the suites that need them (test/helpers/kafka.ts); the
// teardown here stops whatever they started, so a run never leaves a broker behind.
//
// Each run gets an id (KAFKA_EDGE_RUN_ID, inherited by the test workers); `kafka.mjs up --owner ID`
// records it in the clusters the run creates and teardown runs `kafka.mjs down --owner ID`. That stops
// every cluster this run started, but not one a developer started by hand (`npm run kafka:up`) and the
// run merely reused, nor a concurrent run's clusters in the same tree. `npm run kafka:down -- --all`
// stops everything. KAFKA_EDGE_KEEP=1 keeps this run's clusters up for debugging.
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const KAFKA_MJS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../scripts/kafka/kafka.mjs')

export default async function setup(): Promise<() => Promise<void>> {
  const runId = process.env.KAFKA_EDGE_RUN_ID ?? `run-${process.pid}-${Date.now().toString(36)}`
  process.env.KAFKA_EDGE_RUN_ID = runId
  let done = false
  const stop = () => {
    if (done) return
    done = true
    if (process.env.KAFKA_EDGE_KEEP === '1') return
    const r = spawnSync(process.execPath, [KAFKA_MJS, 'down', '--owner', runId], { encoding: 'utf8', timeout: 120_000 })
    if (r.status !== 0) console.error(`kafka.mjs down --owner ${runId} failed (${r.status}): ${r.stderr}`)
  }
  // last resort if the run dies without calling the teardown (an uncaught error, Ctrl-C, a CI timeout).
  // A run killed with SIGKILL leaves its clusters behind; the next run that uses them stops them
  // when it ends (kafka.mjs stops a run-created cluster once no live run uses it).
  process.once('exit', stop)
  for (const [sig, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) {
    process.once(sig, () => { stop(); process.exit(code) })
  }
  return async () => {
    stop()
  }
}
