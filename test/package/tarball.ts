// The package as users get it: `npm pack` of the built tree, installed into fresh projects.
//
// One tarball per test run (keyed by KAFKA_EDGE_RUN_ID, which every test file of a run shares), so
// the shape test, the snippet compile and the conformance suite all look at the same bytes. Fresh
// projects install it with --prefer-offline: the tarball has no dependencies of its own (hono and ws
// are optional peers), and what a project adds beside it (the relay's ws and hono) comes from the
// npm cache that installing this repository filled.
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ROOT } from '../e2e/wrangler.js'

export function run(command: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd: opts.cwd ?? ROOT, env: opts.env ?? process.env, timeout: opts.timeoutMs ?? 180_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${command} ${args.join(' ')} failed (${err.killed ? 'timed out' : `exit ${err.code}`}):\n${stdout.slice(-3000)}\n${stderr.slice(-3000)}`))
      else resolve({ stdout, stderr })
    })
  })
}

function newestMtime(dir: string): number {
  let newest = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name)
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs)
  }
  return newest
}

/** `npm test` builds first; a test file run on its own builds when src/ is newer than dist/. */
async function ensureBuilt(): Promise<void> {
  const dist = path.join(ROOT, 'dist', 'edge', 'index.js')
  if (existsSync(dist) && existsSync(path.join(ROOT, 'build', 'core.wasm')) && statSync(dist).mtimeMs >= newestMtime(path.join(ROOT, 'src'))) return
  await run('npm', ['run', 'build'], { timeoutMs: 300_000 })
}

let packed: Promise<string> | undefined

/** Absolute path of this run's kafka-edge-<version>.tgz. */
export function tarball(): Promise<string> {
  packed ??= (async () => {
    const dir = path.join(ROOT, '.tmp', 'pack', process.env.KAFKA_EDGE_RUN_ID ?? `pid-${process.pid}`)
    const existing = existsSync(dir) ? readdirSync(dir).find((f) => f.endsWith('.tgz')) : undefined
    if (existing) return path.join(dir, existing)
    await ensureBuilt()
    mkdirSync(dir, { recursive: true })
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir])
    const [info] = JSON.parse(stdout) as { filename: string }[]
    return path.join(dir, info!.filename)
  })()
  return packed
}

/** npm's own environment from `npm test` (npm_config_*, npm_package_*) would leak into a fresh project's npm. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_(config|package|lifecycle)_/i.test(k)) env[k] = v
  return { ...env, ...extra }
}

/** A new directory in the system temp dir with a package.json, kafka-edge from the tarball and `extra` packages installed. */
export async function freshProject(name: string, extra: string[] = [], pkg: Record<string, unknown> = {}): Promise<string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `kafka-edge-${name}-`))
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: `kafka-edge-${name}`, private: true, type: 'module', ...pkg }, null, 2))
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error', await tarball(), ...extra], { cwd: dir, env: cleanEnv() })
  return dir
}
