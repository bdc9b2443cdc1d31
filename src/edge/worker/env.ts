/**
 * The Worker's bindings (wrangler.toml). Typed locally with the few members used, so the Worker
 * type-checks with the repository's DOM + Node lib setup and needs no global workers-types.
 */
export interface DurableObjectStub {
  fetch(input: string | Request, init?: RequestInit): Promise<Response>
}
export interface DurableObjectNamespace {
  idFromName(name: string): unknown
  get(id: unknown): DurableObjectStub
}
export interface DurableObjectState {
  readonly id: unknown
}

export interface Env {
  /** The Durable Object class ProducerObject: one per shard name, holding one long-lived producer. */
  PRODUCER: DurableObjectNamespace
  /** host:port[,host:port...] of the brokers, reached with cloudflare:sockets. */
  KAFKA_BOOTSTRAP: string
  /** Topic the events go to. */
  TELEMETRY_TOPIC: string
  /** Optional: none (default), gzip, snappy, lz4 or zstd. */
  KAFKA_COMPRESSION?: string
  /** Optional: largest accepted body in bytes (default 1 MiB). */
  MAX_BODY_BYTES?: string
  /** Optional: most events in one request (default 1000). */
  MAX_EVENTS?: string
  /** Optional: PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL (the producer's security.protocol). */
  KAFKA_SECURITY_PROTOCOL?: string
  /** With SASL_*: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (the producer's sasl.mechanism). */
  KAFKA_SASL_MECHANISM?: string
  /** With SASL_*: the SASL user. A secret (`wrangler secret put`), though not much of one. */
  KAFKA_SASL_USERNAME?: string
  /** With SASL_*: the SASL password. Always a secret: `wrangler secret put KAFKA_SASL_PASSWORD`. */
  KAFKA_SASL_PASSWORD?: string
}
