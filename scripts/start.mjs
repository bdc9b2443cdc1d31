#!/usr/bin/env node
// `npm start`: the local stack and a demo. Builds the WASM core and TypeScript, starts a one-node
// Kafka 4.4 (KRaft) cluster, creates the telemetry topic, sends sample telemetry through kafka-edge
// over TCP and prints what the independent Java reader sees; then starts the telemetry Worker under
// `wrangler dev` (workerd, on 127.0.0.1) against the same Kafka, POSTs sample events to it and
// prints the Java reader's view of those. Ctrl-C (or --once) stops everything.
import { spawn, spawnSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const once = process.argv.includes('--once')
// wrangler must not reach out: no metrics, no cf fetch, no update check.
const env = { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_HIDE_BANNER: 'true' }
const run = (cmd, args, opts = {}) => {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env, ...opts })
  if (r.status !== 0) { console.error(`${cmd} ${args.join(' ')} failed (${r.status})`); stop(); process.exit(r.status ?? 1) }
}

let kafkaUp = false
let worker = null
let shuttingDown = false
function stop() {
  if (worker && worker.exitCode === null) worker.kill('SIGTERM')
  if (kafkaUp) { kafkaUp = false; spawnSync('node', ['scripts/kafka/kafka.mjs', 'down'], { cwd: root, stdio: 'inherit' }) }
}
const waitWorker = () => new Promise((r) => { if (!worker || worker.exitCode !== null) r(worker?.exitCode ?? 0); else worker.once('exit', (c) => r(c ?? 1)) })
for (const [sig, code] of [['SIGINT', 130], ['SIGTERM', 143]]) {
  process.on(sig, async () => {
    shuttingDown = true
    if (worker && worker.exitCode === null) { worker.kill(sig); await waitWorker() }
    stop()
    process.exit(code)
  })
}

run('npm', ['run', 'build'])
run('node', ['scripts/kafka/kafka.mjs', 'fetch'])
kafkaUp = true
run('node', ['scripts/kafka/kafka.mjs', 'up', '--nodes', '1'])

run('node', ['--import', 'tsx', 'scripts/demo.ts'])

// The Worker demo keeps wrangler dev running (without --once) until it is told to stop.
worker = spawn('node', ['--import', 'tsx', 'scripts/worker-demo.ts', ...(once ? ['--once'] : [])], { cwd: root, stdio: 'inherit', env })
if (once) {
  const code = await waitWorker()
  stop()
  process.exit(code)
}
worker.once('exit', (code) => {
  if (code !== 0 && !shuttingDown) { console.error(`the Worker demo exited (${code}); Kafka stays up. Ctrl-C stops it.`) }
})
setInterval(() => {}, 1 << 30)
