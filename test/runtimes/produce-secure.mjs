// Sends a generated workload (workload.mjs) with the built Node entry (dist/edge/node.js) and its
// tcp() transport, over whatever security the case asks for, and prints one JSON line per case.
// Runtime-neutral on purpose: only node:fs, node:process and the package itself, so the same file
// runs under `node`, `deno run -A` and `bun` and shows that the published entry works there as is.
//
//   PRODUCE_SECURE='{"cases":[...]}' deno run -A test/runtimes/produce-secure.mjs
//
// A case: { name, topic, count, seed, settings, alias? } where settings are producer settings and a
// value { "file": path } is replaced by that file's text (PEM files: the runtime reads them, as an app
// would). alias { host, to } dials `to` whenever a broker address names `host` (TLS still verifies
// `host`), for checking that hostname verification is really on.
import fs from 'node:fs'
import process from 'node:process'
import { createProducer, tcp } from '../../dist/edge/node.js'
import { secureWorkload } from './workload.mjs'

function runtime() {
  if (globalThis.Deno) return { name: 'deno', version: globalThis.Deno.version.deno }
  if (globalThis.Bun) return { name: 'bun', version: globalThis.Bun.version }
  return { name: 'node', version: process.versions.node }
}

function resolveFiles(settings) {
  const out = {}
  for (const [k, v] of Object.entries(settings)) out[k] = v && typeof v === 'object' && typeof v.file === 'string' ? fs.readFileSync(v.file, 'utf8') : v
  return out
}

const describeError = (e) => ({
  name: e?.name ?? 'Error',
  message: String(e?.message ?? e),
  ...(e?.reason !== undefined && { reason: e.reason }),
  ...(e?.cause && { cause: { name: e.cause.name, message: String(e.cause.message ?? e.cause), code: e.cause.code } }),
})

async function runCase(c) {
  const started = Date.now()
  let producer
  try {
    const alias = c.alias
    producer = createProducer({
      transport: tcp(alias ? { resolve: (a) => (a.host === alias.host ? { host: alias.to, port: a.port } : a) } : {}),
      'client.id': `produce-secure-${runtime().name}`,
      'enable.idempotence': true,
      acks: 'all',
      'linger.ms': 5,
      'max.block.ms': 20_000,
      'delivery.timeout.ms': 60_000,
      ...resolveFiles(c.settings),
    })
    const records = secureWorkload(c.count, c.seed)
    const acks = await Promise.all(records.map((r) => producer.send({ topic: c.topic, ...r })))
    const metrics = producer.metrics()
    const producerId = producer.state.producerId
    await producer.close()
    return {
      case: c.name, ok: true, ms: Date.now() - started,
      producerId: producerId === null ? null : String(producerId),
      acks: acks.map((a) => [a.partition, String(a.offset)]),
      requests: metrics['request-total'],
    }
  } catch (e) {
    try { await producer?.close({ timeoutMs: 0 }) } catch { /* closing after a failure */ }
    return { case: c.name, ok: false, ms: Date.now() - started, error: describeError(e) }
  }
}

const { cases } = JSON.parse(process.env.PRODUCE_SECURE ?? '{"cases":[]}')
const rt = runtime()
for (const c of cases) console.log(JSON.stringify({ runtime: rt.name, version: rt.version, ...(await runCase(c)) }))
// Bun and Deno keep a process alive while a socket handle lingers; the work is done, so leave.
process.exit(0)
