import { connect as netConnect, isIP, type Socket } from 'node:net'
import { NetworkException, ProtocolError, SslAuthenticationException } from '../errors.js'
import { FrameDecoder, looksLikeTlsRecord, plaintextToTlsError } from '../protocol/frame-decoder.js'
import { installBrokerSecurity } from '../security.js'
import type { BrokerAddress, Link, LinkHandlers, TlsSettings, Transport } from './transport.js'

export interface TcpOptions {
  connectTimeoutMs?: number
  maxFrameBytes?: number
  /** Rewrites a broker address before connecting (test proxies, NAT). TLS still verifies the original host. */
  resolve?: (address: BrokerAddress) => { host: string; port: number }
}

/**
 * TCP to the brokers, plain or TLS (the producer's security.protocol and ssl.* settings), for Node
 * and for Bun and Deno through their node:net / node:tls.
 */
export function tcp(options: TcpOptions = {}): Transport {
  installBrokerSecurity()
  return {
    name: 'tcp',
    tls: 'full',
    open: (address, handlers, open) => openTcp(address, handlers, options, open?.tls),
  }
}

/**
 * Dials host:port, with TLS when `tls` is given, and settles once the connection (and handshake) is
 * up. Certificate problems reject with an SslAuthenticationException naming the host and the reason.
 * The relay's upstream connections use it too, so both verify brokers the same way.
 */
export async function dial(address: { host: string; port: number }, target: { host: string; port: number }, tls: TlsSettings | undefined, timeoutMs: number): Promise<Socket> {
  // Loaded on the first TLS dial: importing node:tls costs about 13 ms of CPU, a third of what loading
  // the whole package costs a plaintext producer at start (docs/benchmarks.md, eighth session).
  const tlsConnect = tls ? (await import('node:tls')).connect : null
  return new Promise<Socket>((resolve, reject) => {
    const socket: Socket = tls && tlsConnect
      ? tlsConnect({
          host: target.host, port: target.port,
          // SNI carries a name, never an IP literal (RFC 6066); verification still checks IP SANs.
          servername: isIP(address.host) ? undefined : address.host,
          ca: tls.ca, cert: tls.cert, key: tls.key,
          rejectUnauthorized: true,
          // node:tls asserts the option is a function when present: leave it out to keep the default check.
          ...(tls.verifyHostname ? {} : { checkServerIdentity: () => undefined }),
        })
      : netConnect({ host: target.host, port: target.port })
    socket.setNoDelay(true)
    let settled = false
    const settle = (error?: Error) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.removeListener('error', onError)
      socket.removeListener('close', onClose)
      if (error) { socket.destroy(); reject(error) } else resolve(socket)
    }
    const where = `${address.host}:${address.port}`
    const timer = setTimeout(() => settle(new NetworkException(`connect to ${where} timed out after ${timeoutMs} ms${tls ? ' (TCP or TLS handshake)' : ''}`)), timeoutMs)
    const onError = (err: NodeJS.ErrnoException) => settle(classifySocketError(err, address, tls !== undefined, true))
    const onClose = () => settle(tls
      ? new SslAuthenticationException(address.host, 'peer closed during handshake', `${where} closed the connection during the TLS handshake: ` +
        'it is probably a plaintext listener (use its TLS port, or security.protocol PLAINTEXT / SASL_PLAINTEXT)')
      : new NetworkException(`connection to ${where} closed while connecting`))
    socket.once('error', onError)
    socket.once('close', onClose)
    socket.once(tls ? 'secureConnect' : 'connect', () => settle())
  })
}

const UNKNOWN_CA = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'CERT_SIGNATURE_FAILURE', 'CERT_UNTRUSTED',
])

/** Turns a socket error into the typed error the producer acts on: certificate problems are not retried. */
export function classifySocketError(err: NodeJS.ErrnoException, address: { host: string; port: number }, tls: boolean, connecting: boolean): Error {
  const where = `${address.host}:${address.port}`
  const code = err.code ?? ''
  const ssl = (reason: string, advice: string) =>
    new SslAuthenticationException(address.host, reason, `TLS to ${where} failed: ${reason} (${code || err.message}). ${advice}`, { cause: err })
  if (UNKNOWN_CA.has(code)) return ssl('unknown CA', 'The broker certificate is not signed by a CA this client trusts: set ssl.ca.pem to the CA that signed it')
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return ssl('hostname mismatch', `The certificate does not name ${address.host}: connect with a name the certificate lists, ` +
      "or (tests only) set ssl.endpoint.identification.algorithm to ''")
  }
  if (code === 'CERT_HAS_EXPIRED') return ssl('expired certificate', 'The broker certificate has expired: the broker operator must renew it')
  if (code === 'CERT_NOT_YET_VALID') return ssl('certificate not yet valid', 'The broker certificate is not valid yet: check the clocks of this host and the broker')
  // Under TLS 1.3 the server checks the client certificate after our side finished the handshake,
  // so this alert (Kafka sends bad_certificate, 42) arrives on the first read, not while connecting.
  if (code === 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED' || code === 'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE') {
    return ssl('client certificate refused', 'The listener requires mutual TLS with a certificate it trusts: set ssl.certificate.pem and ssl.key.pem')
  }
  if (code.startsWith('ERR_SSL_') && /alert/i.test(code)) return ssl('handshake refused by the broker', 'Check the client certificate, the TLS versions and ciphers the listener allows')
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG') {
    return ssl('peer does not speak TLS', 'The port is probably a plaintext listener: use its TLS port, or security.protocol PLAINTEXT / SASL_PLAINTEXT')
  }
  if (tls && connecting && (code === 'ECONNRESET' || /before secure TLS connection/.test(err.message))) {
    return ssl('peer closed during handshake', 'The port is probably a plaintext listener: use its TLS port, or security.protocol PLAINTEXT / SASL_PLAINTEXT')
  }
  if (code === 'ECONNREFUSED') return new NetworkException(`connection to ${where} refused: is the broker running and listening on that port?`, { cause: err })
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new NetworkException(`cannot resolve ${address.host}: ${err.message}`, { cause: err })
  return new NetworkException(`${where}: ${err.message}`, { cause: err })
}

async function openTcp(address: BrokerAddress, handlers: LinkHandlers, options: TcpOptions, tls: TlsSettings | undefined): Promise<Link> {
  const target = options.resolve ? options.resolve(address) : address
  const where = `${address.host}:${address.port}`
  const socket = await dial(address, target, tls, options.connectTimeoutMs ?? 10_000)
  const decoder = new FrameDecoder(options.maxFrameBytes)
  let closed = false
  let first = true
  const finish = (error?: Error) => {
    if (closed) return
    closed = true
    socket.destroy()
    handlers.onClose(error)
  }
  socket.on('data', (chunk: Buffer) => {
    const bytes = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    if (first) {
      first = false
      if (!tls && looksLikeTlsRecord(bytes)) return finish(plaintextToTlsError(address.host, address.port))
    }
    let frames: Uint8Array[]
    try {
      frames = decoder.push(bytes)
    } catch (e) {
      return finish(e instanceof ProtocolError ? e : new ProtocolError(String(e)))
    }
    for (const f of frames) handlers.onFrame(f)
  })
  socket.on('error', (err: NodeJS.ErrnoException) => finish(classifySocketError(err, address, tls !== undefined, false)))
  socket.on('close', () => finish(new NetworkException(`connection to ${where} closed by peer`)))
  return {
    write: (frame) => new Promise<void>((ok, fail) => {
      if (closed) return fail(new NetworkException(`connection to ${where} is closed`))
      socket.write(frame, (err) => (err ? fail(new NetworkException(err.message, { cause: err })) : ok()))
    }),
    close: () => { if (!closed) { closed = true; socket.destroy() } },
  }
}
