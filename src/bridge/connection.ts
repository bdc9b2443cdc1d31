// One client's WebSocket connection through the relay: authentication, the frame checks and
// budgets, the broker connection (with KIP-368 re-authentication in place), responses and draining.
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { WebSocket } from 'ws'
import {
  FindCoordinator, InitProducerId, Metadata, Produce, apiByKey, decodeResponse, encodeRequest,
  type ApiSchema, type RequestBody, type ResponseBody,
} from '../edge/protocol/index.js'
import { errorCode } from '../edge/protocol/error-codes.js'
import { authenticate, reauthenticationDelay, type SaslCall } from '../edge/auth/sasl.js'
import { SslAuthenticationException } from '../edge/errors.js'
import { CloseCode } from './codes.js'
import { hostPortKey, type HostPort } from './config.js'
import { saslMechanism } from './credentials.js'
import { FrameSplitter } from './frames.js'
import { BRIDGE_METRICS as M, Bucket } from './metrics.js'
import { checkMessage, grantsFor, inspectRequest, type Grants, type RequestContext } from './policy.js'
import { hasTopLevelTags } from './scan.js'
import type { Relay } from './server.js'
import type { TokenClaims, TokenResult } from './token.js'
import { UpstreamError, type Upstream } from './upstream.js'

/** How large a message may grow while it arrives before it needs a share of the relay-wide parse budget. */
const SMALL_MESSAGE = 256 * 1024

interface Pending {
  apiKey: number; version: number; t0: number; learn: boolean; drop: boolean; init: { transactionalId: string | null } | null
  /** Set for the relay's own requests (re-authentication): their answers go here, not to the client. */
  own?: { answer: (body: Uint8Array) => void; fail: (e: Error) => void }
}

/** ws.send's options for every response: given whole, ws has none to work out per message. */
const BINARY = { binary: true, compress: false, fin: true } as const

/** Where the relay's own correlation ids start on a client's connection (the first free one is used). */
const OWN_CORRELATION = 0x7e100000

const REASON_LIMIT = 123
const clipReason = (s: string): string => {
  const b = Buffer.from(s, 'utf8')
  return b.length <= REASON_LIMIT ? s : b.subarray(0, REASON_LIMIT - 3).toString('utf8').replace(/\uFFFD$/, '') + '...'
}

/**
 * What the client is told when its broker connection could not be set up. The reason says which
 * side to look at but carries no credential and no relay config detail; the relay's log has those.
 */
export function upstreamCloseReason(e: unknown): string {
  if (!(e instanceof UpstreamError)) return 'broker unreachable'
  switch (e.kind) {
    case 'tls': return `TLS to the broker failed: ${e.cause instanceof SslAuthenticationException ? e.cause.reason : 'handshake failed'}`
    case 'sasl': return 'relay could not authenticate to the broker'
    case 'timeout': return 'broker connection timed out'
    case 'protocol': return 'broker sent something the relay cannot read during setup'
    default: return 'broker unreachable'
  }
}

type State = 'setup' | 'open' | 'draining' | 'closed'

/** What the upgrade request said, read before the WebSocket existed. */
export interface ConnectionSetup {
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

export class RelayConnection implements RequestContext {
  private state: State = 'setup'
  private upstream: Socket | null = null
  private splitter: FrameSplitter | null = null
  /** The broker is not read until the client's socket drains (a slow reader). */
  private heldForClient = false
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
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      try { this.onMessage(data, isBinary) } catch (e) { this.handlerError(e) }
    })
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
    // Past its first await nothing contains it: a rejection would be unhandled, which ends the process.
    this.connectUpstream().catch((e: unknown) => this.handlerError(e))
  }

  private async connectUpstream(): Promise<void> {
    const { relay } = this
    const dest = await relay.destinations.resolve(this.broker)
    if (this.closed) return
    if (!dest.ok) return this.close(CloseCode.DESTINATION_REFUSED, dest.reason, 'destination')
    this.target = hostPortKey(dest.target)
    const setupTimer = setTimeout(() => this.close(CloseCode.UPSTREAM_UNAVAILABLE, 'broker connection timed out', null), relay.cfg.limits.upstreamTimeoutMs + 1000)
    let up: Upstream
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
    // Setup (SASL) read whole frames only (openUpstream checks nothing is left over): the client's answers start here.
    this.splitter = new FrameSplitter(relay.cfg.limits.maxResponseFrameBytes)
    up.socket.on('data', (chunk: Buffer) => {
      try { this.onUpstreamData(chunk) } catch (e) { this.handlerError(e) }
    })
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
    this.reauthTimer = setTimeout(() => {
      this.reauthTimer = null
      this.reauthenticate().catch((e: unknown) => this.handlerError(e))
    }, Math.max(500, reauthenticationDelay(lifetimeMs)))
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
    try { fn() } catch (e) { this.handlerError(e) }
  }

  private handlerError(e: unknown): void {
    this.relay.metrics.inc(M.rejects, { reason: 'internal_error' })
    this.relay.log.error('handler_error', { where: 'connection', ip: this.ip, principal: this.principal, error: String((e as Error)?.stack ?? e).slice(0, 2000) })
    this.close(CloseCode.INTERNAL, 'relay error', null)
  }

  private forward(frame: Buffer): void {
    if (!this.upstream!.write(frame)) this.pause('upstream')
  }

  private onUpstreamData(chunk: Buffer): void {
    let frames: Buffer[]
    try { frames = this.splitter!.push(chunk) } catch {
      this.relay.metrics.inc(M.upstreamErrors, { kind: 'protocol' })
      return this.close(CloseCode.INTERNAL, 'broker sent an unreadable frame', null)
    }
    // The answers of one read leave in one write to the client, not one each.
    const client = this.setup.socket
    client.cork()
    try {
      for (const frame of frames) {
        if (this.state === 'closed') return
        this.onResponse(frame)
      }
    } finally { client.uncork() }
  }

  /** One broker frame, size prefix included: forwarded to the client as the broker wrote it. */
  private onResponse(frame: Buffer): void {
    const { relay } = this
    this.lastActivity = performance.now()
    const correlationId = frame.length >= 8 ? frame.readInt32BE(4) : NaN
    const p = this.pending.get(correlationId)
    if (!p) {
      relay.metrics.inc(M.upstreamErrors, { kind: 'protocol' })
      return this.close(CloseCode.INTERNAL, 'broker answered a request the relay did not forward', null)
    }
    this.pending.delete(correlationId)
    if (p.own) return p.own.answer(frame.subarray(4))
    if (this.pending.size < relay.cfg.limits.maxInFlight) this.resume('inflight')
    relay.latencyFor(p.apiKey)((this.lastActivity - p.t0) / 1000)
    if (p.learn) this.learn(p, frame)
    if (p.init) this.issueTicket(p, frame.subarray(4))
    if (p.drop) {
      // The request reached the broker and was answered; losing the answer is the case that tests idempotence.
      relay.log.info('fault_drop_response', { correlationId, principal: this.principal })
      relay.metrics.inc('kafka_edge_bridge_faults_total', { kind: 'drop_produce_response' })
      return this.abort()
    }
    relay.count.framesOut()
    relay.count.bytesOut(frame.length)
    this.unsent++
    if (relay.faults && relay.cfg.faults.delayMs > 0) {
      this.responseChain = this.responseChain.then(() => new Promise<void>((r) => setTimeout(r, relay.cfg.faults.delayMs)))
        .then(() => this.send(frame)).catch((e: unknown) => this.handlerError(e))
    } else this.send(frame)
  }

  private get owesNothing(): boolean { return this.pending.size === 0 && this.unsent === 0 }

  private send(frame: Buffer): void {
    this.unsent--
    if (this.state === 'closed') return
    this.ws.send(frame, BINARY)
    // A slow reader must not make the relay buffer the broker's whole output: stop reading the broker
    // until the client's socket has taken everything (ws queues nothing of its own without compression).
    if (!this.heldForClient && this.ws.bufferedAmount > this.relay.cfg.limits.highWaterBytes) {
      this.heldForClient = true
      this.upstream?.pause()
      this.setup.socket.once('drain', () => {
        this.heldForClient = false
        if (this.state !== 'closed') this.upstream?.resume()
      })
    }
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
    if (msg.errorCode !== errorCode('NONE')) return
    const pid = msg.producerId as bigint
    const epoch = msg.producerEpoch as number
    this.bindPid(pid, epoch)
    if (!this.setup.ticketsAware) return
    const iat = Math.floor(Date.now() / 1000)
    const ticket = relay.tickets.issue({ sub: this.principal!, pid, epoch, txn: p.init!.transactionalId, iat, exp: iat + relay.cfg.auth.ticketTtlSec })
    relay.metrics.inc('kafka_edge_bridge_producer_id_tickets_total', { event: 'issued' })
    this.ws.send(JSON.stringify({ type: 'producer-id-ticket', ticket, producerId: pid.toString(), producerEpoch: epoch, transactionalId: p.init!.transactionalId, expiresAt: iat + relay.cfg.auth.ticketTtlSec }))
  }

  /** Broker endpoints in an answer (`frame`: size prefix included). */
  private learn(p: Pending, frame: Buffer): void {
    const api = apiByKey(p.apiKey)
    if (!api) return
    try {
      if (api === Produce && !hasTopLevelTags(api, p.version, frame, 4)) return
      const msg = decodeResponse(api, p.version, frame.subarray(4))
      if (api === Metadata) this.relay.destinations.learn(msg.brokers as Array<{ nodeId: number; host: string; port: number }>)
      else if (api === FindCoordinator) {
        if (p.version >= 4) this.relay.destinations.learn(msg.coordinators as Array<{ nodeId: number; host: string; port: number; errorCode: number }>)
        else if (msg.errorCode === errorCode('NONE')) this.relay.destinations.learn([msg as { nodeId: number; host: string; port: number }])
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
