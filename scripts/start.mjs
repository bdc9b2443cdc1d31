#!/usr/bin/env node
// `npm start`: the local stack and a demo. Builds the WASM core and TypeScript, starts a one-node
// Kafka 4.4 (KRaft) cluster, creates the telemetry topic, sends sample telemetry through kafka-edge
// over TCP, and prints what the independent Java reader sees. Ctrl-C (or --once) stops everything.
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const once = process.argv.includes('--once')
const run = (cmd, args, opts = {}) => {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts })
  if (r.status !== 0) { console.error(`${cmd} ${args.join(' ')} failed (${r.status})`); process.exit(r.status ?? 1) }
}

run('npm', ['run', 'build'])
run('node', ['scripts/kafka/kafka.mjs', 'fetch'])
run('node', ['scripts/kafka/kafka.mjs', 'up', '--nodes', '1'])
const stop = () => spawnSync('node', ['scripts/kafka/kafka.mjs', 'down'], { cwd: root, stdio: 'inherit' })
process.on('SIGINT', () => { stop(); process.exit(130) })

run('node', ['--import', 'tsx', 'scripts/demo.ts'])
if (once) { stop(); process.exit(0) }
console.log('\nKafka is up (see .kafka/cluster.json). Press Ctrl-C to stop it.')
setInterval(() => {}, 1 << 30)
