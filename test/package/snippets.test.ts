// Every TypeScript snippet in the shipped Markdown (README.md, docs/*.md) compiles with `tsc --strict`
// against the package as installed from its tarball, under both module resolutions apps use:
// nodenext (Node, Deno, Bun without a bundler) and bundler (Vite, esbuild, wrangler). Recipe blocks
// (marked `<!-- recipe: path -->`) are instead checked to be the region of the app the conformance
// suite runs, so they cannot drift from what was run either.
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT } from '../e2e/wrangler.js'
import { cleanEnv, freshProject, run } from './tarball.js'

interface Snippet { doc: string; line: number; lang: string; code: string; recipe?: string }

function snippets(doc: string): Snippet[] {
  const lines = readFileSync(path.join(ROOT, doc), 'utf8').split('\n')
  const out: Snippet[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w+)\s*$/.exec(lines[i]!)
    if (!open) continue
    const end = lines.indexOf('```', i + 1)
    const recipe = /^<!-- recipe: (\S+) -->$/.exec(lines[i - 1] ?? '')?.[1]
    out.push({ doc, line: i + 2, lang: open[1]!, code: lines.slice(i + 1, end).join('\n') + '\n', recipe })
    i = end
  }
  return out
}

const DOCS = ['README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]
const ALL = DOCS.flatMap(snippets)
const TS = ALL.filter((s) => s.lang === 'ts' && !s.recipe)

// A block that is only a settings object (docs/security.md lists one per provider) is checked as the
// settings it shows; `fs` is what those blocks read PEM files with.
const isSettings = (s: Snippet) => s.code.trimStart().startsWith('{')
const PRELUDE = (s: Snippet) => [`// ${s.doc}:${s.line}`, ...(isSettings(s) ? ["import fs from 'node:fs'", "import type { ProducerSettings } from 'kafka-edge'", 'export const settings: Partial<ProducerSettings> ='] : [])]
// A snippet without import/export would be a script sharing one global scope with the others.
const wrap = (s: Snippet) => (isSettings(s) || /^\s*(import|export)\s/m.test(s.code) ? s.code : `${s.code}export {}\n`)

describe('recipes are the code the conformance suite runs', () => {
  const recipes = ALL.filter((s) => s.recipe)
  it('there are recipes for Node, Deno, Bun, Workers and pages (Vite, esbuild)', () => {
    expect(recipes.map((r) => r.recipe).sort()).toEqual([
      'test/conformance/apps/bun/main.ts', 'test/conformance/apps/deno/main.ts', 'test/conformance/apps/node/main.mjs',
      'test/conformance/apps/page/esbuild-main.js', 'test/conformance/apps/page/vite-main.js',
      'test/conformance/apps/worker/src/recipe.js', 'test/conformance/apps/worker/wrangler.toml',
    ])
  })
  for (const r of recipes) {
    it(`${r.doc}:${r.line} is ${r.recipe}`, () => {
      const source = readFileSync(path.join(ROOT, r.recipe!), 'utf8')
      const region = /\/\/ #region recipe\n([\s\S]*?)\/\/ #endregion recipe\n/.exec(source)?.[1] ?? source
      expect(r.code).toBe(region)
    })
  }
})

describe('TypeScript snippets compile against the installed package', () => {
  let project: string
  beforeAll(async () => {
    // docs/otlp.md configures the OTel JS SDK's exporter: the version the repository's tests run.
    const otel = '@opentelemetry/exporter-trace-otlp-proto'
    const devDependencies = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies
    project = await freshProject('snippets', [`${otel}@${devDependencies[otel]}`])
    const dir = path.join(project, 'snippets')
    mkdirSync(dir)
    for (const [i, s] of TS.entries()) {
      writeFileSync(path.join(dir, `s${i}.ts`), `${PRELUDE(s).join('\n')}\n${wrap(s)}`)
    }
    // The package's own types for its .wasm subpaths, with no ambient '*.wasm' declaration to lean on.
    writeFileSync(path.join(dir, 'wasm-import.ts'), "import core from 'kafka-edge/core.wasm'\nimport lz4 from 'kafka-edge/core-lz4.wasm'\nexport const modules: WebAssembly.Module[] = [core, lz4]\n")
    const base = {
      strict: true, target: 'ES2022', lib: ['ES2022', 'DOM'], noEmit: true, skipLibCheck: true,
      types: ['node'], typeRoots: [path.join(ROOT, 'node_modules', '@types')],
    }
    writeFileSync(path.join(project, 'tsconfig.nodenext.json'), JSON.stringify({ compilerOptions: { ...base, module: 'NodeNext', moduleResolution: 'NodeNext' }, include: ['snippets'] }))
    writeFileSync(path.join(project, 'tsconfig.bundler.json'), JSON.stringify({ compilerOptions: { ...base, module: 'ESNext', moduleResolution: 'Bundler' }, include: ['snippets'] }))
  }, 300_000)

  afterAll(() => { if (project) rmSync(project, { recursive: true, force: true }) })

  it('there are snippets to compile', () => {
    expect(TS.length).toBeGreaterThanOrEqual(8)
  })

  for (const resolution of ['nodenext', 'bundler']) {
    it(`tsc --strict, moduleResolution ${resolution}`, async () => {
      const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
      const result = await run(process.execPath, [tsc, '-p', `tsconfig.${resolution}.json`], { cwd: project, env: cleanEnv() }).then(() => '', (e: Error) => e.message)
      // Name the Markdown file and line rather than the generated file.
      const readable = result.replace(/snippets\/s(\d+)\.ts\((\d+),(\d+)\)/g, (_, i, l, c) => { const s = TS[Number(i)]!; return `${s.doc}:${s.line + Number(l) - 1 - PRELUDE(s).length}:${c}` })
      expect(readable).toBe('')
    }, 120_000)
  }
})
