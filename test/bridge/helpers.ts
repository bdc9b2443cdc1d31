// Shared pieces of the relay suites: an in-process relay in front of the SASL listener of a real
// Kafka 4.4 cluster, token minting, and a raw WebSocket client that speaks frames directly.
import WebSocket from 'ws'
import { resolveConfig, startBridge, signToken, type Bridge, type BridgeOptions } from '../../src/bridge/index.js'
import { createProducer, websocket, type Producer } from '../../src/edge/index.js'
import { ApiVersions, Metadata, decodeResponse, encodeRequest, type ApiSchema, type Message } from '../../src/edge/protocol/index.js'
import { Logger } from '../../src/bridge/metrics.js'
import { ensureCluster, type Cluster } from '../helpers/kafka.js'

export const SECRET = 'test-secret-0123456789-abcdefghijklmnop'
export const AUDIENCE = 'kafka-edge-tests'

/**
 * One 1-node cluster for every relay suite: SASL_PLAINTEXT, SSL and SASL_SSL listeners besides
 * PLAINTEXT. The same options as the producer's TLS suites, so a full run starts it once.
 */
export function relayCluster(): Promise<Cluster> {
  return ensureCluster({ tls: true, sasl: true })
}

export interface RelayOverrides { [k: string]: unknown }

/** The relay settings every suite shares: the cluster's SASL listener as user relay, tokens signed with SECRET. */
export function relayBase(cluster: Cluster) {
  return {
    brokers: [cluster.saslBootstrap!],
    sasl: { mechanism: 'SCRAM-SHA-512', username: 'relay', password: 'relay-secret' },
    auth: { secret: SECRET, audience: AUDIENCE },
  }
}

export async function startRelay(cluster: Cluster, overrides: RelayOverrides = {}, opts: BridgeOptions & { logs?: string[] } = {}): Promise<Bridge> {
  const logs = opts.logs
  const cfg = resolveConfig({
    listen: '127.0.0.1:0',
    ...relayBase(cluster),
    auth: { ...relayBase(cluster).auth, clockSkewSec: 0 },
    origins: ['https://app.example'],
    log: { level: logs ? 'debug' : 'silent' },
    ...overrides,
  }, opts.env ?? {})
  return startBridge(cfg, { logger: logs ? new Logger('debug', (l) => logs.push(l)) : undefined, ...opts })
}

export function token(claims: Record<string, unknown> = {}, secret = SECRET): string {
  const now = Math.floor(Date.now() / 1000)
  return signToken({ sub: 'tester', aud: AUDIENCE, exp: now + 600, topics: ['*'], transactional_ids: ['*'], groups: ['*'], ...claims }, secret)
}

export function wsProducer(bridge: Bridge, extra: Record<string, unknown> = {}, tok: string | (() => string) = token()): Producer {
  return createProducer({
    'bootstrap.servers': 'relay:443',
    transport: websocket({ url: bridge.url, token: tok, WebSocket: WebSocket as never }),
    ...extra,
  })
}

export interface RawClient {
  ws: WebSocket
  /** Resolves with the close code and reason (also when the upgrade itself failed: code 1006). */
  closed: Promise<{ code: number; reason: string; status?: number }>
  opened: Promise<boolean>
  /** Text messages from the relay (producer-id tickets), in arrival order. */
  texts: string[]
  send(frame: Uint8Array): void
  /** The next response frame (size prefix included). */
  next(timeoutMs?: number): Promise<Uint8Array>
  request(api: ApiSchema, version: number, body: Message): Promise<Message>
}

let corr = 1
export function rawClient(url: string, o: { token?: string | null; origin?: string; broker?: string; query?: Record<string, string>; protocols?: string[] } = {}): RawClient {
  const u = new URL(url)
  if (o.broker) u.searchParams.set('broker', o.broker)
  for (const [k, v] of Object.entries(o.query ?? {})) u.searchParams.set(k, v)
  const tok = o.token === undefined ? token() : o.token
  const protocols = o.protocols ?? ['kafka-edge.v1', ...(tok ? [`kafka-edge.bearer.${tok}`] : [])]
  const ws = new WebSocket(u.toString(), protocols, { headers: o.origin ? { origin: o.origin } : {} })
  const frames: Uint8Array[] = []
  const waiters: Array<(f: Uint8Array) => void> = []
  const texts: string[] = []
  ws.on('message', (d: Buffer, isBinary: boolean) => {
    // The relay's text messages (producer-id tickets) are kept apart from Kafka frames.
    if (!isBinary) { texts.push(d.toString('utf8')); return }
    const f = new Uint8Array(d)
    const w = waiters.shift()
    if (w) w(f); else frames.push(f)
  })
  let status: number | undefined
  ws.on('unexpected-response', (_req, res) => { status = res.statusCode; ws.terminate() })
  ws.on('error', () => {})
  const opened = new Promise<boolean>((resolve) => { ws.once('open', () => resolve(true)); ws.once('close', () => resolve(false)) })
  const closed = new Promise<{ code: number; reason: string; status?: number }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString(), status })))
  const next = (timeoutMs = 10_000) => new Promise<Uint8Array>((resolve, reject) => {
    const f = frames.shift()
    if (f) return resolve(f)
    const t = setTimeout(() => reject(new Error('no response frame')), timeoutMs)
    waiters.push((x) => { clearTimeout(t); resolve(x) })
    void closed.then((c) => { clearTimeout(t); reject(new Error(`closed ${c.code} ${c.reason}`)) })
  })
  return {
    ws, closed, opened, next, texts,
    send: (frame) => ws.send(frame),
    request: async (api, version, body) => {
      if (!(await opened)) throw new Error('not open')
      ws.send(encodeRequest(api, version, corr++, 'raw', body))
      const f = await next()
      return decodeResponse(api, version, f.subarray(4))
    },
  }
}

/** The relay still serves: /healthz answers 200 and a well-behaved client gets ApiVersions and Metadata through. */
export async function assertHealthy(bridge: Bridge): Promise<{ health: number; brokers: number; apis: number }> {
  const health = (await fetch(`${bridge.httpUrl}/healthz`)).status
  const c = rawClient(bridge.url, { origin: 'https://app.example' })
  const av = await c.request(ApiVersions, 3, { clientSoftwareName: 'tests', clientSoftwareVersion: '1' })
  const md = await c.request(Metadata, 12, { topics: [], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
  c.ws.close()
  return { health, brokers: (md.brokers as unknown[]).length, apis: (av.apiKeys as unknown[]).length }
}
