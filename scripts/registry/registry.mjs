#!/usr/bin/env node
// Apicurio Registry for the schema registry tests: fetch it from Maven Central, start and stop it.
//
//   node scripts/registry/registry.mjs fetch                  (mvn into ~/.m2, unpacked into .kafka/apicurio;
//                                                              test/registry-java built into .kafka/registry-java)
//   node scripts/registry/registry.mjs up [--name NAME] [--port P] [--json]
//   node scripts/registry/registry.mjs down --name NAME
//   node scripts/registry/registry.mjs java                   (the Java 21+ it runs on, or exit 1)
//
// It binds 127.0.0.1 only: the HTTP port and the management port (which Quarkus binds to 0.0.0.0:9000
// unless told), with in-memory storage and no authentication. Its Confluent-compatible API is
// http://127.0.0.1:P/apis/ccompat/v7. Apicurio 3 needs Java 21+: `java` finds one (JAVA21_HOME, JAVA_HOME,
// then /usr/lib/jvm/* and /opt/*), since the machines' default Java is 17.
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const SCRIPT_DIR = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.resolve(SCRIPT_DIR, '../..')
const HOME = process.env.KAFKA_EDGE_HOME ? path.resolve(process.env.KAFKA_EDGE_HOME) : path.join(ROOT, '.kafka')
const POM = path.join(SCRIPT_DIR, 'pom.xml')
export const APP = path.join(HOME, 'apicurio')
const RUNS = path.join(HOME, 'registries')
const SERDE_SRC = path.join(ROOT, 'test', 'registry-java')
// Apicurio's Java serdes, the reference the kafka-edge serializers' bytes are compared with.
export const SERDE = path.join(HOME, 'registry-java')
const HOST = '127.0.0.1'

const fail = (msg) => { throw new Error(msg) }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const pomHash = () => createHash('sha256').update(fs.readFileSync(POM)).digest('hex')

export function ready() {
  try { return JSON.parse(fs.readFileSync(path.join(APP, '.stamp'), 'utf8')).pom === pomHash() && fs.existsSync(path.join(APP, 'quarkus-run.jar')) } catch { return false }
}

export function fetchApp() {
  if (ready()) { console.error(`[registry] Apicurio up to date (${APP})`); return }
  const tmp = `${APP}.tmp-${process.pid}`
  fs.rmSync(tmp, { recursive: true, force: true })
  fs.mkdirSync(tmp, { recursive: true })
  console.error('[registry] fetching Apicurio Registry with Maven ...')
  const r = spawnSync('mvn', ['-q', '-B', '-f', POM, 'dependency:copy-dependencies', `-DoutputDirectory=${tmp}`], { encoding: 'utf8' })
  if (r.status !== 0) fail(`mvn failed (${r.status}):\n${r.stdout}\n${r.stderr}`)
  const archive = fs.readdirSync(tmp).find((f) => f.endsWith('.tar.gz')) ?? fail('Maven produced no .tar.gz')
  const t = spawnSync('tar', ['xzf', archive], { cwd: tmp, encoding: 'utf8' })
  if (t.status !== 0) fail(`tar failed: ${t.stderr}`)
  fs.rmSync(path.join(tmp, archive))
  fs.writeFileSync(path.join(tmp, '.stamp'), JSON.stringify({ pom: pomHash(), archive, when: new Date().toISOString() }) + '\n')
  fs.rmSync(APP, { recursive: true, force: true })
  fs.renameSync(tmp, APP)
  console.error(`[registry] unpacked ${archive} into ${APP}`)
}

function serdeHash() {
  const h = createHash('sha256')
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const f = path.join(dir, e.name)
      if (e.isDirectory()) walk(f)
      else h.update(path.relative(SERDE_SRC, f)).update(fs.readFileSync(f))
    }
  }
  walk(SERDE_SRC)
  return h.digest('hex')
}

export function serdeReady() {
  try { return JSON.parse(fs.readFileSync(path.join(SERDE, '.stamp'), 'utf8')).src === serdeHash() } catch { return false }
}

/** The Java classpath of the serde program (test/registry-java), built by buildSerde(). */
export const serdeClasspath = () => [path.join(SERDE, 'target', 'classes'), path.join(SERDE, 'lib', '*')].join(path.delimiter)

/** Builds test/registry-java with Maven (its jars from Maven Central, cached in ~/.m2) into .kafka/registry-java. */
export function buildSerde() {
  if (serdeReady()) { console.error(`[registry] Java serdes up to date (${SERDE})`); return }
  const tmp = `${SERDE}.tmp-${process.pid}`
  fs.rmSync(tmp, { recursive: true, force: true })
  console.error('[registry] building the Java serde program with Maven ...')
  const r = spawnSync('mvn', ['-q', '-B', '-f', path.join(SERDE_SRC, 'pom.xml'), 'compile', `-Dout=${tmp}`], { encoding: 'utf8' })
  if (r.status !== 0) { fs.rmSync(tmp, { recursive: true, force: true }); fail(`mvn failed (${r.status}):\n${r.stdout}\n${r.stderr}`) }
  fs.writeFileSync(path.join(tmp, '.stamp'), JSON.stringify({ src: serdeHash(), when: new Date().toISOString() }) + '\n')
  fs.rmSync(SERDE, { recursive: true, force: true })
  fs.renameSync(tmp, SERDE)
  console.error(`[registry] built ${SERDE}`)
}

function javaVersion(bin) {
  const r = spawnSync(bin, ['-version'], { encoding: 'utf8' })
  const m = /version "(\d+)/.exec(`${r.stderr}${r.stdout}`)
  return m ? Number(m[1]) : 0
}

/** A java binary of version 21 or later, or null. */
export function java21() {
  const homes = [process.env.JAVA21_HOME, process.env.JAVA_HOME]
  for (const dir of ['/usr/lib/jvm', '/opt']) {
    try { for (const e of fs.readdirSync(dir).sort().reverse()) homes.push(path.join(dir, e)) } catch { /* absent */ }
  }
  for (const h of homes) {
    if (!h) continue
    const bin = path.join(h, 'bin', 'java')
    if (fs.existsSync(bin) && javaVersion(bin) >= 21) return bin
  }
  return null
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.once('error', reject)
    srv.listen({ port: 0, host: HOST }, () => { const { port } = srv.address(); srv.close(() => resolve(port)) })
  })
}

function alive(pid) { try { process.kill(pid, 0); return true } catch { return false } }

export async function up({ name = 'default', port } = {}) {
  if (!ready()) fetchApp()
  const dir = path.join(RUNS, name)
  const state = path.join(dir, 'registry.json')
  try {
    const s = JSON.parse(fs.readFileSync(state, 'utf8'))
    if (alive(s.pid) && (await fetch(`${s.url}/subjects`)).ok) return s
  } catch { /* not running */ }
  await down({ name })
  const bin = java21() ?? fail('Apicurio Registry needs Java 21 or later: none found (set JAVA21_HOME)')
  fs.mkdirSync(dir, { recursive: true })
  const http = Number(port ?? await freePort())
  const management = await freePort()
  const out = fs.openSync(path.join(dir, 'stdout.log'), 'w')
  const args = ['-Xms64m', '-Xmx384m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-XX:-UsePerfData',
    `-Dquarkus.http.host=${HOST}`, `-Dquarkus.http.port=${http}`,
    `-Dquarkus.management.host=${HOST}`, `-Dquarkus.management.port=${management}`,
    '-Dquarkus.log.level=WARN', '-Dquarkus.banner.enabled=false',
    '-jar', path.join(APP, 'quarkus-run.jar')]
  const child = spawn(bin, args, { detached: true, stdio: ['ignore', out, out], cwd: dir })
  child.unref()
  const base = `http://${HOST}:${http}`
  const s = { name, pid: child.pid, port: http, managementPort: management, base, url: `${base}/apis/ccompat/v7` }
  fs.writeFileSync(state, JSON.stringify(s, null, 2) + '\n')
  const deadline = Date.now() + 120_000
  for (;;) {
    if (!alive(child.pid)) fail(`Apicurio exited at start:\n${fs.readFileSync(path.join(dir, 'stdout.log'), 'utf8').slice(-3000)}`)
    try { if ((await fetch(`${s.url}/subjects`)).ok) return s } catch { /* not yet */ }
    if (Date.now() > deadline) { await down({ name }); fail('Apicurio did not answer within 120 s') }
    await sleep(250)
  }
}

export async function down({ name } = {}) {
  if (!name) fail('down needs --name')
  const state = path.join(RUNS, name, 'registry.json')
  let s
  try { s = JSON.parse(fs.readFileSync(state, 'utf8')) } catch { return }
  if (alive(s.pid)) {
    process.kill(s.pid, 'SIGTERM')
    for (let i = 0; i < 100 && alive(s.pid); i++) await sleep(100)
    if (alive(s.pid)) process.kill(s.pid, 'SIGKILL')
  }
  fs.rmSync(state, { force: true })
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [cmd, ...rest] = process.argv.slice(2)
  const opt = (k) => { const i = rest.indexOf(`--${k}`); return i >= 0 ? rest[i + 1] : undefined }
  try {
    if (cmd === 'fetch') { fetchApp(); buildSerde() }
    else if (cmd === 'up') { const s = await up({ name: opt('name'), port: opt('port') }); console.log(rest.includes('--json') ? JSON.stringify(s) : `${s.name}: ${s.url}`) }
    else if (cmd === 'down') await down({ name: opt('name') })
    else if (cmd === 'java') { const j = java21(); if (!j) process.exit(1); console.log(j) }
    else fail('usage: registry.mjs fetch | up [--name N] [--port P] [--json] | down --name N | java')
  } catch (e) { console.error(`[registry] ${e.message}`); process.exit(1) }
}
