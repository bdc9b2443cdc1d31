import type { SaslMechanism } from '../auth/mechanism.js'

/**
 * The one seam between the producer and the network. A transport carries whole Kafka frames
 * (int32 size prefix included) both ways; byte-stream transports re-frame with FrameDecoder.
 * The producer never imports a transport: one is injected through the config.
 */
export interface BrokerAddress {
  readonly host: string
  readonly port: number
  /** -1 for a bootstrap server whose id is not yet known. */
  readonly nodeId: number
}

export interface LinkHandlers {
  /** One complete response frame, size prefix removed. */
  onFrame(frame: Uint8Array): void
  /** The link closed; `error` says why when it was not a local close(). */
  onClose(error?: Error): void
}

export interface Link {
  /** Writes one frame; resolves once the transport accepted it (backpressure waits here). */
  write(frame: Uint8Array): Promise<void>
  close(): void
}

/**
 * TLS to the broker, from the producer's ssl.* settings. PEM text, not file paths: the same settings
 * work where there is no file system (Workers, browsers).
 */
export interface TlsSettings {
  /** Trusted CA certificates (PEM). Unset: the runtime's default trust store. */
  readonly ca?: string
  /** Client certificate chain and key (PEM), for mutual TLS. */
  readonly cert?: string
  readonly key?: string
  /** ssl.endpoint.identification.algorithm=https: the certificate must name the host we dialled. */
  readonly verifyHostname: boolean
}

export type SecurityProtocol = 'PLAINTEXT' | 'SSL' | 'SASL_PLAINTEXT' | 'SASL_SSL'

/** What every broker connection does before its first request: TLS from the transport, then SASL. */
export interface SecurityConfig {
  protocol: SecurityProtocol
  tls: TlsSettings | null
  sasl: SaslMechanism | null
}

export interface OpenOptions {
  /** Present when security.protocol is SSL or SASL_SSL. */
  readonly tls?: TlsSettings
}

/**
 * What a transport can do about TLS, so a setting it cannot honour is a ConfigException at
 * createProducer() rather than a surprise on the wire:
 * - 'full': CA, client certificate and hostname-verification settings all apply (Node tcp());
 * - 'system': TLS with the runtime's own trust store only (cloudflare:sockets);
 * - absent: the transport carries no TLS to brokers itself (the relay's WebSocket: the relay does).
 */
export type TlsSupport = 'full' | 'system'

export interface Transport {
  readonly name: string
  readonly tls?: TlsSupport
  /**
   * A relay transport's producer-id ticket (websocket()); undefined for transports without one. A
   * producer with a checkpoint saves it there and gives it back to the transport it resumes on, so
   * a relay instance that never issued the producer id accepts it.
   */
  producerIdTicket?: string | null
  open(address: BrokerAddress, handlers: LinkHandlers, options?: OpenOptions): Promise<Link>
}
