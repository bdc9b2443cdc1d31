// Runs the telemetry Worker under `wrangler dev` (local mode: real workerd, Durable Objects in
// process) on 127.0.0.1. Telemetry off, no outbound lookups; the whole process group is stopped.
import { spawn, type ChildProcess } from 'node:child_process'
import net from 'node:net'
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

/** Environment every wrangler run gets: no metrics, no cf fetch, nothing but 127.0.0.1. */
export const WRANGLER_ENV = { WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_LOG: 'info', NO_COLOR: '1' }

/** `npx wrangler dev --port <free> --var K:V ...`; resolves once GET /healthz answers 200. */
export async function startWrangler(vars: Record<string, string>, opts: { timeoutMs?: number; persistTo?: string } = {}): Promise<WranglerDev> {
  const port = await freePort()
  const args = ['wrangler', 'dev', '--port', String(port), '--ip', '127.0.0.1', '--inspector-port', String(await freePort())]
  for (const [k, v] of Object.entries(vars)) args.push('--var', `${k}:${v}`)
  if (opts.persistTo) args.push('--persist-to', opts.persistTo)
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
