// What `npm pack` ships, checked from the tarball itself: the docs it links are in it, source maps
// carry their sources, no declaration file is a giant literal, the WASM is a file and not a second
// copy inside the JS, hono and ws are optional, and the CLI answers --help. The size budgets
// (.size-limit.js) are enforced here too, so CI fails when a bundle outgrows them.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT, WRANGLER_ENV } from '../e2e/wrangler.js'
import { cleanEnv, freshProject, run, tarball } from './tarball.js'

let unpacked: string
let files: string[]
const temp: string[] = []

function walk(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name)
    return e.isDirectory() ? walk(p, base) : [path.relative(base, p)]
  })
}

beforeAll(async () => {
  const tgz = await tarball()
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kafka-edge-unpacked-'))
  temp.push(dir)
  await run('tar', ['-xzf', tgz, '-C', dir])
  unpacked = path.join(dir, 'package')
  files = walk(unpacked)
}, 300_000)

afterAll(() => { for (const d of temp) rmSync(d, { recursive: true, force: true }) })

describe('the tarball', () => {
  it('ships the README, LICENSE, CHANGELOG, docs, the WASM files and every entry', () => {
    for (const f of ['README.md', 'LICENSE', 'CHANGELOG.md', 'CONTRIBUTING.md', 'docs/design.md', 'docs/producer.md', 'docs/recipes.md', 'docs/relay.md', 'docs/worker.md', 'docs/otlp.md', 'docs/browser.md',
      'build/core.wasm', 'build/core-lz4.wasm', 'dist/edge/index.js', 'dist/edge/node.js', 'dist/edge/inline.js', 'dist/edge/workerd.js', 'dist/edge/browser/index.js', 'dist/bridge/index.js', 'dist/bridge/cli.js', 'dist/edge/worker/index.js', 'bin/kafka-edge.js']) {
      expect(files, f).toContain(f)
    }
    expect(files.filter((f) => f.startsWith('src/') || f.startsWith('test/'))).toEqual([])
    expect(readFileSync(path.join(unpacked, 'LICENSE'), 'utf8')).toMatch(/Apache License\s+Version 2\.0, January 2004[\s\S]*END OF TERMS AND CONDITIONS/)
  })

  it('every relative link in a shipped Markdown file points at a shipped file', () => {
    const broken: string[] = []
    for (const md of files.filter((f) => f.endsWith('.md'))) {
      const body = readFileSync(path.join(unpacked, md), 'utf8')
      for (const m of body.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!.split('#')[0]!.replace(/\/$/, '')
        if (!target || /^[a-z]+:/i.test(target)) continue
        const resolved = path.normalize(path.join(path.dirname(md), target))
        if (resolved.startsWith('..') || !files.some((f) => f === resolved || f.startsWith(`${resolved}/`))) broken.push(`${md}: ${m[1]}`)
      }
      if (/\.\.\/shared\b/.test(body)) broken.push(`${md}: mentions ../shared`)
    }
    expect(broken).toEqual([])
  })

  it('source maps carry their sources (nothing they name is missing)', () => {
    const maps = files.filter((f) => f.endsWith('.map'))
    expect(maps.length).toBeGreaterThan(10)
    for (const m of maps) {
      const map = JSON.parse(readFileSync(path.join(unpacked, m), 'utf8')) as { sources: string[]; sourcesContent?: (string | null)[] }
      expect(map.sourcesContent?.length, m).toBe(map.sources.length)
      expect(map.sourcesContent!.every((s) => typeof s === 'string' && s.length > 0), m).toBe(true)
    }
  })

  it('no declaration file is a literal (the largest is under 16 KB)', () => {
    const sizes = files.filter((f) => f.endsWith('.d.ts')).map((f) => [f, statSync(path.join(unpacked, f)).size] as const).sort((a, b) => b[1] - a[1])
    expect(sizes[0]![1], sizes[0]![0]).toBeLessThan(16 * 1024)
    expect(readFileSync(path.join(unpacked, 'dist/edge/wasm/core.generated.d.ts'), 'utf8')).toMatch(/CORE_WASM_BASE64: string;/)
  })

  it('the Producer class declares only its public API: no internals (sender, cluster, config, transactions) in the .d.ts', () => {
    const dts = readFileSync(path.join(unpacked, 'dist/edge/producer/producer.d.ts'), 'utf8')
    const body = /export declare class Producer \{([\s\S]*?)\n\}/.exec(dts)![1]!.replace(/\/\*\*[\s\S]*?\*\//g, '')
    // Editors show the class's own doc comment on hover, not the interface's above it.
    expect(dts).toMatch(/\/\*\*\n \* The public producer\.[^/]*\*\/\nexport declare class Producer \{/)
    expect(dts).toMatch(/\/\*\* What the producer can say about itself[^\n]*\*\/\nexport interface ProducerState \{/)
    const members = body.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('private ') && /^[a-zA-Z]/.test(l))
      .map((l) => /^(?:get |readonly )?(\w+)/.exec(l)![1]).filter((m) => m !== 'timeoutMs')
      // An overloaded method (send, with and without a callback) is declared once per signature.
      .filter((m, i, all) => all[i - 1] !== m)
    // A change here changes what users can reach: Java's KafkaProducer methods, plus state and the resume outcome.
    expect(members).toEqual([
      'constructor', 'resumeOutcome', 'state', 'connect', 'send', 'flush', 'close', 'metrics',
      'initTransactions', 'beginTransaction', 'sendOffsetsToTransaction', 'commitTransaction', 'abortTransaction', 'partitionsFor',
    ])
  })

  it('the base64 core is only in the inline entry: no other entry imports it', () => {
    const importers = files.filter((f) => f.endsWith('.js') && !f.endsWith('core.generated.js') && readFileSync(path.join(unpacked, f), 'utf8').includes('core.generated'))
    expect(importers).toEqual(['dist/edge/inline.js'])
  })

  it('has no dependencies; hono, ws, jose (JWKS tokens in the relay) and @cfworker/json-schema (JSON Schema validation) are optional peers', () => {
    const pkg = JSON.parse(readFileSync(path.join(unpacked, 'package.json'), 'utf8'))
    expect(pkg.dependencies ?? {}).toEqual({})
    expect(Object.keys(pkg.peerDependencies).sort()).toEqual(['@cfworker/json-schema', 'hono', 'jose', 'ws'])
    expect(pkg.peerDependenciesMeta).toEqual({ '@cfworker/json-schema': { optional: true }, hono: { optional: true }, jose: { optional: true }, ws: { optional: true } })
  })
})

describe('installed into a fresh project', () => {
  let plain: string
  beforeAll(async () => {
    plain = await freshProject('plain')
    temp.push(plain)
  }, 300_000)

  it('installs no other package, and loads the core as a file (root) or from base64 (inline)', async () => {
    expect(readdirSync(path.join(plain, 'node_modules')).filter((d) => !d.startsWith('.'))).toEqual(['kafka-edge'])
    const script = `
      const root = await import('kafka-edge'); const inline = await import('kafka-edge/inline')
      const a = await root.loadCore(); const b = await inline.loadCore()
      console.log(JSON.stringify({ a: a.codecs().encoders, same: a === b, tcp: typeof root.tcp }))`
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: plain, env: cleanEnv() })
    // Both entries share one core module: the one loaded first is cached and reused.
    expect(JSON.parse(stdout)).toEqual({ a: ['none', 'gzip', 'snappy', 'lz4', 'zstd'], same: true, tcp: 'function' })
  })

  it('`kafka-edge bridge --help` prints the usage; without ws and hono it says what to install', async () => {
    const bin = path.join(plain, 'node_modules', '.bin', 'kafka-edge')
    const missing = await run(bin, ['bridge', '--help'], { cwd: plain, env: cleanEnv() }).then(() => 'exit 0', (e: Error) => e.message)
    expect(missing).toMatch(/npm install ws hono/)
    const withPeers = await freshProject('cli', ['ws@^8', 'hono@^4'])
    temp.push(withPeers)
    for (const args of [['bridge', '--help'], ['token', '-h'], ['--help']]) {
      const { stdout } = await run(path.join(withPeers, 'node_modules', '.bin', 'kafka-edge'), args, { cwd: withPeers, env: cleanEnv() })
      expect(stdout, args.join(' ')).toMatch(/^usage:\n {2}kafka-edge bridge --listen/)
    }
  }, 120_000)

  it('a wrangler bundle of a Worker that imports kafka-edge holds the WASM once, as a module', async () => {
    const worker = await freshProject('bundle')
    temp.push(worker)
    cpSync(path.join(ROOT, 'test', 'conformance', 'apps', 'worker'), worker, { recursive: true })
    cpSync(path.join(ROOT, 'test', 'conformance', 'apps', 'scenarios.mjs'), path.join(worker, 'src', 'scenarios.mjs'))
    cpSync(path.join(ROOT, 'test', 'conformance', 'apps', 'schemas.mjs'), path.join(worker, 'src', 'schemas.mjs'))
    const out = path.join(worker, 'out')
    await run(process.execPath, [path.join(ROOT, 'node_modules', 'wrangler', 'bin', 'wrangler.js'), 'deploy', '--dry-run', '--outdir', out], { cwd: worker, env: cleanEnv(WRANGLER_ENV) })
    const emitted = readdirSync(out)
    expect(emitted.filter((f) => f.endsWith('.wasm'))).toHaveLength(1)
    const js = emitted.filter((f) => f.endsWith('.js')).map((f) => readFileSync(path.join(out, f), 'utf8')).join('\n')
    expect(js).not.toMatch(/[A-Za-z0-9+/]{2000}/)
    expect(statSync(path.join(out, emitted.find((f) => f.endsWith('.wasm'))!)).size).toBe(statSync(path.join(ROOT, 'build', 'core.wasm')).size)
  }, 120_000)

  it('a user\'s own Worker imports the telemetry component from kafka-edge/worker, type-checks, and deploys (--dry-run) with the WASM once', async () => {
    const project = await freshProject('worker-component', ['hono@^4'])
    temp.push(project)
    mkdirSync(path.join(project, 'src'))
    writeFileSync(path.join(project, 'src', 'index.ts'), [
      "import { KafkaProducerObject, telemetryApp, type TelemetryAppOptions } from 'kafka-edge/worker'",
      '',
      'export class Telemetry extends KafkaProducerObject {}',
      "const options: TelemetryAppOptions = { binding: 'TELEMETRY', shards: 4, locationHint: 'weur' }",
      'export default telemetryApp(options)',
      '',
    ].join('\n'))
    writeFileSync(path.join(project, 'wrangler.toml'), [
      'name = "my-telemetry"', 'main = "src/index.ts"', 'compatibility_date = "2025-06-01"', '',
      '[[durable_objects.bindings]]', 'name = "TELEMETRY"', 'class_name = "Telemetry"', '',
      '[[migrations]]', 'tag = "v1"', 'new_sqlite_classes = ["Telemetry"]', '',
      '[vars]', 'KAFKA_BOOTSTRAP = "broker-1.example:9092"', 'TELEMETRY_TOPIC = "telemetry"', '',
    ].join('\n'))
    writeFileSync(path.join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'ESNext', moduleResolution: 'bundler', strict: true, noEmit: true, lib: ['ES2022', 'DOM'], skipLibCheck: false, types: [] },
      include: ['src'],
    }))
    await run(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project], { cwd: project, env: cleanEnv() })
    const out = path.join(project, 'out')
    await run(process.execPath, [path.join(ROOT, 'node_modules', 'wrangler', 'bin', 'wrangler.js'), 'deploy', '--dry-run', '--outdir', out], { cwd: project, env: cleanEnv(WRANGLER_ENV) })
    const emitted = readdirSync(out)
    // The bundle exports the object class the binding names, and the app as the default fetch handler.
    expect(readFileSync(path.join(out, 'index.js'), 'utf8')).toMatch(/export \{[^}]*\bTelemetry\b[^}]*\bas default\b|export \{[^}]*\bas default\b[^}]*\bTelemetry\b/)
    const wasm = emitted.filter((f) => f.endsWith('.wasm'))
    expect(wasm).toHaveLength(1)
    expect(statSync(path.join(out, wasm[0]!)).size).toBe(statSync(path.join(ROOT, 'build', 'core.wasm')).size)
    const js = emitted.filter((f) => f.endsWith('.js')).map((f) => readFileSync(path.join(out, f), 'utf8')).join('\n')
    // No base64 copy of the core beside the module ("AGFzbQ" is base64 of the WASM magic).
    expect(js).not.toMatch(/[A-Za-z0-9+/]{2000}/)
    expect(js).not.toContain('AGFzbQ')
  }, 300_000)
})

describe('size budgets (.size-limit.js)', () => {
  it('every bundle is within its limit', async () => {
    const { stdout } = await run(process.execPath, [path.join(ROOT, 'node_modules', 'size-limit', 'bin.js'), '--json'], { env: cleanEnv() }).catch((e: Error) => ({ stdout: e.message.slice(e.message.indexOf('['), e.message.lastIndexOf(']') + 1) }))
    const results = JSON.parse(stdout) as { name: string; passed: boolean; size: number; sizeLimit: number }[]
    console.log(results.map((r) => `${r.name}: ${(r.size / 1000).toFixed(2)} kB gzip (limit ${(r.sizeLimit / 1000).toFixed(1)} kB)`).join('\n'))
    expect(results.length).toBe((await import(path.join(ROOT, '.size-limit.js'))).default.length)
    expect(results.filter((r) => !r.passed)).toEqual([])
    // The budgets decided in issue 25 are ceilings: lowering one is a change here too, raising one is not allowed.
    const limit = (name: string) => results.find((r) => r.name.startsWith(name))?.sizeLimit
    expect([limit('analytics SDK JS loaded with the page'), limit('analytics SDK JS in the sending tab'), limit('lz4-only WASM')]).toEqual([8000, 44000, 6000])
  }, 120_000)
})
