import { createHash, createHmac, pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto'
import { connect, type Socket } from 'node:net'
import { decodeResponse, encodeRequest, Metadata, SaslAuthenticate, SaslHandshake, type ApiSchema, type Message } from '../edge/protocol/index.js'
import { FrameDecoder } from '../edge/transport/frame-decoder.js'
import type { BridgeConfig, HostPort } from './config.js'

/** Why an upstream connection failed: `connect` (TCP), `sasl` (credentials/mechanism), `protocol`. */
export class UpstreamError extends Error {
  constructor(readonly kind: 'connect' | 'timeout' | 'sasl' | 'protocol', message: string) { super(message) }
}

export interface Upstream {
  socket: Socket
  decoder: FrameDecoder
  /** Broker-imposed SASL session lifetime (0 = none); the connection must end before it. */
  sessionLifetimeMs: number
}

// Correlation ids of the relay's own requests; they precede every client frame on the connection.
const RELAY_CORRELATION = 0x7e000000

/**
 * Opens TCP to a broker and, when configured, authenticates with the relay's own credentials before
 * any client byte is forwarded. Everything is bounded by `timeoutMs`.
 */
export function openUpstream(target: HostPort, cfg: BridgeConfig, timeoutMs: number, maxFrameBytes: number): Promise<Upstream> {
  return new Promise<Upstream>((resolve, reject) => {
    const socket = connect({ host: target.host, port: target.port, noDelay: true })
    const decoder = new FrameDecoder(maxFrameBytes)
    let settled = false
    const waiting: Array<(f: Uint8Array) => void> = []
    const done = (err: Error | null, value?: Upstream) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.removeListener('data', onData)
      if (err) { socket.destroy(); reject(err) } else resolve(value!)
    }
    const timer = setTimeout(() => done(new UpstreamError('timeout', `broker ${target.host}:${target.port} did not accept and authenticate within ${timeoutMs} ms`)), timeoutMs)
    const onData = (chunk: Buffer) => {
      try {
        for (const f of decoder.push(chunk)) {
          const w = waiting.shift()
          if (!w) throw new UpstreamError('protocol', 'broker sent an unsolicited frame during authentication')
          w(f)
        }
      } catch (e) { done(e instanceof UpstreamError ? e : new UpstreamError('protocol', String(e))) }
    }
    socket.on('data', onData)
    socket.once('error', (e) => done(new UpstreamError('connect', `broker ${target.host}:${target.port}: ${e.message}`)))
    socket.once('close', () => done(new UpstreamError('connect', `broker ${target.host}:${target.port} closed the connection during setup`)))
    let seq = 0
    const call = (api: ApiSchema, version: number, body: Message): Promise<Message> => new Promise((ok, bad) => {
      waiting.push((frame) => { try { ok(decodeResponse(api, version, frame)) } catch (e) { bad(new UpstreamError('protocol', `${api.name} response: ${(e as Error).message}`)) } })
      socket.write(encodeRequest(api, version, RELAY_CORRELATION + seq++, 'kafka-edge-bridge', body))
    })
    socket.once('connect', () => {
      const run = cfg.sasl ? authenticate(cfg.sasl, call) : Promise.resolve(0)
      run.then((sessionLifetimeMs) => {
        if (decoder.buffered > 0) throw new UpstreamError('protocol', 'broker sent bytes after authentication')
        done(null, { socket, decoder, sessionLifetimeMs })
      }, (e: unknown) => done(e instanceof UpstreamError ? e : new UpstreamError('sasl', String(e))))
    })
  })
}

type Call = (api: ApiSchema, version: number, body: Message) => Promise<Message>

async function authenticate(sasl: NonNullable<BridgeConfig['sasl']>, call: Call): Promise<number> {
  const hs = await call(SaslHandshake, 1, { mechanism: sasl.mechanism })
  if (hs.errorCode !== 0) {
    throw new UpstreamError('sasl', `broker does not enable ${sasl.mechanism} (it offers ${(hs.mechanisms as string[]).join(', ')})`)
  }
  const step = async (bytes: Uint8Array): Promise<{ bytes: Uint8Array; lifetime: number }> => {
    const r = await call(SaslAuthenticate, 1, { authBytes: bytes })
    if (r.errorCode !== 0) throw new UpstreamError('sasl', `SASL ${sasl.mechanism} failed: ${(r.errorMessage as string | null) ?? `error ${String(r.errorCode)}`}`)
    return { bytes: (r.authBytes as Uint8Array | null) ?? new Uint8Array(0), lifetime: Number(r.sessionLifetimeMs as bigint) }
  }
  if (sasl.mechanism === 'PLAIN') {
    return (await step(Buffer.from(`\0${sasl.username}\0${sasl.password}`, 'utf8'))).lifetime
  }
  const scram = new ScramClient(sasl.mechanism === 'SCRAM-SHA-256' ? 'sha256' : 'sha512', sasl.username, sasl.password)
  const first = await step(scram.clientFirst())
  const final = await step(await scram.clientFinal(first.bytes))
  scram.verifyServerFinal(final.bytes)
  return final.lifetime
}

// PBKDF2 dominates a SCRAM login (4096 rounds of SHA-512); the salt is per user, so one derivation
// serves every connection until the broker's credential changes.
const saltedCache = new Map<string, Promise<Buffer>>()

/** RFC 5802 SCRAM client (no channel binding, as Kafka's SASL_PLAINTEXT/SASL_SSL use). */
export class ScramClient {
  private clientFirstBare = ''
  private serverSignature: Buffer | null = null

  constructor(private readonly hash: 'sha256' | 'sha512', private readonly user: string, private readonly password: string, private readonly nonce = randomBytes(24).toString('base64')) {}

  clientFirst(): Uint8Array {
    const name = this.user.replace(/=/g, '=3D').replace(/,/g, '=2C')
    this.clientFirstBare = `n=${name},r=${this.nonce}`
    return Buffer.from(`n,,${this.clientFirstBare}`, 'utf8')
  }

  async clientFinal(serverFirstBytes: Uint8Array): Promise<Uint8Array> {
    const serverFirst = Buffer.from(serverFirstBytes).toString('utf8')
    const attrs = new Map(serverFirst.split(',').map((kv) => [kv.slice(0, 1), kv.slice(2)] as const))
    const nonce = attrs.get('r')
    const salt = attrs.get('s')
    const iterations = Number(attrs.get('i'))
    if (attrs.has('e')) throw new UpstreamError('sasl', `SCRAM server error: ${attrs.get('e')}`)
    if (!nonce || !nonce.startsWith(this.nonce) || nonce.length <= this.nonce.length) throw new UpstreamError('sasl', 'SCRAM server nonce does not extend the client nonce')
    if (!salt || !Number.isInteger(iterations) || iterations < 1 || iterations > 1_000_000) throw new UpstreamError('sasl', 'SCRAM server-first message is malformed')
    const len = this.hash === 'sha256' ? 32 : 64
    const key = `${this.hash}\0${this.user}\0${this.password}\0${salt}\0${iterations}`
    let salted = saltedCache.get(key)
    if (!salted) {
      salted = new Promise<Buffer>((ok, bad) => pbkdf2(this.password.normalize('NFKC'), Buffer.from(salt, 'base64'), iterations, len, this.hash, (e, k) => (e ? bad(e) : ok(k))))
      saltedCache.set(key, salted)
      if (saltedCache.size > 64) saltedCache.delete(saltedCache.keys().next().value!)
    }
    const saltedPassword = await salted
    const hmac = (k: Buffer, s: string) => createHmac(this.hash, k).update(s, 'utf8').digest()
    const clientKey = hmac(saltedPassword, 'Client Key')
    const storedKey = createHash(this.hash).update(clientKey).digest()
    const withoutProof = `c=biws,r=${nonce}`
    const authMessage = `${this.clientFirstBare},${serverFirst},${withoutProof}`
    const signature = hmac(storedKey, authMessage)
    const proof = Buffer.alloc(clientKey.length)
    for (let i = 0; i < proof.length; i++) proof[i] = clientKey[i]! ^ signature[i]!
    this.serverSignature = hmac(hmac(saltedPassword, 'Server Key'), authMessage)
    return Buffer.from(`${withoutProof},p=${proof.toString('base64')}`, 'utf8')
  }

  /** A broker that cannot prove it knows the credential is not the broker we meant to talk to. */
  verifyServerFinal(bytes: Uint8Array): void {
    const text = Buffer.from(bytes).toString('utf8')
    if (text.startsWith('e=')) throw new UpstreamError('sasl', `SCRAM server error: ${text.slice(2)}`)
    if (!text.startsWith('v=') || !this.serverSignature) throw new UpstreamError('sasl', 'SCRAM server-final message is malformed')
    const got = Buffer.from(text.slice(2), 'base64')
    if (got.length !== this.serverSignature.length || !timingSafeEqual(got, this.serverSignature)) {
      throw new UpstreamError('sasl', 'SCRAM server signature does not verify')
    }
  }
}

/** One Metadata round trip (brokers only) through a bootstrap server: how the relay learns endpoints itself. */
export async function fetchBrokers(target: HostPort, cfg: BridgeConfig): Promise<Array<{ nodeId: number; host: string; port: number }>> {
  const up = await openUpstream(target, cfg, cfg.limits.upstreamTimeoutMs, cfg.limits.maxResponseFrameBytes)
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new UpstreamError('timeout', 'metadata request timed out')), cfg.limits.upstreamTimeoutMs)
      up.socket.on('data', (chunk: Buffer) => {
        try {
          for (const f of up.decoder.push(chunk)) {
            clearTimeout(timer)
            const res = decodeResponse(Metadata, 9, f)
            resolve(res.brokers as Array<{ nodeId: number; host: string; port: number }>)
          }
        } catch (e) { clearTimeout(timer); reject(new UpstreamError('protocol', String(e))) }
      })
      up.socket.once('close', () => { clearTimeout(timer); reject(new UpstreamError('connect', 'bootstrap server closed during metadata')) })
      // v9: flexible, brokers list unchanged since; supported by every broker from Kafka 2.4.
      up.socket.write(encodeRequest(Metadata, 9, RELAY_CORRELATION + 100, 'kafka-edge-bridge', { topics: [], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false, includeClusterAuthorizedOperations: false }))
    })
  } finally { up.socket.destroy() }
}
