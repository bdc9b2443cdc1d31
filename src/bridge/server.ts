import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createTlsServer } from 'node:https'
import { randomBytes } from 'node:crypto'
import { connect as tcpConnect, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { Hono } from 'hono'
import { WebSocketServer } from 'ws'
import { API_NAMES } from '../edge/protocol/index.js'
import { beacon } from './beacon.js'
import { CloseCode } from './codes.js'
import { hostPortKey, type BridgeConfig, type HostPort } from './config.js'
import { RelayConnection, type ConnectionSetup } from './connection.js'
import { Destinations } from './destinations.js'
import { BRIDGE_METRICS as M, Bucket, Logger, Metrics } from './metrics.js'
import { Authenticator } from './authn.js'
import { registryRoutes } from './registry.js'
import { ProducerIdBindings, TicketKeys, deriveTicketKey } from './tickets.js'
import { UpstreamError, fetchBrokers, openUpstream } from './upstream.js'

/** The subprotocol the relay speaks; clients offer it next to `kafka-edge.bearer.<token>`. */
export const SUBPROTOCOL = 'kafka-edge.v1'
export const BEARER_PREFIX = 'kafka-edge.bearer.'
/** Offered by clients that read producer-id tickets (text messages); see docs/relay.md. */
export const TICKETS_SUBPROTOCOL = 'kafka-edge.tickets.v1'

/** A saved producer-id ticket presented at the upgrade: `kafka-edge.ticket.<ticket>`. */
export const TICKET_PREFIX = 'kafka-edge.ticket.'

export interface BridgeOptions {
  logger?: Logger
  env?: NodeJS.ProcessEnv
  /** Replaces how the relay dials brokers (tests count connection attempts with it). */
  openUpstream?: typeof openUpstream
}

export interface Bridge {
  readonly port: number
  /** ws://host:port/path */
  readonly url: string
  /** http://host:port */
  readonly httpUrl: string
  readonly metrics: Metrics
  readonly destinations: Destinations
  readonly connectionCount: number
  /** Stops accepting, lets in-flight responses drain (bounded), then closes every client with 1001. */
  close(opts?: { drainTimeoutMs?: number }): Promise<void>
}

/**
 * Answers a connection that will not be served (a bare status line, no body) and closes it; the
 * socket is destroyed once the answer is out, or after a second if the peer does not read it.
 */
function answerAndClose(socket: Duplex, status: number, text: string, headers = ''): void {
  if (socket.destroyed) return
  if (!socket.writable) { socket.destroy(); return }
  // A lingering close: what the client still sends is read and dropped until it closes too (or 1 s
  // passes). Closing with its bytes unread makes the kernel reset the connection, and a reset can
  // discard the answer before the client has read it.
  socket.on('data', () => {})
  socket.resume()
  socket.once('end', () => socket.destroy())
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n${headers}\r\n`)
  setTimeout(() => socket.destroy(), 1000).unref()
}

export async function startBridge(cfg: BridgeConfig, opts: BridgeOptions = {}): Promise<Bridge> {
  const relay = new Relay(cfg, opts)
  await relay.authn.init()
  await relay.listen()
  return relay
}

/** The relay process's shared state; each client connection is a RelayConnection (connection.ts). */
export class Relay implements Bridge {
  readonly metrics = new Metrics()
  readonly destinations: Destinations
  readonly log: Logger
  readonly faults: boolean
  readonly open: typeof openUpstream
  private readonly server: Server
  private readonly wss: WebSocketServer
  private readonly app = new Hono()
  readonly conns = new Set<RelayConnection>()
  /** Open WebSocket connections and beacons being served, per client address. */
  readonly perIp = new Map<string, number>()
  beaconsActive = 0
  private readonly perPrincipal = new Map<string, { count: number; frames: Bucket; bytes: Bucket }>()
  /** InitProducerId allowances; kept past the last connection so reconnecting does not refill them. */
  private readonly initPerPrincipal = new Map<string, Bucket>()
  private readonly initPerIp = new Map<string, Bucket>()
  private readonly upgradeTimers = new WeakMap<Duplex, NodeJS.Timeout>()
  readonly authn: Authenticator
  readonly tickets: TicketKeys
  readonly bindings: ProducerIdBindings
  /**
   * Parse budget: bytes of messages past SMALL_MESSAGE in reception (largeBytes), how many of them
   * are being read (largeActive), and who waits for the budget, oldest first.
   */
  private largeBytes = 0
  private largeActive = 0
  private readonly largeWaiting: RelayConnection[] = []
  partialBytes = 0
  readonly count = {
    framesIn: this.metrics.counter('kafka_edge_bridge_frames_total', { direction: 'in' }),
    framesOut: this.metrics.counter('kafka_edge_bridge_frames_total', { direction: 'out' }),
    bytesIn: this.metrics.counter('kafka_edge_bridge_bytes_total', { direction: 'in' }),
    bytesOut: this.metrics.counter('kafka_edge_bridge_bytes_total', { direction: 'out' }),
  }
  private readonly latency = new Map<number, (s: number) => void>()
  private sweepTimer: NodeJS.Timeout | null = null
  private closing: Promise<void> | null = null
  produceCount = 0
  port = 0

  constructor(readonly cfg: BridgeConfig, opts: BridgeOptions) {
    this.log = opts.logger ?? new Logger(cfg.log.level)
    this.open = opts.openUpstream ?? openUpstream
    this.faults = cfg.faults.enabled && (opts.env ?? process.env).KAFKA_EDGE_BRIDGE_FAULTS === '1'
    this.destinations = new Destinations(cfg, (b) => fetchBrokers(b, cfg), (e) => {
      this.metrics.inc(M.upstreamErrors, { kind: e instanceof UpstreamError ? e.kind : 'metadata' })
      this.log.warn('metadata_refresh_failed', { error: String(e) })
    })
    this.metrics.gauge('kafka_edge_bridge_connections_active', () => this.conns.size)
    this.metrics.gauge('kafka_edge_bridge_beacons_active', () => this.beaconsActive)
    this.metrics.gauge('kafka_edge_bridge_learned_brokers', () => this.destinations.learnedCount)
    this.metrics.gauge('kafka_edge_bridge_process_resident_memory_bytes', () => process.memoryUsage.rss())
    this.metrics.gauge('kafka_edge_bridge_producer_ids_bound', () => this.bindings.size)
    this.metrics.gauge('kafka_edge_bridge_parse_budget_waiting', () => this.largeWaiting.length)
    this.metrics.gauge('kafka_edge_bridge_parse_budget_bytes', () => this.partialBytes)
    this.authn = new Authenticator(cfg.auth)
    const ticketKeys: Array<string | Uint8Array> = cfg.auth.ticketSecrets.length > 0 ? [...cfg.auth.ticketSecrets]
      : cfg.auth.secrets.length > 0 ? [deriveTicketKey(cfg.auth.secrets[0]!)] : []
    if (ticketKeys.length === 0) {
      this.log.warn('ticket_key_not_shared', { advice: 'set auth.ticketSecret: without it producer-id tickets verify only on this instance and not after a restart' })
      ticketKeys.push(randomBytes(32))
    }
    this.tickets = new TicketKeys(ticketKeys)
    this.bindings = new ProducerIdBindings(cfg.limits.maxBoundProducerIds)
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: cfg.limits.maxFrameBytes,
      // Kafka batches are compressed already; deflate would cost CPU and invite decompression bombs.
      perMessageDeflate: false,
      clientTracking: false,
      // The relay answers pings itself, once each has drawn on the client's budgets (admitMessage).
      autoPong: false,
      handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
    })
    this.routes()
    const onRequest = (req: IncomingMessage, res: ServerResponse) => this.contain('http', res.socket, () => {
      // Held here: Node detaches req.socket from a response that closes its connection.
      const socket = req.socket
      this.clearUpgradeTimer(socket)
      // Slow bodies too: a request whose body stalls would otherwise hold its connection until
      // Node's 30 s sweep, and a pipelined one behind an answered request never.
      if (!req.complete) this.armBodyDeadline(req, res, socket)
      // Keep-alive: the next request on this socket gets the same header deadline as the first.
      res.once('finish', () => this.contain('http', socket, () => { if (!socket.destroyed) this.armHeaderDeadline(socket) }))
      void this.http(req, res)
    })
    this.server = cfg.listenTls
      ? createTlsServer({ cert: cfg.listenTls.cert, key: cfg.listenTls.key, handshakeTimeout: cfg.limits.upgradeTimeoutMs }, onRequest)
      : createServer(onRequest)
    // Node's own header timeout is checked every 30 s; ours is exact, this is only a backstop.
    this.server.headersTimeout = cfg.limits.upgradeTimeoutMs + 1000
    this.server.requestTimeout = Math.max(cfg.limits.upgradeTimeoutMs + 2000, 30_000)
    // Slowloris: a connection gets upgradeTimeoutMs to finish its request headers.
    this.server.on(cfg.listenTls ? 'secureConnection' : 'connection', (socket: Socket) => this.armHeaderDeadline(socket))
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.contain('upgrade', socket, () => this.upgrade(req, socket, head)))
    // Without a listener Node drops a CONNECT request's connection unanswered, with any pipelined answers before it.
    this.server.on('connect', (_req: IncomingMessage, socket: Duplex) => this.contain('connect', socket, () => {
      this.metrics.inc(M.rejects, { reason: 'bad_http' })
      answerAndClose(socket, 405, 'Method Not Allowed')
    }))
    this.server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
      this.metrics.inc(M.rejects, { reason: 'bad_http' })
      // Node's own answers: 431 for oversized headers, 408 for its request timeout, else 400.
      if (err.code === 'HPE_HEADER_OVERFLOW') answerAndClose(socket, 431, 'Request Header Fields Too Large')
      else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') answerAndClose(socket, 408, 'Request Timeout')
      else answerAndClose(socket, 400, 'Bad Request')
    })
  }

  get connectionCount(): number { return this.conns.size }
  get url(): string { return `${this.cfg.listenTls ? 'wss' : 'ws'}://${hostPortKey({ host: this.cfg.listen.host, port: this.port })}${this.cfg.path}` }
  get httpUrl(): string { return `${this.cfg.listenTls ? 'https' : 'http'}://${hostPortKey({ host: this.cfg.listen.host, port: this.port })}` }

  /**
   * Runs one client's event handler so that whatever it throws stays with that client: the error is
   * logged and counted, and that client's socket (when there is one) is answered 500 and closed.
   * The relay serves every tenant from one process, so no single request may end it.
   */
  contain(where: string, socket: Duplex | null, fn: () => void): void {
    try { fn() } catch (e) {
      this.metrics.inc(M.rejects, { reason: 'internal_error' })
      this.log.error('handler_error', { where, error: String((e as Error)?.stack ?? e).slice(0, 2000) })
      if (socket && !socket.destroyed) {
        if ((socket as Socket).bytesWritten === 0) answerAndClose(socket, 500, 'Internal Server Error')
        else socket.destroy()
      }
    }
  }

  private armHeaderDeadline(socket: Duplex): void {
    this.clearUpgradeTimer(socket)
    const t = setTimeout(() => this.contain('header_deadline', socket, () => {
      this.metrics.inc(M.rejects, { reason: 'upgrade_timeout' })
      // A connection that is told nothing cannot tell a slow relay from a dead one.
      answerAndClose(socket, 408, 'Request Timeout')
    }), this.cfg.limits.upgradeTimeoutMs)
    const first = !this.upgradeTimers.has(socket) && !this.deadlineWatched.has(socket)
    this.upgradeTimers.set(socket, t)
    if (first) {
      this.deadlineWatched.add(socket)
      socket.once('close', () => this.clearUpgradeTimer(socket))
    }
  }
  private readonly deadlineWatched = new WeakSet<Duplex>()

  private armBodyDeadline(req: IncomingMessage, res: ServerResponse, socket: Duplex): void {
    const t = setTimeout(() => this.contain('body_deadline', socket, () => {
      if (req.complete || socket.destroyed) return
      this.metrics.inc(M.rejects, { reason: 'body_timeout' })
      // The handler still reading the body must hear of it: once its answer is out, Node no longer
      // ends a request whose socket closes, and the handler (and the slot it holds) would wait forever.
      const end = () => { socket.destroy(); req.destroy(new Error('request body timed out')) }
      // Once an answer has begun, a second status line would corrupt it: closing is the answer.
      if (res.headersSent) { end(); return }
      res.writeHead(408, { connection: 'close', 'content-type': 'text/plain; charset=utf-8' })
      res.end(`the request body did not arrive within ${this.cfg.limits.upgradeTimeoutMs} ms`, end)
      setTimeout(end, 1000).unref()
    }), this.cfg.limits.upgradeTimeoutMs)
    const done = () => clearTimeout(t)
    req.once('end', done)
    req.once('close', done)
  }

  latencyFor(apiKey: number): (s: number) => void {
    let h = this.latency.get(apiKey)
    if (!h) { h = this.metrics.histogram(M.latency, { api: API_NAMES[apiKey] ?? String(apiKey) }); this.latency.set(apiKey, h) }
    return h
  }

  /** One InitProducerId from the principal's and the address's allowance (KIP-936: every page a fresh id). */
  admitInitProducerId(principal: string, ip: string): boolean {
    const take = (map: Map<string, Bucket>, k: string, perMin: number): number => {
      if (perMin <= 0) return 0
      let b = map.get(k)
      if (!b) { b = new Bucket(perMin / 60, perMin); map.set(k, b) }
      return b.take(1)
    }
    return take(this.initPerPrincipal, principal, this.cfg.limits.initProducerIdsPerMinutePerPrincipal) === 0 &&
      take(this.initPerIp, ip, this.cfg.limits.initProducerIdsPerMinutePerIp) === 0
  }

  /**
   * `n` more bytes of a large message arrived on `conn`. Returns false when the budget is spent:
   * the caller stops reading until grantLarge(). The last one being read always goes on, so the
   * budget can delay messages but never deadlock them.
   */
  largeProgress(conn: RelayConnection, n: number, first: boolean): boolean {
    this.largeBytes += n
    if (first) this.largeActive++
    if (this.largeBytes <= this.cfg.limits.parseBudgetBytes || this.largeActive <= 1) return true
    this.largeActive--
    this.largeWaiting.push(conn)
    this.metrics.inc('kafka_edge_bridge_parse_budget_waits_total')
    return false
  }

  /** A large message ended (whole, or its connection closed): its bytes leave the budget and waiters resume. */
  largeDone(conn: RelayConnection, bytes: number, active: boolean): void {
    this.largeBytes -= bytes
    const i = this.largeWaiting.indexOf(conn)
    if (i >= 0) this.largeWaiting.splice(i, 1)
    else if (active) this.largeActive--
    while (this.largeWaiting.length > 0 && (this.largeBytes < this.cfg.limits.parseBudgetBytes || this.largeActive === 0)) {
      this.largeActive++
      this.largeWaiting.shift()!.grantLarge()
    }
  }

  listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject)
      this.server.listen(this.cfg.listen.port, this.cfg.listen.host, () => {
        this.server.off('error', reject)
        const addr = this.server.address()
        this.port = typeof addr === 'object' && addr ? addr.port : this.cfg.listen.port
        const every = Math.max(50, Math.min(1000, this.cfg.limits.pingIntervalMs, this.cfg.limits.idleTimeoutMs / 2))
        this.sweepTimer = setInterval(() => this.sweep(), every)
        this.sweepTimer.unref()
        if (this.faults) this.log.warn('fault_injection_enabled', { faults: this.cfg.faults })
        this.log.info('listening', { url: this.url, brokers: this.cfg.brokers.map(hostPortKey), tls: this.cfg.tls !== null, sasl: this.cfg.sasl?.mechanism ?? null })
        if (!this.cfg.tls && (this.cfg.sasl?.mechanism === 'PLAIN' || this.cfg.sasl?.mechanism === 'OAUTHBEARER')) {
          this.log.warn('sasl_without_tls', { mechanism: this.cfg.sasl.mechanism, advice: 'the credential crosses the network in the clear: add a tls section and use the brokers\' SASL_SSL port' })
        }
        resolve()
      })
    })
  }

  private routes(): void {
    this.app.get('/healthz', (c) => c.json({ status: 'ok' }))
    this.app.get('/readyz', async (c) => {
      if (this.closing) return c.json({ status: 'draining' }, 503)
      const up = await this.probe()
      return up ? c.json({ status: 'ready', connections: this.conns.size }) : c.json({ status: 'no broker reachable' }, 503)
    })
    this.app.get('/metrics', (c) => c.text(this.metrics.render(), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }))
    this.app.get(this.cfg.path, (c) => c.text('WebSocket upgrade required', 426))
    registryRoutes(this, this.app)
  }

  private probeCache: { at: number; ok: Promise<boolean> } | null = null
  /** Readiness = a bootstrap server accepts TCP (cached 2 s, so probes cannot hammer the brokers). */
  private probe(): Promise<boolean> {
    if (this.probeCache && Date.now() - this.probeCache.at < 2000) return this.probeCache.ok
    const ok = (async () => {
      for (const b of this.cfg.brokers) {
        const reached = await new Promise<boolean>((resolve) => {
          const s = tcpConnect({ host: b.host, port: b.port })
          const t = setTimeout(() => { s.destroy(); resolve(false) }, 1000)
          s.once('connect', () => { clearTimeout(t); s.destroy(); resolve(true) })
          s.once('error', () => { clearTimeout(t); resolve(false) })
        })
        if (reached) return true
      }
      return false
    })()
    this.probeCache = { at: Date.now(), ok }
    return ok
  }

  private async http(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      if (req.method === 'POST' && (req.url ?? '').split('?')[0] === `${this.cfg.path}/beacon`) return await beacon(this, req, res)
      const headers = new Headers()
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v)
      // The client's address travels as the route's env: a header could be forged.
      const response = await this.app.fetch(new Request(`http://relay${req.url ?? '/'}`, { method: req.method, headers }), { ip: req.socket.remoteAddress ?? 'unknown' })
      const body = Buffer.from(await response.arrayBuffer())
      const out: Record<string, string> = {}
      response.headers.forEach((v, k) => { out[k] = v })
      res.writeHead(response.status, out)
      res.end(req.method === 'HEAD' ? undefined : body)
    } catch (e) {
      // A body cut short (the client went away, or its deadline answered 408) is the client's doing.
      if (res.writableEnded || req.socket?.destroyed !== false) { this.log.info('http_request_ended', { error: String(e) }); return }
      this.log.error('http_error', { error: String(e) })
      if (!res.headersSent) res.writeHead(500)
      res.end()
    }
  }

  private clearUpgradeTimer(socket: Duplex): void {
    const t = this.upgradeTimers.get(socket)
    if (t) { clearTimeout(t); this.upgradeTimers.delete(socket) }
  }

  private rejectHttp(socket: Duplex, status: number, text: string, reason: string, headers = ''): void {
    this.metrics.inc(M.rejects, { reason })
    this.log.info('upgrade_rejected', { status, reason })
    answerAndClose(socket, status, text, headers)
  }

  originAllowed(origin: string | undefined): boolean {
    if (origin === undefined) return this.cfg.allowMissingOrigin
    return this.cfg.origins.includes('*') || this.cfg.origins.includes(origin)
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.clearUpgradeTimer(socket)
    let url: URL
    try { url = new URL(req.url ?? '/', 'http://relay') } catch { return this.rejectHttp(socket, 400, 'Bad Request', 'bad_http') }
    if (this.closing) return this.rejectHttp(socket, 503, 'Service Unavailable', 'shutting_down')
    if (url.pathname !== this.cfg.path) return this.rejectHttp(socket, 404, 'Not Found', 'path')
    const ip = req.socket.remoteAddress ?? 'unknown'
    if ((this.perIp.get(ip) ?? 0) >= this.cfg.limits.connectionsPerIp) return this.rejectHttp(socket, 429, 'Too Many Requests', 'connections_per_ip', 'Retry-After: 1\r\n')
    if (this.conns.size + this.beaconsActive >= this.cfg.limits.maxConnections) return this.rejectHttp(socket, 503, 'Service Unavailable', 'max_connections', 'Retry-After: 1\r\n')
    // Cross-site WebSocket hijacking needs a browser, and browsers always send Origin. A refused Origin
    // is still upgraded, then closed with 4403 before anything is read: a page only sees close codes.
    const origin = req.headers.origin
    const originRefused = this.originAllowed(origin) ? null : origin === undefined ? 'a request without Origin is not allowed' : `Origin ${origin} is not allowed`

    let token: string | null = null
    const offered = String(req.headers['sec-websocket-protocol'] ?? '').split(',').map((s) => s.trim())
    const bearer = offered.find((p) => p.startsWith(BEARER_PREFIX))
    if (bearer) token = bearer.slice(BEARER_PREFIX.length)
    else if (this.cfg.auth.allowQueryToken) token = url.searchParams.get('token')
    // Cookies are deliberately never read: a browser attaches them to cross-site requests.
    const ticket = offered.find((p) => p.startsWith(TICKET_PREFIX))?.slice(TICKET_PREFIX.length) ?? null
    const setup: ConnectionSetup = {
      ip, token, broker: url.searchParams.get('broker'), originRefused, ticket, ticketsAware: offered.includes(TICKETS_SUBPROTOCOL), socket: req.socket,
    }
    // Counted only once the WebSocket layer accepted the upgrade: one it refuses (no
    // Sec-WebSocket-Key, bad version) never reaches this callback, so it holds nothing.
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      this.holdIp(ip)
      this.metrics.inc(M.connections)
      const conn = new RelayConnection(this, ws, setup)
      this.conns.add(conn)
      conn.start()
    })
  }

  /** Called once per connection when it ends. */
  release(conn: RelayConnection): void {
    if (!this.conns.delete(conn)) return
    this.releaseIp(conn.ip)
    if (conn.principal !== null) this.releasePrincipal(conn.principal)
  }

  holdIp(ip: string): void { this.perIp.set(ip, (this.perIp.get(ip) ?? 0) + 1) }

  releaseIp(ip: string): void {
    const n = (this.perIp.get(ip) ?? 1) - 1
    if (n <= 0) this.perIp.delete(ip); else this.perIp.set(ip, n)
  }

  releasePrincipal(sub: string): void {
    const p = this.perPrincipal.get(sub)
    if (p && --p.count <= 0) this.perPrincipal.delete(sub)
  }

  /** Counts a principal's connection; null when it has too many. */
  admitPrincipal(sub: string): { frames: Bucket; bytes: Bucket } | null {
    let p = this.perPrincipal.get(sub)
    if (!p) {
      p = { count: 0, frames: new Bucket(this.cfg.limits.principalFramesPerSec), bytes: new Bucket(this.cfg.limits.principalBytesPerSec) }
      this.perPrincipal.set(sub, p)
    }
    if (p.count >= this.cfg.limits.connectionsPerPrincipal) return null
    p.count++
    return p
  }

  private sweep(): void {
    const now = performance.now()
    for (const c of this.conns) c.tick(now)
    if (now - this.lastAllowanceSweep > 10_000) {
      this.lastAllowanceSweep = now
      // A refilled allowance is the same as none: forget it so addresses cannot grow the maps.
      for (const map of [this.initPerPrincipal, this.initPerIp]) for (const [k, b] of map) if (b.full()) map.delete(k)
    }
  }
  private lastAllowanceSweep = 0

  close(opts: { drainTimeoutMs?: number } = {}): Promise<void> {
    if (this.closing) return this.closing
    const drainMs = opts.drainTimeoutMs ?? this.cfg.limits.drainTimeoutMs
    this.log.info('shutting_down', { connections: this.conns.size, drainMs })
    this.closing = (async () => {
      const stopped = new Promise<void>((resolve) => this.server.close(() => resolve()))
      this.server.closeIdleConnections()
      const all = [...this.conns].map((c) => c.drain())
      let timer: NodeJS.Timeout | undefined
      await Promise.race([Promise.all(all), new Promise<void>((r) => { timer = setTimeout(r, drainMs) })])
      clearTimeout(timer)
      for (const c of this.conns) c.close(CloseCode.GOING_AWAY, 'relay shutting down', null)
      if (this.sweepTimer) clearInterval(this.sweepTimer)
      this.server.closeAllConnections()
      await stopped
      this.log.info('stopped', {})
    })()
    return this.closing
  }
}

export type { HostPort }
