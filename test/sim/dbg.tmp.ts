import { World, runSeed } from './harness.js'
await World.preload()
const origSend = (World.prototype as any).violations
;(World.prototype as any).violations = function () {
  const log = this.cluster.produceLog
  const rows = log.flatMap((r: any) => r.partitions.filter((p: any) => p.topic === process.argv[3] && p.partition === Number(process.argv[4])).map((p: any) => `n${r.node} e${p.epoch} s${p.baseSequence} c${p.count} -> ${p.errorCode}`))
  console.log(rows.slice(0, 40).join('\n'))
  const tm = this.producer.txn
  const e = tm.partitions.get(process.argv[3] + ':' + process.argv[4]); console.log('entry', e && { pe: e.producerIdAndEpoch, next: e.nextSequence, lastAcked: e.lastAckedSequence, lastAckedOffset: e.lastAckedOffset, inflight: e.inflight.map((b: any) => `e${b.producerEpoch}s${b.baseSequence} reset${b.sequenceHasBeenReset}`) }, 'tm', tm.producerIdAndEpoch)
  return origSend.call(this)
}
await runSeed(Number(process.argv[2]))
