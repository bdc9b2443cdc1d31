// `npm start`, part three: the page path. Starts the relay (`kafka-edge bridge`, a child process,
// with a development secret it prints), serves scripts/demo-page.html and the analytics SDK on
// 127.0.0.1, and follows the topic with the Java consumer (scripts/kafka/Follow.java), streaming each
// record it reads to the page over server-sent events. The page's buttons reload it, cut its network
// to the relay for 5 s (a TCP switch in front of the relay) and restart the relay process.
//
// --once: Chromium (puppeteer-core, /usr/bin/chromium) clicks through the page and every fault, waits
// until the panel shows each tracked event read once, checks that against a separate Java read of the
// topic, saves a screenshot (--screenshot, default docs/img/start.png) and stops everything.
// --cluster-file PATH: the cluster to use (default .kafka/cluster.json, what `npm start` started).
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync } from 'node:fs'
import type http from 'node:http'
import { createServer } from 'node:net'
import path from 'node:path'
import { signToken } from '../src/bridge/index.js'
import { NetSwitch, bundleSdk, launch, servePage, type Page } from '../test/e2e/browser.js'
import { ROOT, freePort } from '../test/e2e/wrangler.js'
import { toolCommand } from './kafka/kafka.mjs'
import { createTopic, readTopic, waitFor, type Cluster } from '../test/helpers/kafka.js'

const argv = process.argv.slice(2)
const arg = (name: string) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv[i + 1] : undefined }
const once = argv.includes('--once')
const screenshot = path.resolve(ROOT, arg('screenshot') ?? 'docs/img/start.png')
const cluster = JSON.parse(readFileSync(arg('cluster-file') ?? path.join(ROOT, '.kafka', 'cluster.json'), 'utf8')) as Cluster
if (cluster.nodes.length !== 1) throw new Error('the page demo follows a one-node cluster (it reads batch headers from that node\'s log dir)')
let stopping = false
const topic = `clicks-demo-${Date.now().toString(36)}`
await createTopic(cluster, topic, { partitions: 3 })

// A fresh development secret per run: tokens signed with it are good only against this relay.
const secret = `dev-${randomBytes(24).toString('hex')}`
const audience = 'kafka-edge-demo'
const token = signToken({ sub: 'demo-page', aud: audience, exp: Math.floor(Date.now() / 1000) + 86_400, topics: [topic] }, secret)

// ---- server-sent events to every open page ------------------------------------------------------

const clients = new Set<http.ServerResponse>()
const history: string[] = []
const state = { relay: 'starting', offline: false }
const send = (res: http.ServerResponse, event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
const broadcast = (event: string, data: unknown) => {
  if (event === 'record') history.push(JSON.stringify(data))
  for (const c of clients) send(c, event, data)
}

// ---- the relay, behind a switch that can cut the page off ---------------------------------------

const relayPort = await freePort()
let relay: ChildProcess | null = null
let relayLog = ''
async function relayUp(origin: string): Promise<void> {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'kafka-edge.js'), 'bridge', '--listen', `127.0.0.1:${relayPort}`, '--brokers', cluster.bootstrap,
    '--origins', origin, '--audience', audience, '--log-level', 'warn'], { cwd: ROOT, env: { ...process.env, KAFKA_EDGE_BRIDGE_SECRET: secret }, stdio: ['ignore', 'pipe', 'pipe'] })
  relay = child
  // Kept for an error report; the last part is enough.
  const keep = (d: Buffer) => { relayLog = (relayLog + d.toString()).slice(-20_000) }
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`the relay exited ${child.exitCode}:\n${relayLog}`)
    return (await fetch(`http://127.0.0.1:${relayPort}/healthz`).catch(() => null))?.ok
  }, { timeoutMs: 30_000, intervalMs: 100, what: 'the relay' })
  state.relay = `up (pid ${child.pid})`
  broadcast('relay', { state: state.relay })
}
async function relayDown(): Promise<void> {
  const child = relay
  relay = null
  if (!child || child.exitCode !== null) return
  state.relay = 'restarting'
  broadcast('relay', { state: state.relay })
  await new Promise((r) => { child.once('exit', r); child.kill('SIGTERM') })
}
const net = await NetSwitch.start(relayPort)

// ---- the page -----------------------------------------------------------------------------------

let origin = ''
const control = (req: http.IncomingMessage, res: http.ServerResponse, url: URL): boolean => {
  const reply = (status: number, body: unknown) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)) }
  if (url.pathname === '/config') { reply(200, { relayUrl: `ws://127.0.0.1:${net.port}/kafka`, token, topic }); return true }
  if (url.pathname === '/events') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' })
    send(res, 'relay', { state: state.relay })
    send(res, 'net', { offline: state.offline })
    for (const r of history) res.write(`event: record\ndata: ${r}\n\n`)
    clients.add(res)
    req.once('close', () => clients.delete(res))
    return true
  }
  if (req.method === 'POST' && url.pathname === '/control/offline') {
    net.offline()
    state.offline = true
    broadcast('net', { offline: true })
    setTimeout(() => { net.online(); state.offline = false; broadcast('net', { offline: false }) }, 5000)
    reply(200, { offlineMs: 5000 })
    return true
  }
  if (req.method === 'POST' && url.pathname === '/control/relay-restart') {
    relayDown().then(() => relayUp(origin)).then(() => reply(200, { relay: state.relay }), (e: Error) => reply(500, { error: e.message }))
    return true
  }
  return false
}
const page = readFileSync(path.join(ROOT, 'scripts', 'demo-page.html'), 'utf8')
const site = await servePage(await bundleSdk(), { page, handle: control, port: await portOr(8790) })
origin = site.origin
await relayUp(origin)

async function portOr(preferred: number): Promise<number> {
  const free = await new Promise<boolean>((r) => { const s = createServer().once('error', () => r(false)).listen(preferred, '127.0.0.1', () => s.close(() => r(true))) })
  return free ? preferred : freePort()
}

// ---- the Java consumer, following the topic -----------------------------------------------------

interface Followed { partition: number; offset: number; value: string | null; producerId: number; producerEpoch: number; sequence: number; ready?: boolean }
const [java, javaArgs] = toolCommand('Follow', [cluster.bootstrap, topic, cluster.nodes[0]!.logDir])
const follower = spawn(java, javaArgs, { stdio: ['pipe', 'pipe', 'pipe'] })
let followerErr = ''
follower.stderr!.on('data', (d) => { followerErr += d })
let buffered = ''
let followerReady: () => void
const followerStarted = new Promise<void>((r) => { followerReady = r })
follower.stdout!.on('data', (d: Buffer) => {
  buffered += d
  const lines = buffered.split('\n')
  buffered = lines.pop()!
  for (const line of lines) {
    const r = JSON.parse(line) as Followed
    if (r.ready) { followerReady(); continue }
    const event = JSON.parse(Buffer.from(r.value ?? '', 'base64').toString('utf8')) as { id: string; type: string }
    broadcast('record', { partition: r.partition, offset: r.offset, producerId: r.producerId, producerEpoch: r.producerEpoch, sequence: r.sequence, id: event.id, type: event.type })
  }
})
follower.once('exit', (code) => { if (!stopping) console.error(`the Java follower exited (${code}):\n${followerErr}`) })
await followerStarted

async function stop(code: number): Promise<never> {
  stopping = true
  follower.stdin!.end()
  follower.kill('SIGTERM')
  for (const c of clients) c.end()
  await relayDown()
  await net.close()
  await site.close()
  process.exit(code)
}
process.on('SIGINT', () => void stop(130))
process.on('SIGTERM', () => void stop(143))

console.log(`\nThe page path: analytics SDK -> relay -> Kafka, read back by the Java consumer.`)
console.log(`  relay       ws://127.0.0.1:${relayPort}/kafka (kafka-edge bridge, pid ${relay!.pid}), behind a switch on :${net.port} that "go offline" cuts`)
console.log(`  dev secret  KAFKA_EDGE_BRIDGE_SECRET=${secret}`)
console.log(`              (tokens: KAFKA_EDGE_BRIDGE_SECRET=... npx kafka-edge token --sub me --topics ${topic} --audience ${audience})`)
console.log(`  topic       ${topic} (3 partitions) on ${cluster.bootstrap}`)
console.log(`\n  Open ${origin}/ in a browser.\n`)

if (!once) {
  console.log('Ctrl-C stops the page, the relay and Kafka.')
} else {
  try {
    await clickThrough()
    await stop(0)
  } catch (e) {
    console.error(`the page demo failed: ${(e as Error).stack}\nrelay log:\n${relayLog.slice(-3000)}\nfollower:\n${followerErr.slice(-2000)}`)
    await stop(1)
  }
}

// ---- --once: what a person would do, in Chromium ----------------------------------------------

interface Counts { tracked: number; read: number; once: number; twice: number; waiting: number }

async function clickThrough(): Promise<void> {
  const browser = await launch('chromium')
  const counts = (p: Page) => p.evaluate('window.demo.counts()') as Promise<Counts>
  const step = (what: string, c?: Counts) => console.log(`  [chromium] ${what}${c ? `: tracked ${c.tracked}, read ${c.read}, once ${c.once}, twice ${c.twice}, not read yet ${c.waiting}` : ''}`)
  const loaded = (p: Page) => p.waitForFunction('window.demo?.ready === true', { timeout: 30_000, polling: 50 })
  const settled = (p: Page, atLeast: number) => p.waitForFunction(`(() => { const c = window.demo.counts(); return c.tracked >= ${atLeast} && c.waiting === 0 })()`, { timeout: 60_000, polling: 100 })
  try {
    const p = await browser.browser.newPage()
    await p.setViewport({ width: 1280, height: 720 })
    await p.goto(`${origin}/`)
    await loaded(p)
    for (let i = 0; i < 5; i++) await p.click('#click')
    await settled(p, 5)
    step('5 clicks and the timer', await counts(p))
    await p.click('#offline')
    await p.waitForFunction(() => document.getElementById('net')!.textContent!.startsWith('offline'), { timeout: 10_000 })
    for (let i = 0; i < 5; i++) await p.click('#click')
    step('offline, 5 more clicks', await counts(p))
    await p.waitForFunction(() => document.getElementById('net')!.textContent === 'online', { timeout: 15_000 })
    await settled(p, 11)
    step('back online', await counts(p))
    await p.click('#relay')
    await p.waitForFunction(() => !(document.getElementById('relay') as HTMLButtonElement).disabled && document.getElementById('relayState')!.textContent!.startsWith('up'), { timeout: 30_000, polling: 100 })
    for (let i = 0; i < 3; i++) await p.click('#click')
    await settled(p, 15)
    step('relay restarted, 3 more clicks', await counts(p))
    for (let i = 0; i < 3; i++) await p.click('#click')
    await Promise.all([p.waitForNavigation(), p.click('#reload')])
    await loaded(p)
    for (let i = 0; i < 3; i++) await p.click('#click')
    await p.click('#timer') // the timer off, so the tracked count stands still for the final check
    const before = await counts(p)
    await settled(p, before.tracked)
    const c = await counts(p)
    step('reloaded right after 3 clicks, 3 more clicks', c)
    // A click whose track() had not resolved when the page reloaded is stored but not in the page's
    // list; it is read like the rest, so `read` may exceed `tracked`, never `once` fall short of it.
    if (c.twice !== 0 || c.waiting !== 0 || c.once < c.tracked) throw new Error(`the panel does not show each event once: ${JSON.stringify(c)}`)
    // The panel's view, checked against an independent read of the whole topic.
    const tracked = await p.evaluate(`JSON.parse(localStorage.getItem('demo:tracked:${topic}'))`) as string[]
    const records = await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected: c.read })
    const ids = records.map((r) => (JSON.parse(new TextDecoder().decode(r.value!)) as { id: string }).id)
    const read = new Set(ids)
    const missing = tracked.filter((id) => !read.has(id))
    if (read.size !== ids.length || missing.length || ids.length !== c.read) {
      throw new Error(`the Java reader read ${ids.length} records (${read.size} distinct; the panel ${c.read}) for ${tracked.length} tracked events; missing ${missing.length}`)
    }
    await p.waitForFunction(`document.getElementById('resume').textContent !== '…'`, { timeout: 5_000 })
    mkdirSync(path.dirname(screenshot), { recursive: true })
    await p.screenshot({ path: screenshot as `${string}.png` })
    step(`the Java reader agrees: ${ids.length} records, each tracked event once. Screenshot: ${path.relative(ROOT, screenshot)}`)
  } finally {
    await browser.close()
  }
}
