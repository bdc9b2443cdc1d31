// The relay as its own process, started by its CLI exactly as an operator starts it. Suites that must
// show the process survives (a crash in-process would take the test runner down with it) and suites
// that measure its memory use this.
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

export interface RelayProcess {
  readonly child: ChildProcess
  readonly pid: number
  readonly port: number
  readonly url: string
  readonly httpUrl: string
  /** Every line the process wrote (stdout: JSON log lines; stderr: anything else). */
  readonly output: string[]
  /** Resolves with the exit code (or signal name) when the process ends. */
  readonly exited: Promise<number | string>
  alive(): boolean
  /** Resident set size in bytes, from /proc. */
  rss(): number
  /** SIGTERM (the relay drains), then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<number | string>
}

/** A port nothing listens on now (the kernel's pick, released at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port
      srv.close(() => resolve(port))
    })
  })
}

/** Starts `kafka-edge bridge --config <file>` with `config` on a free port (or config.listen), once /healthz answers. */
export async function spawnRelay(config: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): Promise<RelayProcess> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafka-edge-relay-'))
  const file = path.join(dir, 'relay.json')
  const listen = (config.listen as string | undefined) ?? `127.0.0.1:${await freePort()}`
  fs.writeFileSync(file, JSON.stringify({ log: { level: 'info' }, ...config, listen }))
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/bridge/cli.ts'), 'bridge', '--config', file], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env },
  })
  const output: string[] = []
  let exitedYet = false
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => {
    exitedYet = true
    fs.rmSync(dir, { recursive: true, force: true })
    resolve(code ?? signal ?? -1)
  }))
  for (const stream of [child.stdout!, child.stderr!]) {
    let rest = ''
    stream.setEncoding('utf8')
    stream.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n')
      rest = lines.pop()!
      for (const line of lines) if (output.length < 20_000) output.push(line)
    })
  }
  const tls = config.listenTls !== undefined
  const httpUrl = `${tls ? 'https' : 'http'}://${listen}`
  const url = `${tls ? 'wss' : 'ws'}://${listen}${(config.path as string | undefined) ?? '/kafka'}`
  for (const t0 = Date.now(); ;) {
    if (exitedYet) throw new Error(`relay exited (${await exited}) before it served:\n${output.join('\n')}`)
    if (Date.now() - t0 > 30_000) { child.kill('SIGKILL'); throw new Error(`relay did not serve /healthz in 30 s:\n${output.join('\n')}`) }
    const up = await fetch(`${httpUrl}/healthz`).then((r) => r.ok, () => false)
    if (up) break
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    child, pid: child.pid!, port: Number(listen.split(':').pop()), url, httpUrl, output, exited,
    alive: () => !exitedYet && child.exitCode === null && child.signalCode === null,
    rss: () => {
      const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))
      return m ? Number(m[1]) * 1024 : NaN
    },
    stop: async (graceMs = 5000) => {
      if (!exitedYet) child.kill('SIGTERM')
      const t = setTimeout(() => child.kill('SIGKILL'), graceMs)
      const code = await exited
      clearTimeout(t)
      return code
    },
  }
}
