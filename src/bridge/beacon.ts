// The page-hide beacon route (POST <path>/beacon): a page's last Produce requests in one keepalive
// fetch, checked as WebSocket frames would be and held to the same connection caps and budgets.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Produce } from '../edge/protocol/index.js'
import { FrameSplitter } from './frames.js'
import { BRIDGE_METRICS as M } from './metrics.js'
import { checkMessage, grantsFor, inspectRequest, type RequestContext } from './policy.js'
import type { Relay } from './server.js'
import { UpstreamError, type Upstream } from './upstream.js'
import { upstreamCloseReason } from './connection.js'

/** The browsers' keepalive budget (fetch keepalive / sendBeacon), plus the beacon's JSON line. */
const BEACON_MAX_BYTES = 64 * 1024 + 4096

type BeaconReply = (status: number, body: string | Buffer, reason: string | null, headers?: Record<string, string>) => void

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
export async function beacon(relay: Relay, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const origin = req.headers.origin
  const reply: BeaconReply = (status, body, reason, headers = {}) => {
    if (reason) { relay.metrics.inc(M.rejects, { reason: `beacon_${reason}` }); relay.log.info('beacon_rejected', { status, reason: String(body).slice(0, 120) }) }
    if (res.headersSent || res.destroyed) return
    res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/octet-stream', ...(origin && relay.originAllowed(origin) ? { 'access-control-allow-origin': origin, vary: 'Origin' } : {}), ...headers })
    res.end(body)
  }
  // A beacon holds a broker connection while it is served, so it counts against the same caps as
  // a WebSocket: per address from the first byte, per principal once its token is verified.
  const ip = req.socket.remoteAddress ?? 'unknown'
  if ((relay.perIp.get(ip) ?? 0) >= relay.cfg.limits.connectionsPerIp) { req.resume(); return reply(429, 'too many connections from this address', 'connections_per_ip', { 'retry-after': '1' }) }
  if (relay.conns.size + relay.beaconsActive >= relay.cfg.limits.maxConnections) { req.resume(); return reply(503, 'the relay is at its connection limit', 'max_connections', { 'retry-after': '1' }) }
  relay.holdIp(ip)
  relay.beaconsActive++
  const held: { principal: string | null } = { principal: null }
  try {
    await serveBeacon(relay, req, reply, held)
  } finally {
    relay.beaconsActive--
    relay.releaseIp(ip)
    if (held.principal !== null) relay.releasePrincipal(held.principal)
  }
}

async function serveBeacon(relay: Relay, req: IncomingMessage, reply: BeaconReply, held: { principal: string | null }): Promise<void> {
  const origin = req.headers.origin
  if (!relay.originAllowed(origin)) return reply(403, origin === undefined ? 'a request without Origin is not allowed' : `Origin ${origin} is not allowed`, 'origin')
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
  const auth = typeof head.token === 'string' ? await relay.authn.verify(head.token) : { ok: false as const, expired: false, reason: 'no token' }
  if (!auth.ok) return reply(401, auth.expired ? 'token expired' : `authentication failed: ${auth.reason}`, auth.expired ? 'token_expired' : 'unauthenticated')
  const principal = auth.claims.sub
  const budget = relay.admitPrincipal(principal)
  if (!budget) return reply(429, 'too many connections for this principal', 'connections_per_principal', { 'retry-after': '1' })
  held.principal = principal
  const grants = grantsFor(auth.claims)
  if (typeof head.ticket === 'string') {
    const v = relay.tickets.verify(head.ticket, Date.now() / 1000)
    const refusal = !v.ok ? v.reason : v.ticket.sub !== principal ? 'producer-id ticket was issued to another principal'
      : v.ticket.txn !== null && !grants.transactionalId(v.ticket.txn) ? 'producer-id ticket names a transactional id this token does not allow' : null
    relay.metrics.inc('kafka_edge_bridge_producer_id_tickets_total', { event: refusal === null ? 'accepted' : 'refused' })
    if (refusal !== null || !v.ok) return reply(403, refusal ?? 'producer-id ticket refused', 'producer_id_ticket')
    relay.bindings.bind(principal, v.ticket.pid, v.ticket.epoch)
  }
  const ctx: RequestContext = {
    grants, maxNamesPerRequest: relay.cfg.limits.maxNamesPerRequest,
    ownsProducerId: (pid) => relay.bindings.holds(principal, pid),
    admitInitProducerId: () => false,
  }
  for (const frame of frames) {
    const verdict = inspectRequest(frame.subarray(4), ctx)
    if (!verdict.ok) return reply(403, verdict.reason, verdict.metric)
    if (verdict.apiKey !== Produce.key || !verdict.expectResponse) return reply(403, 'a beacon carries Produce requests with acks 1 or -1 only', 'api')
  }
  // The principal's frame and byte budgets are the WebSocket path's: a beacon is not a way around them.
  const wait = Math.max(budget.frames.take(frames.length), budget.bytes.take(body.length))
  if (wait > relay.cfg.limits.maxThrottleMs) return reply(429, 'rate limit exceeded', 'rate', { 'retry-after': String(Math.ceil(wait / 1000)) })
  if (wait > 0) await new Promise((r) => setTimeout(r, wait))
  const dest = await relay.destinations.resolve(typeof head.broker === 'string' ? head.broker : null)
  if (!dest.ok) return reply(403, dest.reason, 'destination')
  let up: Upstream
  try {
    up = await relay.open(dest.target, relay.cfg, relay.cfg.limits.upstreamTimeoutMs, relay.cfg.limits.maxResponseFrameBytes)
  } catch (e) {
    relay.metrics.inc(M.upstreamErrors, { kind: e instanceof UpstreamError ? e.kind : 'connect' })
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
        t = setTimeout(() => reject(new Error('the broker did not answer the beacon in time')), relay.cfg.limits.upstreamTimeoutMs)
        up.socket.write(frames[answers.length]!)
      }
      const splitter = new FrameSplitter(relay.cfg.limits.maxResponseFrameBytes)
      up.socket.on('data', (chunk: Buffer) => {
        try {
          for (const f of splitter.push(chunk)) {
            answers.push(f)
            next()
          }
        } catch (e) { clearTimeout(t); reject(e as Error) }
      })
      up.socket.once('error', (e) => { clearTimeout(t); reject(new Error(`the broker connection failed: ${e.message}`)) })
      up.socket.once('close', () => { clearTimeout(t); reject(new Error('the broker closed the connection')) })
      next()
    })
    relay.metrics.inc('kafka_edge_bridge_beacons_total')
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
