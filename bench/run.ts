// npm run bench -- <suite> [--keep-brokers]: runs bench/<suite>.ts, whose default export does the
// measuring, prints its table and writes bench/results/<suite>.json.
//
// The Kafka clusters a suite starts are stopped when it ends (as test/helpers/global-setup.ts does for
// test runs): the run gets an id that `kafka.mjs up --owner` records in every cluster it creates, and
// `kafka.mjs down --owner` stops those, not a cluster started by hand and merely reused. With
// --keep-brokers they stay up, warm for the next run, and the command that stops them is printed.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { KAFKA_HOME } from '../scripts/kafka/kafka.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const KAFKA_MJS = join(here, '..', 'scripts', 'kafka', 'kafka.mjs')
const CLUSTERS = join(KAFKA_HOME, 'clusters')
const NOT_SUITES = new Set(['run', 'lib', 'ts-batch-builder', 'peers'])
const suites = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && !NOT_SUITES.has(f.slice(0, -3)))
  .map((f) => f.slice(0, -3))

const name = process.argv[2]
if (!name || !/^[a-z0-9-]+$/.test(name) || !existsSync(join(here, `${name}.ts`)) || NOT_SUITES.has(name)) {
  console.error(`usage: npm run bench -- <suite> [--keep-brokers]   (suites: ${suites.join(', ')})`)
  process.exit(2)
}
const args = process.argv.slice(3)
const keep = args.includes('--keep-brokers')
// A suite's child processes inherit the id: only the run that set it stops the clusters.
const owner = process.env.KAFKA_EDGE_RUN_ID === undefined
const runId = process.env.KAFKA_EDGE_RUN_ID ??= `run-${process.pid}-${Date.now().toString(36)}`

let stopped = false
function stopClusters(): void {
  if (!owner || stopped) return
  stopped = true
  const clusters = clustersOf(runId)
  if (clusters.length === 0) return
  if (keep) {
    console.log(`--keep-brokers: left running: ${clusters.join(', ')}; stop with ${clusters.map((c) => `\`npm run kafka:down -- --name ${c}\``).join(', ')}`)
    return
  }
  const r = spawnSync(process.execPath, [KAFKA_MJS, 'down', '--owner', runId], { encoding: 'utf8', timeout: 120_000 })
  if (r.status !== 0) console.error(`kafka.mjs down --owner ${runId} failed (${r.status}): ${r.stderr}`)
  else console.log(`stopped the clusters this run started: ${clusters.join(', ')}`)
}

/** The clusters whose `owner` file names this run (kafka.mjs writes it when it creates one). */
function clustersOf(id: string): string[] {
  if (!existsSync(CLUSTERS)) return []
  return readdirSync(CLUSTERS).filter((c) => {
    try { return readFileSync(join(CLUSTERS, c, 'owner'), 'utf8').trim() === id } catch { return false }
  })
}

// A fresh clone has neither the WASM cores the children load (build/) nor the compiled package some
// suites import (dist/): build them once rather than fail inside a suite with ENOENT.
if (!existsSync(join(here, '..', 'build', 'core.wasm')) || !existsSync(join(here, '..', 'dist', 'edge', 'index.js'))) {
  console.log('build/ or dist/ is missing: running `npm run build` first')
  const b = spawnSync('npm', ['run', 'build'], { stdio: 'inherit', cwd: join(here, '..') })
  if (b.status !== 0) process.exit(b.status ?? 1)
}

process.once('exit', stopClusters)
for (const [sig, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) {
  process.once(sig, () => { stopClusters(); process.exit(code) })
}
const suite = (await import(pathToFileURL(join(here, `${name}.ts`)).href)) as { default: (args: string[]) => Promise<void> }
await suite.default(args.filter((a) => a !== '--keep-brokers'))
