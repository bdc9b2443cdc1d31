// The layering rules, checked on every import in src/: a small scan instead of a dependency tool,
// because the rules are few and each exception is stated here with its reason.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src')

interface Import { from: string; to: string; specifier: string }

/** Every .ts source under src/ (declaration files aside), with its text. */
function sourceFiles(dir = SRC): Array<{ file: string; text: string }> {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) return sourceFiles(p)
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [{ file: p, text: fs.readFileSync(p, 'utf8') }] : []
  })
}

function imports(): Import[] {
  const out: Import[] = []
  for (const { file: p, text } of sourceFiles()) {
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/g)) {
      const specifier = (m[1] ?? m[2])!
      const to = specifier.startsWith('.') ? path.relative(SRC, path.resolve(path.dirname(p), specifier)).replace(/\.js$/, '.ts') : specifier
      out.push({ from: path.relative(SRC, p), to, specifier })
    }
  }
  return out
}

const all = imports()
const under = (dir: string) => (f: string) => f.startsWith(`${dir}/`)

describe('import boundaries', () => {
  it('finds the imports it checks', () => {
    expect(all.length).toBeGreaterThan(100)
    expect(all.some((i) => i.from === 'edge/producer/producer.ts' && i.to === 'edge/client/cluster.ts')).toBe(true)
  })

  it('nothing outside producer/ imports a producer internal: only producer.ts, config.ts (settings types), checkpoint.ts, the partitioner and install.ts', () => {
    const PUBLIC = new Set([
      'edge/producer/producer.ts', 'edge/producer/config.ts', 'edge/producer/partitioner.ts', 'edge/producer/transactions/state.ts', 'edge/producer/checkpoint.ts',
      'edge/producer/install.ts', 'edge/producer/transactions/coordinator-client.ts',
    ])
    const bad = all.filter((i) => !under('edge/producer')(i.from) && under('edge/producer')(i.to) && !PUBLIC.has(i.to))
    expect(bad).toEqual([])
    // transactions/state.ts is reached from outside for its types only (TxnState, GroupMetadata, OffsetsToCommit), and
    // the coordinator client for its type in extensions.ts (install.ts is what loads it).
    for (const i of all.filter((i) => !under('edge/producer')(i.from) && (i.to === 'edge/producer/transactions/state.ts' || i.to === 'edge/producer/transactions/coordinator-client.ts'))) {
      const line = fs.readFileSync(path.join(SRC, i.from), 'utf8').split('\n').find((l) => l.includes(i.specifier))!
      expect(line, i.from).toMatch(/^export type |^import type /)
    }
  })

  it('protocol/ and auth/ stand on errors and each other only: sans-IO, no transport, client or producer', () => {
    const bad = all.filter((i) => (under('edge/protocol')(i.from) || under('edge/auth')(i.from)) && i.to.startsWith('edge/') &&
      !under('edge/protocol')(i.to) && !under('edge/auth')(i.to) && i.to !== 'edge/errors.ts')
    expect(bad).toEqual([])
  })

  it('bridge/ imports protocol/, auth/, errors and the transport seam; of the transports only the Node dialer (one TLS verification for producer and relay); the registry lookups use the schema-registry client', () => {
    const ALLOWED = (to: string) => under('edge/protocol')(to) || under('edge/auth')(to) || to === 'edge/errors.ts' ||
      to === 'edge/transport/transport.ts' || to === 'edge/transport/node-tcp.ts'
    // One registry client for pages, servers and the relay: its lookups, retries and failover are the relay's too.
    const REGISTRY = ['edge/schema-registry/client.ts', 'edge/schema-registry/config.ts', 'edge/schema-registry/errors.ts']
    const bad = all.filter((i) => under('bridge')(i.from) && i.to.startsWith('edge/') && !ALLOWED(i.to) && !(i.from === 'bridge/registry.ts' && REGISTRY.includes(i.to)))
    expect(bad).toEqual([])
  })

  it('the transports and the TLS/SASL settings (security.ts) stand below the producer: they parse with config-def.ts, a leaf, never with producer/config.ts', () => {
    const BELOW = (f: string) => under('edge/transport')(f) || f === 'edge/security.ts' || f === 'edge/config-def.ts'
    const bad = all.filter((i) => BELOW(i.from) && (under('edge/producer')(i.to) || under('edge/client')(i.to)))
    expect(bad).toEqual([])
    expect(all.filter((i) => i.from === 'edge/config-def.ts').map((i) => i.to)).toEqual(['edge/errors.ts'])
    expect(all.some((i) => i.from === 'edge/security.ts' && i.to === 'edge/config-def.ts')).toBe(true)
  })

  it('bridge/config.ts reads and checks the relay config and imports none of the modules that use it (authn.ts, credentials.ts, ...); of the bridge, only the JWT helpers in token.ts', () => {
    const bad = all.filter((i) => i.from === 'bridge/config.ts' && under('bridge')(i.to) && i.to !== 'bridge/token.ts')
    expect(bad).toEqual([])
    expect(all.some((i) => i.from === 'bridge/config.ts' && i.to === 'bridge/token.ts')).toBe(true)
  })

  it('no Node built-in in src/edge outside the Node transport and entry (the core loads in browsers, workerd, Deno, Bun)', () => {
    const NODE_ONLY = new Set(['edge/transport/node-tcp.ts', 'edge/node.ts'])
    const bad = all.filter((i) => under('edge')(i.from) && !NODE_ONLY.has(i.from) && (i.to.startsWith('node:') || ['fs', 'net', 'tls', 'crypto', 'path', 'buffer'].includes(i.to)))
    expect(bad).toEqual([])
  })

  it('the producer never imports a transport implementation: transports are injected', () => {
    const bad = all.filter((i) => (under('edge/producer')(i.from) || under('edge/client')(i.from)) && under('edge/transport')(i.to) && i.to !== 'edge/transport/transport.ts')
    expect(bad).toEqual([])
  })

  it('package.json sideEffects lists every module whose loading changes another, and every module that imports one for that (bundlers drop the rest when unused)', () => {
    const listed = new Set((JSON.parse(fs.readFileSync(path.join(SRC, '../package.json'), 'utf8')) as { sideEffects: string[] }).sideEffects)
    const needed = new Set<string>()
    for (const { file: p, text } of sourceFiles()) {
      // Configures another module at load time, or imports one for its effect alone: Rollup (Vite)
      // drops a bare import made by a module it was told has no side effects.
      if (/^(setDefaultCoreSource\(|extensions\.\w+ =)/m.test(text)) needed.add(p)
      for (const m of text.matchAll(/^import '(\.[^']+)'/gm)) {
        needed.add(p)
        needed.add(path.resolve(path.dirname(p), m[1]!).replace(/\.js$/, '.ts'))
      }
    }
    const sources = [...needed].map((f) => `./src/${path.relative(SRC, f)}`).sort()
    expect(sources).toEqual(['./src/edge/index.ts', './src/edge/inline.ts', './src/edge/producer/install.ts', './src/edge/worker/producer-object.ts', './src/edge/workerd.ts'])
    // The sources too: the repository's own bundles (wrangler's alias to src/edge/worker, the e2e pages) build from them.
    for (const f of sources) expect(listed, f).toContain(f)
    for (const f of sources) expect(listed, f).toContain(f.replace('./src/', './dist/').replace(/\.ts$/, '.js'))
  })
})
