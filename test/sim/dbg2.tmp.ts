import { World, runSeed } from './harness.js'
import { TransactionManager } from '../../src/edge/producer/transaction-manager.js'
await World.preload()
const orig = (TransactionManager.prototype as any).handleFailedBatch
;(TransactionManager.prototype as any).handleFailedBatch = function (b: any, name: any, adj: any) {
  if (b.tp.key === 'u:0') console.log('failed', `e${b.producerEpoch}s${b.baseSequence}`, name, adj, 'inflight', this.entry(b.tp).inflight.map((x: any) => `e${x.producerEpoch}s${x.baseSequence}`))
  return orig.call(this, b, name, adj)
}
const origC = (TransactionManager.prototype as any).handleCompletedBatch
;(TransactionManager.prototype as any).handleCompletedBatch = function (b: any, o: any, n: any) {
  if (b.tp.key === 'u:0') console.log('completed', `e${b.producerEpoch}s${b.baseSequence}`, o)
  return origC.call(this, b, o, n)
}
const origB = (TransactionManager.prototype as any).bumpIdempotentEpochIfRequired
;(TransactionManager.prototype as any).bumpIdempotentEpochIfRequired = function () {
  const m = new Map(this.partitionsToRewrite)
  const r = origB.call(this)
  if (r) console.log('bump', [...m], this.producerIdAndEpoch, this.entry({ key: 'u:0', topic: 'u', partition: 0 }).inflight.map((x: any) => `e${x.producerEpoch}s${x.baseSequence}`))
  return r
}
await runSeed(Number(process.argv[2]))
