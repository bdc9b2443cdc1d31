import { World, runSeed } from './harness.js'
import { ModelCluster } from './model-broker.js'
const seed = Number(process.argv[2]); const topic = process.argv[3]; const part = Number(process.argv[4])
const P = ModelCluster.prototype as any
const orig = P.producePartition
P.producePartition = function (node: number, version: number, t: string, index: number, records: any, ...rest: any[]) {
  const seen = rest[2]
  const before = seen.partitions.length
  const ans = orig.call(this, node, version, t, index, records, ...rest)
  if (t === topic && index === part) {
    const o = seen.partitions[before]
    console.log(`t=${this.now()} node=${node} ${t}-${index} ep=${o?.epoch} seq=${o?.baseSequence} n=${o?.count} -> err=${ans.errorCode} off=${ans.baseOffset}`)
  }
  return ans
}
await World.preload()
const res = await runSeed(seed, { verbose: true })
console.log(res.violations.join('\n'))
