import { KafkaEdgeError, NetworkException, ProtocolError, SslAuthenticationException } from '../errors.js'
import { FrameDecoder, looksLikeTlsRecord, plaintextToTlsError } from '../protocol/frame-decoder.js'
import { installBrokerSecurity } from '../security.js'
import type { BrokerAddress, Link, LinkHandlers, Transport } from './transport.js'

/** The part of a `cloudflare:sockets` Socket this transport uses. */
export interface CloudflareSocketLike {
  readonly readable: ReadableStream<Uint8Array>
  readonly writable: WritableStream<Uint8Array>
  readonly opened?: Promise<unknown>
  readonly closed: Promise<void>
  close(): Promise<void> | void
}

/** `connect` from `cloudflare:sockets`. */
export type CloudflareConnect = (
  address: { hostname: string; port: number },
  options?: { secureTransport?: 'off' | 'on' | 'starttls'; allowHalfOpen?: boolean },
) => CloudflareSocketLike

export interface CloudflareSocketsOptions {
  /**
   * `connect` from `cloudflare:sockets`. Pass it when your bundler cannot leave a dynamic import of
   * `cloudflare:sockets` alone (or in tests, a fake). By default the module is imported on first use,
   * so this file still loads in browsers and Node.
   */
  connect?: CloudflareConnect
  connectTimeoutMs?: number
  maxFrameBytes?: number
  /** Rewrites a broker address before connecting (NAT, a Cloudflare Tunnel hostname). */
  resolve?: (address: BrokerAddress) => { host: string; port: number }
}

// Kept in a variable so browser/Node bundlers do not try to resolve it; workerd resolves it at runtime.
const SOCKETS_MODULE = 'cloudflare:sockets'
let imported: Promise<CloudflareConnect> | null = null

function importConnect(): Promise<CloudflareConnect> {
  if (!imported) {
    imported = (import(/* @vite-ignore */ /* webpackIgnore: true */ SOCKETS_MODULE) as Promise<{ connect?: CloudflareConnect }>).then((m) => {
      if (typeof m.connect !== 'function') throw new Error('cloudflare:sockets has no connect()')
      return m.connect
    }, (e: unknown) => {
      imported = null
      throw new KafkaEdgeError('cloudflareSockets() needs the cloudflare:sockets module (Cloudflare Workers / workerd); ' +
        `here it failed to load: ${(e as Error)?.message ?? e}. Outside workerd use tcp() or websocket()`, { cause: e })
    })
  }
  return imported
}

/**
 * Raw TCP from a Cloudflare Worker or Durable Object with `connect()` from `cloudflare:sockets`.
 * The socket is a byte stream: frames are re-assembled with FrameDecoder. A socket belongs to the
 * request that opened it, so a producer that must outlive a request lives in a Durable Object.
 */
export function cloudflareSockets(options: CloudflareSocketsOptions = {}): Transport {
  installBrokerSecurity()
  // Once workerd has verified one broker of the cluster, its words for a failed connection ("proxy
  // request failed") far more likely mean a broker restarting than a certificate gone bad.
  const seen = { trusted: false }
  return {
    name: 'cloudflare-sockets',
    // TLS is the producer's security.protocol (SSL / SASL_SSL); workerd verifies the broker against
    // its own trust store and takes no CA, client certificate or verification switch.
    tls: 'system',
    open: async (address, handlers, open) => {
      const connect = options.connect ?? await importConnect()
      return openSocket(connect, address, handlers, options, open?.tls !== undefined, seen)
    },
  }
}

async function openSocket(
  connect: CloudflareConnect, address: BrokerAddress, handlers: LinkHandlers, o: CloudflareSocketsOptions, tls: boolean, seen: { trusted: boolean },
): Promise<Link> {
  const target = o.resolve ? o.resolve(address) : address
  const where = `${target.host}:${target.port}`
  let socket: CloudflareSocketLike
  try {
    socket = connect({ hostname: target.host, port: target.port }, { secureTransport: tls ? 'on' : 'off', allowHalfOpen: false })
  } catch (e) {
    throw new NetworkException(`cannot connect to ${where}: ${(e as Error)?.message ?? e}`, { cause: e })
  }
  const timeoutMs = o.connectTimeoutMs ?? 10_000
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    // `opened` rejects when the connection is refused; `closed` rejects too, so race both.
    await Promise.race([
      socket.opened ?? Promise.resolve(),
      socket.closed.then(() => { throw new NetworkException(`connection to ${where} closed while connecting`) }),
      new Promise((_, reject) => { timer = setTimeout(() => reject(new NetworkException(`connect to ${where} timed out after ${timeoutMs} ms`)), timeoutMs) }),
    ])
  } catch (e) {
    try { void Promise.resolve(socket.close()).catch(() => {}) } catch { /* already closed */ }
    if (e instanceof NetworkException) throw e
    const message = (e as Error)?.message ?? String(e)
    // workerd reports a failed TLS handshake and an unreachable host with the same words, so the
    // error names both. Before any broker was verified it is not retried (a bad certificate does not
    // heal, and the user should hear about it at once); after one was, the same words are taken for
    // a broker that is down, retried like any refused connection.
    if (tls && /TLS|certificate/i.test(message) || tls && !seen.trusted && /proxy request failed|cannot connect to the specified address/i.test(message)) {
      throw new SslAuthenticationException(target.host, 'TLS connection failed',
        `TLS to ${where} failed: ${message}. Likely causes: the broker certificate is not trusted by workerd ` +
        '(a private CA: under wrangler dev set NODE_EXTRA_CA_CERTS to its PEM file; deployed Workers trust public CAs only), ' +
        'or the host is unreachable from here',
        { cause: e })
    }
    throw new NetworkException(`cannot connect to ${where}: ${message}`, { cause: e })
  } finally {
    clearTimeout(timer)
  }

  const decoder = new FrameDecoder(o.maxFrameBytes)
  const reader = socket.readable.getReader()
  const writer = socket.writable.getWriter()
  let closed = false
  let first = true

  const shutdown = () => {
    try { reader.cancel().catch(() => {}) } catch { /* released */ }
    try { writer.abort().catch(() => {}) } catch { /* released */ }
    try { void Promise.resolve(socket.close()).catch(() => {}) } catch { /* already closed */ }
  }
  const finish = (error: Error) => {
    if (closed) return
    closed = true
    shutdown()
    handlers.onClose(error)
  }

  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return finish(new NetworkException(`connection to ${where} closed by peer`))
        if (closed) return
        const bytes = value instanceof Uint8Array ? value : new Uint8Array(value as ArrayBufferLike)
        if (first) {
          first = false
          if (!tls && looksLikeTlsRecord(bytes)) return finish(plaintextToTlsError(target.host, target.port))
          // Bytes read through TLS: workerd verified this broker's certificate.
          if (tls) seen.trusted = true
        }
        let frames: Uint8Array[]
        try {
          frames = decoder.push(bytes)
        } catch (e) {
          return finish(e instanceof ProtocolError ? e : new ProtocolError(String(e)))
        }
        for (const f of frames) {
          if (closed) return
          handlers.onFrame(f)
        }
      }
    } catch (e) {
      finish(new NetworkException(`${where}: ${(e as Error)?.message ?? e}`, { cause: e }))
    }
  })()

  return {
    write: async (frame) => {
      if (closed) throw new NetworkException(`connection to ${where} is closed`)
      try {
        await writer.write(frame)
      } catch (e) {
        const err = new NetworkException(`write to ${where} failed: ${(e as Error)?.message ?? e}`, { cause: e })
        finish(err)
        throw err
      }
    },
    close: () => {
      if (closed) return
      closed = true
      shutdown()
    },
  }
}
