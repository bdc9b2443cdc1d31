import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createTlsServer } from 'node:https'
import { randomBytes } from 'node:crypto'
import { connect as tcpConnect, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { Hono } from 'hono'
import { WebSocketServer, type WebSocket } from 'ws'
import {
  API_NAMES, FindCoordinator, InitProducerId, Metadata, Produce, apiByKey, decodeResponse, encodeRequest,
  type ApiSchema, type RequestBody, type ResponseBody,
} from '../edge/protocol/index.js'
import { authenticate, reauthenticationDelay, type SaslCall } from '../edge/auth/sasl.js'
import type { FrameDecoder } from '../edge/protocol/frame-decoder.js'
import { SslAuthenticationException } from '../edge/errors.js'
import { CloseCode } from './codes.js'
import { hostPortKey, type BridgeConfig, type HostPort } from './config.js'
import { Destinations } from './destinations.js'
import { Bucket, Logger, Metrics } from './metrics.js'
import { Authenticator } from './authn.js'
import { checkMessage, grantsFor, inspectRequest, type Grants, type RequestContext } from './policy.js'
import { hasTopLevelTags } from './scan.js'
import { ProducerIdBindings, TicketKeys, deriveTicketKey } from './tickets.js'
import type { TokenClaims, TokenResult } from './token.js'
import { UpstreamError, fetchBrokers, openUpstream } from './upstream.js'
import { saslMechanism } from './credentials.js'

/** The subprotocol the relay speaks; clients offer it next to `kafka-edge.bearer.<token>`. */
export const SUBPROTOCOL = 'kafka-edge.v1'
export const BEARER_PREFIX = 'kafka-edge.bearer.'
/** Offered by clients that read producer-id tickets (text messages); see docs/relay.md. */
export const TICKETS_SUBPROTOCOL = 'kafka-edge.tickets.v1'
/** The browsers' keepalive budget (fetch keepalive / sendBeacon), plus the beacon's JSON line. */
const BEACON_MAX_BYTES = 64 * 1024 + 4096

/** A saved producer-id ticket presented at the upgrade: `kafka-edge.ticket.<ticket>`. */
export const TICKET_PREFIX = 'kafka-edge.ticket.'
/** How large a message may grow while it arrives before it needs a share of the relay-wide parse budget. */
const SMALL_MESSAGE = 256 * 1024

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

type BeaconReply = (status: number, body: string | Buffer, reason: string | null, headers?: Record<string, string>) => void

interface Pending {
  apiKey: number; version: number; t0: number; learn: boolean; drop: boolean; init: { transactionalId: string | null } | null
  /** Set for the relay's own requests (re-authentication): their answers go here, not to the client. */
  own?: { answer: (body: Uint8Array) => void; fail: (e: Error) => void }
}

/** Where the relay's own correlation ids start on a client's connection (the first free one is used). */
const OWN_CORRELATION = 0x7e100000

const M = {
  connections: 'kafka_edge_bridge_connections_total',
  rejects: 'kafka_edge_bridge_rejects_total',
  upstreamErrors: 'kafka_edge_bridge_upstream_errors_total',
  latency: 'kafka_edge_bridge_request_duration_seconds',
} as const

const REASON_LIMIT = 123
const clipReason = (s: string): string => {
  const b = Buffer.from(s, 'utf8')
  return b.length <= REASON_LIMIT ? s : b.subarray(0, REASON_LIMIT - 3).toString('utf8').replace(/\uFFFD$/, '') + '...'
}

/**
 * Answers a connection that will not be served (a bare status line, no body) and closes it; the
 * socket is destroyed once the answer is out, or after a second if the peer does not read it.
 */
function answerAndClose(socket: Duplex, status: number, text: string, headers = ''): void {
  if (socket.destroyed) return
  if (!socket.writable) { socket.destroy(); return }
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n${headers}\r\n`, () => socket.destroy())
  setTimeout(() => socket.destroy(), 1000).unref()
}

/**
 * What the client is told when its broker connection could not be set up. The reason says which
 * side to look at but carries no credential and no relay config detail; the relay's log has those.
 */
function upstreamCloseReason(e: unknown): string {
  if (!(e instanceof UpstreamError)) return 'broker unreachable'
  switch (e.kind) {
    case 'tls': return `TLS to the broker failed: ${e.cause instanceof SslAuthenticationException ? e.cause.reason : 'handshake failed'}`
    case 'sasl': return 'relay could not authenticate to the broker'
    case 'timeout': return 'broker connection timed out'
    case 'protocol': return 'broker sent something the relay cannot read during setup'
    default: return 'broker unreachable'
  }
}

export async function startBridge(cfg: BridgeConfig, opts: BridgeOptions = {}): Promise<Bridge> {
  const relay = new Relay(cfg, opts)
  await relay.authn.init()
  await relay.listen()
  return relay
}

class Relay implements Bridge {
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
  private readonly perIp = new Map<string, number>()
  private beaconsActive = 0
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
      if (req.method === 'POST' && (req.url ?? '').split('?')[0] === `${this.cfg.path}/beacon`) return await this.beacon(req, res)
      const headers = new Headers()
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v)
      const response = await this.app.fetch(new Request(`http://relay${req.url ?? '/'}`, { method: req.method, headers }))
      const body = Buffer.from(await response.arrayBuffer())
      const out: Record<string, string> = {}
      response.headers.forEach((v, k) => { out[k] = v })
      res.writeHead(response.status, out)
      res.end(req.method === 'HEAD' ? undefined : body)
    } catch (e) {
      this.log.error('http_error', { error: String(e) })
      if (!res.headersSent) res.writeHead(500)
      res.end()
    }
  }

  /**
   * A page's last Produce, sent with fetch({ keepalive: true }) while it goes away (docs/relay.md,
   * "Page-hide beacon"). Body: one line of JSON `{"token", "ticket"?, "broker"?}`, a newline, then
   * one or more size-prefixed Produce request frames, 64 KiB at most (the browsers' keepalive
   * budget). A partition takes one batch per request, so a page with several batches for a partition
   * sends one frame per batch in sequence order; they go out one after another on one connection,
   * each after the previous one's answer, because two beacons racing on two connections could bring
   * the later sequence first and have it refused. The checks are the WebSocket path's, on every frame
   * before any is sent: Origin, token, ticket, then inspectRequest with this principal's producer-id
   * bindings; only Produce passes. The answer is the broker's Produce responses, size-prefixed, in
   * order (the page is usually gone; a test reads them).
   */
  private async beacon(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const origin = req.headers.origin
    const reply: BeaconReply = (status, body, reason, headers = {}) => {
      if (reason) { this.metrics.inc(M.rejects, { reason: `beacon_${reason}` }); this.log.info('beacon_rejected', { status, reason: String(body).slice(0, 120) }) }
      if (res.headersSent || res.destroyed) return
      res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/octet-stream', ...(origin && this.originAllowed(origin) ? { 'access-control-allow-origin': origin, vary: 'Origin' } : {}), ...headers })
      res.end(body)
    }
    // A beacon holds a broker connection while it is served, so it counts against the same caps as
    // a WebSocket: per address from the first byte, per principal once its token is verified.
    const ip = req.socket.remoteAddress ?? 'unknown'
    if ((this.perIp.get(ip) ?? 0) >= this.cfg.limits.connectionsPerIp) { req.resume(); return reply(429, 'too many connections from this address', 'connections_per_ip', { 'retry-after': '1' }) }
    if (this.conns.size + this.beaconsActive >= this.cfg.limits.maxConnections) { req.resume(); return reply(503, 'the relay is at its connection limit', 'max_connections', { 'retry-after': '1' }) }
    this.holdIp(ip)
    this.beaconsActive++
    const held: { principal: string | null } = { principal: null }
    try {
      await this.serveBeacon(req, reply, held)
    } finally {
      this.beaconsActive--
      this.releaseIp(ip)
      if (held.principal !== null) this.releasePrincipal(held.principal)
    }
  }

  private async serveBeacon(req: IncomingMessage, reply: BeaconReply, held: { principal: string | null }): Promise<void> {
    const origin = req.headers.origin
    if (!this.originAllowed(origin)) return reply(403, origin === undefined ? 'a request without Origin is not allowed' : `Origin ${origin} is not allowed`, 'origin')
    const tooLarge = () => reply(413, `a beacon carries at most ${BEACON_MAX_BYTES} bytes`, 'too_large', { connection: 'close' })
    if (Number(req.headers['content-length'] ?? 0) > BEACON_MAX_BYTES) { req.resume(); return tooLarge() }
    const chunks: Buffer[] = []
    let size = 0
    for await (const c of req as AsyncIterable<Buffer>) {
      size += c.length
      if (size > BEACON_MAX_BYTES) { req.resume(); return tooLarge() }
      chunks.push(c)
    }
    const body = Buffer.concat(chunks)
    const nl = body.indexOf(10)
    let head: { token?: unknown; ticket?: unknown; broker?: unknown }
    try { head = JSON.parse(body.subarray(0, nl < 0 ? 0 : nl).toString('utf8')) as typeof head } catch { return reply(400, 'a beacon starts with one line of JSON: {"token", "ticket"?, "broker"?}', 'bad_frame') }
    const frames: Buffer[] = []
    for (let at = nl + 1; at < body.length;) {
      const size = body.length - at >= 4 ? body.readInt32BE(at) : -1
      const end = size < 0 ? body.length : Math.min(body.length, at + 4 + size)
      const bad = checkMessage(body.subarray(at, end))
      if (bad) return reply(400, bad, 'bad_frame')
      frames.push(body.subarray(at, end))
      at = end
    }
    if (frames.length === 0) return reply(400, 'a beacon carries at least one Produce request frame after its JSON line', 'bad_frame')
    const auth = typeof head.token === 'string' ? await this.authn.verify(head.token) : { ok: false as const, expired: false, reason: 'no token' }
    if (!auth.ok) return reply(401, auth.expired ? 'token expired' : `authentication failed: ${auth.reason}`, auth.expired ? 'token_expired' : 'unauthenticated')
    const principal = auth.claims.sub
    const budget = this.admitPrincipal(principal)
    if (!budget) return reply(429, 'too many connections for this principal', 'connections_per_principal', { 'retry-after': '1' })
    held.principal = principal
    const grants = grantsFor(auth.claims)
    if (typeof head.ticket === 'string') {
      const v = this.tickets.verify(head.ticket, Date.now() / 1000)
      const refusal = !v.ok ? v.reason : v.ticket.sub !== principal ? 'producer-id ticket was issued to another principal'
        : v.ticket.txn !== null && !grants.transactionalId(v.ticket.txn) ? 'producer-id ticket names a transactional id this token does not allow' : null
      this.metrics.inc('kafka_edge_bridge_producer_id_tickets_total', { event: refusal === null ? 'accepted' : 'refused' })
      if (refusal !== null || !v.ok) return reply(403, refusal ?? 'producer-id ticket refused', 'producer_id_ticket')
      this.bindings.bind(principal, v.ticket.pid, v.ticket.epoch)
    }
    const ctx: RequestContext = {
      grants, maxNamesPerRequest: this.cfg.limits.maxNamesPerRequest,
      ownsProducerId: (pid) => this.bindings.holds(principal, pid),
      admitInitProducerId: () => false,
    }
    for (const frame of frames) {
      const verdict = inspectRequest(frame.subarray(4), ctx)
      if (!verdict.ok) return reply(403, verdict.reason, verdict.metric)
      if (verdict.apiKey !== Produce.key || !verdict.expectResponse) return reply(403, 'a beacon carries Produce requests with acks 1 or -1 only', 'api')
    }
    // The principal's frame and byte budgets are the WebSocket path's: a beacon is not a way around them.
    const wait = Math.max(budget.frames.take(frames.length), budget.bytes.take(body.length))
    if (wait > this.cfg.limits.maxThrottleMs) return reply(429, 'rate limit exceeded', 'rate', { 'retry-after': String(Math.ceil(wait / 1000)) })
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
    const dest = await this.destinations.resolve(typeof head.broker === 'string' ? head.broker : null)
    if (!dest.ok) return reply(403, dest.reason, 'destination')
    let up: Awaited<ReturnType<typeof openUpstream>>
    try {
      up = await this.open(dest.target, this.cfg, this.cfg.limits.upstreamTimeoutMs, this.cfg.limits.maxResponseFrameBytes)
    } catch (e) {
      this.metrics.inc(M.upstreamErrors, { kind: e instanceof UpstreamError ? e.kind : 'connect' })
      return reply(502, upstreamCloseReason(e), null)
    }
    try {
      // Each answer keeps its size prefix, so the reply is the responses' frames back to back.
      const answers: Buffer[] = []
      await new Promise<void>((resolve, reject) => {
        let t: ReturnType<typeof setTimeout> | undefined
        const next = (): void => {
          clearTimeout(t)
          if (answers.length >= frames.length) return resolve()
          t = setTimeout(() => reject(new Error('the broker did not answer the beacon in time')), this.cfg.limits.upstreamTimeoutMs)
          up.socket.write(frames[answers.length]!)
        }
        up.socket.on('data', (chunk: Buffer) => {
          try {
            for (const f of up.decoder.push(chunk)) {
              const framed = Buffer.alloc(4 + f.length)
              framed.writeInt32BE(f.length)
              framed.set(f, 4)
              answers.push(framed)
              next()
            }
          } catch (e) { clearTimeout(t); reject(e as Error) }
        })
        up.socket.once('error', (e) => { clearTimeout(t); reject(new Error(`the broker connection failed: ${e.message}`)) })
        up.socket.once('close', () => { clearTimeout(t); reject(new Error('the broker closed the connection')) })
        next()
      })
      this.metrics.inc('kafka_edge_bridge_beacons_total')
      reply(200, Buffer.concat(answers), null)
    } catch (e) {
      reply(502, (e as Error).message, null)
    } finally {
      // The slot this beacon holds frees once its broker connection is gone, not when asked to go.
      const gone = up.socket.closed ? Promise.resolve() : new Promise((r) => up.socket.once('close', r))
      up.socket.destroy()
      await gone
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

  private originAllowed(origin: string | undefined): boolean {
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

  private holdIp(ip: string): void { this.perIp.set(ip, (this.perIp.get(ip) ?? 0) + 1) }

  private releaseIp(ip: string): void {
    const n = (this.perIp.get(ip) ?? 1) - 1
    if (n <= 0) this.perIp.delete(ip); else this.perIp.set(ip, n)
  }

  private releasePrincipal(sub: string): void {
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

type State = 'setup' | 'open' | 'draining' | 'closed'

/** What the upgrade request said, read before the WebSocket existed. */
interface ConnectionSetup {
  ip: string
  token: string | null
  broker: string | null
  /** Why the Origin is refused, or null. */
  originRefused: string | null
  /** A saved producer-id ticket presented in Sec-WebSocket-Protocol. */
  ticket: string | null
  /** The client reads producer-id tickets (offered TICKETS_SUBPROTOCOL). */
  ticketsAware: boolean
  socket: Duplex
}

/** A client's text message: the only kind is a producer-id ticket presented on an open connection. */
function parseControl(text: string): { ticket: string } | null {
  if (text.length > 2048) return null
  try {
    const m = JSON.parse(text) as { type?: unknown; ticket?: unknown }
    return m && m.type === 'producer-id-ticket' && typeof m.ticket === 'string' ? { ticket: m.ticket } : null
  } catch { return null }
}

class RelayConnection implements RequestContext {
  private state: State = 'setup'
  private upstream: Socket | null = null
  private decoder: FrameDecoder | null = null
  private readonly queue: Buffer[] = []
  private queuedBytes = 0
  private readonly pending = new Map<number, Pending>()
  private readonly pauses = new Set<string>()
  private grantsOrNull: Grants | null = null
  private principalBuckets: { frames: Bucket; bytes: Bucket } | null = null
  private readonly frames: Bucket
  private readonly bytes: Bucket
  private lastActivity = performance.now()
  private lastPing = performance.now()
  private awaitingPong = false
  private framesIn = 0
  private timers: NodeJS.Timeout[] = []
  private rateTimer: NodeJS.Timeout | null = null
  private drained: (() => void) | null = null
  private responseChain: Promise<void> = Promise.resolve()
  /** Responses received from the broker but not yet handed to the WebSocket (fault delay). */
  private unsent = 0
  principal: string | null = null
  private target = ''
  private upstreamTarget: HostPort | null = null
  private reauthTimer: NodeJS.Timeout | null = null
  private reauthenticating = false
  readonly ip: string
  private readonly broker: string | null
  /** Producer ids this connection has verified (from the relay-wide bindings or a ticket); the last one is checked first. */
  private readonly ownedPids = new Set<bigint>()
  private lastPid: bigint | null = null
  /** Parse budget: bytes received since the last whole message. */
  private partial = 0
  /** This message is past SMALL_MESSAGE (counted in the relay's largeBytes); waiting = not read until the budget allows. */
  private large = false
  private largeCounted = 0
  private waitingLarge = false
  readonly maxNamesPerRequest: number

  private get closed(): boolean { return this.state === 'closed' }

  constructor(private readonly relay: Relay, private readonly ws: WebSocket, private readonly setup: ConnectionSetup) {
    this.frames = new Bucket(relay.cfg.limits.framesPerSec)
    this.bytes = new Bucket(relay.cfg.limits.bytesPerSec)
    this.ip = setup.ip
    this.broker = setup.broker
    this.maxNamesPerRequest = relay.cfg.limits.maxNamesPerRequest
  }

  get grants(): Grants { return this.grantsOrNull! }

  ownsProducerId(pid: bigint): boolean {
    if (pid === this.lastPid) return true
    if (!this.ownedPids.has(pid)) {
      if (!this.relay.bindings.holds(this.principal!, pid)) return false
      if (this.ownedPids.size < 64) this.ownedPids.add(pid)
    }
    this.lastPid = pid
    return true
  }

  admitInitProducerId(): boolean { return this.relay.admitInitProducerId(this.principal!, this.ip) }

  private bindPid(pid: bigint, epoch: number): void {
    this.relay.bindings.bind(this.principal!, pid, epoch)
    if (this.ownedPids.size < 64) this.ownedPids.add(pid)
  }

  /** Verifies a presented ticket and binds its producer id; false (and the connection closed) when it does not hold. */
  private acceptTicket(ticket: string): boolean {
    const { relay } = this
    const v = relay.tickets.verify(ticket, Date.now() / 1000)
    let refusal: string | null = null
    if (!v.ok) refusal = v.reason
    else if (v.ticket.sub !== this.principal) refusal = 'producer-id ticket was issued to another principal'
    else if (v.ticket.txn !== null && !this.grants.transactionalId(v.ticket.txn)) refusal = 'producer-id ticket names a transactional id this token does not allow'
    if (refusal !== null || !v.ok) {
      relay.metrics.inc('kafka_edge_bridge_producer_id_tickets_total', { event: 'refused' })
      this.close(CloseCode.FOREIGN_PRODUCER_ID, refusal ?? 'producer-id ticket refused', 'producer_id_ticket')
      return false
    }
    relay.metrics.inc('kafka_edge_bridge_producer_id_tickets_total', { event: 'accepted' })
    this.bindPid(v.ticket.pid, v.ticket.epoch)
    return true
  }

  /** Socket bytes before ws assembles them: the part of a message in reception counts against the parse budget. */
  private onRawData(n: number): void {
    if (this.state === 'closed') return
    this.partial += n
    this.relay.partialBytes += n
    if (this.partial <= SMALL_MESSAGE || this.waitingLarge) return
    const first = !this.large
    this.large = true
    const counted = first ? this.partial : n
    this.largeCounted += counted
    if (!this.relay.largeProgress(this, counted, first)) { this.waitingLarge = true; this.pause('budget') }
  }

  /** Called by the relay when the budget has room again for this waiting connection. */
  grantLarge(): void {
    this.waitingLarge = false
    this.resume('budget')
  }

  /** A whole message arrived (or the connection ended): its bytes leave the budget. */
  private messageDone(): void {
    this.relay.partialBytes -= this.partial
    this.partial = 0
    if (this.large) {
      const active = !this.waitingLarge
      this.large = false
      this.waitingLarge = false
      this.relay.largeDone(this, this.largeCounted, active)
      this.largeCounted = 0
    }
  }

  start(): void {
    const { ws, relay } = this
    // Nothing is read until the token is verified (asynchronously for JWKS tokens).
    this.pause('auth')
    const onData = (chunk: Buffer) => this.onRawData(chunk.length)
    this.setup.socket.on('data', onData)
    ws.once('close', () => this.setup.socket.off('data', onData))
    ws.on('message', (data: Buffer, isBinary: boolean) => this.guard(() => this.onMessage(data, isBinary)))
    // Control frames cost the relay too (ws answers every ping): they draw on the same budgets.
    ws.on('ping', (data: Buffer) => this.guard(() => {
      if (!this.admitMessage(data.length)) return
      // A client that sends pings and never reads the pongs is a slow reader like any other.
      if (ws.bufferedAmount > relay.cfg.limits.highWaterBytes) return this.close(CloseCode.RATE_LIMITED, 'pongs not read', 'rate')
      ws.pong(data)
    }))
    ws.on('pong', (data: Buffer) => this.guard(() => { this.awaitingPong = false; this.admitMessage(data.length) }))
    ws.on('error', (err: Error & { code?: string }) => {
      // ws closes with 1009 itself when a message exceeds maxPayload.
      const reason = err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' ? 'frame_too_large' : 'ws_protocol'
      relay.metrics.inc(M.rejects, { reason })
      relay.log.info('client_error', { ip: this.ip, principal: this.principal, reason, error: err.message })
      this.teardown()
    })
    ws.on('close', () => this.teardown())
    if (this.setup.originRefused !== null) return this.close(CloseCode.FORBIDDEN, this.setup.originRefused, 'origin')
    const token = this.setup.token
    if (!token) return this.authenticated({ ok: false, expired: false, reason: 'no token' })
    relay.authn.verify(token).then((r) => this.authenticated(r), (e: unknown) => this.authenticated({ ok: false, expired: false, reason: `token check failed: ${String(e).slice(0, 60)}` }))
  }

  private authenticated(auth: TokenResult): void {
    const { relay } = this
    if (this.closed) return
    if (!auth.ok) {
      const expired = auth.expired
      return this.close(expired ? CloseCode.TOKEN_EXPIRED : CloseCode.UNAUTHENTICATED, expired ? 'token expired' : `authentication failed: ${auth.reason}`, expired ? 'token_expired' : 'unauthenticated')
    }
    const claims: TokenClaims = auth.claims
    this.principal = claims.sub
    this.principalBuckets = relay.admitPrincipal(claims.sub)
    if (!this.principalBuckets) {
      this.principal = null
      return this.close(CloseCode.RATE_LIMITED, 'too many connections for this principal', 'connections_per_principal')
    }
    this.grantsOrNull = grantsFor(claims)
    if (this.setup.ticket !== null && !this.acceptTicket(this.setup.ticket)) return
    const expiresIn = claims.exp * 1000 + relay.cfg.auth.clockSkewSec * 1000 - Date.now()
    this.timers.push(setTimeout(() => this.close(CloseCode.TOKEN_EXPIRED, 'token expired', 'token_expired'), Math.min(Math.max(0, expiresIn), 0x7fffffff)))
    this.pause('setup')
    this.resume('auth')
    void this.connectUpstream()
  }

  private async connectUpstream(): Promise<void> {
    const { relay } = this
    const dest = await relay.destinations.resolve(this.broker)
    if (this.closed) return
    if (!dest.ok) return this.close(CloseCode.DESTINATION_REFUSED, dest.reason, 'destination')
    this.target = hostPortKey(dest.target)
    const setupTimer = setTimeout(() => this.close(CloseCode.UPSTREAM_UNAVAILABLE, 'broker connection timed out', null), relay.cfg.limits.upstreamTimeoutMs + 1000)
    let up: Awaited<ReturnType<typeof openUpstream>>
    try {
      up = await relay.open(dest.target, relay.cfg, relay.cfg.limits.upstreamTimeoutMs, relay.cfg.limits.maxResponseFrameBytes)
    } catch (e) {
      clearTimeout(setupTimer)
      const kind = e instanceof UpstreamError ? e.kind : 'connect'
      relay.metrics.inc(M.upstreamErrors, { kind })
      relay.log.warn('upstream_failed', { broker: this.target, principal: this.principal, kind, error: (e as Error).message })
      return this.close(CloseCode.UPSTREAM_UNAVAILABLE, upstreamCloseReason(e), null)
    }
    clearTimeout(setupTimer)
    if (this.closed) { up.socket.destroy(); return }
    this.upstream = up.socket
    this.decoder = up.decoder
    up.socket.on('data', (chunk: Buffer) => this.guard(() => this.onUpstreamData(chunk)))
    up.socket.on('drain', () => this.resume('upstream'))
    up.socket.on('error', (e) => { relay.metrics.inc(M.upstreamErrors, { kind: 'io' }); relay.log.info('upstream_error', { broker: this.target, error: e.message }) })
    up.socket.on('close', () => {
      // A broker that refuses the renewal closes right behind its answer, before the exchange reads it.
      if (this.reauthenticating) this.close(CloseCode.UPSTREAM_SESSION_END, 'relay could not re-authenticate to the broker; reconnect', null)
      else this.close(CloseCode.UPSTREAM_UNAVAILABLE, 'broker closed the connection', null)
    })
    this.upstreamTarget = dest.target
    this.scheduleReauthentication(up.sessionLifetimeMs)
    relay.log.debug('connected', { ip: this.ip, principal: this.principal, broker: this.target })
    if (this.state === 'setup') this.state = 'open'
    for (const f of this.queue.splice(0)) this.forward(f)
    this.queuedBytes = 0
    this.resume('setup')
  }

  /** KIP-368: the broker ends the SASL session after its lifetime; the relay renews it in place before then. */
  private scheduleReauthentication(lifetimeMs: number): void {
    if (lifetimeMs <= 0 || this.closed) return
    if (this.reauthTimer) clearTimeout(this.reauthTimer)
    this.reauthTimer = setTimeout(() => { this.reauthTimer = null; void this.reauthenticate() }, Math.max(500, reauthenticationDelay(lifetimeMs)))
  }

  /**
   * Re-authenticates the broker connection without the client seeing it: client frames stop being
   * forwarded (they queue), SaslHandshake and SaslAuthenticate go out under correlation ids of the
   * relay's own, and the broker answers what was already in flight before it reads the handshake,
   * so responses stay in order. The queue is forwarded once the session is renewed. A failure ends
   * the connection with 4503, which clients treat as a reconnect.
   */
  private async reauthenticate(): Promise<void> {
    const { relay } = this
    if (this.closed || !this.upstream || !relay.cfg.sasl || !this.upstreamTarget) return
    this.reauthenticating = true
    this.pause('reauth')
    let timer: NodeJS.Timeout | undefined
    try {
      const timeoutMs = relay.cfg.limits.upstreamTimeoutMs
      // v1 of both: only SaslAuthenticate v1 carries the session lifetime that brought the relay here.
      const call: SaslCall = (api, body) => this.ownRequest(api, 1, body) as never
      const deadline = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs) })
      const session = await Promise.race([authenticate(saslMechanism(relay.cfg.sasl, timeoutMs), this.upstreamTarget, call), deadline])
      if (this.closed) return
      relay.metrics.inc('kafka_edge_bridge_upstream_reauthentications_total', { result: 'ok' })
      relay.log.debug('upstream_reauthenticated', { broker: this.target, principal: this.principal, sessionLifetimeMs: session.lifetimeMs })
      this.reauthenticating = false
      for (const f of this.queue.splice(0)) this.forward(f)
      this.queuedBytes = 0
      this.resume('reauth')
      this.scheduleReauthentication(session.lifetimeMs)
    } catch (e) {
      relay.metrics.inc('kafka_edge_bridge_upstream_reauthentications_total', { result: 'failed' })
      relay.log.warn('upstream_reauthentication_failed', { broker: this.target, principal: this.principal, error: String((e as Error)?.message ?? e) })
      this.close(CloseCode.UPSTREAM_SESSION_END, 'relay could not re-authenticate to the broker; reconnect', null)
    } finally {
      clearTimeout(timer)
    }
  }

  /** A request of the relay's own on this connection, answered by the broker in its turn. */
  private ownRequest<A extends ApiSchema>(api: A, version: number, body: RequestBody<A>): Promise<ResponseBody<A>> {
    let correlationId = OWN_CORRELATION
    while (this.pending.has(correlationId)) correlationId++
    return new Promise((resolve, reject) => {
      this.pending.set(correlationId, {
        apiKey: api.key, version, t0: performance.now(), learn: false, drop: false, init: null,
        own: {
          answer: (frame) => { try { resolve(decodeResponse(api, version, frame) as ResponseBody<A>) } catch (e) { reject(e as Error) } },
          fail: reject,
        },
      })
      this.upstream!.write(encodeRequest(api, version, correlationId, 'kafka-edge-bridge', body))
    })
  }

  private pause(reason: string): void {
    this.pauses.add(reason)
    this.ws.pause()
  }

  private resume(reason: string): void {
    if (!this.pauses.delete(reason) || this.pauses.size > 0 || this.state === 'closed') return
    this.ws.resume()
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    this.messageDone()
    if (this.state === 'closed' || !this.grantsOrNull) return
    const { relay } = this
    const limits = relay.cfg.limits
    this.lastActivity = performance.now()
    this.framesIn++
    if (relay.faults && relay.cfg.faults.closeOnFrame > 0 && this.framesIn === relay.cfg.faults.closeOnFrame) {
      relay.log.info('fault_close_on_frame', { frame: this.framesIn })
      relay.metrics.inc('kafka_edge_bridge_faults_total', { kind: 'close_on_frame' })
      return this.abort()
    }
    // Every message draws on the budgets before the relay spends anything on it (a ticket costs an HMAC).
    if (!this.admitMessage(data.length)) return
    if (!isBinary) {
      const control = data.length <= 2048 ? parseControl(data.toString('utf8')) : null
      if (!control) return this.close(CloseCode.BAD_FRAME, 'text message: send each Kafka frame as one binary message', 'bad_frame')
      this.acceptTicket(control.ticket)
      return
    }
    const bad = checkMessage(data)
    if (bad) return this.close(CloseCode.BAD_FRAME, bad, 'bad_frame')
    const verdict = inspectRequest(data.subarray(4), this)
    if (!verdict.ok) return this.close(verdict.code, verdict.reason, verdict.metric)

    if (verdict.expectResponse) {
      if (this.pending.has(verdict.correlationId)) return this.close(CloseCode.BAD_FRAME, `correlation id ${verdict.correlationId} is already in flight`, 'bad_frame')
      // ws may emit a few already-buffered messages after pause(); beyond this hard bound the client is ignoring backpressure.
      if (this.pending.size >= limits.maxInFlight * 4 + 64) return this.close(CloseCode.RATE_LIMITED, 'too many requests in flight', 'in_flight')
      let drop = false
      if (relay.faults && verdict.apiKey === Produce.key && relay.cfg.faults.dropProduceResponseEvery > 0) {
        drop = ++relay.produceCount % relay.cfg.faults.dropProduceResponseEvery === 0
      }
      this.pending.set(verdict.correlationId, {
        apiKey: verdict.apiKey, version: verdict.apiVersion, t0: performance.now(), learn: verdict.learn, drop, init: verdict.initProducerId ?? null,
      })
      if (this.pending.size >= limits.maxInFlight) this.pause('inflight')
    }
    relay.count.framesIn()
    relay.count.bytesIn(data.length)
    if (this.upstream && !this.reauthenticating) this.forward(data)
    else {
      this.queuedBytes += data.length
      if (this.queuedBytes > limits.highWaterBytes) return this.close(CloseCode.RATE_LIMITED, 'too much sent before the broker connection was ready', 'in_flight')
      this.queue.push(data)
    }
  }

  /**
   * Takes one message of `bytes` from the connection's and the principal's budgets. Over budget the
   * connection stops being read until the budget refills; far over it, it is closed (false).
   */
  private admitMessage(bytes: number): boolean {
    if (this.state === 'closed' || !this.principalBuckets) return false
    const { relay } = this
    const wait = Math.max(this.frames.take(1), this.bytes.take(bytes), this.principalBuckets.frames.take(1), this.principalBuckets.bytes.take(bytes))
    if (wait > relay.cfg.limits.maxThrottleMs) { this.close(CloseCode.RATE_LIMITED, 'rate limit exceeded', 'rate'); return false }
    if (wait > 0) {
      relay.metrics.inc(M.rejects, { reason: 'throttled' })
      this.pause('rate')
      if (this.rateTimer) clearTimeout(this.rateTimer)
      this.rateTimer = setTimeout(() => { this.rateTimer = null; this.resume('rate') }, wait)
    }
    return true
  }

  /** A handler's error closes this connection (1011) and goes no further. */
  private guard(fn: () => void): void {
    try { fn() } catch (e) {
      this.relay.metrics.inc(M.rejects, { reason: 'internal_error' })
      this.relay.log.error('handler_error', { where: 'connection', ip: this.ip, principal: this.principal, error: String((e as Error)?.stack ?? e).slice(0, 2000) })
      this.close(CloseCode.INTERNAL, 'relay error', null)
    }
  }

  private forward(frame: Buffer): void {
    if (!this.upstream!.write(frame)) this.pause('upstream')
  }

  private onUpstreamData(chunk: Buffer): void {
    let bodies: Uint8Array[]
    try { bodies = this.decoder!.push(chunk) } catch {
      this.relay.metrics.inc(M.upstreamErrors, { kind: 'protocol' })
      return this.close(CloseCode.INTERNAL, 'broker sent an unreadable frame', null)
    }
    for (const body of bodies) {
      if (this.state === 'closed') return
      this.onResponse(body)
    }
  }

  private onResponse(body: Uint8Array): void {
    const { relay } = this
    this.lastActivity = performance.now()
    const correlationId = body.length >= 4 ? new DataView(body.buffer, body.byteOffset, 4).getInt32(0) : NaN
    const p = this.pending.get(correlationId)
    if (!p) {
      relay.metrics.inc(M.upstreamErrors, { kind: 'protocol' })
      return this.close(CloseCode.INTERNAL, 'broker answered a request the relay did not forward', null)
    }
    this.pending.delete(correlationId)
    if (p.own) return p.own.answer(body)
    if (this.pending.size < relay.cfg.limits.maxInFlight) this.resume('inflight')
    relay.latencyFor(p.apiKey)((performance.now() - p.t0) / 1000)
    if (p.learn) this.learn(p, body)
    if (p.init) this.issueTicket(p, body)
    if (p.drop) {
      // The request reached the broker and was answered; losing the answer is the case that tests idempotence.
      relay.log.info('fault_drop_response', { correlationId, principal: this.principal })
      relay.metrics.inc('kafka_edge_bridge_faults_total', { kind: 'drop_produce_response' })
      return this.abort()
    }
    const frame = Buffer.allocUnsafe(body.length + 4)
    frame.writeInt32BE(body.length, 0)
    frame.set(body, 4)
    relay.count.framesOut()
    relay.count.bytesOut(frame.length)
    this.unsent++
    if (relay.faults && relay.cfg.faults.delayMs > 0) {
      this.responseChain = this.responseChain.then(() => new Promise<void>((r) => setTimeout(r, relay.cfg.faults.delayMs))).then(() => this.send(frame))
    } else this.send(frame)
  }

  private get owesNothing(): boolean { return this.pending.size === 0 && this.unsent === 0 }

  private send(frame: Buffer): void {
    this.unsent--
    if (this.state === 'closed') return
    const high = this.relay.cfg.limits.highWaterBytes
    this.ws.send(frame, () => {
      if (this.ws.bufferedAmount < high / 2) this.upstream?.resume()
    })
    // A slow reader must not make the relay buffer the broker's whole output: stop reading the broker.
    if (this.ws.bufferedAmount > high) this.upstream?.pause()
    if (this.state === 'draining' && this.owesNothing) this.finishDrain()
  }

  /**
   * An InitProducerId answer: bind the id to this principal relay-wide and, for a client that reads
   * tickets, send the ticket ahead of the answer, so the client holds it before it can use the id.
   */
  private issueTicket(p: Pending, body: Uint8Array): void {
    const { relay } = this
    let msg: ReturnType<typeof decodeResponse>
    try { msg = decodeResponse(InitProducerId, p.version, body) } catch { return }
    if (msg.errorCode !== 0) return
    const pid = msg.producerId as bigint
    const epoch = msg.producerEpoch as number
    this.bindPid(pid, epoch)
    if (!this.setup.ticketsAware) return
    const iat = Math.floor(Date.now() / 1000)
    const ticket = relay.tickets.issue({ sub: this.principal!, pid, epoch, txn: p.init!.transactionalId, iat, exp: iat + relay.cfg.auth.ticketTtlSec })
    relay.metrics.inc('kafka_edge_bridge_producer_id_tickets_total', { event: 'issued' })
    this.ws.send(JSON.stringify({ type: 'producer-id-ticket', ticket, producerId: pid.toString(), producerEpoch: epoch, transactionalId: p.init!.transactionalId, expiresAt: iat + relay.cfg.auth.ticketTtlSec }))
  }

  private learn(p: Pending, body: Uint8Array): void {
    const api = apiByKey(p.apiKey)
    if (!api) return
    try {
      if (api === Produce && !hasTopLevelTags(api, p.version, body)) return
      const msg = decodeResponse(api, p.version, body)
      if (api === Metadata) this.relay.destinations.learn(msg.brokers as Array<{ nodeId: number; host: string; port: number }>)
      else if (api === FindCoordinator) {
        if (p.version >= 4) this.relay.destinations.learn(msg.coordinators as Array<{ nodeId: number; host: string; port: number; errorCode: number }>)
        else if (msg.errorCode === 0) this.relay.destinations.learn([msg as { nodeId: number; host: string; port: number }])
      } else if (api === Produce) this.relay.destinations.learn((msg.nodeEndpoints as Array<{ nodeId: number; host: string; port: number }> | undefined) ?? [])
    } catch (e) {
      this.relay.log.warn('response_not_decoded', { api: api.name, version: p.version, error: String(e) })
    }
  }

  tick(now: number): void {
    if (this.state === 'closed') return
    const limits = this.relay.cfg.limits
    if (limits.idleTimeoutMs > 0 && now - this.lastActivity > limits.idleTimeoutMs && this.pending.size === 0) {
      return this.close(CloseCode.IDLE, 'idle timeout', 'idle')
    }
    if (limits.pingIntervalMs > 0 && now - this.lastPing >= limits.pingIntervalMs) {
      if (this.awaitingPong) {
        this.relay.metrics.inc(M.rejects, { reason: 'no_pong' })
        return this.abort()
      }
      this.awaitingPong = true
      this.lastPing = now
      this.ws.ping()
    }
  }

  /** Stops reading the client, waits for the responses already owed, then closes. */
  drain(code: number = CloseCode.GOING_AWAY, reason = 'relay shutting down'): Promise<void> {
    if (this.state === 'closed') return Promise.resolve()
    return new Promise<void>((resolve) => {
      this.state = 'draining'
      this.pause('drain')
      this.drained = () => { this.close(code, reason, null); resolve() }
      if (this.owesNothing || !this.upstream) this.finishDrain()
    })
  }

  private finishDrain(): void {
    const d = this.drained
    this.drained = null
    // Let the last response's send settle before the close frame.
    if (d) setImmediate(d)
  }

  close(code: number, reason: string, metric: string | null): void {
    if (this.state === 'closed') return
    if (metric) {
      this.relay.metrics.inc(M.rejects, { reason: metric })
      this.relay.log.info('connection_refused', { ip: this.ip, principal: this.principal, broker: this.target || this.broker, code, reason })
    } else this.relay.log.debug('connection_closed', { ip: this.ip, principal: this.principal, code, reason })
    this.teardown()
    // A paused socket would never read the peer's close frame, stalling the closing handshake.
    this.ws.resume()
    this.ws.close(code, clipReason(reason))
    // A peer that never answers the close handshake must not hold the socket.
    setTimeout(() => this.ws.terminate(), 2000).unref()
  }

  /** Drops the client without a close frame (fault injection, dead peers). */
  private abort(): void {
    this.teardown()
    this.ws.terminate()
  }

  private teardown(): void {
    if (this.state === 'closed') return
    this.state = 'closed'
    for (const t of this.timers) clearTimeout(t)
    this.timers = []
    if (this.rateTimer) clearTimeout(this.rateTimer)
    if (this.reauthTimer) clearTimeout(this.reauthTimer)
    this.upstream?.destroy()
    for (const p of this.pending.values()) p.own?.fail(new Error('the broker connection closed'))
    this.pending.clear()
    this.queue.length = 0
    this.messageDone()
    this.relay.release(this)
    if (this.drained) this.finishDrain()
  }
}

export type { HostPort }
