// Finds the deno and bun executables the devDependencies installed. npm's `deno` and `bun` packages
// get their binary from a per-platform optional dependency (@deno/linux-x64-glibc, @oven/bun-linux-x64,
// ...), and their postinstall scripts only move or link it into place. Looking in the platform
// packages first means the tests still find the binaries where install scripts did not run
// (`npm ci --ignore-scripts`, or an npm that holds scripts back until they are approved).
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import path from 'node:path'

export interface RuntimeBinary {
  path: string
  /** `--version` output, first line. */
  version: string
}

function scoped(modules: string, scope: string, prefix: string, file: string[]): string[] {
  const dir = path.join(modules, scope)
  if (!existsSync(dir)) return []
  return readdirSync(dir).filter((d) => d.startsWith(prefix)).map((d) => path.join(dir, d, ...file))
}

function firstThatRuns(candidates: string[]): RuntimeBinary | { missing: string } {
  const tried: string[] = []
  for (const p of candidates) {
    if (!existsSync(p)) continue
    const r = spawnSync(p, ['--version'], { encoding: 'utf8', timeout: 20_000 })
    if (r.status === 0 && r.stdout.trim()) return { path: p, version: r.stdout.trim().split('\n')[0]! }
    tried.push(`${p} (${r.error?.message ?? `exit ${r.status}: ${(r.stderr || r.stdout).trim().slice(0, 120)}`})`)
  }
  return { missing: tried.length ? `none of these runs: ${tried.join('; ')}` : `not installed (looked for ${candidates.join(', ')}); run npm ci` }
}

/** npm's `deno` package: the binary is in @deno/<platform>, and in deno/ once its postinstall ran. */
export function denoBinary(root: string): RuntimeBinary | { missing: string } {
  const modules = path.join(root, 'node_modules')
  const exe = process.platform === 'win32' ? 'deno.exe' : 'deno'
  return firstThatRuns([...scoped(modules, '@deno', '', [exe]), path.join(modules, 'deno', exe)])
}

/** npm's `bun` package: the binary is in @oven/bun-<platform>/bin until its postinstall moves it to bun/bin/bun.exe. */
export function bunBinary(root: string): RuntimeBinary | { missing: string } {
  const modules = path.join(root, 'node_modules')
  return firstThatRuns([...scoped(modules, '@oven', 'bun-', ['bin', process.platform === 'win32' ? 'bun.exe' : 'bun']), path.join(modules, 'bun', 'bin', 'bun.exe')])
}
