// The relay as its own process, started by its CLI exactly as an operator starts it. Suites that must
// show the process survives (a crash in-process would take the test runner down with it) and suites
// that measure its memory use this.
import { spawn, type ChildProcess } from 'node:child_process'
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

/** Starts `kafka-edge bridge --config <file>` with `config` (listen defaults to 127.0.0.1:0). */
export async function spawnRelay(config: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): Promise<RelayProcess> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafka-edge-relay-'))
  const file = path.join(dir, 'relay.json')
  fs.writeFileSync(file, JSON.stringify({ listen: '127.0.0.1:0', log: { level: 'info' }, ...config }))
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/bridge/cli.ts'), 'bridge', '--config', file], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env },
  })
  const output: string[] = []
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => { fs.rmSync(dir, { recursive: true, force: true }); resolve(code ?? signal ?? -1) }))
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`relay did not start in 30 s:\n${output.join('\n')}`)), 30_000)
    const collect = (stream: NodeJS.ReadableStream) => {
      let rest = ''
      stream.setEncoding('utf8')
      stream.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n')
        rest = lines.pop()!
        for (const line of lines) {
          if (output.length < 20_000) output.push(line)
          if (line.includes('"event":"listening"')) { clearTimeout(t); resolve((JSON.parse(line) as { url: string }).url) }
        }
      })
    }
    collect(child.stdout!)
    collect(child.stderr!)
    void exited.then((code) => { clearTimeout(t); reject(new Error(`relay exited (${code}) before listening:\n${output.join('\n')}`)) })
  })
  const u = new URL(url)
  const httpUrl = `${u.protocol === 'wss:' ? 'https' : 'http'}://${u.host}`
  let exitedYet = false
  void exited.then(() => { exitedYet = true })
  return {
    child, pid: child.pid!, port: Number(u.port), url, httpUrl, output, exited,
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
