#!/usr/bin/env node
// `npm start`: the local stack and a demo. Builds the WASM core and TypeScript, starts a one-node
// Kafka 4.4 (KRaft) cluster, creates the telemetry topic, sends sample telemetry through kafka-edge
// over TCP and prints what the independent Java reader sees; then starts the telemetry Worker under
// `wrangler dev` (workerd, on 127.0.0.1) against the same Kafka, POSTs sample events to it and
// prints the Java reader's view of those; then the page path (scripts/browser-demo.ts): the relay
// and a page on 127.0.0.1 whose events a Java consumer reads back live. Ctrl-C stops everything;
// --once runs the demos to their end (the page in headless Chromium) and stops everything.
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
const demos = []
let shuttingDown = false
const running = () => demos.filter((d) => d.exitCode === null)
function stop() {
  for (const d of running()) d.kill('SIGTERM')
  if (kafkaUp) { kafkaUp = false; spawnSync('node', ['scripts/kafka/kafka.mjs', 'down'], { cwd: root, stdio: 'inherit' }) }
}
const exited = (child) => new Promise((r) => { if (child.exitCode !== null) r(child.exitCode); else child.once('exit', (c) => r(c ?? 1)) })
for (const [sig, code] of [['SIGINT', 130], ['SIGTERM', 143]]) {
  process.on(sig, async () => {
    shuttingDown = true
    const left = running()
    for (const d of left) d.kill(sig)
    await Promise.all(left.map(exited))
    stop()
    process.exit(code)
  })
}

/** A demo script (tsx) as a child; resolves once `ready` was printed (or it exited), with the child. */
function demo(script, ready) {
  const child = spawn('node', ['--import', 'tsx', script, ...(once ? ['--once'] : [])], { cwd: root, stdio: ['inherit', 'pipe', 'inherit'], env })
  demos.push(child)
  child.once('exit', (code) => {
    if (code !== 0 && !shuttingDown && !once) console.error(`${script} exited (${code}); the rest stays up. Ctrl-C stops it.`)
  })
  return new Promise((resolve) => {
    let seen = ''
    child.stdout.on('data', (d) => {
      process.stdout.write(d)
      seen += d
      if (seen.includes(ready)) resolve(child)
    })
    child.once('exit', () => resolve(child))
  })
}

run('npm', ['run', 'build'])
run('node', ['scripts/kafka/kafka.mjs', 'fetch'])
kafkaUp = true
run('node', ['scripts/kafka/kafka.mjs', 'up', '--nodes', '1'])

run('node', ['--import', 'tsx', 'scripts/demo.ts'])

// Without --once the Worker demo keeps wrangler dev running, and the page demo its servers, until Ctrl-C.
const worker = await demo('scripts/worker-demo.ts', 'The Worker is up')
if (once && await exited(worker) !== 0) { stop(); process.exit(1) }
const page = await demo('scripts/browser-demo.ts', 'Ctrl-C stops')
if (once) {
  const code = await exited(page)
  stop()
  process.exit(code)
}
setInterval(() => {}, 1 << 30)
