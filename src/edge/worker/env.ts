/**
 * The Worker's bindings (wrangler.toml). Typed locally with the few members used, so the Worker
 * type-checks with the repository's DOM + Node lib setup and needs no global workers-types.
 */
export interface DurableObjectStub {
  fetch(input: string | Request, init?: RequestInit): Promise<Response>
}
export interface DurableObjectNamespace {
  idFromName(name: string): unknown
  get(id: unknown, options?: { locationHint?: string }): DurableObjectStub
}

/** The members of a SqlStorage cursor the object uses. */
export interface SqlCursor<T> extends Iterable<T> { toArray(): T[]; one(): T; readonly rowsWritten: number }
export interface SqlStorage {
  exec<T = Record<string, SqlValue>>(query: string, ...bindings: SqlValue[]): SqlCursor<T>
}
export type SqlValue = string | number | null | ArrayBuffer

export interface DurableObjectStorage {
  readonly sql: SqlStorage
  transactionSync<T>(fn: () => T): T
  getAlarm(): Promise<number | null>
  setAlarm(at: number | Date): Promise<void>
  /** Resolves once every write so far is durable (workerd 2024+); absent on older runtimes. */
  sync?(): Promise<void>
}

export interface DurableObjectState {
  readonly id: unknown
  readonly storage: DurableObjectStorage
  blockConcurrencyWhile<T>(fn: () => Promise<T>): Promise<T>
}

export interface Env {
  /** The Durable Object class (KafkaProducerObject): one per shard, each holding one long-lived producer. */
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
  /** Optional: durable (default: 202 once stored, produced from storage) or sync (202 once Kafka acknowledged). */
  ACCEPT_MODE?: string
  /** Optional: how many producer objects events are spread over by key (default 1). */
  SHARDS?: string
  /** Optional: locationHint for the objects (wnam, enam, weur, eeur, apac, oc, afr, me, sam). */
  LOCATION_HINT?: string
  /** Optional: most events an object holds unproduced before it answers 429 (default 100000). */
  MAX_BACKLOG?: string
  /** Optional: PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL (the producer's security.protocol). */
  KAFKA_SECURITY_PROTOCOL?: string
  /** With SASL_*: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (the producer's sasl.mechanism). */
  KAFKA_SASL_MECHANISM?: string
  /** With SASL_*: the SASL user. A secret (`wrangler secret put`), though not much of one. */
  KAFKA_SASL_USERNAME?: string
  /** With SASL_*: the SASL password. Always a secret: `wrangler secret put KAFKA_SASL_PASSWORD`. */
  KAFKA_SASL_PASSWORD?: string
  /**
   * Optional: reach the brokers through the kafka-edge relay instead (wss://relay.example/kafka); the
   * relay holds the broker credentials. KAFKA_BOOTSTRAP may then be any placeholder.
   */
  KAFKA_RELAY_URL?: string
  /** With KAFKA_RELAY_URL: the relay token naming the topic. A secret: `wrangler secret put KAFKA_RELAY_TOKEN`. */
  KAFKA_RELAY_TOKEN?: string
  /** Optional: the producer's max.request.size (default 1048576); OTLP requests are split into records that fit it. */
  KAFKA_MAX_REQUEST_SIZE?: string
  /** Optional: the producer's linger.ms (default 20 in durable mode, 5 in sync mode; 0 allowed). */
  KAFKA_LINGER_MS?: string
  /** Optional: how long an accepted event id is remembered, so a resend adds nothing (seconds, default 3600; kept for one to two windows). */
  ACCEPTED_IDS_WINDOW_SECONDS?: string
  /** Optional: most bytes of records an object holds unproduced before it answers 429 (default 1 GiB). */
  MAX_BACKLOG_BYTES?: string
  /** OTLP (docs/otlp.md): topics (default otlp_spans, otlp_logs, otlp_metrics). */
  OTLP_TRACES_TOPIC?: string
  OTLP_LOGS_TOPIC?: string
  OTLP_METRICS_TOPIC?: string
  /** OTLP: otlp_proto (default) or otlp_json record values. */
  OTLP_ENCODING?: string
  /** OTLP keying, as the Collector's kafkaexporter options of the same names: true/false. */
  OTLP_PARTITION_TRACES_BY_ID?: string
  OTLP_PARTITION_LOGS_BY_TRACE_ID?: string
  OTLP_PARTITION_LOGS_BY_RESOURCE_ATTRIBUTES?: string
  OTLP_PARTITION_METRICS_BY_RESOURCE_ATTRIBUTES?: string
  /** OTLP: comma-separated request headers copied into record headers (include_metadata_keys). */
  OTLP_INCLUDE_METADATA_KEYS?: string
  /** OTLP: the secret senders present (a secret: `wrangler secret put OTLP_AUTH_TOKEN`); unset, the routes are open. */
  OTLP_AUTH_TOKEN?: string
  /** OTLP: the header carrying it: authorization (default; "Bearer <token>") or another name. */
  OTLP_AUTH_HEADER?: string
  /** OTLP: the largest body, as sent and after gunzip (default 16 MiB). */
  OTLP_MAX_BODY_BYTES?: string
}
