#!/usr/bin/env node
// Builds the test Collector (main.go: the contrib kafkareceiver into the contrib fileexporter) or,
// with `pdata`, pdata/main.go (pdata keys and decoding) from the Go module proxy, once per
// go.mod/go.sum/sources: the binary is cached as ~/.cache/kafka-edge/otelcol/<name>-<hash> and its
// path printed. Needs `go` (1.21 or later fetches the toolchain go.mod names by itself: GOTOOLCHAIN=auto).
// Usage: node scripts/otelcol/build.mjs [pdata] [--quiet] [--cached: print the path if built, else exit 3]
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const dir = path.dirname(fileURLToPath(import.meta.url))
const target = process.argv.includes('pdata') ? 'pdata' : 'otelcol'
const hash = createHash('sha256')
for (const f of ['go.mod', 'go.sum', target === 'pdata' ? 'pdata/main.go' : 'main.go']) hash.update(readFileSync(path.join(dir, f)))
const cache = path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'kafka-edge', 'otelcol')
const bin = path.join(cache, `${target}-${hash.digest('hex').slice(0, 16)}`)

if (!existsSync(bin) && process.argv.includes('--cached')) process.exit(3)
if (!existsSync(bin)) {
  mkdirSync(cache, { recursive: true })
  const quiet = process.argv.includes('--quiet')
  if (!quiet) console.error(`building ${target} into ${bin} (first time only; the Collector takes minutes on 2 cores)`)
  const tmp = `${bin}.tmp-${process.pid}`
  execFileSync('nice', ['-n', '10', 'go', 'build', '-trimpath', '-ldflags=-s -w', '-o', tmp, target === 'pdata' ? './pdata' : '.'], {
    cwd: dir, stdio: ['ignore', quiet ? 'ignore' : 'inherit', 'inherit'],
    env: { ...process.env, GOTOOLCHAIN: process.env.GOTOOLCHAIN ?? 'auto' },
  })
  renameSync(tmp, bin)
}
console.log(bin)
