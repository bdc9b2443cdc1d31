// Helpers for the Chromium e2e: the analytics SDK bundled for the page, a static page server on
// 127.0.0.1, and Debian's Chromium launched headless through playwright-core with a fresh profile.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { ROOT } from './wrangler.js'

export const CHROMIUM = '/usr/bin/chromium'
export const hasChromium = existsSync(CHROMIUM)

export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run']

/** src/edge/browser bundled as one ES module; the WASM core stays a separate file (servePage serves it). */
export async function bundleSdk(): Promise<string> {
  const esbuild = await import('esbuild')
  const out = await esbuild.build({
    stdin: { contents: "export * from './src/edge/browser/index.ts'", resolveDir: ROOT, sourcefile: 'sdk-entry.ts', loader: 'ts' },
    bundle: true, format: 'esm', platform: 'browser', target: 'es2022', write: false, logLevel: 'silent',
  })
  return out.outputFiles[0]!.text
}

/**
 * The page: on every load it reads relay/token/topic from its query string and creates the SDK, the
 * way an app would (so a reload resends what the outbox holds). window.analytics is the instance.
 */
export const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>kafka-edge analytics e2e</title></head><body>
<script type="module">
import { createAnalytics } from '/sdk.js'
const q = new URLSearchParams(location.search)
window.errors = []
window.analytics = createAnalytics({
  relayUrl: q.get('relay'), token: q.get('token'), topic: q.get('topic'),
  flushIntervalMs: Number(q.get('flushMs') ?? '200'),
  retryBackoffMs: Number(q.get('backoffMs') ?? '500'),
  producer: { 'max.block.ms': Number(q.get('maxBlockMs') ?? '30000') },
  onError: (e) => window.errors.push(e.name + ': ' + e.message),
})
window.ready = true
</script></body></html>`

export interface PageServer { origin: string; close(): Promise<void> }

export async function servePage(sdk: string): Promise<PageServer> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    if (url.pathname === '/') { res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }); res.end(PAGE); return }
    if (url.pathname === '/sdk.js') { res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }); res.end(sdk); return }
    // Where the bundle's new URL('../../../build/core.wasm', import.meta.url) lands from /sdk.js.
    if (url.pathname === '/build/core.wasm') { res.writeHead(200, { 'content-type': 'application/wasm' }); res.end(readFileSync(path.join(ROOT, 'build', 'core.wasm'))); return }
    res.writeHead(404); res.end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as { port: number }).port
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()) }),
  }
}

export interface Browser {
  context: import('playwright-core').BrowserContext
  close(): Promise<void>
}

/** Chromium headless with a fresh profile in a temp dir (removed on close). */
export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core')
  const profile = mkdtempSync(path.join(os.tmpdir(), 'kafka-edge-chromium-'))
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS })
  return {
    context,
    close: async () => {
      await context.close().catch(() => {})
      rmSync(profile, { recursive: true, force: true })
    },
  }
}
