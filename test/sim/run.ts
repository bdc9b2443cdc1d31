import { World, runSeed } from './harness.js'

/**
 * npm run test:sim -- --seeds N [--from S]      run N seeds starting at S (default 1)
 * npm run test:sim -- --seed S --verbose        replay one seed with a full trace
 */
function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1] : undefined
}

await World.preload()
const single = arg('seed')
const verbose = process.argv.includes('--verbose')
if (single !== undefined) {
  const res = await runSeed(Number(single), { verbose: true })
  console.log(res.description)
  console.log(res.ok ? `seed ${res.seed}: ok` : `seed ${res.seed}: FAILED\n  ${res.violations.join('\n  ')}`)
  process.exit(res.ok ? 0 : 1)
}
const count = Number(arg('seeds') ?? 1000)
const from = Number(arg('from') ?? 1)
const started = performance.now()
const failures: number[] = []
let acked = 0, failed = 0, records = 0, virtualMs = 0, bumps = 0, dups = 0
for (let s = from; s < from + count; s++) {
  if (process.env.SIM_TRACE) console.log(`seed ${s}...`)
  const res = await runSeed(s, { verbose })
  records += res.stats.records; acked += res.stats.acked; failed += res.stats.failed; virtualMs += res.stats.virtualMs
  bumps += res.stats.epochBumps; dups += res.stats.duplicatesAnswered
  if (!res.ok) {
    failures.push(s)
    console.log(`seed ${s} FAILED (${res.description})\n  ${res.violations.slice(0, 8).join('\n  ')}\n  replay: npm run test:sim -- --seed ${s} --verbose`)
  }
}
const secs = (performance.now() - started) / 1000
console.log(`${count} seeds from ${from}: ${count - failures.length} ok, ${failures.length} failed in ${secs.toFixed(1)} s; ${records} records (${acked} acked, ${failed} failed), ${(virtualMs / 3600_000).toFixed(1)} virtual hours, ${bumps} epoch bumps, ${dups} duplicate retries answered`)
if (failures.length > 0) console.log(`failing seeds: ${failures.slice(0, 50).join(' ')}`)
process.exit(failures.length > 0 ? 1 : 0)
