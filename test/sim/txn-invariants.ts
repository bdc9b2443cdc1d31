import { KafkaEdgeError } from '../../src/edge/errors.js'
import { indexOf } from './harness.js'
import type { TxnMark } from './model-broker.js'
import type { TxnWorld } from './txn-harness.js'

/** One copy of a record in a partition log, with the fate of its transaction. */
interface Copy { tp: string; offset: number; fate: TxnMark['fate']; serial: number }

/**
 * What must hold after a transactional run, however the network, brokers and coordinator behaved:
 * - every send() and every transactional call settled; failures are typed and honest about
 *   `mayHaveBeenWritten`; an acknowledged record is where its metadata says;
 * - no record is in the logs twice; each partition holds each producer's records in send order;
 *   every data batch is transactional and none is left open (no hanging transaction), so the
 *   read_committed view is exactly the committed batches;
 * - a transaction's records share one fate and one coordinator transaction, and a coordinator
 *   transaction holds one application transaction: the producer never had two open at once;
 * - offsets sent with sendOffsetsToTransaction() are part of the transaction: same fate as its records;
 * - commitTransaction() resolved: every record of the transaction was acknowledged and is committed;
 *   aborted, or failed without a fatal error: none of it is committed; a fatal error during the
 *   commit leaves the outcome unknown, but still all-or-nothing;
 * - a producer dies only of being fenced, and only when something fenced it (another instance of
 *   the application alive alongside it, or the coordinator timing a transaction out);
 * - the producer never produced to a partition outside its transaction, and the model stayed consistent.
 */
export function checkTxnInvariants(w: TxnWorld): string[] {
  const v: string[] = [...w.appViolations, ...w.cluster.coordinator.anomalies]
  if (w.cluster.coordinator.outsideTransaction > 0) v.push(`${w.cluster.coordinator.outsideTransaction} transactional write(s) (Produce or TxnOffsetCommit) for a partition that had not joined the transaction`)
  if (w.net.stats.throttleViolations > 0) v.push(`${w.net.stats.throttleViolations} Produce request(s) were written inside the throttle time the broker asked for`)

  const where = new Map<number, Copy[]>()
  for (const [topic, ps] of w.cluster.partitions) {
    for (const p of ps) {
      const tp = `${topic}-${p.index}`
      const lastByProducer = new Map<number, number>()
      for (const b of p.log) {
        if (b.control) continue
        if (!b.txn) v.push(`${tp}@${b.baseOffset}: a non-transactional batch from producer id ${b.producerId}`)
        if (b.txn?.fate === 'open') v.push(`${tp}@${b.baseOffset}: a hanging transaction: the batch was never closed by a marker, so read_committed consumers stop here for good`)
        for (let i = 0; i < b.values.length; i++) {
          const idx = indexOf(b.values[i]!)
          const o = w.outcomes[idx]
          if (!o) { v.push(`${tp}@${b.baseOffset + i}: a record that was never sent`); continue }
          const prev = lastByProducer.get(o.incarnation) ?? -1
          if (idx <= prev) v.push(`${tp}@${b.baseOffset + i}: record ${idx} after record ${prev} of the same producer: out of send order`)
          lastByProducer.set(o.incarnation, Math.max(prev, idx))
          const copies = where.get(idx) ?? []
          copies.push({ tp, offset: b.baseOffset + i, fate: b.txn?.fate ?? 'committed', serial: b.txn?.serial ?? -1 })
          where.set(idx, copies)
          if (o.topic !== topic) v.push(`record ${idx} landed in topic ${topic}, sent to ${o.topic}`)
        }
      }
    }
  }
  const at = (cs: Copy[]) => cs.map((c) => `${c.tp}@${c.offset} (${c.fate})`).join(', ')
  for (const [idx, copies] of where) if (copies.length > 1) v.push(`record ${idx} is in the logs ${copies.length} times: ${at(copies)}`)

  for (const o of w.outcomes) {
    const found = where.get(o.index) ?? []
    if (o.status === 'pending') { v.push(`send() of record ${o.index} never settled`); continue }
    if (o.status === 'acked') {
      const md = o.md!
      const c = found[0]
      if (!c) v.push(`record ${o.index} was acknowledged (${md.topic}-${md.partition}@${md.offset}) but is not in any log`)
      else if (`${md.topic}-${md.partition}` !== c.tp) v.push(`record ${o.index} acknowledged for ${md.topic}-${md.partition} but is in ${c.tp}`)
      else if (md.offset !== -1n && md.offset !== BigInt(c.offset)) v.push(`record ${o.index} acknowledged at offset ${md.offset} but is at offset ${c.offset}`)
      continue
    }
    const e = o.error!
    const written: unknown = (e as { mayHaveBeenWritten?: unknown }).mayHaveBeenWritten
    if (!(e instanceof KafkaEdgeError)) v.push(`record ${o.index} failed with an untyped error: ${e?.name}: ${e?.message}`)
    if (typeof written !== 'boolean') v.push(`record ${o.index} failed without mayHaveBeenWritten: ${e.name}: ${e.message}`)
    else if (!written && found.length > 0) v.push(`record ${o.index} failed with mayHaveBeenWritten=false (${e.name}: ${e.message}) but is in the log at ${at(found)}`)
  }

  const offsetsOf = new Map<number, Copy[]>()
  for (const c of w.cluster.coordinator.offsetCommits) {
    const t = w.txns[Number(c.offset) - 1]
    if (!t || !t.offsets.includes(Number(c.tp.slice(c.tp.lastIndexOf(':') + 1)))) { v.push(`offset ${c.offset} for ${c.group} ${c.tp} was never sent in a transaction`); continue }
    offsetsOf.set(t.id, [...offsetsOf.get(t.id) ?? [], { tp: `${c.group}/${c.tp}`, offset: Number(c.offset), fate: c.committed ? 'committed' : 'aborted', serial: c.serial }])
  }

  const appTxnsBySerial = new Map<number, Set<number>>()
  for (const t of w.txns) {
    // Offsets sent in a transaction are part of it: one fate with its records.
    const offsets = offsetsOf.get(t.id) ?? []
    if (t.result === 'committed' && t.offsets.length > 0 && offsets.length === 0) v.push(`transaction ${t.id}: commitTransaction() resolved but the offsets it sent were never committed`)
    const copies = [...t.records.flatMap((o) => where.get(o.index) ?? []), ...offsets]
    const fates = new Set(copies.map((c) => c.fate))
    const serials = new Set(copies.map((c) => c.serial))
    for (const s of serials) appTxnsBySerial.set(s, (appTxnsBySerial.get(s) ?? new Set()).add(t.id))
    const name = `transaction ${t.id} (producer ${t.incarnation}, ${t.intent} -> ${t.result})`
    if (fates.size > 1) v.push(`${name}: its records do not share one fate: ${at(copies)}`)
    if (serials.size > 1) v.push(`${name}: its records are in ${serials.size} coordinator transactions (${[...serials].join(', ')})`)
    const committed = copies.filter((c) => c.fate === 'committed')
    switch (t.result) {
      case 'committed':
        for (const o of t.records) {
          if (o.status !== 'acked') v.push(`${name}: commitTransaction() resolved but send() of record ${o.index} ${o.status === 'failed' ? `failed (${o.error!.name}: ${o.error!.message})` : 'is pending'}`)
          if (!(where.get(o.index) ?? []).some((c) => c.fate === 'committed')) v.push(`${name}: commitTransaction() resolved but record ${o.index} is not committed`)
        }
        break
      case 'aborted': case 'abandoned':
        if (committed.length > 0) v.push(`${name}: records visible to read_committed although ${t.commitError ? `commitTransaction() failed with ${t.commitError.name}: ${t.commitError.message}` : t.result === 'aborted' ? 'the application aborted' : 'commitTransaction() was never called'}: ${at(committed)}`)
        break
      case 'unknown':
        break
      case 'open':
        v.push(`${name}: never finished`)
    }
  }
  for (const [serial, ids] of appTxnsBySerial) if (ids.size > 1) v.push(`coordinator transaction ${serial} holds records of application transactions ${[...ids].join(', ')}: two transactions were open at once`)

  const timeouts = w.cluster.coordinator.events.filter((e) => e.what === 'fence-timeout')
  for (const d of w.deaths) {
    const name = `producer ${d.incarnation} (${d.producerId}/${d.epoch})`
    if (d.error.name !== 'ProducerFencedException') { v.push(`${name} died of a fatal error other than fencing: ${d.error.name}: ${d.error.message}`); continue }
    // Whichever instance initializes last wins, so any instance alive alongside this one may have fenced it.
    const rival = w.startedAt.some((s, i) => i !== d.incarnation && s <= d.at && (w.endedAt[i] ?? Infinity) >= w.startedAt[d.incarnation]!)
    if (!rival && !timeouts.some((e) => e.at <= d.at)) v.push(`${name} was fenced though no other instance initialized and no transaction timed out: ${d.error.message}`)
  }
  return v
}

/** What a read_committed consumer of a partition reads, as send indexes (run after every transaction ended). */
export function readCommitted(w: TxnWorld, topic: string, partition: number): number[] {
  return w.cluster.partition(topic, partition).log.filter((b) => b.txn?.fate === 'committed').flatMap((b) => b.values.map(indexOf))
}
