import type { Socket } from 'node:net'
import { authenticate } from '../edge/auth/sasl.js'
import { IllegalSaslStateException, ProtocolError, SaslAuthenticationException, SslAuthenticationException, UnsupportedSaslMechanismException } from '../edge/errors.js'
import { ApiVersions, decodeResponse, encodeRequest, errorCode, Metadata, SaslAuthenticate, SaslHandshake, type ApiSchema, type RequestBody, type ResponseBody } from '../edge/protocol/index.js'
import { FrameDecoder, looksLikeTlsRecord, plaintextToTlsError } from '../edge/protocol/frame-decoder.js'
import { classifySocketError, dial } from '../edge/transport/node-tcp.js'
import type { TlsSettings } from '../edge/transport/transport.js'
import { hostPortKey, type BridgeConfig, type HostPort } from './config.js'
import { CredentialError, saslMechanism } from './credentials.js'

export type UpstreamErrorKind = 'connect' | 'timeout' | 'tls' | 'sasl' | 'protocol'

/**
 * Why an upstream connection failed: `connect` (TCP), `timeout`, `tls` (certificate or handshake),
 * `sasl` (credentials/mechanism), `protocol`. `cause` keeps the typed error (SslAuthenticationException,
 * SaslAuthenticationException, ...) the shared transport and SASL module raised.
 */
export class UpstreamError extends Error {
  constructor(readonly kind: UpstreamErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'UpstreamError'
  }
}

export interface Upstream {
  socket: Socket
  decoder: FrameDecoder
  /** Broker-imposed SASL session lifetime (0 = none); the connection must end before it. */
  sessionLifetimeMs: number
}

// Correlation ids of the relay's own requests; they precede every client frame on the connection.
const RELAY_CORRELATION = 0x7e000000
const CLIENT_ID = 'kafka-edge-bridge'

/**
 * Opens a connection to a broker (TLS when `cfg.tls` is set) and, when configured, authenticates
 * with the relay's own credentials before any client byte is forwarded. Dialing and certificate
 * checks are the producer's `dial()`, and SASL is the producer's `authenticate()`, so a broker is
 * verified the same way on both paths. Everything is bounded by `timeoutMs`.
 */
export async function openUpstream(target: HostPort, cfg: BridgeConfig, timeoutMs: number, maxFrameBytes: number): Promise<Upstream> {
  const where = hostPortKey(target)
  const tls: TlsSettings | undefined = cfg.tls ? { ca: cfg.tls.ca, cert: cfg.tls.cert, key: cfg.tls.key, verifyHostname: cfg.tls.verifyHostname } : undefined
  // The name the certificate must carry (and the SNI); the TCP connection still goes to `target`.
  const address = { host: cfg.tls?.servername ?? target.host, port: target.port }
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new UpstreamError('timeout', `broker ${where} did not accept${tls ? ', finish the TLS handshake' : ''}${cfg.sasl ? ' and authenticate' : ''} within ${timeoutMs} ms`)), timeoutMs)
  })
  let socket: Socket | null = null
  let abandoned = false
  try {
    // dial's own timer is a backstop; ours decides, so a slow TLS handshake is reported as `timeout`.
    const dialing = dial(address, target, tls, timeoutMs + 1000)
    dialing.then((s) => { if (abandoned) s.destroy() }, () => {})
    socket = await Promise.race([dialing.catch((e: unknown) => { throw upstreamError(e, where, cfg) }), deadline])
    const decoder = new FrameDecoder(maxFrameBytes)
    const sessionLifetimeMs = cfg.sasl ? await Promise.race([authenticateUpstream(socket, decoder, target, address, cfg, timeoutMs), deadline]) : 0
    // A reset broker emits 'error', and an 'error' nobody listens to kills the whole relay. Every
    // user of the socket learns of the failure from the 'close' that always follows.
    socket.on('error', () => {})
    return { socket, decoder, sessionLifetimeMs }
  } catch (e) {
    abandoned = true
    socket?.destroy()
    throw e instanceof UpstreamError ? e : upstreamError(e, where, cfg)
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Versions: ApiVersions v0 first (every broker answers it before SASL), then SaslHandshake v1 (Kafka
 * 1.0+) and SaslAuthenticate v1 where the broker has it (2.2+, KIP-368), else v0. Only v1 carries
 * the session lifetime the relay drains connections by; a broker without v1 has no session
 * lifetimes, so v0 loses nothing there. The extra round trip is on the relay-to-broker link, which
 * is short next to the client's own ApiVersions over the WebSocket.
 */
async function authenticateUpstream(socket: Socket, decoder: FrameDecoder, target: HostPort, address: HostPort, cfg: BridgeConfig, timeoutMs: number): Promise<number> {
  const where = hostPortKey(target)
  const waiting: Array<{ correlationId: number; resolve: (frame: Uint8Array) => void }> = []
  let failed: ((e: Error) => void) | null = null
  const failure = new Promise<never>((_, reject) => { failed = reject })
  failure.catch(() => {})
  let first = true
  const onData = (chunk: Buffer) => {
    const bytes = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    if (first) {
      first = false
      if (!cfg.tls && looksLikeTlsRecord(bytes)) {
        return failed!(new UpstreamError('tls', `broker ${where} answered with TLS: its listener expects TLS. Add a "tls" section to the relay config, or use the broker's plaintext port`, { cause: plaintextToTlsError(target.host, target.port) }))
      }
    }
    try {
      for (const f of decoder.push(bytes)) {
        const w = waiting.shift()
        if (!w) throw new UpstreamError('protocol', `broker ${where} sent an unsolicited frame during authentication`)
        const got = f.length >= 4 ? new DataView(f.buffer, f.byteOffset, 4).getInt32(0) : NaN
        if (got !== w.correlationId) throw new UpstreamError('protocol', `broker ${where} answered correlation id ${got}, expected ${w.correlationId}`)
        w.resolve(f)
      }
    } catch (e) {
      failed!(e instanceof UpstreamError ? e : new UpstreamError('protocol', `broker ${where}: ${(e as Error).message}`, { cause: e }))
    }
  }
  const onError = (err: NodeJS.ErrnoException) => failed!(upstreamError(classifySocketError(err, address, cfg.tls !== null, false), where, cfg))
  const onClose = () => failed!(new UpstreamError('connect', `broker ${where} closed the connection during SASL authentication${cfg.tls ? '' : first ? ' without answering (if that port is a TLS listener, add a "tls" section to the relay config)' : ''}`))
  socket.on('data', onData)
  socket.on('error', onError)
  socket.on('close', onClose)
  let seq = 0
  const call = <A extends ApiSchema>(api: A, version: number, body: RequestBody<A>): Promise<ResponseBody<A>> => {
    const correlationId = RELAY_CORRELATION + seq++
    const answered = new Promise<Uint8Array>((resolve) => waiting.push({ correlationId, resolve }))
    socket.write(encodeRequest(api, version, correlationId, CLIENT_ID, body))
    return Promise.race([answered, failure]).then((frame) => {
      try { return decodeResponse(api, version, frame) as ResponseBody<A> } catch (e) {
        throw new UpstreamError('protocol', `broker ${where}: ${api.name} v${version} response: ${(e as Error).message}`, { cause: e })
      }
    })
  }
  try {
    const versions = await call(ApiVersions, 0, {})
    if (versions.errorCode !== errorCode('NONE')) throw new UpstreamError('protocol', `broker ${where} answered ApiVersions with error ${String(versions.errorCode)}`)
    const range = (api: ApiSchema) => (versions.apiKeys as Array<{ apiKey: number; minVersion: number; maxVersion: number }>).find((k) => k.apiKey === api.key)
    const hs = range(SaslHandshake)
    const sa = range(SaslAuthenticate)
    if (!hs || hs.maxVersion < 1 || !sa) {
      throw new UpstreamError('protocol', `broker ${where} predates Kafka 1.0 (no SaslHandshake v1 / SaslAuthenticate): the relay authenticates only to Kafka 1.0 or newer`)
    }
    const saslVersion = Math.min(1, sa.maxVersion)
    const mechanism = saslMechanism(cfg.sasl!, timeoutMs)
    const session = await authenticate(mechanism, target, (api, body) => call(api, api === SaslHandshake ? 1 : saslVersion, body))
    if (decoder.buffered > 0) throw new UpstreamError('protocol', `broker ${where} sent bytes after authentication`)
    return session.lifetimeMs
  } finally {
    socket.removeListener('data', onData)
    socket.removeListener('error', onError)
    socket.removeListener('close', onClose)
  }
}

const TLS_ADVICE: Record<string, string> = {
  'unknown CA': 'The broker certificate is not signed by a CA the relay trusts: set tls.caFile (or tls.ca) to the CA that signed it',
  'hostname mismatch': 'The certificate does not name the broker host: list brokers by a name the certificate has, set tls.servername, or (tests only) tls.verifyHostname: false',
  'client certificate refused': 'The listener requires mutual TLS with a certificate it trusts: set tls.certFile and tls.keyFile',
  'peer does not speak TLS': 'The port is probably a plaintext listener: use the broker\'s TLS port, or remove the "tls" section',
  'peer closed during handshake': 'The port is probably a plaintext listener: use the broker\'s TLS port, or remove the "tls" section',
  'handshake refused by the broker': 'Check the relay\'s client certificate (tls.certFile) and the TLS versions the listener allows',
}

/** Maps the shared module's typed errors to the relay's kinds, with advice in terms of the relay's config. */
function upstreamError(e: unknown, where: string, cfg: BridgeConfig): UpstreamError {
  if (e instanceof UpstreamError) return e
  if (e instanceof SslAuthenticationException) {
    const advice = TLS_ADVICE[e.reason] ?? e.message
    return new UpstreamError('tls', `TLS to broker ${where} failed: ${e.reason}. ${advice}`, { cause: e })
  }
  if (e instanceof SaslAuthenticationException || e instanceof UnsupportedSaslMechanismException || e instanceof IllegalSaslStateException) {
    // A credential the relay could not obtain is reported by its source, not as a producer setting.
    const detail = e.cause instanceof CredentialError ? e.cause.message : e.message
    return new UpstreamError('sasl', `relay could not authenticate to broker ${where} with ${cfg.sasl?.mechanism ?? 'SASL'}: ${detail}`, { cause: e })
  }
  if (e instanceof CredentialError) return new UpstreamError('sasl', `relay could not authenticate to broker ${where}: ${e.message}`, { cause: e })
  if (e instanceof ProtocolError) return new UpstreamError('protocol', `broker ${where}: ${e.message}`, { cause: e })
  return new UpstreamError('connect', e instanceof Error ? e.message : `broker ${where}: ${String(e)}`, { cause: e })
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
        } catch (e) { clearTimeout(timer); reject(new UpstreamError('protocol', String(e), { cause: e })) }
      })
      up.socket.once('error', (e) => { clearTimeout(timer); reject(new UpstreamError('connect', `bootstrap server ${hostPortKey(target)}: ${e.message}`, { cause: e })) })
      up.socket.once('close', () => { clearTimeout(timer); reject(new UpstreamError('connect', 'bootstrap server closed during metadata')) })
      // v9: flexible, brokers list unchanged since; supported by every broker from Kafka 2.4.
      up.socket.write(encodeRequest(Metadata, 9, RELAY_CORRELATION + 100, CLIENT_ID, {
        topics: [], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false, includeClusterAuthorizedOperations: false,
      }))
    })
  } finally { up.socket.destroy() }
}
