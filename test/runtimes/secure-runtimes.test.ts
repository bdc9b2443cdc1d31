// The published Node entry (dist/edge/node.js, tcp() over node:net / node:tls) under Node, Deno and
// Bun: one runtime-neutral script (produce-secure.mjs) sends records idempotently over SASL_SSL with
// SCRAM-SHA-512 and over SSL with a client certificate to a real Kafka 4.4 broker; the Java consumer
// reads every record back and the log shows one producer id with gapless sequences. Each runtime also
// refuses an untrusted CA and a host name the certificate does not list, with the typed reason.
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import path from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { ROOT } from '../e2e/wrangler.js'
import { bootstrapFor, createTopic, dumpBatches, ensureCluster, readTopic, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { sameBytes } from '../helpers/records.js'
import { bunBinary, denoBinary } from './binaries.js'
import { secureWorkload } from './workload.mjs'

const SCRIPT = path.join(ROOT, 'test', 'runtimes', 'produce-secure.mjs')
const DIST_ENTRY = path.join(ROOT, 'dist', 'edge', 'node.js')
const COUNT = 2_000
const PARTITIONS = 3

interface CaseResult {
  runtime: string
  version: string
  case: string
  ok: boolean
  ms: number
  producerId?: string | null
  acks?: [number, string][]
  error?: { name: string; message: string; reason?: string; cause?: { name: string; message: string; code?: string } }
}

interface Case {
  name: string
  topic: string
  count: number
  seed: number
  settings: Record<string, unknown>
  alias?: { host: string; to: string }
}

function newestMtime(dir: string): number {
  let newest = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name)
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs)
  }
  return newest
}

/** The script imports the built entry: build it when src/edge changed since (npm test builds first anyway). */
function ensureDist(): void {
  if (existsSync(DIST_ENTRY) && statSync(DIST_ENTRY).mtimeMs >= newestMtime(path.join(ROOT, 'src', 'edge'))) return
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(ROOT, 'tsconfig.build.json')], { stdio: 'pipe', timeout: 180_000 })
}

/** Runs produce-secure.mjs under one runtime with the given cases; one parsed result per case. */
function runScript(command: string[], cases: Case[], timeoutMs = 150_000): Promise<{ results: Map<string, CaseResult>; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const child = spawn(command[0]!, [...command.slice(1), SCRIPT], {
      cwd: ROOT,
      env: { ...process.env, PRODUCE_SECURE: JSON.stringify({ cases }), NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1', DENO_NO_PROMPT: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { err += d })
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.once('error', (e) => { clearTimeout(timer); reject(e) })
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      const results = new Map<string, CaseResult>()
      for (const line of out.split('\n').filter((l) => l.startsWith('{'))) {
        const r = JSON.parse(line) as CaseResult
        results.set(r.case, r)
      }
      if (code !== 0 || results.size !== cases.length) {
        return reject(new Error(`${command.join(' ')} produce-secure.mjs ended with ${signal ?? `exit ${code}`} after ${results.size}/${cases.length} cases:\n${out.slice(-2000)}\n${err.slice(-4000)}`))
      }
      resolve({ results, ms: Date.now() - started })
    })
  })
}

const deno = denoBinary(ROOT)
const bun = bunBinary(ROOT)
const RUNTIMES = [
  { name: 'node', command: [process.execPath], missing: undefined },
  { name: 'deno', command: 'path' in deno ? [deno.path, 'run', '-A'] : [], missing: 'missing' in deno ? deno.missing : undefined },
  { name: 'bun', command: 'path' in bun ? [bun.path] : [], missing: 'missing' in bun ? bun.missing : undefined },
]

let cluster: Cluster
let pemFiles: { ca: string; clientCert: string; clientKey: string; otherCa: string }
beforeAll(async () => {
  ensureDist()
  cluster = await ensureCluster({ tls: true, sasl: true })
  const t = cluster.tls!
  pemFiles = { ca: t.ca, clientCert: t.clientCert, clientKey: t.clientKey, otherCa: t.otherCa }
})

describe.each(RUNTIMES)('$name runs dist/edge/node.js over TLS against Kafka 4.4', ({ name, command, missing }) => {
  // A runtime that is not installed is reported as skipped with what was looked for, never passed.
  it.skipIf(missing !== undefined)(`is the version package.json pins${missing ? ` (skipped: ${missing})` : ''}`, () => {
    if (name === 'node') return
    const pinned = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies[name]
    const version = name === 'deno' ? (deno as { version: string }).version : (bun as { version: string }).version
    expect(version).toContain(pinned)
  })

  let results: Map<string, CaseResult>
  const topics = { saslSsl: '', mtls: '' }
  beforeAll(async () => {
    if (missing) return
    topics.saslSsl = uniqueTopic(`rt-${name}-sasl-ssl`)
    topics.mtls = uniqueTopic(`rt-${name}-mtls`)
    await Promise.all([createTopic(cluster, topics.saslSsl, { partitions: PARTITIONS }), createTopic(cluster, topics.mtls, { partitions: PARTITIONS })])
    const saslSslPort = Number(bootstrapFor(cluster, 'SASL_SSL').split(',')[0]!.split(':')[1])
    const cases: Case[] = [
      {
        name: 'SASL_SSL SCRAM-SHA-512', topic: topics.saslSsl, count: COUNT, seed: 11,
        settings: {
          'bootstrap.servers': bootstrapFor(cluster, 'SASL_SSL'), 'security.protocol': 'SASL_SSL', 'ssl.ca.pem': { file: pemFiles.ca },
          'sasl.mechanism': 'SCRAM-SHA-512', 'sasl.username': 'admin', 'sasl.password': 'admin-secret',
        },
      },
      {
        name: 'SSL mTLS', topic: topics.mtls, count: COUNT, seed: 12,
        settings: {
          'bootstrap.servers': bootstrapFor(cluster, 'SSL'), 'security.protocol': 'SSL', 'ssl.ca.pem': { file: pemFiles.ca },
          'ssl.certificate.pem': { file: pemFiles.clientCert }, 'ssl.key.pem': { file: pemFiles.clientKey },
        },
      },
      {
        name: 'untrusted CA', topic: topics.saslSsl, count: 1, seed: 13,
        settings: {
          'bootstrap.servers': bootstrapFor(cluster, 'SASL_SSL'), 'security.protocol': 'SASL_SSL', 'ssl.ca.pem': { file: pemFiles.otherCa },
          'sasl.mechanism': 'SCRAM-SHA-512', 'sasl.username': 'admin', 'sasl.password': 'admin-secret', 'max.block.ms': 8_000,
        },
      },
      {
        name: 'wrong host name', topic: topics.saslSsl, count: 1, seed: 14,
        alias: { host: 'kafka.wrong-name.test', to: '127.0.0.1' },
        settings: {
          'bootstrap.servers': `kafka.wrong-name.test:${saslSslPort}`, 'security.protocol': 'SASL_SSL', 'ssl.ca.pem': { file: pemFiles.ca },
          'sasl.mechanism': 'SCRAM-SHA-512', 'sasl.username': 'admin', 'sasl.password': 'admin-secret', 'max.block.ms': 8_000,
        },
      },
    ]
    const run = await runScript(command, cases)
    results = run.results
    console.log(`${name}: ${[...results.values()].map((r) => `${r.case} ${r.ok ? 'ok' : r.error?.name} in ${r.ms} ms`).join(', ')}; process ${run.ms} ms`)
  })

  /** Every acknowledged record is in the log at its offset, byte-identical; one producer id, gapless sequences. */
  async function verify(caseName: string, topic: string, seed: number) {
    const r = results.get(caseName)!
    expect(r.ok, JSON.stringify(r.error)).toBe(true)
    expect(r.runtime).toBe(name)
    const sent = secureWorkload(COUNT, seed)
    expect(r.acks).toHaveLength(COUNT)
    const read = await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected: COUNT, timeoutMs: 60_000 })
    expect(read).toHaveLength(COUNT)
    const at = new Map(read.map((x) => [`${x.partition}:${x.offset}`, x]))
    for (let i = 0; i < COUNT; i++) {
      const [partition, offset] = r.acks![i]!
      const got = at.get(`${partition}:${offset}`)
      expect(got, `record ${i} at ${partition}:${offset}`).toBeDefined()
      const want = sent[i]!
      expect(sameBytes(got!.key, want.key) && sameBytes(got!.value, want.value), `bytes of record ${i}`).toBe(true)
      expect(got!.headers.length, `headers of record ${i}`).toBe(want.headers.length)
      want.headers.forEach((h, j) => expect(got!.headers[j]!.key === h.key && sameBytes(got!.headers[j]!.value, h.value), `header ${j} of record ${i}`).toBe(true))
      if (want.timestamp !== undefined) expect(got!.timestamp).toBe(want.timestamp)
    }
    const batches = await dumpBatches(cluster, topic)
    const byPartition = new Map<number, typeof batches>()
    for (const b of batches) {
      expect(String(b.producerId)).toBe(r.producerId)
      expect(b.producerEpoch).toBe(0)
      expect(b.crcValid).toBe(true)
      byPartition.set(b.partition, [...(byPartition.get(b.partition) ?? []), b])
    }
    for (const list of byPartition.values()) {
      let next = 0
      for (const b of list) { expect(b.baseSequence).toBe(next); next = b.lastSequence + 1 }
    }
    expect(batches.reduce((n, b) => n + b.count, 0)).toBe(COUNT)
  }

  it.skipIf(missing !== undefined)(`SASL_SSL with SCRAM-SHA-512: ${COUNT} records idempotently, read back byte-identical`, async () => {
    await verify('SASL_SSL SCRAM-SHA-512', topics.saslSsl, 11)
  })

  it.skipIf(missing !== undefined)(`SSL with a client certificate (mTLS): ${COUNT} records idempotently, read back byte-identical`, async () => {
    await verify('SSL mTLS', topics.mtls, 12)
  })

  it.skipIf(missing !== undefined)('verification is on: an untrusted CA and a wrong host name fail at once with the typed reason', () => {
    for (const [caseName, reason, text] of [['untrusted CA', 'unknown CA', /ssl\.ca\.pem/], ['wrong host name', 'hostname mismatch', /kafka\.wrong-name\.test/]] as const) {
      const r = results.get(caseName)!
      expect(r.ok, caseName).toBe(false)
      expect(r.error?.name, `${caseName}: ${JSON.stringify(r.error)}`).toBe('SslAuthenticationException')
      expect(r.error?.reason, caseName).toBe(reason)
      expect(r.error?.message, caseName).toMatch(text)
      // A certificate problem is not retried until max.block.ms (8 s): it surfaces on the first handshake.
      expect(r.ms, caseName).toBeLessThan(4_000)
    }
  })
})

