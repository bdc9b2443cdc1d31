import { KafkaEdgeError } from '../../src/edge/errors.js'
import type { World } from './harness.js'
import { indexOf } from './harness.js'

/**
 * What must hold after any run, however the network and brokers behaved:
 * - every send() settled, a send(record, callback)'s callback once and after send() returned; a failure is a typed error carrying an honest `mayHaveBeenWritten`;
 * - no record is in the logs twice; a failure with mayHaveBeenWritten=false is not in the logs;
 * - an acknowledged record is in the log of the partition it was acknowledged for, at its offset;
 * - each partition's log is in send order (send indexes strictly increase with the offset).
 */
export function checkInvariants(w: World): string[] {
  const v: string[] = []
  const where = new Map<number, Array<{ topic: string; partition: number; offset: number }>>()
  for (const [topic, ps] of w.cluster.partitions) {
    for (const p of ps) {
      let prev = -1
      for (const b of p.log) {
        for (let i = 0; i < b.values.length; i++) {
          const idx = indexOf(b.values[i]!)
          if (idx < 0) { v.push(`${topic}-${p.index}@${b.baseOffset + i}: a record that was never sent: ${JSON.stringify(b.values[i]!.slice(0, 20))}`); continue }
          if (idx <= prev) v.push(`${topic}-${p.index}@${b.baseOffset + i}: record ${idx} after record ${prev}: the log is out of send order`)
          prev = Math.max(prev, idx)
          const list = where.get(idx) ?? []
          list.push({ topic, partition: p.index, offset: b.baseOffset + i })
          where.set(idx, list)
        }
      }
    }
  }
  for (const [idx, list] of where) {
    if (list.length > 1) v.push(`record ${idx} is in the log ${list.length} times: ${list.map((x) => `${x.topic}-${x.partition}@${x.offset}`).join(', ')}`)
  }
  for (const o of w.outcomes) {
    const found = where.get(o.index) ?? []
    if (found.some((x) => x.topic !== o.topic)) v.push(`record ${o.index} landed in the wrong topic`)
    if (o.callbackFault) v.push(`record ${o.index}'s send callback was ${o.callbackFault}`)
    if (o.status === 'pending') { v.push(`send() of record ${o.index} never settled`); continue }
    if (o.status === 'acked') {
      const md = o.md!
      if (found.length === 0) { v.push(`record ${o.index} was acknowledged (${md.topic}-${md.partition}@${md.offset}) but is not in any log`); continue }
      const at = found[0]!
      if (md.topic !== at.topic || md.partition !== at.partition) v.push(`record ${o.index} acknowledged for ${md.topic}-${md.partition} but is in ${at.topic}-${at.partition}`)
      else if (md.offset !== -1n && md.offset !== BigInt(at.offset)) v.push(`record ${o.index} acknowledged at offset ${md.offset} but is at offset ${at.offset}`)
      continue
    }
    const e = o.error! as Error & { mayHaveBeenWritten?: boolean }
    if (!(e instanceof KafkaEdgeError)) v.push(`record ${o.index} failed with an untyped error: ${e?.name}: ${e?.message}`)
    const mayHaveBeenWritten: unknown = (e as { mayHaveBeenWritten?: unknown }).mayHaveBeenWritten
    if (typeof mayHaveBeenWritten !== 'boolean') v.push(`record ${o.index} failed without mayHaveBeenWritten: ${e.name}: ${e.message}`)
    else if (!mayHaveBeenWritten && found.length > 0) v.push(`record ${o.index} failed with mayHaveBeenWritten=false (${e.name}: ${e.message}) but is in the log at ${found[0]!.topic}-${found[0]!.partition}@${found[0]!.offset}`)
  }
  if (w.net.stats.throttleViolations > 0) v.push(`${w.net.stats.throttleViolations} Produce request(s) were written to a broker inside the throttle time it asked for`)
  return v
}
