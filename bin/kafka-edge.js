#!/usr/bin/env node
// Runs the compiled CLI from dist/ when the package is built; in a source checkout falls back to
// tsx so `npx kafka-edge bridge ...` works without a build step.
import { existsSync } from 'node:fs'

const compiled = new URL('../dist/bridge/cli.js', import.meta.url)
let cli
try {
  if (existsSync(compiled)) {
    cli = await import(compiled.href)
  } else {
    const { register } = await import('tsx/esm/api')
    register()
    cli = await import(new URL('../src/bridge/cli.ts', import.meta.url).href)
  }
} catch (e) {
  // The relay's ws and hono are optional peer dependencies: a producer-only install has neither.
  const missing = e?.code === 'ERR_MODULE_NOT_FOUND' && /'(ws|hono)'/.exec(String(e.message))?.[1]
  if (!missing) throw e
  process.stderr.write(`kafka-edge: the relay needs the packages ws and hono (optional peer dependencies of kafka-edge; '${missing}' is missing). Install them next to kafka-edge: npm install ws hono\n`)
  process.exit(1)
}
process.exitCode = await cli.main(process.argv.slice(2))
