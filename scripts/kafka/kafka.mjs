#!/usr/bin/env node
// kafka-edge test harness: fetch Apache Kafka jars, start/stop local KRaft clusters.
//
// Plain Node ESM, no dependencies. Needs Java 17+, Maven (for `fetch` only) and Node 20+.
//
//   node scripts/kafka/kafka.mjs fetch
//   node scripts/kafka/kafka.mjs up [--nodes 1|3] [--name NAME] [--sasl] [--tls] [--reauth-ms N] [--base-port P] [--tv 1|2] [--json]
//        [--broker-props k=v,k=v]   (extra server.properties, e.g. producer.id.expiration.ms=5000)
//   node scripts/kafka/kafka.mjs tls                          (create .kafka/tls certificates if missing; JSON paths)
//   node scripts/kafka/kafka.mjs up ... [--owner RUN_ID]    (records which test run created the cluster)
//   node scripts/kafka/kafka.mjs down [--name NAME | --all | --owner RUN_ID]
//   node scripts/kafka/kafka.mjs status [--name NAME]
//   node scripts/kafka/kafka.mjs kill|stop|cont|restart <name> <nodeId>
//   node scripts/kafka/kafka.mjs probe <host:port>           (ApiVersions + Metadata, JSON)
//   node scripts/kafka/kafka.mjs dump-batches <name> <topic> [--node ID]   (JSON lines)
//   node scripts/kafka/kafka.mjs tool Reader|Admin|Produce|Follow <args...> (Java helpers, see their headers)
//
// Layout: .kafka/libs (jars), .kafka/msk-iam-libs (aws-msk-iam-auth jars for the AWS_MSK_IAM test, also
// fetched by `fetch`), .kafka/clusters/<name>/node-<id>/{server.properties,log4j2.properties,
// data/,logs/server.log,stdout.log,pid}, .kafka/clusters/<name>/cluster.json (+ .kafka/cluster.json for
// the `default` cluster), .kafka/tls (test CA and certificates, shared by every cluster of this KAFKA_HOME).
import { spawn, spawnSync, execFile } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import tls from 'node:tls'
import { fileURLToPath } from 'node:url'

const SCRIPT_DIR = path.dirname(fileURLToPath(import.meta.url))
export const ROOT = path.resolve(SCRIPT_DIR, '../..')
export const KAFKA_HOME = process.env.KAFKA_EDGE_HOME ? path.resolve(process.env.KAFKA_EDGE_HOME) : path.join(ROOT, '.kafka')
export const LIBS = path.join(KAFKA_HOME, 'libs')
export const CLUSTERS = path.join(KAFKA_HOME, 'clusters')
const POM = path.join(SCRIPT_DIR, 'pom.xml')
const STAMP = path.join(LIBS, '.stamp')
const HOST = '127.0.0.1'
const DEFAULT_BASE_PORT = 39092
const PORT_BLOCK = 100 // one cluster owns [base, base+50): plaintext +0.., sasl +10.., controller +20.., ssl +30.., sasl_ssl +40..
export const USERS = [
  { user: 'admin', password: 'admin-secret' },
  { user: 'relay', password: 'relay-secret' },
]
const SCRAM_MECHS = ['SCRAM-SHA-256', 'SCRAM-SHA-512']
// OAUTHBEARER only on SASL_SSL: bearer tokens are credentials in the clear, and SASL_PLAINTEXT keeps
// the mechanism list it always had.
const SASL_SSL_MECHS = ['PLAIN', ...SCRAM_MECHS, 'OAUTHBEARER']

// JVM flags for brokers: small heap, quick startup. KAFKA_EDGE_BROKER_JVM_OPTS replaces them
// (e.g. benchmarks that want C2: "-Xmx1g -XX:+UseParallelGC").
const BROKER_JVM_OPTS = process.env.KAFKA_EDGE_BROKER_JVM_OPTS
  ? process.env.KAFKA_EDGE_BROKER_JVM_OPTS.split(/\s+/).filter(Boolean)
  : ['-Xms64m', '-Xmx320m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Xshare:auto', '-XX:-UsePerfData',
     '-XX:MaxDirectMemorySize=256m', '-XX:+ExitOnOutOfMemoryError']
const TOOL_JVM_OPTS = ['-Xmx128m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Xshare:auto', '-XX:-UsePerfData']

// ---------------------------------------------------------------------------------------------
// small utilities

const log = (...a) => { if (!QUIET) console.error('[kafka]', ...a) }
let QUIET = false
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

class HarnessError extends Error {}
const fail = (msg) => { throw new HarnessError(msg) }

// flags that never take a value
const BOOL_FLAGS = new Set(['sasl', 'tls', 'json', 'all', 'quiet', 'force'])
function parseCli(argv) {
  const opts = { _: [] }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a.startsWith('--')) {
      const [k, v] = a.slice(2).split('=', 2)
      if (v !== undefined) opts[k] = v
      else if (BOOL_FLAGS.has(k)) opts[k] = true
      else if (i + 1 < argv.length) opts[k] = argv[++i]
      else fail(`--${k} needs a value`)
    } else opts._.push(a)
  }
  return opts
}

function isAlive(pid) {
  if (!pid) return false
  try { process.kill(pid, 0) } catch (e) { return e.code === 'EPERM' }
  // a zombie (exited child not yet reaped by its parent) still answers kill(0): check /proc
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
    return state !== 'Z' && state !== 'X'
  } catch { return true }
}
function procState(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
  } catch { return null }
}

function tail(file, lines = 40) {
  try {
    const txt = fs.readFileSync(file, 'utf8')
    return txt.split('\n').slice(-lines).join('\n')
  } catch { return `(no ${file})` }
}

function portFree(port) {
  return new Promise((resolve) => {
    const srv = net.createServer()
    srv.once('error', () => resolve(false))
    srv.listen({ port, host: HOST, exclusive: true }, () => srv.close(() => resolve(true)))
  })
}

function fnv(s) {
  let h = 0x811c9dc5
  for (const c of Buffer.from(s)) { h ^= c; h = Math.imul(h, 0x01000193) >>> 0 }
  return h
}

function readJson(file) { try { return JSON.parse(fs.readFileSync(file, 'utf8')) } catch { return null } }
function writeJsonAtomic(file, obj) {
  const tmp = `${file}.${process.pid}.tmp`
  fs.writeFileSync(tmp, JSON.stringify(obj, null, 2) + '\n')
  fs.renameSync(tmp, file)
}

// ---------------------------------------------------------------------------------------------
// fetch

function pomHash(pom = POM) { return createHash('sha256').update(fs.readFileSync(pom)).digest('hex') }

function mavenLibsReady(pom, dir, marker) {
  const stamp = readJson(path.join(dir, '.stamp'))
  if (!stamp || stamp.pom !== pomHash(pom)) return false
  try {
    const jars = fs.readdirSync(dir).filter((f) => f.endsWith('.jar'))
    return jars.length === stamp.jars && jars.some((j) => marker.test(j))
  } catch { return false }
}

/** `mvn dependency:copy-dependencies` of `pom` into `dir`, stamped with the pom's hash. */
function fetchMavenLibs(pom, dir, marker, what) {
  fs.mkdirSync(KAFKA_HOME, { recursive: true })
  // copy into a fresh directory and swap it in: copy-dependencies skips files it believes are
  // present and never removes stale versions, so an in-place copy mixes old and new jars.
  const tmp = `${dir}.tmp-${process.pid}`
  fs.rmSync(tmp, { recursive: true, force: true })
  log(`fetching ${what} jars with Maven ...`)
  const r = spawnSync('mvn', ['-q', '-B', '-f', pom, 'dependency:copy-dependencies',
    `-DoutputDirectory=${tmp}`, '-DincludeScope=runtime'], { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' })
  if (r.error) fail(`cannot run mvn: ${r.error.message} (install Maven 3.8+)`)
  if (r.status !== 0) fail(`mvn dependency:copy-dependencies failed (${r.status}):\n${r.stdout}\n${r.stderr}`)
  const jars = fs.readdirSync(tmp).filter((f) => f.endsWith('.jar'))
  if (!jars.some((j) => marker.test(j))) fail(`Maven produced no ${marker} jar in ${tmp}`)
  fs.writeFileSync(path.join(tmp, '.stamp'), JSON.stringify({ pom: pomHash(pom), jars: jars.length, when: new Date().toISOString() }) + '\n')
  const old = `${dir}.old-${process.pid}`
  if (fs.existsSync(dir)) fs.renameSync(dir, old)
  fs.renameSync(tmp, dir)
  fs.rmSync(old, { recursive: true, force: true })
  log(`fetched ${jars.length} jars into ${dir}`)
}

const KAFKA_JAR = /^kafka_2\.13-.*\.jar$/
export function libsReady() { return mavenLibsReady(POM, LIBS, KAFKA_JAR) }

export function fetchLibs({ force = false } = {}) {
  if (!force && libsReady()) { log(`libs up to date (${LIBS})`); return }
  fetchMavenLibs(POM, LIBS, KAFKA_JAR, 'Apache Kafka')
}

// Amazon's aws-msk-iam-auth and its AWS SDK, the reference for the AWS_MSK_IAM mechanism's test
// (MskIamPayload.java). A directory of their own: the brokers' classpath is LIBS/*.
const MSK_IAM_POM = path.join(SCRIPT_DIR, 'msk-iam-pom.xml')
export const MSK_IAM_LIBS = path.join(KAFKA_HOME, 'msk-iam-libs')
const MSK_IAM_JAR = /^aws-msk-iam-auth-.*\.jar$/
export function mskIamLibsReady() { return mavenLibsReady(MSK_IAM_POM, MSK_IAM_LIBS, MSK_IAM_JAR) }

export function fetchMskIamLibs({ force = false } = {}) {
  if (!force && mskIamLibsReady()) { log(`msk-iam libs up to date (${MSK_IAM_LIBS})`); return }
  fetchMavenLibs(MSK_IAM_POM, MSK_IAM_LIBS, MSK_IAM_JAR, 'aws-msk-iam-auth')
}

function ensureLibs() { if (!libsReady()) fetchLibs() }
export const classpath = () => path.join(LIBS, '*')

// ---------------------------------------------------------------------------------------------
// Kafka wire probe: ApiVersions v3 (finalized features) + Metadata (brokers), raw TCP

class Reader {
  constructor(buf) { this.b = buf; this.o = 0 }
  i8() { const v = this.b.readInt8(this.o); this.o += 1; return v }
  i16() { const v = this.b.readInt16BE(this.o); this.o += 2; return v }
  i32() { const v = this.b.readInt32BE(this.o); this.o += 4; return v }
  uvarint() { let v = 0, s = 0, c; do { c = this.b[this.o++]; v |= (c & 0x7f) << s; s += 7 } while (c & 0x80); return v >>> 0 }
  str() { const n = this.i16(); if (n < 0) return null; const v = this.b.toString('utf8', this.o, this.o + n); this.o += n; return v }
  cstr() { const n = this.uvarint() - 1; if (n < 0) return null; const v = this.b.toString('utf8', this.o, this.o + n); this.o += n; return v }
  skipTags() { const n = this.uvarint(); for (let i = 0; i < n; i++) { this.uvarint(); const sz = this.uvarint(); this.o += sz } }
}

function frame(apiKey, apiVersion, corr, body, flexibleHeader) {
  const clientId = Buffer.from('kafka-edge-harness')
  const hdr = Buffer.alloc(10 + clientId.length + (flexibleHeader ? 1 : 0))
  hdr.writeInt16BE(apiKey, 0); hdr.writeInt16BE(apiVersion, 2); hdr.writeInt32BE(corr, 4)
  hdr.writeInt16BE(clientId.length, 8); clientId.copy(hdr, 10)
  const payload = Buffer.concat([hdr, body])
  const size = Buffer.alloc(4); size.writeInt32BE(payload.length)
  return Buffer.concat([size, payload])
}

function kafkaRequests(host, port, requests, timeoutMs, tlsOptions) {
  // requests: [{apiKey, build(prevBodies) -> {version, body} | null, flexibleHeader}] sent in order on one
  // connection (TLS with tlsOptions); resolves bodies. A build returning null ends the exchange there.
  return new Promise((resolve, reject) => {
    const sock = tlsOptions ? tls.connect({ host, port, ...tlsOptions }) : net.connect({ host, port })
    let buf = Buffer.alloc(0)
    const out = []
    let next = 0
    let done = false
    const timer = setTimeout(() => { sock.destroy(); reject(new Error(`timeout after ${timeoutMs}ms talking to ${host}:${port}`)) }, timeoutMs)
    const finish = () => { done = true; clearTimeout(timer); sock.end(); resolve(out) }
    const send = () => {
      const r = requests[next]
      let b
      try { b = r.build(out) } catch (e) { clearTimeout(timer); sock.destroy(); reject(e); return }
      if (b === null) { finish(); return }
      sock.write(frame(r.apiKey, b.version, next + 1, b.body, r.flexibleHeader))
    }
    sock.on(tlsOptions ? 'secureConnect' : 'connect', send)
    sock.on('error', (e) => { clearTimeout(timer); reject(e) })
    sock.on('close', () => { clearTimeout(timer); if (!done) reject(new Error(`connection to ${host}:${port} closed`)) })
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d])
      while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
        const n = buf.readInt32BE(0)
        const body = buf.subarray(8, 4 + n) // skip size + correlation id (response header v0)
        buf = buf.subarray(4 + n)
        out.push(body)
        next++
        if (next < requests.length) send()
        else finish()
      }
    })
  })
}

function parseApiVersionsV3(body) {
  const r = new Reader(body)
  const errorCode = r.i16()
  const apis = {}
  const n = r.uvarint() - 1
  for (let i = 0; i < n; i++) { const k = r.i16(), min = r.i16(), max = r.i16(); r.skipTags(); apis[k] = { min, max } }
  r.i32() // throttle
  const finalized = {}
  const supported = {}
  const ntags = r.uvarint()
  for (let t = 0; t < ntags; t++) {
    const tag = r.uvarint(); const size = r.uvarint(); const end = r.o + size
    if (tag === 0 || tag === 2) {
      const m = r.uvarint() - 1
      for (let i = 0; i < m; i++) {
        const name = r.cstr(); const a = r.i16(); const b = r.i16(); r.skipTags()
        if (tag === 0) supported[name] = { min: a, max: b }
        else finalized[name] = { max: a, min: b }
      }
    }
    r.o = end
  }
  return { errorCode, apis, finalized, supported }
}

function metadataBody(version) {
  const parts = [Buffer.from([0, 0, 0, 0])] // topics: empty array (no topics)
  if (version >= 4) parts.push(Buffer.from([0])) // allow_auto_topic_creation
  if (version >= 8) parts.push(Buffer.from([0, 0])) // include authorized operations
  return Buffer.concat(parts)
}

function parseMetadata(body, version) {
  const r = new Reader(body)
  if (version >= 3) r.i32()
  const brokers = []
  const n = r.i32()
  for (let i = 0; i < n; i++) {
    const id = r.i32(); const host = r.str(); const port = r.i32(); const rack = version >= 1 ? r.str() : null
    brokers.push({ id, host, port, rack })
  }
  const clusterId = version >= 2 ? r.str() : null
  const controllerId = version >= 1 ? r.i32() : -1
  return { brokers, clusterId, controllerId }
}

/** ApiVersions v3 + Metadata (v1..v8) against one broker; over TLS with `tls` (node:tls connect options). */
export async function probe(host, port, timeoutMs = 3000, { tls: tlsOptions } = {}) {
  let av
  let mdVersion = 1
  const [, mdBody] = await kafkaRequests(host, port, [
    {
      apiKey: 18, flexibleHeader: true,
      build: () => ({ version: 3, body: Buffer.from([0x0b, ...Buffer.from('kafka-edge'), 0x06, ...Buffer.from('0.1.0'), 0]) }),
    },
    {
      apiKey: 3, flexibleHeader: false,
      build: (out) => {
        av = parseApiVersionsV3(out[0])
        if (av.errorCode !== 0) throw new Error(`ApiVersions error ${av.errorCode}`)
        const md = av.apis[3]
        if (!md) throw new Error('broker does not list Metadata')
        mdVersion = Math.max(md.min, Math.min(8, md.max))
        return { version: mdVersion, body: metadataBody(mdVersion) }
      },
    },
  ], timeoutMs, tlsOptions)
  const md = parseMetadata(mdBody, mdVersion)
  return { ...md, finalizedFeatures: Object.fromEntries(Object.entries(av.finalized).map(([k, v]) => [k, v.max])), supportedFeatures: av.supported, metadataVersion: mdVersion }
}

/**
 * The broker's side of a SASL exchange, no JVM: SaslHandshake v1 for `mechanism`, then one
 * SaslAuthenticate v1 per entry of `messages` (client tokens, Buffer or string), stopping after the
 * first error. Over TLS with `tls` (node:tls connect options).
 */
export async function saslProbe(host, port, mechanism, messages, { tls: tlsOptions, timeoutMs = 5000 } = {}) {
  const failed = (out) => out.length > 0 && out[out.length - 1].readInt16BE(0) !== 0
  const mech = Buffer.from(mechanism)
  const handshake = Buffer.alloc(2 + mech.length)
  handshake.writeInt16BE(mech.length); mech.copy(handshake, 2)
  const requests = [{ apiKey: 17, flexibleHeader: false, build: () => ({ version: 1, body: handshake }) }]
  for (const m of messages) {
    const token = Buffer.from(m)
    const body = Buffer.alloc(4 + token.length)
    body.writeInt32BE(token.length); token.copy(body, 4)
    requests.push({ apiKey: 36, flexibleHeader: false, build: (out) => (failed(out) ? null : { version: 1, body }) })
  }
  const [hs, ...auths] = await kafkaRequests(host, port, requests, timeoutMs, tlsOptions)
  const h = new Reader(hs)
  const handshakeError = h.i16()
  const mechanisms = Array.from({ length: Math.max(0, h.i32()) }, () => h.str())
  const rounds = auths.map((b) => {
    const r = new Reader(b)
    const errorCode = r.i16()
    const errorMessage = r.str()
    const n = r.i32()
    const authBytes = n < 0 ? null : Buffer.from(b.subarray(r.o, r.o + n))
    r.o += Math.max(0, n)
    return { errorCode, errorMessage, authBytes, sessionLifetimeMs: Number(b.readBigInt64BE(r.o)) }
  })
  return { handshakeError, mechanisms, rounds }
}

// ---------------------------------------------------------------------------------------------
// TLS material: a test CA and certificates made with openssl, PEM only (Kafka reads PEM key stores
// and trust stores itself, so no keytool/JKS). Created once per KAFKA_HOME and shared by every
// cluster; RSA 2048 keys, unencrypted PKCS#8.

export const TLS_DIR = path.join(KAFKA_HOME, 'tls')
const TLS_FILES = {
  ca: 'ca.pem', caKey: 'ca.key',
  cert: 'broker.pem', key: 'broker.key', keystore: 'broker-keystore.pem',
  clientCert: 'client.pem', clientKey: 'client.key', clientKeystore: 'client-keystore.pem',
  otherCa: 'other-ca.pem',
  expiredCert: 'expired.pem', expiredKey: 'expired.key',
}
// written last: a directory without it is not a finished set
const TLS_STAMP = 'complete.json'
const TLS_DAYS = 3650
// an expiry entirely in the past, far enough back that no clock skew allowance reaches it
const EXPIRED_START = '20200101000000Z'
const EXPIRED_END = '20200201000000Z'

const tlsPaths = (dir) => Object.fromEntries(Object.entries(TLS_FILES).map(([k, f]) => [k, path.join(dir, f)]))

function tlsComplete(dir) {
  const stamp = readJson(path.join(dir, TLS_STAMP))
  return !!stamp && Object.values(TLS_FILES).every((f) => fs.existsSync(path.join(dir, f))) ? stamp : null
}

function openssl(args, cwd) {
  const r = spawnSync(process.env.KAFKA_EDGE_OPENSSL || 'openssl', args, { cwd, encoding: 'utf8' })
  if (r.error) fail(`cannot run openssl: ${r.error.message}`)
  if (r.status !== 0) fail(`openssl ${args.join(' ')} failed (${r.status}):\n${r.stderr}`)
  return r.stdout
}

function opensslConfig(dbDir) {
  // -config of our own, so the system openssl.cnf adds no extensions of its own
  return `[ req ]
distinguished_name = dn
prompt = no
[ dn ]
CN = unused
[ v3_ca ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[ server ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[ client ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[ ca ]
default_ca = test_ca
[ test_ca ]
database = ${dbDir}/index.txt
new_certs_dir = ${dbDir}/certs
serial = ${dbDir}/serial
default_md = sha256
policy = any
unique_subject = no
[ any ]
commonName = supplied
`
}

function generateTls(dir) {
  const cnf = path.join(dir, 'openssl.cnf')
  const db = path.join(dir, 'ca-db')
  fs.mkdirSync(path.join(db, 'certs'), { recursive: true })
  fs.writeFileSync(path.join(db, 'index.txt'), '')
  fs.writeFileSync(path.join(db, 'serial'), randomBytes(16).toString('hex') + '\n')
  fs.writeFileSync(cnf, opensslConfig(db))
  const key = (f) => openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', f], dir)
  const selfSigned = (keyFile, certFile, cn) =>
    openssl(['req', '-config', cnf, '-x509', '-new', '-key', keyFile, '-subj', `/CN=${cn}`, '-days', String(TLS_DAYS), '-sha256',
      '-extensions', 'v3_ca', '-set_serial', `0x${randomBytes(16).toString('hex')}`, '-out', certFile], dir)
  const csr = (keyFile, csrFile, cn) => openssl(['req', '-config', cnf, '-new', '-key', keyFile, '-subj', `/CN=${cn}`, '-out', csrFile], dir)
  const sign = (csrFile, certFile, ext) =>
    openssl(['x509', '-req', '-in', csrFile, '-CA', TLS_FILES.ca, '-CAkey', TLS_FILES.caKey, '-set_serial', `0x${randomBytes(16).toString('hex')}`,
      '-days', String(TLS_DAYS), '-sha256', '-extfile', cnf, '-extensions', ext, '-out', certFile], dir)
  const bundle = (keyFile, certFile, out) =>
    fs.writeFileSync(path.join(dir, out), fs.readFileSync(path.join(dir, keyFile), 'utf8') + fs.readFileSync(path.join(dir, certFile), 'utf8'), { mode: 0o600 })

  key(TLS_FILES.caKey)
  selfSigned(TLS_FILES.caKey, TLS_FILES.ca, 'kafka-edge test CA')
  key(TLS_FILES.key)
  csr(TLS_FILES.key, 'broker.csr', 'localhost')
  sign('broker.csr', TLS_FILES.cert, 'server')
  bundle(TLS_FILES.key, TLS_FILES.cert, TLS_FILES.keystore)
  key(TLS_FILES.clientKey)
  csr(TLS_FILES.clientKey, 'client.csr', 'kafka-edge-client')
  sign('client.csr', TLS_FILES.clientCert, 'client')
  bundle(TLS_FILES.clientKey, TLS_FILES.clientCert, TLS_FILES.clientKeystore)
  // nothing may ever chain to the other CA, so its key is thrown away
  key('other-ca.key')
  selfSigned('other-ca.key', TLS_FILES.otherCa, 'kafka-edge unrelated CA')
  fs.rmSync(path.join(dir, 'other-ca.key'))
  // `x509 -req` (OpenSSL 3.0) only counts days from now; `ca` takes explicit start and end dates
  key(TLS_FILES.expiredKey)
  csr(TLS_FILES.expiredKey, 'expired.csr', 'localhost')
  openssl(['ca', '-batch', '-config', cnf, '-name', 'test_ca', '-cert', TLS_FILES.ca, '-keyfile', TLS_FILES.caKey, '-in', 'expired.csr',
    '-out', TLS_FILES.expiredCert, '-startdate', EXPIRED_START, '-enddate', EXPIRED_END, '-extensions', 'server', '-notext'], dir)
  for (const f of ['broker.csr', 'client.csr', 'expired.csr', 'openssl.cnf', 'ca-db']) fs.rmSync(path.join(dir, f), { recursive: true, force: true })
  const id = createHash('sha256').update(fs.readFileSync(path.join(dir, TLS_FILES.ca))).digest('hex').slice(0, 16)
  fs.writeFileSync(path.join(dir, TLS_STAMP), JSON.stringify({ id, created: new Date().toISOString() }) + '\n')
  return id
}

/**
 * The TLS files (absolute paths) plus `id`, which changes whenever the set is regenerated. Builds the
 * set in a private directory and renames it into place, so concurrent callers never see half a set:
 * the first rename wins and the others use the winner's files.
 */
export function ensureTls() {
  let stamp = tlsComplete(TLS_DIR)
  if (!stamp) {
    fs.mkdirSync(KAFKA_HOME, { recursive: true })
    if (fs.existsSync(TLS_DIR)) {
      // left incomplete by hand (a generator never writes into TLS_DIR): move it out of the way
      const stale = path.join(KAFKA_HOME, `tls.stale-${process.pid}-${randomBytes(4).toString('hex')}`)
      try { fs.renameSync(TLS_DIR, stale); fs.rmSync(stale, { recursive: true, force: true }) } catch (e) { if (e.code !== 'ENOENT') throw e }
    }
    const tmp = path.join(KAFKA_HOME, `tls.tmp-${process.pid}-${randomBytes(4).toString('hex')}`)
    fs.mkdirSync(tmp, { recursive: true })
    try {
      generateTls(tmp)
      try { fs.renameSync(tmp, TLS_DIR); log(`created TLS certificates in ${TLS_DIR}`) } catch (e) {
        if (e.code !== 'ENOTEMPTY' && e.code !== 'EEXIST') throw e
      }
    } finally { fs.rmSync(tmp, { recursive: true, force: true }) }
    stamp = tlsComplete(TLS_DIR)
    if (!stamp) fail(`TLS files in ${TLS_DIR} are incomplete after generation`)
  }
  return { ...tlsPaths(TLS_DIR), id: stamp.id }
}

// ---------------------------------------------------------------------------------------------
// cluster layout

const clusterDir = (name) => path.join(CLUSTERS, name)
const clusterFile = (name) => path.join(clusterDir(name), 'cluster.json')
const nodeDir = (name, id) => path.join(clusterDir(name), `node-${id}`)
export const ports = (base, id) => ({
  port: base + id - 1, saslPort: base + 10 + id - 1, controllerPort: base + 20 + id - 1, sslPort: base + 30 + id - 1, saslSslPort: base + 40 + id - 1,
})

function validateName(name) {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name)) fail(`bad cluster name ${JSON.stringify(name)}`)
}

function listClusters() {
  try { return fs.readdirSync(CLUSTERS).filter((d) => fs.existsSync(path.join(CLUSTERS, d))) } catch { return [] }
}

async function chooseBasePort(name, nodes, explicit, avoid = []) {
  const claimed = new Set(avoid)
  for (const c of listClusters()) {
    if (c === name) continue
    const meta = readJson(path.join(clusterDir(c), 'ports.json'))
    if (meta) claimed.add(meta.basePort)
  }
  const blockFree = async (base) => {
    for (let id = 1; id <= nodes; id++) {
      for (const p of Object.values(ports(base, id))) if (!(await portFree(p))) return p
    }
    return 0
  }
  if (explicit) {
    const busy = await blockFree(explicit)
    if (busy) fail(`port ${busy} (from --base-port ${explicit}) is already in use`)
    return explicit
  }
  const prefer = name === 'default' ? DEFAULT_BASE_PORT : DEFAULT_BASE_PORT + PORT_BLOCK * (1 + (fnv(name) % 150))
  for (let i = 0; i < 200; i++) {
    const base = DEFAULT_BASE_PORT + ((prefer - DEFAULT_BASE_PORT + i * PORT_BLOCK) % (PORT_BLOCK * 200))
    if (claimed.has(base)) continue
    if (!(await blockFree(base))) return base
  }
  fail('no free port block found for the cluster; pass --base-port')
}

function serverProperties({ id, nodes, base, sasl, tls, reauthMs }) {
  const p = ports(base, id)
  const voters = Array.from({ length: nodes }, (_, i) => `${i + 1}@${HOST}:${ports(base, i + 1).controllerPort}`).join(',')
  const listeners = [`PLAINTEXT://${HOST}:${p.port}`, `CONTROLLER://${HOST}:${p.controllerPort}`]
  const advertised = [`PLAINTEXT://${HOST}:${p.port}`]
  const listen = (name, port) => { listeners.push(`${name}://${HOST}:${port}`); advertised.push(`${name}://${HOST}:${port}`) }
  if (sasl) listen('SASL_PLAINTEXT', p.saslPort)
  if (tls) listen('SSL', p.sslPort)
  if (tls && sasl) listen('SASL_SSL', p.saslSslPort)
  const rf = Math.min(nodes, 3)
  const lines = {
    'process.roles': 'broker,controller',
    'node.id': id,
    'controller.quorum.voters': voters,
    'controller.listener.names': 'CONTROLLER',
    listeners: listeners.join(','),
    'advertised.listeners': advertised.join(','),
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL',
    'log.dirs': path.join(nodeDir('__NAME__', id), 'data'),
    // test-friendly broker defaults
    'num.partitions': 1,
    'auto.create.topics.enable': false,
    'default.replication.factor': 1,
    'offsets.topic.replication.factor': rf,
    'offsets.topic.num.partitions': 5,
    'transaction.state.log.replication.factor': rf,
    'transaction.state.log.min.isr': Math.min(2, rf),
    'transaction.state.log.num.partitions': 5,
    'share.coordinator.state.topic.replication.factor': rf,
    'share.coordinator.state.topic.min.isr': Math.min(2, rf),
    'group.initial.rebalance.delay.ms': 0,
    // fast startup and failover on a small shared machine
    'controller.quorum.election.timeout.ms': 800,
    'controller.quorum.fetch.timeout.ms': 1600,
    'controller.quorum.election.backoff.max.ms': 400,
    'broker.heartbeat.interval.ms': 500,
    'broker.session.timeout.ms': 4000,
    'initial.broker.registration.timeout.ms': 60000,
    'replica.lag.time.max.ms': 10000,
    // small footprint
    'num.network.threads': 2,
    'num.io.threads': 2,
    'num.recovery.threads.per.data.dir': 1,
    'num.replica.fetchers': 1,
    'background.threads': 2,
    'log.cleaner.threads': 1,
    'log.cleaner.dedupe.buffer.size': 8 * 1024 * 1024,
    'log.index.size.max.bytes': 1024 * 1024,
  }
  if (sasl) {
    lines['sasl.enabled.mechanisms'] = ['PLAIN', ...SCRAM_MECHS].join(',')
    lines['listener.name.sasl_plaintext.plain.sasl.jaas.config'] =
      'org.apache.kafka.common.security.plain.PlainLoginModule required ' + USERS.map((u) => `user_${u.user}="${u.password}"`).join(' ') + ';'
    for (const m of SCRAM_MECHS) lines[`listener.name.sasl_plaintext.${m.toLowerCase()}.sasl.jaas.config`] = 'org.apache.kafka.common.security.scram.ScramLoginModule required;'
  }
  if (tls) {
    // ssl.* without a listener prefix serve both SSL and SASL_SSL
    lines['ssl.keystore.type'] = 'PEM'
    lines['ssl.keystore.location'] = tls.keystore
    lines['ssl.truststore.type'] = 'PEM'
    lines['ssl.truststore.location'] = tls.ca
    // a client that gets through the SSL listener has proven its certificate (mTLS); SASL_SSL
    // authenticates with SASL instead and asks for none
    lines['listener.name.ssl.ssl.client.auth'] = 'required'
  }
  if (tls && sasl) {
    const l = 'listener.name.sasl_ssl'
    lines[`${l}.sasl.enabled.mechanisms`] = SASL_SSL_MECHS.join(',')
    lines[`${l}.plain.sasl.jaas.config`] = lines['listener.name.sasl_plaintext.plain.sasl.jaas.config']
    for (const m of SCRAM_MECHS) lines[`${l}.${m.toLowerCase()}.sasl.jaas.config`] = 'org.apache.kafka.common.security.scram.ScramLoginModule required;'
    // The broker's own login for OAUTHBEARER mints an unsecured token it never uses (inter-broker is
    // PLAINTEXT), but the login module must still be configured. Client tokens are checked by the
    // unsecured validator: unsigned JWT, alg "none", string `sub`, numeric `exp` in the future, no clock skew.
    lines[`${l}.oauthbearer.sasl.jaas.config`] = 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="broker";'
    lines[`${l}.oauthbearer.sasl.server.callback.handler.class`] = 'org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler'
  }
  // KIP-368: SASL sessions must re-authenticate within this long or the broker closes them
  if (reauthMs) lines['connections.max.reauth.ms'] = reauthMs
  return lines
}

/** `--broker-props k=v,k=v`: server.properties entries a test needs (producer.id.expiration.ms, ...), sorted so reuse compares them. */
function parseBrokerProps(v) {
  if (v === undefined || v === null || v === '') return {}
  const entries = typeof v === 'string' ? v.split(',').map((kv) => {
    const eq = kv.indexOf('=')
    if (eq <= 0) fail(`--broker-props entry ${JSON.stringify(kv)} is not key=value`)
    return [kv.slice(0, eq).trim(), kv.slice(eq + 1).trim()]
  }) : Object.entries(v).map(([k, x]) => [k, String(x)])
  return Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : 1)))
}

function propsText(obj) {
  return Object.entries(obj).map(([k, v]) => `${k}=${String(v).replace(/\\/g, '\\\\')}`).join('\n') + '\n'
}

function log4jText(logDir) {
  return `# written by scripts/kafka/kafka.mjs
status = warn
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = ${logDir}/server.log
appender.file.filePattern = ${logDir}/server.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 20MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 2
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.apache.name = org.apache.kafka
logger.apache.level = INFO
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.state.name = state.change.logger
logger.state.level = INFO
`
}

function javaBin() { return process.env.JAVA_HOME ? path.join(process.env.JAVA_HOME, 'bin', 'java') : 'java' }

function runJava(args, { timeoutMs = 120000 } = {}) {
  return new Promise((resolve, reject) => {
    execFile(javaBin(), args, { maxBuffer: 64 * 1024 * 1024, timeout: timeoutMs }, (err, stdout, stderr) => {
      if (err) reject(new HarnessError(`java ${args.slice(-6).join(' ')} failed: ${err.message}\n${stdout}\n${stderr}`))
      else resolve({ stdout, stderr })
    })
  })
}

function toolLog4j() { return path.join(SCRIPT_DIR, 'log4j2-tools.properties') }

async function formatNode({ dir, clusterId, tv, sasl }) {
  const args = [...TOOL_JVM_OPTS, `-Dlog4j2.configurationFile=${toolLog4j()}`, '-cp', classpath(), 'kafka.tools.StorageTool',
    'format', '--config', path.join(dir, 'server.properties'), '--cluster-id', clusterId]
  if (tv) args.push('--feature', `transaction.version=${tv}`)
  if (sasl) {
    for (const m of SCRAM_MECHS) for (const u of USERS) args.push('--add-scram', `${m}=[name=${u.user},password=${u.password}]`)
  }
  await runJava(args)
}

// AppCDS: a dynamic class-data archive of the broker's classes cuts its startup CPU by about a third
// (measured 2.7 s -> 1.7 s per node here). The first node started without an archive records one
// (-XX:ArchiveClassesAtExit); it is written when that JVM exits cleanly (down/restart stop it with
// SIGTERM first) and used by every later broker. Keyed by the libs stamp; off with KAFKA_EDGE_CDS=0 or
// custom KAFKA_EDGE_BROKER_JVM_OPTS.
const CDS_DIR = path.join(KAFKA_HOME, 'cds')
function cdsArchive() {
  if (process.env.KAFKA_EDGE_CDS === '0' || process.env.KAFKA_EDGE_BROKER_JVM_OPTS) return null
  let stamp = ''
  try { stamp = fs.readFileSync(STAMP, 'utf8') } catch { return null }
  const h = createHash('sha256').update(stamp).update(BROKER_JVM_OPTS.join(' ')).update(process.version.split('.')[0]).digest('hex').slice(0, 16)
  return path.join(CDS_DIR, `broker-${h}.jsa`)
}
function cdsArgs(dir) {
  const archive = cdsArchive()
  if (!archive) return []
  if (fs.existsSync(archive)) return [`-XX:SharedArchiveFile=${archive}`, '-Xlog:cds=off', '-Xlog:cds+dynamic=off']
  // record one, unless another live broker already is
  fs.mkdirSync(CDS_DIR, { recursive: true })
  const lock = `${archive}.recording`
  try { fs.writeFileSync(lock, dir, { flag: 'wx' }) } catch {
    const holder = fs.readFileSync(lock, 'utf8')
    let alive = false
    try { alive = isAlive(Number(fs.readFileSync(path.join(holder, 'pid'), 'utf8'))) && fs.existsSync(path.join(holder, 'cds-dump')) } catch {}
    if (alive) return []
    fs.writeFileSync(lock, dir)
  }
  const tmp = `${archive}.tmp-${randomBytes(4).toString('hex')}`
  fs.writeFileSync(path.join(dir, 'cds-dump'), JSON.stringify({ tmp, archive, lock }))
  return [`-XX:ArchiveClassesAtExit=${tmp}`, '-Xlog:cds=off', '-Xlog:cds+dynamic=off']
}
/** After a node's JVM is gone: keep its class archive if it exited cleanly, else drop it. */
function finishCds(dir, graceful) {
  const f = path.join(dir, 'cds-dump')
  const info = readJson(f)
  if (!info) return
  try { fs.rmSync(f) } catch {}
  try {
    if (graceful && fs.existsSync(info.tmp) && fs.statSync(info.tmp).size > 1 << 20) { fs.renameSync(info.tmp, info.archive); log(`recorded class-data archive ${info.archive}`) }
    else fs.rmSync(info.tmp, { force: true })
  } catch {}
  try { if (fs.readFileSync(info.lock, 'utf8') === dir) fs.rmSync(info.lock) } catch {}
}

function cloneFormat(fromDir, toDir, id) {
  const src = path.join(fromDir, 'data')
  const dst = path.join(toDir, 'data')
  fs.mkdirSync(dst, { recursive: true })
  fs.cpSync(path.join(src, '__cluster_metadata-0'), path.join(dst, '__cluster_metadata-0'), { recursive: true })
  const meta = fs.readFileSync(path.join(src, 'meta.properties'), 'utf8')
  let dirId
  do { dirId = randomBytes(16).toString('base64url') } while (dirId.startsWith('-') || dirId.startsWith('AAAAAAAAAAAAAAAAAAAAA'))
  const out = meta.replace(/^node\.id=.*$/m, `node.id=${id}`).replace(/^directory\.id=.*$/m, `directory.id=${dirId}`)
  if (!out.includes(`node.id=${id}`) || !out.includes(dirId)) fail(`unexpected meta.properties format in ${src}:\n${meta}`)
  fs.writeFileSync(path.join(dst, 'meta.properties'), out)
}

function launchNode(name, id) {
  const dir = nodeDir(name, id)
  const logDir = path.join(dir, 'logs')
  fs.mkdirSync(logDir, { recursive: true })
  const out = fs.openSync(path.join(dir, 'stdout.log'), 'a')
  const args = [...BROKER_JVM_OPTS, ...cdsArgs(dir), '-Djava.awt.headless=true', `-Dlog4j2.configurationFile=${path.join(dir, 'log4j2.properties')}`,
    `-Dkafka.logs.dir=${logDir}`, '-cp', classpath(), 'kafka.Kafka', path.join(dir, 'server.properties')]
  const child = spawn(javaBin(), args, { detached: true, stdio: ['ignore', out, out], cwd: dir })
  fs.closeSync(out)
  child.unref()
  fs.writeFileSync(path.join(dir, 'pid'), String(child.pid))
  try { fs.rmSync(path.join(dir, 'stopped')) } catch {}
  return child.pid
}

function nodePid(name, id) {
  const v = Number(fs.readFileSync(path.join(nodeDir(name, id), 'pid'), 'utf8').trim())
  return Number.isFinite(v) ? v : 0
}

function clusterDescriptor(name, cfg) {
  const nodes = []
  for (let id = 1; id <= cfg.nodes; id++) {
    const p = ports(cfg.basePort, id)
    const dir = nodeDir(name, id)
    const n = { id, host: HOST, port: p.port, controllerPort: p.controllerPort, pid: nodePid(name, id), dir, logDir: path.join(dir, 'data'), serverLog: path.join(dir, 'logs', 'server.log') }
    if (cfg.sasl) n.saslPort = p.saslPort
    if (cfg.tls) n.sslPort = p.sslPort
    if (cfg.tls && cfg.sasl) n.saslSslPort = p.saslSslPort
    nodes.push(n)
  }
  const list = (k) => nodes.map((n) => `${n.host}:${n[k]}`).join(',')
  const c = {
    name, bootstrap: list('port'),
    ...(cfg.sasl ? { saslBootstrap: list('saslPort'), saslUsers: USERS, saslMechanisms: ['PLAIN', ...SCRAM_MECHS] } : {}),
    ...(cfg.tls ? { sslBootstrap: list('sslPort') } : {}),
    ...(cfg.tls && cfg.sasl ? { saslSslBootstrap: list('saslSslPort'), saslSslMechanisms: SASL_SSL_MECHS } : {}),
    ...(cfg.tls ? { tls: cfg.tls } : {}),
    ...(cfg.reauthMs ? { reauthMs: cfg.reauthMs } : {}),
    ...(Object.keys(cfg.brokerProps ?? {}).length ? { brokerProps: cfg.brokerProps } : {}),
    nodes, clusterId: cfg.clusterId, transactionVersion: cfg.transactionVersion ?? null, basePort: cfg.basePort, sasl: !!cfg.sasl,
    startedAt: cfg.startedAt, startupMs: cfg.startupMs,
  }
  return c
}

function writeCluster(name, c) {
  writeJsonAtomic(clusterFile(name), c)
  if (name === 'default') writeJsonAtomic(path.join(KAFKA_HOME, 'cluster.json'), c)
}

/** Wait until every node in `ids` answers Metadata and lists every id in `ids` as a live broker. */
async function waitServing(name, cfg, ids, { timeoutMs = 90000, pids } = {}) {
  const deadline = Date.now() + timeoutMs
  let last = ''
  let info = null
  while (Date.now() < deadline) {
    for (const id of ids) {
      const pid = pids?.[id] ?? nodePid(name, id)
      if (!isAlive(pid)) {
        fail(`node ${id} of cluster ${name} (pid ${pid}) exited during startup.\n--- ${path.join(nodeDir(name, id), 'logs/server.log')} (tail)\n${tail(path.join(nodeDir(name, id), 'logs', 'server.log'))}\n--- stdout.log (tail)\n${tail(path.join(nodeDir(name, id), 'stdout.log'), 20)}`)
      }
    }
    try {
      const results = await Promise.all(ids.map((id) => probe(HOST, ports(cfg.basePort, id).port, 2000)))
      const ok = results.every((r) => ids.every((id) => r.brokers.some((b) => b.id === id)))
      if (ok) { info = results[0]; return info }
      last = `brokers seen: ${results.map((r, i) => `node ${ids[i]} -> [${r.brokers.map((b) => b.id).join(',')}]`).join('; ')}`
    } catch (e) { last = e.message }
    await sleep(150)
  }
  fail(`cluster ${name}: nodes ${ids.join(',')} not serving after ${timeoutMs}ms (${last}).\n` +
    ids.map((id) => `--- node ${id} server.log (tail)\n${tail(path.join(nodeDir(name, id), 'logs', 'server.log'), 25)}`).join('\n'))
}

// simple cross-process lock per cluster name
async function withLock(name, fn) {
  fs.mkdirSync(CLUSTERS, { recursive: true })
  const lock = path.join(CLUSTERS, `.${name}.lock`)
  const deadline = Date.now() + 300000
  for (;;) {
    try { fs.writeFileSync(lock, String(process.pid), { flag: 'wx' }); break } catch (e) {
      if (e.code !== 'EEXIST') throw e
      const holder = Number(fs.readFileSync(lock, 'utf8') || 0)
      if (!holder || !isAlive(holder)) { try { fs.rmSync(lock) } catch {} continue }
      if (Date.now() > deadline) fail(`timed out waiting for lock ${lock} held by pid ${holder}`)
      await sleep(200)
    }
  }
  try { return await fn() } finally { try { fs.rmSync(lock) } catch {} }
}

async function healthy(name) {
  const c = readJson(clusterFile(name))
  if (!c) return null
  if (!c.nodes.every((n) => isAlive(n.pid) && procState(n.pid) !== 'T')) return null
  try {
    const rs = await Promise.all(c.nodes.map((n) => probe(n.host, n.port, 3000)))
    if (!rs.every((r) => c.nodes.every((n) => r.brokers.some((b) => b.id === n.id)))) return null
  } catch { return null }
  return c
}

export async function up(opts = {}) {
  const name = opts.name ?? 'default'
  validateName(name)
  const nodes = Number(opts.nodes ?? 1)
  if (![1, 2, 3, 4, 5].includes(nodes)) fail(`--nodes must be 1..5 (got ${opts.nodes})`)
  const tv = opts.tv === undefined || opts.tv === null ? null : Number(opts.tv)
  if (tv !== null && ![0, 1, 2].includes(tv)) fail(`--tv must be 0, 1 or 2 (got ${opts.tv})`)
  const sasl = !!opts.sasl
  const reauthMs = opts.reauthMs === undefined || opts.reauthMs === null ? null : Number(opts.reauthMs)
  if (reauthMs !== null && !(Number.isInteger(reauthMs) && reauthMs > 0)) fail(`--reauth-ms must be a positive integer (got ${opts.reauthMs})`)
  const tls = opts.tls ? ensureTls() : null
  const brokerProps = parseBrokerProps(opts.brokerProps)
  const explicitBase = opts.basePort ? Number(opts.basePort) : null
  const owner = opts.owner ? String(opts.owner) : null
  ensureLibs()
  return withLock(name, async () => {
    let existing = await healthy(name)
    if (existing && tls && existing.tls && existing.tls.id !== tls.id) {
      // its brokers hold certificates that no longer match the files a client would trust
      log(`cluster ${name} runs with replaced TLS certificates: recreating`)
      existing = null
    }
    if (existing) {
      const same = existing.nodes.length === nodes && existing.sasl === sasl && !!existing.tls === !!tls && (existing.reauthMs ?? null) === reauthMs &&
        (tv === null ? existing.transactionVersion === 2 || existing.transactionVersion === null : existing.transactionVersion === tv) &&
        JSON.stringify(existing.brokerProps ?? {}) === JSON.stringify(brokerProps) &&
        (!explicitBase || existing.basePort === explicitBase)
      if (!same) fail(`cluster ${name} is already running with different options (nodes=${existing.nodes.length} sasl=${existing.sasl} tls=${!!existing.tls} reauthMs=${existing.reauthMs ?? null} tv=${existing.transactionVersion} basePort=${existing.basePort} brokerProps=${JSON.stringify(existing.brokerProps ?? {})}); run \`kafka.mjs down --name ${name}\` first`)
      log(`cluster ${name} already up: ${existing.bootstrap}`)
      if (owner) addUser(name, owner)
      if (name === 'default') writeJsonAtomic(path.join(KAFKA_HOME, 'cluster.json'), existing)
      return existing
    }
    if (fs.existsSync(clusterDir(name))) { log(`cluster ${name} exists but is not healthy: recreating`); await downOne(name) }
    // Every block lies in Linux's ephemeral port range, so a port found free can be taken by some
    // outgoing connection before the broker binds it; a node that exits during startup is started
    // again on another block (twice at most) before the failure is reported.
    const avoid = []
    for (let attempt = 1; ; attempt++) {
      try {
        return await create(await chooseBasePort(name, nodes, explicitBase, avoid))
      } catch (e) {
        if (explicitBase || attempt >= 3 || !/exited during startup/.test(String(e?.message))) throw e
        log(`${String(e.message).split('\n')[0]}; starting cluster ${name} again on another port block`)
        avoid.push(JSON.parse(fs.readFileSync(path.join(clusterDir(name), 'ports.json'), 'utf8')).basePort)
        await downOne(name)
      }
    }
  })

  async function create(basePort) {
    const t0 = Date.now()
    let clusterId
    do { clusterId = randomBytes(16).toString('base64url') } while (clusterId.startsWith('-'))
    const cfg = { nodes, sasl, tls, reauthMs, brokerProps, basePort, clusterId, tv, startedAt: new Date().toISOString() }
    fs.mkdirSync(clusterDir(name), { recursive: true })
    writeJsonAtomic(path.join(clusterDir(name), 'ports.json'), { basePort, nodes, sasl, tls: !!tls, reauthMs, tv, clusterId })
    // the run that created a cluster owns it: `down --owner ID` stops only what that run started
    if (owner) { fs.writeFileSync(path.join(clusterDir(name), 'owner'), owner); addUser(name, owner) }
    for (let id = 1; id <= nodes; id++) {
      const dir = nodeDir(name, id)
      fs.mkdirSync(path.join(dir, 'logs'), { recursive: true })
      const props = serverProperties({ id, nodes, base: basePort, sasl, tls, reauthMs })
      props['log.dirs'] = path.join(dir, 'data')
      Object.assign(props, brokerProps)
      fs.writeFileSync(path.join(dir, 'server.properties'), propsText(props))
      fs.writeFileSync(path.join(dir, 'log4j2.properties'), log4jText(path.join(dir, 'logs')))
    }
    log(`formatting ${nodes} node(s) of cluster ${name} (id ${clusterId}${tv !== null ? `, transaction.version=${tv}` : ''}${sasl ? ', SASL users admin/relay' : ''})`)
    // StorageTool formats node 1; the other nodes get a copy of its bootstrap checkpoint (features,
    // SCRAM credentials: identical input) and their own meta.properties, which is all `format` writes
    // for a static-quorum node. Saves a JVM per node. KAFKA_EDGE_FORMAT_ALL=1 runs the tool per node.
    if (process.env.KAFKA_EDGE_FORMAT_ALL === '1') {
      await Promise.all(Array.from({ length: nodes }, (_, i) => formatNode({ dir: nodeDir(name, i + 1), clusterId, tv, sasl })))
    } else {
      await formatNode({ dir: nodeDir(name, 1), clusterId, tv, sasl })
      for (let id = 2; id <= nodes; id++) cloneFormat(nodeDir(name, 1), nodeDir(name, id), id)
    }
    const tf = Date.now()
    const pids = {}
    for (let id = 1; id <= nodes; id++) pids[id] = launchNode(name, id)
    log(`started pids ${Object.values(pids).join(',')} on ports ${Array.from({ length: nodes }, (_, i) => ports(basePort, i + 1).port).join(',')}; waiting for Metadata`)
    let info
    try {
      info = await waitServing(name, cfg, Array.from({ length: nodes }, (_, i) => i + 1), { pids })
    } catch (e) {
      await downOne(name, { keepDir: true })
      throw e
    }
    cfg.transactionVersion = info.finalizedFeatures['transaction.version'] ?? 0
    cfg.startupMs = Date.now() - t0
    const c = clusterDescriptor(name, cfg)
    writeCluster(name, c)
    log(`cluster ${name} up in ${cfg.startupMs}ms (format ${tf - t0}ms, boot ${Date.now() - tf}ms): ${c.bootstrap}${c.saslBootstrap ? ` sasl ${c.saslBootstrap}` : ''}${c.sslBootstrap ? ` ssl ${c.sslBootstrap}` : ''}${c.saslSslBootstrap ? ` sasl_ssl ${c.saslSslBootstrap}` : ''}, transaction.version=${cfg.transactionVersion}`)
    return c
  }
}

/** SIGTERM, then SIGKILL after graceMs (0: SIGKILL at once). Resolves true if it exited by itself. */
async function stopPid(pid, graceMs = 15000) {
  if (!isAlive(pid)) return false
  try { process.kill(pid, 'SIGCONT') } catch {}
  if (graceMs > 0) {
    try { process.kill(pid, 'SIGTERM') } catch {}
    const deadline = Date.now() + graceMs
    while (Date.now() < deadline) { if (!isAlive(pid)) return true; await sleep(100) }
  }
  try { process.kill(pid, 'SIGKILL') } catch {}
  for (let i = 0; i < 100 && isAlive(pid); i++) await sleep(50)
  return false
}

async function downOne(name, { keepDir = false } = {}) {
  const dir = clusterDir(name)
  if (!fs.existsSync(dir)) return false
  const nodes = []
  for (const d of fs.readdirSync(dir)) {
    if (!d.startsWith('node-')) continue
    let pid = 0
    try { pid = Number(fs.readFileSync(path.join(dir, d, 'pid'), 'utf8')) } catch {}
    nodes.push({ dir: path.join(dir, d), pid })
  }
  // The data is thrown away, so nodes are SIGKILLed; only a node recording the class-data archive is
  // stopped gracefully first (while its quorum is still up, so its controlled shutdown is quick).
  for (const n of nodes.filter((x) => fs.existsSync(path.join(x.dir, 'cds-dump')))) {
    const graceful = await stopPid(n.pid, 20000)
    finishCds(n.dir, graceful)
  }
  await Promise.all(nodes.map((n) => stopPid(n.pid, keepDir ? 8000 : 0)))
  for (const n of nodes) finishCds(n.dir, false)
  if (!keepDir) {
    fs.rmSync(dir, { recursive: true, force: true })
    if (name === 'default') fs.rmSync(path.join(KAFKA_HOME, 'cluster.json'), { force: true })
  }
  return true
}

// Runs that use a cluster (ids like run-<pid>-<x>, see test/helpers/global-setup.ts). When the owner
// run ends while another live run still uses the cluster, ownership passes on instead of stopping it.
function addUser(name, id) {
  const f = path.join(clusterDir(name), 'users')
  let users = []
  try { users = fs.readFileSync(f, 'utf8').split('\n').filter(Boolean) } catch {}
  if (!users.includes(id)) fs.appendFileSync(f, id + '\n')
}
function runAlive(id) { const m = /^run-(\d+)-/.exec(id); return !!m && isAlive(Number(m[1])) }
function runsOf(name) {
  let users = []
  try { users = fs.readFileSync(path.join(clusterDir(name), 'users'), 'utf8').split('\n').filter(Boolean) } catch {}
  let owner = null
  try { owner = fs.readFileSync(path.join(clusterDir(name), 'owner'), 'utf8').trim() } catch {}
  return { owner, users: [...new Set([...(owner ? [owner] : []), ...users])] }
}
/** `down --owner ID`: clusters some test run created and ID used; returns another live run still using it, if any. */
function otherLiveRun(name, id) {
  return runsOf(name).users.find((u) => u !== id && runAlive(u)) ?? null
}

export async function down(opts = {}) {
  const all = listClusters().filter((d) => !d.startsWith('.'))
  // --owner ID: every cluster a test run created (it has an owner) that run ID created or reused;
  // it is stopped unless another live run still uses it. Clusters started by hand have no owner.
  const usedBy = (n, id) => { const r = runsOf(n); return !!r.owner && r.users.includes(id) }
  const names = opts.all ? all : opts.owner ? all.filter((n) => usedBy(n, String(opts.owner))) : [opts.name ?? 'default']
  for (const n of names) {
    validateName(n)
    await withLock(n, async () => {
      if (opts.owner) {
        if (!usedBy(n, String(opts.owner))) return // re-created by someone else meanwhile
        const other = otherLiveRun(n, String(opts.owner))
        if (other) { log(`cluster ${n} is still used by ${other}: leaving it up`); return }
      }
      if (await downOne(n)) log(`cluster ${n} stopped`)
    })
  }
  if (opts.all) fs.rmSync(path.join(KAFKA_HOME, 'cluster.json'), { force: true })
  return names
}

function loadCluster(name) {
  const c = readJson(clusterFile(name))
  if (!c) fail(`cluster ${name} is not up (no ${clusterFile(name)})`)
  return c
}
function nodeOf(c, id) {
  const n = c.nodes.find((x) => x.id === Number(id))
  if (!n) fail(`cluster ${c.name} has no node ${id} (nodes: ${c.nodes.map((x) => x.id).join(',')})`)
  return n
}

export async function signalNode(name, id, what) {
  const c = loadCluster(name)
  const n = nodeOf(c, id)
  const pid = nodePid(name, n.id)
  if (what === 'kill') {
    if (isAlive(pid)) { process.kill(pid, 'SIGKILL'); for (let i = 0; i < 100 && isAlive(pid); i++) await sleep(50) }
    finishCds(n.dir, false)
    log(`node ${id} of ${name} killed (pid ${pid})`)
  } else if (what === 'stop') {
    process.kill(pid, 'SIGSTOP'); fs.writeFileSync(path.join(n.dir, 'stopped'), '')
    log(`node ${id} of ${name} stopped (SIGSTOP pid ${pid})`)
  } else if (what === 'cont') {
    process.kill(pid, 'SIGCONT'); try { fs.rmSync(path.join(n.dir, 'stopped')) } catch {}
    log(`node ${id} of ${name} continued (SIGCONT pid ${pid})`)
  } else fail(`unknown signal op ${what}`)
  return { id: n.id, pid }
}

export async function restartNode(name, id, { timeoutMs = 90000 } = {}) {
  return withLock(name, async () => {
    const c = loadCluster(name)
    const n = nodeOf(c, id)
    const old = nodePid(name, n.id)
    if (isAlive(old)) { log(`node ${id} still running (pid ${old}); stopping it first`); finishCds(n.dir, await stopPid(old, 10000)) }
    else finishCds(n.dir, false)
    const t0 = Date.now()
    // While the node was down, a client's outgoing connection can take one of its ports as its local
    // (ephemeral) port, and the restart then fails to bind. The node must keep its address, so wait
    // for the port to come free (that connection ends) and start it again.
    for (let attempt = 1; ; attempt++) {
      const pid = launchNode(name, n.id)
      n.pid = pid
      writeCluster(name, c)
      // wait until every running node (not killed, not SIGSTOPped) serves and lists the running set
      const running = c.nodes.filter((x) => x.id === n.id || (isAlive(nodePid(name, x.id)) && procState(nodePid(name, x.id)) !== 'T')).map((x) => x.id)
      try {
        await waitServing(name, { basePort: c.basePort }, running, { timeoutMs })
      } catch (e) {
        const bind = /exited during startup/.test(String(e?.message)) && /Address already in use/.test(tail(path.join(nodeDir(name, n.id), 'logs', 'server.log'), 300))
        if (!bind || attempt >= 4) throw e
        const own = Object.values(ports(c.basePort, n.id))
        log(`node ${id} of ${name} could not bind one of ports ${own.join(', ')} (attempt ${attempt}); waiting for it to come free`)
        for (const deadline = Date.now() + 30000; Date.now() < deadline;) {
          if ((await Promise.all(own.map(portFree))).every(Boolean)) break
          await new Promise((r) => setTimeout(r, 250))
        }
        continue
      }
      log(`node ${id} of ${name} restarted (pid ${pid}) and serving in ${Date.now() - t0}ms`)
      return { id: n.id, pid, ms: Date.now() - t0 }
    }
  })
}

export async function status(opts = {}) {
  const names = opts.name ? [opts.name] : listClusters().filter((d) => !d.startsWith('.'))
  const out = []
  for (const name of names) {
    const c = readJson(clusterFile(name))
    if (!c) { out.push({ name, up: false }); continue }
    const nodes = c.nodes.map((n) => ({ id: n.id, pid: n.pid, alive: isAlive(n.pid), state: procState(n.pid) }))
    out.push({ name, up: !!(await healthy(name)), bootstrap: c.bootstrap, saslBootstrap: c.saslBootstrap, sslBootstrap: c.sslBootstrap, saslSslBootstrap: c.saslSslBootstrap, nodes })
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Java helpers (Reader, Admin, Produce, sharing ToolArgs): compiled once with javac into
// .kafka/classes/<hash of sources+libs>, so a call costs a JVM start, not a compilation.

const TOOLS = ['Reader', 'Admin', 'Produce', 'Follow']
const TOOL_SOURCES = [...TOOLS, 'ToolArgs'].map((t) => `${t}.java`)
let toolsCp = null

export function toolsClasspath() {
  if (toolsCp) return toolsCp
  ensureLibs()
  const h = createHash('sha256')
  for (const f of TOOL_SOURCES) h.update(fs.readFileSync(path.join(SCRIPT_DIR, f)))
  h.update(fs.readFileSync(STAMP))
  const dir = path.join(KAFKA_HOME, 'classes', h.digest('hex').slice(0, 16))
  if (!fs.existsSync(path.join(dir, '.ok'))) {
    const tmp = `${dir}.tmp-${process.pid}`
    fs.rmSync(tmp, { recursive: true, force: true })
    fs.mkdirSync(tmp, { recursive: true })
    const javac = process.env.JAVA_HOME ? path.join(process.env.JAVA_HOME, 'bin', 'javac') : 'javac'
    const r = spawnSync(javac, ['-nowarn', '-d', tmp, '-cp', classpath(), ...TOOL_SOURCES.map((f) => path.join(SCRIPT_DIR, f))], { encoding: 'utf8' })
    if (r.error || r.status !== 0) {
      fs.rmSync(tmp, { recursive: true, force: true })
      if (r.error?.code === 'ENOENT') fail(`javac not found (${javac}): the Java helpers need a JDK 17+, not only a JRE; set JAVA_HOME`)
      fail(`javac of ${TOOL_SOURCES.join(', ')} failed:\n${r.stdout}\n${r.stderr}`)
    }
    fs.writeFileSync(path.join(tmp, '.ok'), '')
    try { fs.renameSync(tmp, dir) } catch { fs.rmSync(tmp, { recursive: true, force: true }) } // lost a race: fine
  }
  toolsCp = `${dir}${path.delimiter}${classpath()}`
  return toolsCp
}

/** java command line for a helper: ['java', ...args]. */
export function toolCommand(name, args = []) {
  return [javaBin(), [...TOOL_JVM_OPTS, `-Dlog4j2.configurationFile=${toolLog4j()}`, '-cp', toolsClasspath(), name, ...args]]
}

/** Run a helper; resolves stdout, rejects with stderr in the message. */
export function runTool(name, args = [], { input, timeoutMs = 120000 } = {}) {
  const [cmd, argv] = toolCommand(name, args)
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, argv, { maxBuffer: 256 * 1024 * 1024, timeout: timeoutMs }, (err, stdout, stderr) => {
      if (err) {
        const e = new HarnessError(`${name} ${args.join(' ')} failed (${err.killed ? `killed after ${timeoutMs}ms` : `exit ${err.code}`}):\n${stderr.trim()}`)
        e.stdout = stdout; e.stderr = stderr; e.exitCode = err.code
        reject(e)
      } else resolve(stdout)
    })
    if (input !== undefined) child.stdin.end(input)
    else child.stdin.end()
  })
}

// ---------------------------------------------------------------------------------------------
// DumpLogSegments -> JSON batches

function topicPartitionDirs(dataDir, topic) {
  let ents = []
  try { ents = fs.readdirSync(dataDir) } catch { return [] }
  const re = /^(.*)-(\d+)$/
  return ents.map((d) => { const m = re.exec(d); return m && m[1] === topic ? { dir: path.join(dataDir, d), partition: Number(m[2]) } : null })
    .filter(Boolean).sort((a, b) => a.partition - b.partition)
}

const BATCH_FIELDS = {
  baseOffset: 'n', lastOffset: 'n', count: 'n', baseSequence: 'n', lastSequence: 'n', producerId: 'n', producerEpoch: 'n',
  partitionLeaderEpoch: 'n', isTransactional: 'b', isControl: 'b', deleteHorizonMs: 'n', position: 'n', CreateTime: 'n', LogAppendTime: 'n',
  size: 'n', magic: 'n', compresscodec: 's', crc: 'n', isvalid: 'b',
}

/** Parse DumpLogSegments batch-level output (no --deep-iteration). */
export function parseDumpOutput(text) {
  const batches = []
  let file = null
  let cur = null
  for (const line of text.split('\n')) {
    if (line.startsWith('Dumping ')) { file = line.slice(8).trim(); continue }
    if (line.startsWith('baseOffset:')) {
      const b = { file }
      for (const m of line.matchAll(/(\w+): (\S+)/g)) {
        const [, k, v] = m
        const t = BATCH_FIELDS[k]
        if (t === 'n') b[k] = Number(v)
        else if (t === 'b') b[k] = v === 'true'
        else b[k] = v
      }
      const out = {
        partition: null, baseOffset: b.baseOffset, lastOffset: b.lastOffset, count: b.count, producerId: b.producerId,
        producerEpoch: b.producerEpoch, baseSequence: b.baseSequence, lastSequence: b.lastSequence,
        isTransactional: b.isTransactional, isControl: b.isControl, compressCodec: b.compresscodec, crc: b.crc, crcValid: b.isvalid,
        magic: b.magic, position: b.position, size: b.size, partitionLeaderEpoch: b.partitionLeaderEpoch,
        maxTimestamp: b.CreateTime ?? b.LogAppendTime ?? null, timestampType: b.CreateTime !== undefined ? 'CreateTime' : b.LogAppendTime !== undefined ? 'LogAppendTime' : null,
        controlType: null, file, records: [],
      }
      batches.push(out); cur = out; continue
    }
    // record lines (--deep-iteration): "| offset: 3 CreateTime: ... keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 0"
    if (line.startsWith('| offset:') && cur) {
      const r = {}
      for (const m of line.matchAll(/(\w+): (\[[^\]]*\]|\S+)/g)) r[m[1]] = m[2]
      const rec = {
        offset: Number(r.offset), timestamp: Number(r.CreateTime ?? r.LogAppendTime ?? -1), keySize: Number(r.keySize), valueSize: Number(r.valueSize),
        sequence: Number(r.sequence), headerKeys: r.headerKeys ? r.headerKeys.slice(1, -1).split(',').filter((x) => x.length) : [],
      }
      if (r.endTxnMarker) { rec.endTxnMarker = r.endTxnMarker; rec.coordinatorEpoch = Number(r.coordinatorEpoch); cur.controlType = r.endTxnMarker }
      cur.records.push(rec)
    }
  }
  return batches
}

/** Batches of `topic` from the log dirs of every node (or only `node`; only `partitions`). */
export async function dumpBatches(name, topic, { node, partitions } = {}) {
  const c = loadCluster(name)
  const nodes = node ? [nodeOf(c, node)] : c.nodes
  const out = []
  for (const n of nodes) {
    const tps = topicPartitionDirs(n.logDir, topic).filter((tp) => !partitions || partitions.includes(tp.partition))
    const files = []
    for (const tp of tps) for (const f of fs.readdirSync(tp.dir).filter((f) => f.endsWith('.log')).sort()) files.push({ file: path.join(tp.dir, f), partition: tp.partition })
    if (!files.length) continue
    // DumpLogSegments prints control records' marker type only with record-level output, so
    // use --deep-iteration and keep batch headers plus the marker of control batches.
    const args = [...TOOL_JVM_OPTS, `-Dlog4j2.configurationFile=${toolLog4j()}`, '-cp', classpath(), 'org.apache.kafka.tools.DumpLogSegments',
      '--deep-iteration', '--files', files.map((f) => f.file).join(',')]
    const { stdout } = await runJava(args)
    const byFile = new Map(files.map((f) => [f.file, f.partition]))
    for (const b of parseDumpOutput(stdout)) {
      out.push({ node: n.id, ...b, partition: byFile.get(b.file) ?? null })
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// CLI

async function main() {
  const [cmd, ...rest] = process.argv.slice(2)
  const o = cmd === 'tool' ? { _: [] } : parseCli(rest)
  QUIET = !!o.quiet
  switch (cmd) {
    case 'fetch': fetchLibs({ force: !!o.force }); fetchMskIamLibs({ force: !!o.force }); break
    case 'up': {
      const c = await up({ name: o.name, nodes: o.nodes, sasl: o.sasl, tls: o.tls, reauthMs: o['reauth-ms'], brokerProps: o['broker-props'], basePort: o['base-port'], tv: o.tv, owner: o.owner })
      if (o.json) process.stdout.write(JSON.stringify(c) + '\n')
      else console.log(`${c.name}: ${c.bootstrap}${c.saslBootstrap ? ` (SASL ${c.saslBootstrap})` : ''}${c.sslBootstrap ? ` (SSL ${c.sslBootstrap})` : ''}${c.saslSslBootstrap ? ` (SASL_SSL ${c.saslSslBootstrap})` : ''} transaction.version=${c.transactionVersion}`)
      break
    }
    case 'tls': console.log(JSON.stringify(ensureTls(), null, 2)); break
    case 'down': await down({ name: o.name, all: o.all, owner: o.owner }); break
    case 'status': console.log(JSON.stringify(await status({ name: o.name }), null, 2)); break
    case 'kill': case 'stop': case 'cont': {
      const [name, id] = o._
      if (!name || !id) fail(`usage: kafka.mjs ${cmd} <name> <nodeId>`)
      console.log(JSON.stringify(await signalNode(name, id, cmd)))
      break
    }
    case 'restart': {
      const [name, id] = o._
      if (!name || !id) fail('usage: kafka.mjs restart <name> <nodeId>')
      console.log(JSON.stringify(await restartNode(name, id, { timeoutMs: o.timeout ? Number(o.timeout) : undefined })))
      break
    }
    case 'probe': {
      const [hp] = o._
      const [h, p] = (hp ?? '').split(':')
      console.log(JSON.stringify(await probe(h || HOST, Number(p || DEFAULT_BASE_PORT))))
      break
    }
    case 'dump-batches': {
      const [name, topic] = o._
      if (!name || !topic) fail('usage: kafka.mjs dump-batches <name> <topic> [--node ID]')
      for (const b of await dumpBatches(name, topic, { node: o.node })) console.log(JSON.stringify(b))
      break
    }
    case 'classpath': console.log(classpath()); break
    case 'tool': {
      // kafka.mjs tool Reader <args...>: run a Java helper with inherited stdio
      const [name, ...targs] = rest
      if (!TOOLS.includes(name)) fail(`usage: kafka.mjs tool ${TOOLS.join('|')} <args...>`)
      const [jcmd, jargs] = toolCommand(name, targs)
      const r = spawnSync(jcmd, jargs, { stdio: 'inherit' })
      process.exit(r.status ?? 1)
    }
    default:
      console.error('usage: kafka.mjs fetch | up [--nodes N] [--name NAME] [--sasl] [--tls] [--reauth-ms N] [--broker-props k=v,k=v] [--base-port P] [--tv 1|2] [--json] | tls | down [--name NAME|--all] | status | kill|stop|cont|restart <name> <nodeId> | probe host:port | dump-batches <name> <topic>')
      process.exit(2)
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(`[kafka] error: ${e instanceof HarnessError ? e.message : e.stack || e}`)
    process.exit(1)
  })
}
