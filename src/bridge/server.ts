import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { connect as tcpConnect, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { Hono } from 'hono'
import { WebSocketServer, type WebSocket } from 'ws'
import { API_NAMES, FindCoordinator, Metadata, Produce, apiByKey, decodeResponse } from '../edge/protocol/index.js'
import type { FrameDecoder } from '../edge/protocol/frame-decoder.js'
import { SslAuthenticationException } from '../edge/errors.js'
import { CloseCode } from './codes.js'
import { hostPortKey, type BridgeConfig, type HostPort } from './config.js'
import { Destinations } from './destinations.js'
import { Bucket, Logger, Metrics } from './metrics.js'
import { checkMessage, grantsFor, inspectRequest, type Grants } from './policy.js'
import { verifyToken, type TokenClaims, type TokenResult } from './token.js'
import { UpstreamError, fetchBrokers, openUpstream } from './upstream.js'

/** The subprotocol the relay speaks; clients offer it next to `kafka-edge.bearer.<token>`. */
export const SUBPROTOCOL = 'kafka-edge.v1'
export const BEARER_PREFIX = 'kafka-edge.bearer.'

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

interface Pending { apiKey: number; version: number; t0: number; learn: boolean; drop: boolean }

const M = {
  connections: 'kafka_edge_bridge_connections_total',
  frames: 'kafka_edge_bridge_frames_total',
  bytes: 'kafka_edge_bridge_bytes_total',
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
  private readonly perIp = new Map<string, number>()
  private readonly perPrincipal = new Map<string, { count: number; frames: Bucket; bytes: Bucket }>()
  private readonly upgradeTimers = new WeakMap<Duplex, NodeJS.Timeout>()
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
    this.metrics.gauge('kafka_edge_bridge_learned_brokers', () => this.destinations.learnedCount)
    this.metrics.gauge('kafka_edge_bridge_process_resident_memory_bytes', () => process.memoryUsage.rss())
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: cfg.limits.maxFrameBytes,
      // Kafka batches are compressed already; deflate would cost CPU and invite decompression bombs.
      perMessageDeflate: false,
      clientTracking: false,
      handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
    })
    this.routes()
    this.server = createServer((req, res) => { this.clearUpgradeTimer(req.socket); void this.http(req, res) })
    this.server.on('connection', (socket: Socket) => {
      // Slowloris: a connection gets upgradeTimeoutMs to finish its request headers.
      const t = setTimeout(() => { this.metrics.inc(M.rejects, { reason: 'upgrade_timeout' }); socket.destroy() }, cfg.limits.upgradeTimeoutMs)
      this.upgradeTimers.set(socket, t)
      socket.once('close', () => clearTimeout(t))
    })
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(req, socket, head))
    this.server.on('clientError', (_err, socket: Duplex) => {
      this.metrics.inc(M.rejects, { reason: 'bad_http' })
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n')
      socket.destroy()
    })
  }

  get connectionCount(): number { return this.conns.size }
  get url(): string { return `ws://${hostPortKey({ host: this.cfg.listen.host, port: this.port })}${this.cfg.path}` }
  get httpUrl(): string { return `http://${hostPortKey({ host: this.cfg.listen.host, port: this.port })}` }

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

  private clearUpgradeTimer(socket: Duplex): void {
    const t = this.upgradeTimers.get(socket)
    if (t) { clearTimeout(t); this.upgradeTimers.delete(socket) }
  }

  private rejectHttp(socket: Duplex, status: number, text: string, reason: string): void {
    this.metrics.inc(M.rejects, { reason })
    this.log.info('upgrade_rejected', { status, reason })
    if (socket.writable) socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`)
    socket.destroy()
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
    // Cross-site WebSocket hijacking needs a browser, and browsers always send Origin.
    if (!this.originAllowed(req.headers.origin)) return this.rejectHttp(socket, 403, 'Forbidden', 'origin')
    const ip = req.socket.remoteAddress ?? 'unknown'
    if ((this.perIp.get(ip) ?? 0) >= this.cfg.limits.connectionsPerIp) return this.rejectHttp(socket, 429, 'Too Many Requests', 'connections_per_ip')
    if (this.conns.size >= this.cfg.limits.maxConnections) return this.rejectHttp(socket, 503, 'Service Unavailable', 'max_connections')

    let token: string | null = null
    const offered = String(req.headers['sec-websocket-protocol'] ?? '').split(',').map((s) => s.trim())
    const bearer = offered.find((p) => p.startsWith(BEARER_PREFIX))
    if (bearer) token = bearer.slice(BEARER_PREFIX.length)
    else if (this.cfg.auth.allowQueryToken) token = url.searchParams.get('token')
    // Cookies are deliberately never read: a browser attaches them to cross-site requests.
    const auth: TokenResult = token
      ? verifyToken(token, { secrets: this.cfg.auth.secrets.map((s) => Buffer.from(s, 'utf8')), audience: this.cfg.auth.audience, issuer: this.cfg.auth.issuer, clockSkewSec: this.cfg.auth.clockSkewSec, nowSec: Date.now() / 1000 })
      : { ok: false, expired: false, reason: 'no token' }
    const broker = url.searchParams.get('broker')
    this.perIp.set(ip, (this.perIp.get(ip) ?? 0) + 1)
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      this.metrics.inc(M.connections)
      const conn = new RelayConnection(this, ws, ip, auth, broker)
      this.conns.add(conn)
      conn.start()
    })
  }

  /** Called once per connection when it ends. */
  release(conn: RelayConnection): void {
    if (!this.conns.delete(conn)) return
    const n = (this.perIp.get(conn.ip) ?? 1) - 1
    if (n <= 0) this.perIp.delete(conn.ip); else this.perIp.set(conn.ip, n)
    if (conn.principal !== null) {
      const p = this.perPrincipal.get(conn.principal)
      if (p && --p.count <= 0) this.perPrincipal.delete(conn.principal)
    }
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
  }

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

class RelayConnection {
  private state: State = 'setup'
  private upstream: Socket | null = null
  private decoder: FrameDecoder | null = null
  private readonly queue: Buffer[] = []
  private queuedBytes = 0
  private readonly pending = new Map<number, Pending>()
  private readonly pauses = new Set<string>()
  private grants: Grants | null = null
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

  private get closed(): boolean { return this.state === 'closed' }

  constructor(private readonly relay: Relay, private readonly ws: WebSocket, readonly ip: string, private readonly auth: TokenResult, private readonly broker: string | null) {
    this.frames = new Bucket(relay.cfg.limits.framesPerSec)
    this.bytes = new Bucket(relay.cfg.limits.bytesPerSec)
  }

  start(): void {
    const { ws, relay } = this
    ws.on('message', (data: Buffer, isBinary: boolean) => this.onMessage(data, isBinary))
    ws.on('pong', () => { this.awaitingPong = false })
    ws.on('error', (err: Error & { code?: string }) => {
      // ws closes with 1009 itself when a message exceeds maxPayload.
      const reason = err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' ? 'frame_too_large' : 'ws_protocol'
      relay.metrics.inc(M.rejects, { reason })
      relay.log.info('client_error', { ip: this.ip, principal: this.principal, reason, error: err.message })
      this.teardown()
    })
    ws.on('close', () => this.teardown())
    if (!this.auth.ok) {
      const expired = this.auth.expired
      return this.close(expired ? CloseCode.TOKEN_EXPIRED : CloseCode.UNAUTHENTICATED, expired ? 'token expired' : `authentication failed: ${this.auth.reason}`, expired ? 'token_expired' : 'unauthenticated')
    }
    const claims: TokenClaims = this.auth.claims
    this.principal = claims.sub
    this.principalBuckets = relay.admitPrincipal(claims.sub)
    if (!this.principalBuckets) {
      this.principal = null
      return this.close(CloseCode.RATE_LIMITED, 'too many connections for this principal', 'connections_per_principal')
    }
    this.grants = grantsFor(claims)
    const expiresIn = claims.exp * 1000 + relay.cfg.auth.clockSkewSec * 1000 - Date.now()
    this.timers.push(setTimeout(() => this.close(CloseCode.TOKEN_EXPIRED, 'token expired', 'token_expired'), Math.min(Math.max(0, expiresIn), 0x7fffffff)))
    this.pause('setup')
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
    up.socket.on('data', (chunk: Buffer) => this.onUpstreamData(chunk))
    up.socket.on('drain', () => this.resume('upstream'))
    up.socket.on('error', (e) => { relay.metrics.inc(M.upstreamErrors, { kind: 'io' }); relay.log.info('upstream_error', { broker: this.target, error: e.message }) })
    up.socket.on('close', () => this.close(CloseCode.UPSTREAM_UNAVAILABLE, 'broker closed the connection', null))
    if (up.sessionLifetimeMs > 0) {
      // The broker drops a connection whose SASL session ends; re-authenticating inside a client's
      // stream is not worth the complexity, so the client reconnects a little before that.
      this.timers.push(setTimeout(() => { void this.drain(CloseCode.UPSTREAM_SESSION_END, 'broker session lifetime reached') }, Math.max(1000, up.sessionLifetimeMs * 0.9)))
    }
    relay.log.debug('connected', { ip: this.ip, principal: this.principal, broker: this.target })
    if (this.state === 'setup') this.state = 'open'
    for (const f of this.queue.splice(0)) this.forward(f)
    this.queuedBytes = 0
    this.resume('setup')
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
    if (this.state === 'closed' || !this.grants) return
    const { relay } = this
    const limits = relay.cfg.limits
    this.lastActivity = performance.now()
    this.framesIn++
    if (relay.faults && relay.cfg.faults.closeOnFrame > 0 && this.framesIn === relay.cfg.faults.closeOnFrame) {
      relay.log.info('fault_close_on_frame', { frame: this.framesIn })
      relay.metrics.inc('kafka_edge_bridge_faults_total', { kind: 'close_on_frame' })
      return this.abort()
    }
    if (!isBinary) return this.close(CloseCode.BAD_FRAME, 'text message: send each Kafka frame as one binary message', 'bad_frame')
    const bad = checkMessage(data)
    if (bad) return this.close(CloseCode.BAD_FRAME, bad, 'bad_frame')
    const verdict = inspectRequest(data.subarray(4), this.grants)
    if (!verdict.ok) return this.close(verdict.code, verdict.reason, verdict.metric)

    const wait = Math.max(this.frames.take(1), this.bytes.take(data.length), this.principalBuckets!.frames.take(1), this.principalBuckets!.bytes.take(data.length))
    if (wait > limits.maxThrottleMs) return this.close(CloseCode.RATE_LIMITED, 'rate limit exceeded', 'rate')
    if (wait > 0) {
      relay.metrics.inc(M.rejects, { reason: 'throttled' })
      this.pause('rate')
      if (this.rateTimer) clearTimeout(this.rateTimer)
      this.rateTimer = setTimeout(() => { this.rateTimer = null; this.resume('rate') }, wait)
    }
    if (verdict.expectResponse) {
      if (this.pending.has(verdict.correlationId)) return this.close(CloseCode.BAD_FRAME, `correlation id ${verdict.correlationId} is already in flight`, 'bad_frame')
      // ws may emit a few already-buffered messages after pause(); beyond this hard bound the client is ignoring backpressure.
      if (this.pending.size >= limits.maxInFlight * 4 + 64) return this.close(CloseCode.RATE_LIMITED, 'too many requests in flight', 'in_flight')
      let drop = false
      if (relay.faults && verdict.apiKey === Produce.key && relay.cfg.faults.dropProduceResponseEvery > 0) {
        drop = ++relay.produceCount % relay.cfg.faults.dropProduceResponseEvery === 0
      }
      this.pending.set(verdict.correlationId, { apiKey: verdict.apiKey, version: verdict.apiVersion, t0: performance.now(), learn: verdict.learn, drop })
      if (this.pending.size >= limits.maxInFlight) this.pause('inflight')
    }
    relay.metrics.inc(M.frames, { direction: 'in' })
    relay.metrics.inc(M.bytes, { direction: 'in' }, data.length)
    if (this.upstream) this.forward(data)
    else {
      this.queuedBytes += data.length
      if (this.queuedBytes > limits.highWaterBytes) return this.close(CloseCode.RATE_LIMITED, 'too much sent before the broker connection was ready', 'in_flight')
      this.queue.push(data)
    }
  }

  private forward(frame: Buffer): void {
    if (!this.upstream!.write(frame)) this.pause('upstream')
  }

  private onUpstreamData(chunk: Buffer): void {
    let bodies: Uint8Array[]
    try { bodies = this.decoder!.push(chunk) } catch (e) {
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
    if (this.pending.size < relay.cfg.limits.maxInFlight) this.resume('inflight')
    relay.metrics.observe(M.latency, { api: API_NAMES[p.apiKey] ?? String(p.apiKey) }, (performance.now() - p.t0) / 1000)
    if (p.learn) this.learn(p, body)
    if (p.drop) {
      // The request reached the broker and was answered; losing the answer is the case that tests idempotence.
      relay.log.info('fault_drop_response', { correlationId, principal: this.principal })
      relay.metrics.inc('kafka_edge_bridge_faults_total', { kind: 'drop_produce_response' })
      return this.abort()
    }
    const frame = Buffer.allocUnsafe(body.length + 4)
    frame.writeInt32BE(body.length, 0)
    frame.set(body, 4)
    relay.metrics.inc(M.frames, { direction: 'out' })
    relay.metrics.inc(M.bytes, { direction: 'out' }, frame.length)
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

  private learn(p: Pending, body: Uint8Array): void {
    const api = apiByKey(p.apiKey)
    if (!api) return
    try {
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
    this.upstream?.destroy()
    this.pending.clear()
    this.queue.length = 0
    this.relay.release(this)
    if (this.drained) this.finishDrain()
  }
}

export type { HostPort }
