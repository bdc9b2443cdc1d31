// Runs the telemetry Worker under `wrangler dev` (local mode: real workerd, Durable Objects in
// process) on 127.0.0.1. Telemetry off, no outbound lookups; the whole process group is stopped.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

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
  /** stdout + stderr so far (for failure messages). */
  log(): string
  stop(): Promise<void>
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
 * Bundles the Worker once (`wrangler deploy --dry-run --outdir`: the exact upload, nothing sent) into
 * a temp dir with a copy of wrangler.toml that runs it unbundled. `wrangler dev` then watches only
 * that snapshot, so edits elsewhere in the tree (other engineers, `npm run build`) cannot reload the
 * Worker and reset the Durable Object in the middle of a test.
 */
export function snapshotWorker(): { config: string; dir: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kafka-edge-worker-'))
  const r = spawnSync('npx', ['wrangler', 'deploy', '--dry-run', '--outdir', path.join(dir, 'bundle')], {
    cwd: ROOT, env: { ...process.env, ...WRANGLER_ENV }, encoding: 'utf8', timeout: 120_000,
  })
  if (r.status !== 0) {
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`wrangler deploy --dry-run failed (${r.status}):\n${r.stdout}\n${r.stderr}`)
  }
  const toml = readFileSync(path.join(ROOT, 'wrangler.toml'), 'utf8')
    .replace(/^main\s*=.*$/m, 'main = "bundle/index.js"\nno_bundle = true\nfind_additional_modules = true')
  const config = path.join(dir, 'wrangler.toml')
  writeFileSync(config, toml)
  return { config, dir }
}

/** `npx wrangler dev --port <free> --var K:V ...`; resolves once GET /healthz answers 200. */
export async function startWrangler(vars: Record<string, string>, opts: { timeoutMs?: number; snapshot?: boolean } = {}): Promise<WranglerDev> {
  const snap = opts.snapshot === false ? null : snapshotWorker()
  const port = await freePort()
  const args = ['wrangler', 'dev', '--port', String(port), '--ip', '127.0.0.1', '--inspector-port', String(await freePort())]
  for (const [k, v] of Object.entries(vars)) args.push('--var', `${k}:${v}`)
  // Durable Object state goes to a temp dir, not .wrangler/state in the tree.
  const state = snap ? path.join(snap.dir, 'state') : mkdtempSync(path.join(os.tmpdir(), 'kafka-edge-wrangler-state-'))
  args.push('--persist-to', state)
  if (snap) args.push('--config', snap.config)
  const child: ChildProcess = spawn('npx', args, {
    cwd: ROOT,
    env: { ...process.env, ...WRANGLER_ENV },
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
    rmSync(snap?.dir ?? state, { recursive: true, force: true })
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
  return { url, port, log: () => out, stop }
}
