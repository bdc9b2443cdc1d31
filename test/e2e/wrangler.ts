// Runs the telemetry Worker under `wrangler dev` (local mode: real workerd, Durable Objects in
// process) on 127.0.0.1. Telemetry off, no outbound lookups; the whole process group is stopped.
import { spawn, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

/** One shard's sample of a metric in the telemetry Worker's /metrics text (NaN when it is absent). */
export const shardMetric = (text: string, name: string, shard = 0) => Number(new RegExp(`^${name}\\{shard="${shard}"\\} (\\S+)$`, 'm').exec(text)?.[1])

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })
}

export interface WranglerDev {
  url: string
  port: number
  /** wrangler dev's inspector (Chrome DevTools protocol over WebSocket; bench/worker.ts profiles the isolate through it). */
  inspectorPort: number
  /** The process group of npx, wrangler, esbuild and workerd (the group leader's pid). */
  pgid: number
  /** stdout + stderr so far (for failure messages). */
  log(): string
  stop(): Promise<void>
}

/**
 * Waits until every shard of the Worker reports an empty backlog on /healthz (a durable accept answers
 * before the object produces). Returns the last health seen; throws if the backlog did not drain in time.
 */
export async function drained(dev: WranglerDev, timeoutMs = 60_000): Promise<{ backlog: number }> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const h = await (await fetch(`${dev.url}/healthz`, { signal: AbortSignal.timeout(10_000) })).json() as { backlog: number }
    if (h.backlog === 0) return h
    if (Date.now() > deadline) throw new Error(`the Worker's backlog did not drain within ${timeoutMs} ms: ${h.backlog} left`)
    await new Promise((r) => setTimeout(r, 300))
  }
}

/**
 * Environment every wrangler run gets, so it talks to nothing but 127.0.0.1: no metrics, no cf
 * fetch, no banner (the banner does an npm update check) and, should any other path try that check,
 * an npm registry on a closed local port.
 */
export const WRANGLER_ENV = {
  WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_HIDE_BANNER: 'true',
  npm_config_registry: 'http://127.0.0.1:9/', WRANGLER_LOG: 'info', NO_COLOR: '1',
}

/**
 * Copies what the Worker is built from (wrangler.toml, tsconfig.json, package.json, worker/, src/edge,
 * build/core.wasm; node_modules linked) into a temp dir, and `wrangler dev` runs there. wrangler dev
 * watches its sources; edits elsewhere in the tree (other engineers, `npm run build`) would otherwise
 * reload the Worker and reset the Durable Object in the middle of a test. It is still plain
 * `wrangler dev` (its dev-only middlewares included), on a consistent copy of the sources.
 */
export function snapshotWorker(): { dir: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kafka-edge-worker-'))
  const wasm = path.join(ROOT, 'build', 'core.wasm')
  if (!existsSync(wasm)) throw new Error('build/core.wasm is missing: run `npm run build:wasm` first')
  for (const f of ['wrangler.toml', 'tsconfig.json', 'package.json']) cpSync(path.join(ROOT, f), path.join(dir, f))
  cpSync(path.join(ROOT, 'src', 'edge'), path.join(dir, 'src', 'edge'), { recursive: true })
  cpSync(path.join(ROOT, 'worker'), path.join(dir, 'worker'), { recursive: true })
  cpSync(wasm, path.join(dir, 'build', 'core.wasm'))
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir')
  return { dir }
}

/**
 * A snapshot whose Worker entry is `source`, written to worker/<name>.ts (a test's own Worker over the
 * repository's classes: same script and class names, so the same Durable Object storage). Returns
 * the project dir, for startWrangler's `project`; the caller removes it.
 */
export function snapshotWorkerWithEntry(name: string, source: string): string {
  const { dir } = snapshotWorker()
  writeFileSync(path.join(dir, 'worker', `${name}.ts`), source)
  const toml = path.join(dir, 'wrangler.toml')
  writeFileSync(toml, readFileSync(toml, 'utf8').replace(/^main = .*$/m, `main = "worker/${name}.ts"`))
  return dir
}

export interface StartOptions {
  timeoutMs?: number
  snapshot?: boolean
  port?: number
  /**
   * Environment of the wrangler process (over this process's); undefined removes a variable. workerd
   * inherits it: NODE_EXTRA_CA_CERTS here is what makes a local Worker trust a private CA.
   */
  env?: Record<string, string | undefined>
  /** Written to .dev.vars in the snapshot, where `wrangler dev` reads the secrets `wrangler secret put` sets when deployed. */
  secrets?: Record<string, string>
  /**
   * Durable Object storage directory, kept by stop(): a second startWrangler with the same one is
   * the same Worker restarted (objects lose memory and connections, keep their storage).
   */
  state?: string
  /** Run this directory's own wrangler.toml instead of the repository's Worker (no snapshot). */
  project?: string
}

export async function startWrangler(vars: Record<string, string>, opts: StartOptions = {}): Promise<WranglerDev> {
  const snap = opts.snapshot === false || opts.project ? null : snapshotWorker()
  if (opts.secrets) {
    if (!snap) throw new Error('startWrangler: secrets need the snapshot (a .dev.vars in the tree would be picked up by every wrangler dev)')
    writeFileSync(path.join(snap.dir, '.dev.vars'), Object.entries(opts.secrets).map(([k, v]) => `${k}=${JSON.stringify(v)}\n`).join(''))
  }
  const env: Record<string, string | undefined> = { ...process.env, ...WRANGLER_ENV, ...opts.env }
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k]
  const port = opts.port ?? await freePort()
  const inspectorPort = await freePort()
  const args = ['wrangler', 'dev', '--port', String(port), '--ip', '127.0.0.1', '--inspector-port', String(inspectorPort)]
  for (const [k, v] of Object.entries(vars)) args.push('--var', `${k}:${v}`)
  // Durable Object state goes to a temp dir, not .wrangler/state in the tree.
  const state = opts.state ?? (snap ? path.join(snap.dir, 'state') : mkdtempSync(path.join(os.tmpdir(), 'kafka-edge-wrangler-state-')))
  args.push('--persist-to', state)
  const child: ChildProcess = spawn('npx', args, {
    cwd: snap?.dir ?? opts.project ?? ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group: stop() ends npx, wrangler, esbuild and workerd together
  })
  let out = ''
  child.stdout!.on('data', (d) => { out += d })
  child.stderr!.on('data', (d) => { out += d })
  let exited = false
  const exitedP = new Promise<void>((r) => child.once('exit', () => { exited = true; r() }))
  const stop = async () => {
    if (exited) return
    try { process.kill(-child.pid!, 'SIGTERM') } catch { /* gone */ }
    const killed = await Promise.race([exitedP.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5000))])
    if (!killed) { try { process.kill(-child.pid!, 'SIGKILL') } catch { /* gone */ } await exitedP }
    // workerd may outlive its parent by a moment; make sure the group is gone.
    try { process.kill(-child.pid!, 'SIGKILL') } catch { /* gone */ }
    if (snap) rmSync(snap.dir, { recursive: true, force: true })
    if (!opts.state && !snap) rmSync(state, { recursive: true, force: true })
  }
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + (opts.timeoutMs ?? 90_000)
  for (;;) {
    if (exited) throw new Error(`wrangler dev exited before it was ready:\n${out}`)
    try {
      const r = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) })
      if (r.status === 200) break
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) { await stop(); throw new Error(`wrangler dev not ready within ${opts.timeoutMs ?? 90_000} ms:\n${out}`) }
    await new Promise((r) => setTimeout(r, 300))
  }
  return { url, port, inspectorPort, pgid: child.pid!, log: () => out, stop }
}
