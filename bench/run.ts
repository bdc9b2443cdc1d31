// npm run bench -- <suite>: runs bench/<suite>.ts, whose default export does the measuring,
// prints its table and writes bench/results/<suite>.json.
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const NOT_SUITES = new Set(['run', 'lib', 'ts-batch-builder', 'peers'])
const suites = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && !NOT_SUITES.has(f.slice(0, -3)))
  .map((f) => f.slice(0, -3))

const name = process.argv[2]
if (!name || !/^[a-z0-9-]+$/.test(name) || !existsSync(join(here, `${name}.ts`)) || NOT_SUITES.has(name)) {
  console.error(`usage: npm run bench -- <suite>   (suites: ${suites.join(', ')})`)
  process.exit(2)
}
const suite = (await import(pathToFileURL(join(here, `${name}.ts`)).href)) as { default: (args: string[]) => Promise<void> }
await suite.default(process.argv.slice(3))
