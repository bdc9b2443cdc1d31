// Helpers for the browser e2e: the analytics SDK bundled for the page, a static page server on
// 127.0.0.1 (a secure context: IndexedDB, Web Locks, BroadcastChannel), Debian's Chromium and
// Firefox ESR launched headless through puppeteer-core (CDP for Chromium, WebDriver BiDi for Firefox)
// with a fresh profile, the relay in process, and a TCP proxy in front of it that can cut the network.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { resolveConfig, signToken, startBridge, type Bridge } from '../../src/bridge/index.js'
import { childPids } from '../helpers/processes.js'
import { WebKit, webkitMissing, type WebKitTab } from './webkit.js'
import { ROOT, freePort } from './wrangler.js'

export const CHROMIUM = '/usr/bin/chromium'
export const FIREFOX = '/usr/bin/firefox-esr'
export const hasChromium = existsSync(CHROMIUM)
export const hasFirefox = existsSync(FIREFOX)
/** The engines puppeteer-core drives. */
export type BrowserName = 'chromium' | 'firefox'
/** Every engine the torture run drives: those two and WebKitGTK (test/e2e/webkit.ts). */
export type EngineName = BrowserName | 'webkit'
export const ENGINES: Array<{ name: EngineName; present: boolean }> = [{ name: 'chromium', present: hasChromium }, { name: 'firefox', present: hasFirefox }, { name: 'webkit', present: webkitMissing === undefined }]

export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run']

/**
 * src/edge/browser bundled as an app would ship it: split at the SDK's import() of its sender, so the
 * page loads /sdk.js and only the tab elected to send fetches the producer chunk. The WASM core stays
 * a separate file (servePage serves it). Returns each output file's text by its URL path.
 */
export async function bundleSdk(): Promise<Record<string, string>> {
  const esbuild = await import('esbuild')
  const out = await esbuild.build({
    stdin: { contents: "export * from './src/edge/browser/index.ts'", resolveDir: ROOT, sourcefile: 'sdk-entry.ts', loader: 'ts' },
    bundle: true, format: 'esm', platform: 'browser', target: 'es2022', write: false, logLevel: 'silent',
    splitting: true, outdir: '/', entryNames: 'sdk',
  })
  return Object.fromEntries(out.outputFiles.map((f) => [f.path, f.text]))
}

/**
 * The page: on every load it reads its settings from the query string and creates the SDK, the way
 * an app would (so a reload resumes from what the origin's IndexedDB holds). window.track(from, to,
 * prefix) tracks events with ids `${prefix}-${i}` and resolves once all of them are stored.
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
  retryBackoffMaxMs: 2000,
  ...(q.get('beacon') ? { beaconUrl: q.get('beacon') } : {}),
  ...(q.get('storage') ? { storage: q.get('storage') === 'local' ? localStorage : q.get('storage') } : {}),
  producer: {
    'max.block.ms': Number(q.get('maxBlockMs') ?? '30000'), 'retry.backoff.max.ms': 1000,
    // ?debug=epoch,retry keeps the producer's debug lines in localStorage, where they outlive the tab.
    ...(q.get('debug') ? { debug: q.get('debug'), logger: {
      debug: (m, f) => localStorage.setItem('log:' + Date.now() + ':' + Math.random(), m + ' ' + JSON.stringify(f ?? {}, (k, v) => typeof v === 'bigint' ? String(v) : v)),
      warn: (m, f) => localStorage.setItem('log:' + Date.now() + ':' + Math.random(), 'WARN ' + m + ' ' + JSON.stringify(f ?? {}, (k, v) => typeof v === 'bigint' ? String(v) : v)),
    } } : {}),
  },
  onError: (e) => window.errors.push(e.name + ': ' + e.message),
})
window.track = async (from, to, prefix) => {
  const all = []
  for (let i = from; i < to; i++) all.push(window.analytics.track({ id: prefix + '-' + i, type: 'torture', data: { i }, key: i % 5 === 0 ? 'k' + (i % 50) : undefined }))
  return (await Promise.allSettled(all)).flatMap((r, i) => r.status === 'rejected' ? [prefix + '-' + (from + i) + ' ' + r.reason.name + ': ' + r.reason.message] : [])
}
// What each owner's producer did with the checkpoint it found, kept where the harness can read it after the tab is gone.
const me = crypto.randomUUID()
setInterval(() => { const r = window.analytics.stats().resume; if (r && r.mode !== 'none') localStorage.setItem('resume:' + me, JSON.stringify(r)) }, 200)
window.ready = true
</script></body></html>`

export interface PageServer {
  origin: string
  /** How many times a path was requested (no cache headers are sent, so every module load asks). */
  requests(prefix: string): number
  close(): Promise<void>
}

export interface ServeOptions {
  /** The HTML at / (default PAGE). */
  page?: string
  /** Answers the requests it wants first (returns true), e.g. a demo's control routes. */
  handle?: (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => boolean
  /** Default: a free port. */
  port?: number
}

export async function servePage(sdk: Record<string, string>, opts: ServeOptions = {}): Promise<PageServer> {
  const seen: string[] = []
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    seen.push(url.pathname)
    if (opts.handle?.(req, res, url)) return
    if (url.pathname === '/') { res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }); res.end(opts.page ?? PAGE); return }
    const js = sdk[url.pathname]
    if (js !== undefined) { res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }); res.end(js); return }
    // Where the bundle's new URL('../../../build/core*.wasm', import.meta.url) lands from a chunk at the root.
    const wasm = /^\/build\/(core(-lz4)?\.wasm)$/.exec(url.pathname)
    if (wasm) { res.writeHead(200, { 'content-type': 'application/wasm' }); res.end(readFileSync(path.join(ROOT, 'build', wasm[1]!))); return }
    res.writeHead(404); res.end()
  })
  await new Promise<void>((r) => server.listen(opts.port ?? 0, '127.0.0.1', r))
  const port = (server.address() as { port: number }).port
  return {
    origin: `http://127.0.0.1:${port}`,
    requests: (prefix) => seen.filter((p) => p.startsWith(prefix)).length,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()) }),
  }
}

type PBrowser = import('puppeteer-core').Browser
export type Page = import('puppeteer-core').Page

export interface Browser {
  name: BrowserName
  browser: PBrowser
  newPage(url: string): Promise<Page>
  /** kill -9 of the processes rendering web pages: a renderer crash as the OS would cause it. Returns how many. */
  crashRenderer(): Promise<number>
  close(): Promise<void>
}

/** A page that loaded the SDK (waits for window.ready). */
export async function openPage(b: PBrowser, url: string): Promise<Page> {
  const page = await b.newPage()
  await page.goto(url)
  await page.waitForFunction('window.ready === true', { timeout: 30_000, polling: 50 })
  return page
}

/** What the torture run needs of a tab, in any engine. */
export interface Tab {
  /** A function with JSON-able arguments, or an expression, run in the page; promises are awaited. */
  evaluate<R>(fn: (...args: never[]) => R | Promise<R>, ...args: unknown[]): Promise<R>
  evaluate<T = unknown>(expression: string): Promise<T>
  /** Reloads the page and waits for the SDK (window.ready). */
  reload(): Promise<void>
  close(): Promise<void>
}

export interface Engine {
  name: EngineName
  version(): Promise<string>
  /** A new tab at `url`, once the page's SDK is up (window.ready). */
  newTab(url: string): Promise<Tab>
  /** kill -9 of the processes rendering web pages. Returns how many. */
  crashRenderer(): Promise<number>
  close(): Promise<void>
}

/** Chromium or Firefox through puppeteer-core, or WebKitGTK through WebKitWebDriver. */
export async function launchEngine(name: EngineName): Promise<Engine> {
  if (name === 'webkit') {
    const wk = await WebKit.launch()
    const ready = async (t: WebKitTab) => { await t.waitFor('window.ready === true'); return t }
    const tab = (t: WebKitTab): Tab => ({
      evaluate: (fn: string | ((...args: never[]) => unknown), ...args: unknown[]) => t.evaluate(fn, ...args),
      reload: async () => { await t.refresh(); await ready(t) },
      close: () => t.close(),
    } as Tab)
    return {
      name,
      version: () => Promise.resolve(wk.version),
      // The session's first window stays on about:blank: closing a session's last window ends it.
      newTab: async (url) => tab(await ready(await wk.newTab(url))),
      // WebKitWebDriver ends the whole session when a web process dies (faultKindsFor in browser-torture.ts).
      crashRenderer: () => Promise.reject(new Error('WebKitWebDriver deletes the session when a WebKitWebProcess dies: a renderer crash ends the run')),
      close: () => wk.close(),
    }
  }
  const b = await launch(name)
  return {
    name,
    version: () => b.browser.version(),
    newTab: async (url) => {
      const page = await b.newPage(url)
      return {
        evaluate: (fn: string | ((...args: never[]) => unknown), ...args: unknown[]) => page.evaluate(fn as string, ...args as []),
        reload: async () => { await page.reload(); await page.waitForFunction('window.ready === true', { timeout: 30_000, polling: 50 }) },
        close: () => page.close(),
      } as Tab
    },
    crashRenderer: () => b.crashRenderer(),
    close: () => b.close(),
  }
}

/** Chromium or Firefox headless with a fresh profile in a temp dir (removed on close). */
export async function launch(name: BrowserName): Promise<Browser> {
  const puppeteer = (await import('puppeteer-core')).default
  const profile = mkdtempSync(path.join(os.tmpdir(), `kafka-edge-${name}-`))
  const browser = name === 'chromium'
    ? await puppeteer.launch({ executablePath: CHROMIUM, headless: true, userDataDir: profile, args: CHROMIUM_ARGS })
    : await puppeteer.launch({ browser: 'firefox', protocol: 'webDriverBiDi', executablePath: FIREFOX, headless: true, userDataDir: profile })
  const pid = browser.process()!.pid!
  return {
    name,
    browser,
    newPage: (url) => openPage(browser, url),
    crashRenderer: async () => {
      // The processes rendering web pages: Chromium's renderers, Firefox's web content processes
      // (not the browser, GPU, network or utility ones). Tabs of one site share one, so all of them crash.
      const renderer = name === 'chromium' ? /--type=renderer/ : /-contentproc .*-isForBrowser.* tab$/
      const victims = childPids(pid).filter((p) => renderer.test(p.args) && !/--extension-process/.test(p.args))
      for (const v of victims) { try { process.kill(v.pid, 'SIGKILL') } catch { /* gone */ } }
      return victims.length
    },
    close: async () => {
      await browser.close().catch(() => {})
      rmSync(profile, { recursive: true, force: true })
    },
  }
}

export const SECRET = 'e2e-browser-secret-0123456789abcdef'
export const AUDIENCE = 'kafka-edge-e2e'

export function pageToken(topic: string): string {
  return signToken({ sub: 'e2e-page', aud: AUDIENCE, exp: Math.floor(Date.now() / 1000) + 3600, topics: [topic] }, SECRET)
}

/** The relay on a fixed port, so a restart brings it back where the pages look for it. */
export class Relay {
  bridge: Bridge | null = null
  private constructor(readonly port: number, private readonly brokers: string, private readonly origin: string) {}
  static async start(brokers: string, origin: string): Promise<Relay> {
    const r = new Relay(await freePort(), brokers, origin)
    await r.up()
    return r
  }

  get url(): string { return `ws://127.0.0.1:${this.port}/kafka` }

  async up(): Promise<void> {
    this.bridge = await startBridge(resolveConfig({
      listen: `127.0.0.1:${this.port}`,
      brokers: [this.brokers],
      auth: { secret: SECRET, audience: AUDIENCE, clockSkewSec: 0 },
      origins: [this.origin],
      log: { level: 'silent' },
    }, {}))
  }

  async down(): Promise<void> {
    const b = this.bridge
    this.bridge = null
    await b?.close()
  }
}

/** A TCP proxy to `target`: `offline()` cuts every connection and refuses new ones until `online()`. */
export class NetSwitch {
  private readonly sockets = new Set<net.Socket>()
  private off = false
  private constructor(private readonly server: net.Server, readonly port: number) {}

  static async start(targetPort: number): Promise<NetSwitch> {
    const port = await freePort()
    let sw: NetSwitch | undefined = undefined
    const server = net.createServer((client) => {
      if (sw!.off) { client.destroy(); return }
      const up = net.connect(targetPort, '127.0.0.1')
      sw!.sockets.add(client).add(up)
      const drop = () => { client.destroy(); up.destroy(); sw!.sockets.delete(client); sw!.sockets.delete(up) }
      client.on('error', drop).on('close', drop)
      up.on('error', drop).on('close', drop)
      client.pipe(up)
      up.pipe(client)
    })
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r))
    sw = new NetSwitch(server, port)
    return sw
  }

  /** Connections stay open but carry nothing either way: requests sent now are neither delivered nor answered. */
  stall(): void {
    this.off = true
    for (const s of this.sockets) { s.unpipe(); s.pause() }
  }

  offline(): void {
    this.off = true
    for (const s of this.sockets) s.destroy()
    this.sockets.clear()
  }

  online(): void { this.off = false }

  close(): Promise<void> {
    this.offline()
    return new Promise((r) => this.server.close(() => r()))
  }
}
