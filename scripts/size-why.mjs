#!/usr/bin/env node
// What each JS budget in .size-limit.js is made of: the same bundle size-limit measures (esbuild,
// the check's own modifyEsbuildConfig, tree-shaken to its `import`), with the minified bytes each
// source module leaves in it. Run `npm run build:ts` first; it reads dist/.
//
//   npm run size:why                 every JS check, modules of 1 kB and more
//   npm run size:why -- sdk 0        checks whose name contains "sdk", every module
import { build } from 'esbuild'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import checks from '../.size-limit.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const [filter = '', min = '1000'] = process.argv.slice(2)

for (const check of checks.filter((c) => c.import && c.name.toLowerCase().includes(filter.toLowerCase()))) {
  const file = path.join(ROOT, check.path)
  const names = check.import.replace(/[{}]/g, '').trim()
  const base = {
    stdin: { contents: `import ${check.import} from ${JSON.stringify(file)}\nconsole.log(${names})\n`, resolveDir: ROOT, loader: 'js' },
    bundle: true, write: false, metafile: true, outfile: path.join(ROOT, 'size-why.js'),
    minifyIdentifiers: true, minifySyntax: true, minifyWhitespace: true, treeShaking: true,
  }
  const result = await build(check.modifyEsbuildConfig ? check.modifyEsbuildConfig(base) : base)
  const out = result.outputFiles[0].contents
  console.log(`\n${check.name}: ${(out.length / 1000).toFixed(1)} kB minified, ${(gzipSync(out, { level: 9 }).length / 1000).toFixed(2)} kB gzip (limit ${check.limit})`)
  const inputs = Object.entries(Object.values(result.metafile.outputs)[0].inputs)
    .map(([name, { bytesInOutput }]) => [path.relative(ROOT, path.resolve(ROOT, name)), bytesInOutput])
    .filter(([, bytes]) => bytes >= Number(min))
    .sort((a, b) => b[1] - a[1])
  for (const [name, bytes] of inputs) console.log(`${String(bytes).padStart(8)}  ${name}`)
}
