import { World, runSeed } from './harness.js'
import { runTxnSeed } from './txn-harness.js'
import { runResumeSeed } from './resume-harness.js'

/**
 * npm run test:sim -- --seeds N [--from S]            run N seeds starting at S (default 1)
 * npm run test:sim -- --seed S --verbose              replay one seed with a full trace
 * npm run test:sim -- --txn --seeds N [--from S]      the same with the transactional producer
 * npm run test:sim -- --txn --seed S --verbose
 * npm run test:sim -- --resume --seeds N [--from S]   chains of resumable producers killed mid-flight
 */
function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1] : undefined
}

await World.preload()
const single = arg('seed')
const verbose = process.argv.includes('--verbose')
const txn = process.argv.includes('--txn')
const resume = process.argv.includes('--resume')
const replay = txn ? '--txn ' : resume ? '--resume ' : ''
const runOne = (s: number, o: { verbose?: boolean }) => (txn ? runTxnSeed(s, o) : resume ? runResumeSeed(s, o) : runSeed(s, o))
if (single !== undefined) {
  const res = await runOne(Number(single), { verbose: true })
  console.log(res.description)
  console.log(res.ok ? `seed ${res.seed}: ok` : `seed ${res.seed}: FAILED\n  ${res.violations.join('\n  ')}`)
  process.exit(res.ok ? 0 : 1)
}
const count = Number(arg('seeds') ?? 1000)
const from = Number(arg('from') ?? 1)
const started = performance.now()
const failures: number[] = []
let acked = 0, failed = 0, records = 0, virtualMs = 0
const idem = { bumps: 0, dups: 0 }
const txns = { committed: 0, aborted: 0, abandoned: 0, unknown: 0, open: 0, fences: 0, incarnations: 0, tv2: 0 }
for (let s = from; s < from + count; s++) {
  if (process.env.SIM_TRACE) console.log(`seed ${s}...`)
  const res = await runOne(s, { verbose })
  records += res.stats.records; acked += res.stats.acked; failed += res.stats.failed; virtualMs += res.stats.virtualMs
  if ('txns' in res.stats) {
    for (const [k, v] of Object.entries(res.stats.txns)) txns[k as keyof typeof res.stats.txns] += v
    txns.fences += res.stats.fences; txns.incarnations += res.stats.incarnations; txns.tv2 += res.stats.tv2 ? 1 : 0
  } else {
    idem.bumps += res.stats.epochBumps; idem.dups += res.stats.duplicatesAnswered
  }
  if (!res.ok) {
    failures.push(s)
    console.log(`seed ${s} FAILED (${res.description})\n  ${res.violations.slice(0, 8).join('\n  ')}\n  replay: npm run test:sim -- ${replay}--seed ${s} --verbose`)
  }
}
const secs = (performance.now() - started) / 1000
const summary = txn
  ? `${txns.committed} transactions committed, ${txns.aborted} aborted, ${txns.abandoned} abandoned, ${txns.unknown} of unknown outcome, ${txns.open} left open; ${txns.incarnations} producers, ${txns.fences} coordinator fences, ${txns.tv2} seeds on transaction v2`
  : `${idem.bumps} epoch bumps, ${idem.dups} duplicate retries answered`
console.log(`${count} ${txn ? 'transactional ' : ''}seeds from ${from}: ${count - failures.length} ok, ${failures.length} failed in ${secs.toFixed(1)} s; ${records} records (${acked} acked, ${failed} failed), ${(virtualMs / 3600_000).toFixed(1)} virtual hours, ${summary}`)
if (failures.length > 0) console.log(`failing seeds: ${failures.slice(0, 50).join(' ')}`)
process.exit(failures.length > 0 ? 1 : 0)
