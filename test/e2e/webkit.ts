// WebKitGTK for the browser suites: Debian's webkit2gtk-driver (WebKitWebDriver, which drives
// MiniBrowser) under an Xvfb display of its own, spoken to over plain W3C WebDriver HTTP.
// puppeteer and playwright cannot drive it (they speak CDP, BiDi, or Playwright's own WebKit build),
// and the few commands the suites need fit in this file: sessions, windows, navigation, scripts.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { childPids } from '../helpers/processes.js'
import { freePort } from './wrangler.js'

export const WEBKIT_DRIVER = '/usr/bin/WebKitWebDriver'
export const MINIBROWSER = '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser'
export const XVFB = '/usr/bin/Xvfb'
/** What is missing for WebKitGTK, or undefined when it can run. */
export const webkitMissing = [WEBKIT_DRIVER, MINIBROWSER, XVFB].filter((f) => !existsSync(f)).map((f) => `${f} is not installed (.ci/run installs webkit2gtk-driver and xvfb with apt-get)`)[0]

/** A WebDriver error answer, named after its W3C error code. */
export class WebDriverError extends Error {
  override name = 'WebDriverError'
  constructor(readonly code: string, message: string) { super(`${code}: ${message}`) }
}

interface Answer { value: unknown }

/** One running Xvfb + WebKitWebDriver + MiniBrowser, and the one WebDriver session on it. */
export class WebKit {
  /** Every command goes through here, one at a time: the session has one current window. */
  private queue: Promise<unknown> = Promise.resolve()
  private current = ''

  private constructor(
    private readonly xvfb: ChildProcess,
    private readonly driver: ChildProcess,
    private readonly base: string,
    readonly version: string,
    private readonly log: () => string,
  ) {}

  static async launch(): Promise<WebKit> {
    let out = ''
    // -displayfd: Xvfb picks a free display and writes its number to fd 3.
    const xvfb = spawn(XVFB, ['-displayfd', '3', '-screen', '0', '1280x1024x24', '-nolisten', 'tcp'], { stdio: ['ignore', 'ignore', 'pipe', 'pipe'] })
    xvfb.stderr!.on('data', (d) => { out += d })
    const display = await new Promise<string>((resolve, reject) => {
      let n = ''
      ;(xvfb.stdio[3] as NodeJS.ReadableStream).on('data', (d) => { n += d; if (n.includes('\n')) resolve(n.trim()) })
      xvfb.once('exit', (code) => reject(new Error(`Xvfb exited ${code}: ${out}`)))
      setTimeout(() => reject(new Error(`Xvfb gave no display in 10 s: ${out}`)), 10_000).unref()
    })
    const port = await freePort()
    const driver = spawn(WEBKIT_DRIVER, [`--port=${port}`, '--host=127.0.0.1'], { env: { ...process.env, DISPLAY: `:${display}` }, stdio: ['ignore', 'pipe', 'pipe'] })
    driver.stdout!.on('data', (d) => { out += d })
    driver.stderr!.on('data', (d) => { out += d })
    const base = `http://127.0.0.1:${port}`
    const deadline = Date.now() + 20_000
    for (;;) {
      if (driver.exitCode !== null) { xvfb.kill(); throw new Error(`WebKitWebDriver exited ${driver.exitCode}: ${out}`) }
      try { if ((await fetch(`${base}/status`)).ok) break } catch { /* not listening yet */ }
      if (Date.now() > deadline) { driver.kill(); xvfb.kill(); throw new Error(`WebKitWebDriver not ready: ${out}`) }
      await new Promise((r) => setTimeout(r, 100))
    }
    const res = await fetch(`${base}/session`, {
      method: 'POST',
      body: JSON.stringify({ capabilities: { alwaysMatch: { browserName: 'MiniBrowser', 'webkitgtk:browserOptions': { binary: MINIBROWSER, args: ['--automation'] } } } }),
    })
    const body = await res.json() as { value: { sessionId?: string; capabilities?: { browserVersion: string }; error?: string; message?: string } }
    if (!body.value.sessionId) { driver.kill(); xvfb.kill(); throw new Error(`no WebKit session: ${JSON.stringify(body.value)} ${out}`) }
    const wk = new WebKit(xvfb, driver, `${base}/session/${body.value.sessionId}`, `MiniBrowser ${body.value.capabilities!.browserVersion}`, () => out)
    wk.current = await wk.command('GET', '/window') as string
    return wk
  }

  private async command(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<unknown> {
    const res = await fetch(`${this.base}${path}`, { method, ...(body !== undefined ? { body: JSON.stringify(body) } : method === 'POST' ? { body: '{}' } : {}) })
    const answer = await res.json() as Answer
    const v = answer.value as { error?: string; message?: string } | null
    if (!res.ok) throw new WebDriverError(v?.error ?? String(res.status), v?.message ?? '')
    return answer.value
  }

  /** Runs `fn` with `window` as the current browsing context, after every command queued before it. */
  private inWindow<T>(window: string, fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(async () => {
      if (this.current !== window) { await this.command('POST', '/window', { handle: window }); this.current = window }
      return fn()
    })
    this.queue = run.catch(() => {})
    return run
  }

  /** The first window the session opened, navigated to `url`. */
  async firstTab(url: string): Promise<WebKitTab> {
    const tab = new WebKitTab(this, this.current)
    await tab.goto(url)
    return tab
  }

  /** A new tab (MiniBrowser may make it a window) at `url`. */
  async newTab(url: string): Promise<WebKitTab> {
    const { handle } = await this.queue.then(() => this.command('POST', '/window/new', { type: 'tab' })) as { handle: string }
    const tab = new WebKitTab(this, handle)
    await tab.goto(url)
    return tab
  }

  /**
   * Closes `window`. WebDriver then has no current window, and "new window" needs one: the session
   * moves to a window still open (closing the last one would end the session).
   */
  closeWindow(window: string): Promise<void> {
    return this.inWindow(window, async () => {
      const left = await this.command('DELETE', '/window') as string[]
      this.current = ''
      if (left[0] !== undefined) { await this.command('POST', '/window', { handle: left[0] }); this.current = left[0] }
    })
  }

  /** @internal for WebKitTab */
  run<T>(window: string, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
    return this.inWindow(window, () => this.command(method, path, body) as Promise<T>)
  }

  driverLog(): string { return this.log() }

  async close(): Promise<void> {
    const left = childPids(this.driver.pid!).map((p) => p.pid)
    await this.queue
    await Promise.race([this.command('DELETE', '').catch(() => {}), new Promise((r) => setTimeout(r, 5000))])
    this.driver.kill('SIGTERM')
    for (const pid of left) { try { process.kill(pid, 'SIGKILL') } catch { /* gone */ } }
    this.xvfb.kill('SIGTERM')
  }
}

/** One window of the session. */
export class WebKitTab {
  constructor(private readonly wk: WebKit, readonly handle: string) {}

  goto(url: string): Promise<void> { return this.wk.run(this.handle, 'POST', '/url', { url }) }

  refresh(): Promise<void> { return this.wk.run(this.handle, 'POST', '/refresh') }

  /**
   * A function's source with its JSON-able arguments, or an expression, evaluated in the page; a
   * returned promise is awaited. Errors thrown in the page reject with their message.
   */
  async evaluate<T>(fn: string | ((...args: never[]) => unknown), ...args: unknown[]): Promise<T> {
    // Functions compiled by tsx (esbuild keepNames) call __name(); the page has none, so it gets a no-op one.
    const call = typeof fn === 'string' ? `(() => (${fn}))()` : `((__name) => (${fn.toString()})(...${JSON.stringify(args)}))((f) => f)`
    const script = `const done = arguments[arguments.length - 1];
      Promise.resolve().then(() => ${call}).then((v) => done({ ok: v === undefined ? null : v }), (e) => done({ error: String(e) + (e && e.stack ? " at " + e.stack : "") }))`
    const r = await this.wk.run<{ ok?: T; error?: string }>(this.handle, 'POST', '/execute/async', { script, args: [] })
    if (r.error !== undefined) throw new Error(`in the page: ${r.error}`)
    return r.ok as T
  }

  /** Polls `expression` until it is truthy. */
  async waitFor(expression: string, { timeoutMs = 30_000, intervalMs = 100 } = {}): Promise<void> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      try { if (await this.evaluate<boolean>(`!!(${expression})`)) return } catch (e) { if (Date.now() > deadline) throw e }
      if (Date.now() > deadline) throw new Error(`${expression} still false after ${timeoutMs} ms`)
      await new Promise((r) => setTimeout(r, intervalMs))
    }
  }

  close(): Promise<void> { return this.wk.closeWindow(this.handle) }
}
