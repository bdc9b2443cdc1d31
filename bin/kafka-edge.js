#!/usr/bin/env node
// Runs the compiled CLI from dist/ when the package is built; in a source checkout falls back to
// tsx so `npx kafka-edge bridge ...` works without a build step.
import { existsSync } from 'node:fs'

const compiled = new URL('../dist/bridge/cli.js', import.meta.url)
let cli
if (existsSync(compiled)) {
  cli = await import(compiled.href)
} else {
  const { register } = await import('tsx/esm/api')
  register()
  cli = await import(new URL('../src/bridge/cli.ts', import.meta.url).href)
}
process.exitCode = await cli.main(process.argv.slice(2))
