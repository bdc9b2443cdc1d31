// npm run bench -- serializers
// Records/s serialized into the Confluent wire format (Avro and Protobuf, one 20-field record) by
// kafka-edge/schema-registry beside @kafkajs/confluent-schema-registry and @confluentinc/schemaregistry,
// all in one Node 22 process (bench/peers; the kafkajs one requires Node 22+) and in the same run. The
// child serves a 127.0.0.1 stub of the registry's REST calls, so each library registers or looks up
// schema id 1 through its own API and cache before the timed part, which makes no registry call (the
// child checks). It also compares each peer's bytes with ours for the same record.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { printTable, report, writeReport, type BenchResult } from './lib.js'
import { ensurePeers, NODE22, PEERS_DIR, ROOT } from './peers.js'

interface ChildOutput {
  results: BenchResult[]
  bytes: Record<string, string>
  errors: Record<string, string>
  versions: Record<string, string>
  calls: string[]
  minMs: number
  rounds: number
  avro: string
  proto: string
  record: Record<string, unknown>
}

/** Whether each peer's bytes equal kafka-edge's, and where they first differ. */
function compareBytes(bytes: Record<string, string>): Record<string, { equal: boolean; firstDifference?: number; ours?: string; theirs?: string }> {
  const out: ReturnType<typeof compareBytes> = {}
  for (const [key, hex] of Object.entries(bytes)) {
    const [impl, format] = [key.slice(0, key.lastIndexOf('/')), key.slice(key.lastIndexOf('/') + 1)]
    if (impl === 'kafka-edge') continue
    const ours = bytes[`kafka-edge/${format}`]
    if (ours === undefined) continue
    if (ours === hex) { out[key] = { equal: true }; continue }
    let i = 0
    while (i < ours.length && ours[i] === hex[i]) i++
    const at = i >> 1
    out[key] = { equal: false, firstDifference: at, ours: ours.slice(at * 2, at * 2 + 16), theirs: hex.slice(at * 2, at * 2 + 16) }
  }
  return out
}

export default async function serializers(): Promise<void> {
  if (!existsSync(join(ROOT, 'dist', 'edge', 'schema-registry', 'index.js'))) throw new Error('dist/ is missing: run `npm run build` first')
  ensurePeers()
  const loadBefore = loadavg()
  const r = spawnSync(NODE22, [join(PEERS_DIR, 'serializers-child.mjs')], { cwd: PEERS_DIR, encoding: 'utf8', timeout: 300_000, stdio: ['ignore', 'pipe', 'inherit'] })
  if (r.status !== 0) throw new Error(`serializers child failed (exit ${r.status})`)
  const out = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as ChildOutput
  const loadAfter = loadavg()
  const bytesEqual = compareBytes(out.bytes)
  printTable(out.results, 'kafka-edge')
  for (const [k, v] of Object.entries(bytesEqual)) console.log(`bytes ${k}: ${v.equal ? 'equal to kafka-edge' : `differ from byte ${v.firstDifference} (ours ${v.ours}..., theirs ${v.theirs}...)`}`)
  for (const [k, e] of Object.entries(out.errors)) console.log(`could not run ${k}: ${e}`)
  const file = writeReport(report('serializers', {
    record: '20 fields: 6 strings, 5 int, 3 long, 3 double, 2 boolean, 1 float (Avro; proto3 int32/int64/double/bool/float)',
    schemaId: 1, runtime: out.versions.node, peers: { '@kafkajs/confluent-schema-registry': out.versions.kafkajs, '@confluentinc/schemaregistry': out.versions.confluent },
    timing: `best of ${out.rounds} rounds of >= ${out.minMs} ms after a warm-up round, one record per call, each promise awaited`,
    registry: 'a 127.0.0.1 stub of the Confluent REST calls, hit only before the timed part',
    registryCalls: out.calls, loadavgBefore: loadBefore, loadavgAfter: loadAfter,
    bytesEqual, bytes: out.bytes, errors: out.errors, avroSchema: out.avro, protoSchema: out.proto, value: out.record,
  }, out.results))
  console.log(`load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')} -> ${loadAfter.map((l) => l.toFixed(2)).join(' ')}; wrote ${file}`)
}
