import { systemClock, type Clock } from '../clock.js'
import { bool, int, oneOf, str } from '../config-def.js'
import { ConfigException } from '../errors.js'
import type { CompressionType } from '../wasm/core.js'
import { LOG_CONTEXTS, Log, consoleLogger, type LogContext, type Logger } from '../log.js'
import type { OAuthBearerToken } from '../auth/sasl.js'
import type { AwsCredentials } from '../auth/aws-msk-iam.js'
import { extensions } from '../extensions.js'
import type { SecurityConfig, SecurityProtocol, Transport } from '../transport/transport.js'
import type { CheckpointStore } from './checkpoint.js'

/**
 * Producer settings with the Java client's names and 4.x defaults, and the same ConfigException
 * cases. camelCase aliases (lingerMs, batchSize, ...) are accepted for every dotted name.
 */
export interface ProducerConfig {
  bootstrapServers: Array<{ host: string; port: number }>
  clientId: string
  acks: -1 | 0 | 1
  idempotence: boolean
  lingerMs: number
  batchSize: number
  maxInFlight: number
  retries: number
  deliveryTimeoutMs: number
  requestTimeoutMs: number
  retryBackoffMs: number
  retryBackoffMaxMs: number
  maxRequestSize: number
  bufferMemory: number
  maxBlockMs: number
  compressionType: CompressionType
  compressionLevel: number | undefined
  transactionalId: string | null
  transactionTimeoutMs: number
  metadataMaxAgeMs: number
  partitionerIgnoreKeys: boolean
  partitionerAdaptive: boolean
  transport: Transport
  checkpoint: CheckpointStore | null
  security: SecurityConfig
  log: Log
  observer: ProducerObserver
  clock: Clock
  random: () => number
  wasm: unknown
}

/**
 * What a test, a tracer or a debugging session may watch without reaching into the producer. Hooks
 * run synchronously on the producer's task, before the request is written: keep them short, and do
 * not throw (an exception there is the caller's bug and fails the send path it interrupted).
 */
export interface ProducerObserver {
  /** A Produce request is about to be written to `node`. */
  onProduceRequest?(request: ProduceRequestEvent): void
  /** A transaction or group coordinator request (FindCoordinator, InitProducerId, AddPartitionsToTxn, EndTxn, ...). */
  onCoordinatorRequest?(request: CoordinatorRequestEvent): void
  /** The producer id or epoch changed: InitProducerId, a local epoch bump, or an EndTxn v5 bump. */
  onProducerId?(producerIdAndEpoch: { producerId: bigint; epoch: number }): void
}

export interface ProduceRequestEvent {
  node: number
  /** The highest Produce version the request may use (11 for a transaction v1 producer, else 12). */
  maxVersion: number
  batches: ReadonlyArray<{
    topic: string
    partition: number
    producerId: bigint
    producerEpoch: number
    baseSequence: number
    recordCount: number
    /** The batch's size on the wire (after compression). */
    sizeInBytes: number
    /** The RecordBatch bytes as sent: a view of the producer's buffer, valid during the call (copy it to keep it). */
    bytes: Uint8Array
    /** 1 on the first send, 2 on the first retry, ... */
    attempt: number
    /** Transactional producer: the partition was already part of the transaction when the batch left. */
    inTransaction: boolean
  }>
}

export interface CoordinatorRequestEvent {
  api: string
  version: number | undefined
  node: number
  body: Readonly<Record<string, unknown>>
}

export type { SecurityProtocol } from '../transport/transport.js'

type Numeric = number | `${number}`

/**
 * The producer's settings: the Java client's names (and 4.x defaults), each also accepted in
 * camelCase (`lingerMs` for `linger.ms`). Unknown keys are a ConfigException at run time; settings
 * read from a loose source (JSON, env) can be typed as `AnyProducerSettings` and are checked there.
 */
export interface JavaProducerSettings {
  /** Required. Brokers to bootstrap from: "host:port,host:port" or an array of them. */
  'bootstrap.servers'?: string | string[]
  /** Required. How frames reach brokers: `tcp()` (Node, Deno, Bun), `cloudflareSockets()` (Workers) or `websocket({ url, token })` (the relay). */
  transport?: Transport
  /** Default 'kafka-edge'. Sent with every request; shows in broker logs and quotas. */
  'client.id'?: string
  /** Default 'all'. Acknowledgements the leader waits for; idempotence needs 'all'. */
  acks?: 'all' | -1 | 0 | 1 | '-1' | '0' | '1'
  /** Default true. Exactly once and in order per partition through retries (needs acks=all, retries > 0, in-flight <= 5). */
  'enable.idempotence'?: boolean | 'true' | 'false'
  /** Default 5. How long a batch waits for more records before it is sent. */
  'linger.ms'?: Numeric
  /** Default 16384. Target batch size in bytes (per partition). */
  'batch.size'?: Numeric
  /** Default 5. Requests in flight per broker connection (at most 5 with idempotence). */
  'max.in.flight.requests.per.connection'?: Numeric
  /** Default 2147483647. Retries of a failed batch, bounded by delivery.timeout.ms. */
  retries?: Numeric
  /** Default 120000. Upper bound from send() to success or failure, retries included. */
  'delivery.timeout.ms'?: Numeric
  /** Default 30000. How long to wait for one response before the connection is given up. */
  'request.timeout.ms'?: Numeric
  /** Default 100. First backoff between retries. */
  'retry.backoff.ms'?: Numeric
  /** Default 1000. Backoff cap (exponential with jitter). */
  'retry.backoff.max.ms'?: Numeric
  /** Default 1048576. Largest request (and so record) the producer sends. */
  'max.request.size'?: Numeric
  /** Default 33554432. Memory for records waiting to be sent. */
  'buffer.memory'?: Numeric
  /** Default 60000. How long send() may wait for metadata or buffer space before it fails. */
  'max.block.ms'?: Numeric
  /** Default 'none'. Batch compression; the WASM core in use must include the codec. */
  'compression.type'?: CompressionType
  /** Default -1 (zlib's default, 6). 1..9. */
  'compression.gzip.level'?: Numeric
  /** Default 9. 1..17. */
  'compression.lz4.level'?: Numeric
  /** Default 3. -131072..22. */
  'compression.zstd.level'?: Numeric
  /** Default none. Makes the producer transactional: initTransactions() first, then begin/commit. */
  'transactional.id'?: string | null
  /** Default 60000. The coordinator aborts a transaction open longer than this. */
  'transaction.timeout.ms'?: Numeric
  /** Default 300000. Metadata is refreshed at least this often. */
  'metadata.max.age.ms'?: Numeric
  /** Default false. Spread keyed records as if they had no key. */
  'partitioner.ignore.keys'?: boolean | 'true' | 'false'
  /** Default true. Keyless records avoid slow brokers' partitions (KIP-794). */
  'partitioner.adaptive.partitioning.enable'?: boolean | 'true' | 'false'
  /** Default 'PLAINTEXT'. SSL and SASL_SSL need a transport with TLS (see docs/security.md). */
  'security.protocol'?: SecurityProtocol
  /** Required with SASL_PLAINTEXT / SASL_SSL. */
  'sasl.mechanism'?: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512' | 'OAUTHBEARER' | 'AWS_MSK_IAM'
  /** PLAIN and SCRAM. */
  'sasl.username'?: string
  /** PLAIN and SCRAM. */
  'sasl.password'?: string
  /** PLAIN and SCRAM, instead of username/password: a Java JAAS line with username="..." password="...". */
  'sasl.jaas.config'?: string
  /** OAUTHBEARER: returns a token and how long it stays valid; called again after 80% of that. */
  'sasl.oauthbearer.token.provider'?: () => Promise<OAuthBearerToken> | OAuthBearerToken
  /** OAUTHBEARER SASL extensions, e.g. { logicalCluster: 'lkc-1' }, or "k=v,k=v". */
  'sasl.oauthbearer.extensions'?: Record<string, string> | string
  /** AWS_MSK_IAM: credentials for every (re-)authentication. */
  'sasl.aws.credentials.provider'?: () => Promise<AwsCredentials> | AwsCredentials
  /** AWS_MSK_IAM: the cluster's region. */
  'sasl.aws.region'?: string
  /** Trusted CA certificates as PEM text (not a path). Default: the runtime's trust store. */
  'ssl.ca.pem'?: string
  /** Client certificate chain (PEM) for mutual TLS; with ssl.key.pem. */
  'ssl.certificate.pem'?: string
  /** Client private key (PEM) for mutual TLS. */
  'ssl.key.pem'?: string
  /** Default 'https' (verify the broker's host name); '' turns the check off. */
  'ssl.endpoint.identification.algorithm'?: 'https' | ''
  /**
   * Default none. Where the producer keeps its identity and unacknowledged batches, so a later
   * producer resumes them and the broker drops resends it already wrote (docs/producer.md, "Resuming
   * a producer"). Idempotent producers only.
   */
  checkpoint?: CheckpointStore | null
  /** Contexts to log at debug level, comma-separated (librdkafka's setting): connection, metadata, retry, epoch, checkpoint, or all. */
  debug?: string
  /** Where logs go (default console when `debug` is set); also receives warnings. */
  logger?: Logger
  /** Hooks that see requests and producer id changes as they happen (tests, tracing); see ProducerObserver. */
  observer?: ProducerObserver
  /** Injected time (tests, simulation). */
  clock?: Clock
  /** Injected randomness (tests, simulation). */
  random?: () => number
  /** The WASM core: a WebAssembly.Module (workerd: `import core from 'kafka-edge/core.wasm'`), its bytes, a URL, or a loaded Core. */
  wasm?: unknown
}

type CamelCase<S extends string> = S extends `${infer Head}.${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : S

/** Every setting under its Java name or its camelCase alias (give one of the two). */
export type ProducerSettings = JavaProducerSettings & { [K in keyof JavaProducerSettings as CamelCase<K & string>]?: JavaProducerSettings[K] }

/** The escape hatch for settings from a loose source: any keys type-check, and run-time checks still apply. */
export type AnyProducerSettings = ProducerSettings & Record<string, unknown>

type Parse = (v: unknown, key: string) => unknown
/** [Java name, default, parser]: the parser checks a given value and throws a ConfigException naming the key. */
type Spec = readonly [key: string, value: unknown, parse: Parse]

const any = (v: unknown): unknown => v
function parseDebug(v: unknown, key: string): LogContext[] {
  const names = str(v, key).split(',').map((s) => s.trim()).filter(Boolean)
  if (names.includes('all')) return [...LOG_CONTEXTS]
  for (const n of names) {
    if (!(LOG_CONTEXTS as readonly string[]).includes(n)) throw new ConfigException(`${key} context ${JSON.stringify(n)} is not one of ${LOG_CONTEXTS.join(', ')}, all`)
  }
  return names as LogContext[]
}

const INT_MAX = 2147483647
export const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const
const LEVELS: Record<string, [number, number]> = { gzip: [1, 9], lz4: [1, 17], zstd: [-131072, 22] }
/**
 * The values of the ssl.* and sasl.* settings that need more than a string check: security.ts checks
 * them once a transport that carries TLS installed it; without one, plaintextOnly() refuses them all.
 */
const secured: Parse = (v, key) => (extensions.security ? extensions.security.value(v, key) : v)
/** Settings that take an object with these methods (or null), and the error naming them. */
const methods = (names: string[], what: string): Parse => (v, key) => {
  if (v === null || (typeof v === 'object' && names.every((m) => typeof (v as Record<string, unknown>)[m] === 'function'))) return v
  throw new ConfigException(`${key} must have ${what}`)
}

const SPECS: Spec[] = [
  ['bootstrap.servers', undefined, (v, k) => parseServers(v, k)],
  ['client.id', 'kafka-edge', str],
  ['acks', -1, (v, k) => parseAcks(v, k)],
  ['enable.idempotence', true, bool],
  ['linger.ms', 5, int(0)],
  ['batch.size', 16384, int(0)],
  ['max.in.flight.requests.per.connection', 5, int(1)],
  ['retries', INT_MAX, int(0, INT_MAX)],
  ['delivery.timeout.ms', 120000, int(0)],
  ['request.timeout.ms', 30000, int(0)],
  ['retry.backoff.ms', 100, int(0)],
  ['retry.backoff.max.ms', 1000, int(0)],
  ['max.request.size', 1048576, int(1)],
  ['buffer.memory', 33554432, int(0)],
  ['max.block.ms', 60000, int(0)],
  ['compression.type', 'none', (v, k) => {
    const s = str(v, k)
    if (!(CODECS as readonly string[]).includes(s)) throw new ConfigException(`${k} must be one of ${CODECS.join(', ')}, got ${JSON.stringify(v)}`)
    return s
  }],
  ['compression.gzip.level', -1, (v, k) => { const n = int(-1, 9)(v, k); if (n === 0) throw new ConfigException(`${k} must be -1 or 1..9`); return n }],
  ['compression.lz4.level', 9, int(...LEVELS.lz4!)],
  ['compression.zstd.level', 3, int(...LEVELS.zstd!)],
  ['transactional.id', null, (v, k) => (v === null ? null : str(v, k))],
  ['transaction.timeout.ms', 60000, int(1)],
  ['metadata.max.age.ms', 300000, int(0)],
  ['partitioner.ignore.keys', false, bool],
  ['partitioner.adaptive.partitioning.enable', true, bool],
  ['security.protocol', 'PLAINTEXT', oneOf(['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'])],
  ['sasl.mechanism', null, secured],
  ['sasl.username', null, str],
  ['sasl.password', null, str],
  ['sasl.jaas.config', null, str],
  ['sasl.oauthbearer.token.provider', null, secured],
  ['sasl.oauthbearer.extensions', null, secured],
  ['sasl.aws.credentials.provider', null, secured],
  ['sasl.aws.region', null, str],
  ['ssl.ca.pem', null, secured],
  ['ssl.certificate.pem', null, secured],
  ['ssl.key.pem', null, secured],
  ['ssl.endpoint.identification.algorithm', 'https', oneOf(['https', ''])],
  ['debug', '', (v, k) => parseDebug(v, k)],
  ['logger', null, methods(['debug', 'warn'], 'debug(message, fields) and warn(message, fields) methods')],
  ['transport', undefined, any],
  ['observer', {}, (v, k) => {
    if (v !== null && typeof v === 'object') return v
    throw new ConfigException(`${k} must be an object of hooks (onProduceRequest, onCoordinatorRequest, onProducerId)`)
  }],
  ['checkpoint', null, methods(['load', 'save'], 'load() and save(checkpoint) methods returning promises')],
  ['clock', systemClock, any],
  ['random', Math.random, any],
  ['wasm', undefined, any],
]

const camel = (k: string) => k.replace(/\.([a-z])/g, (_, c: string) => c.toUpperCase())
const BY_KEY = new Map<string, Spec>()
for (const s of SPECS) { BY_KEY.set(s[0], s); BY_KEY.set(camel(s[0]), s) }

function parseServers(v: unknown, key: string): Array<{ host: string; port: number }> {
  const list = Array.isArray(v) ? v : typeof v === 'string' ? v.split(',') : null
  if (!list || list.length === 0) throw new ConfigException(`${key} is required: a comma-separated list of host:port`)
  return list.map((entry) => {
    const s = String(entry).trim()
    const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(s)
    if (!m) throw new ConfigException(`${key} entry ${JSON.stringify(s)} is not host:port`)
    const port = Number(m[2])
    if (port < 1 || port > 65535) throw new ConfigException(`${key} entry ${JSON.stringify(s)} has an invalid port`)
    return { host: m[1]!, port }
  })
}

function parseAcks(v: unknown, key: string): -1 | 0 | 1 {
  if (v === 'all' || v === -1 || v === '-1') return -1
  if (v === 0 || v === '0') return 0
  if (v === 1 || v === '1') return 1
  throw new ConfigException(`${key} must be all, -1, 0 or 1, got ${JSON.stringify(v)}`)
}

export function parseConfig(settings: ProducerSettings | AnyProducerSettings): ProducerConfig {
  const given = new Map<string, unknown>()
  for (const [k, v] of Object.entries(settings)) {
    if (v === undefined) continue
    const spec = BY_KEY.get(k)
    if (!spec) throw new ConfigException(`unknown producer setting ${JSON.stringify(k)}; check its spelling against the Java producer's config names`)
    const [key, , parse] = spec
    if (given.has(key)) throw new ConfigException(`${key} is given twice (as ${key} and its camelCase alias)`)
    given.set(key, parse(v, key))
  }
  const get = <T>(k: string): T => (given.has(k) ? given.get(k) : BY_KEY.get(k)![1]) as T
  if (!given.has('transport')) throw new ConfigException('transport is required: pass tcp(), websocket({...}) or cloudflareSockets()')

  const acks = get<-1 | 0 | 1>('acks')
  const retries = get<number>('retries')
  const maxInFlight = get<number>('max.in.flight.requests.per.connection')
  const transactionalId = get<string | null>('transactional.id')
  let idempotence = get<boolean>('enable.idempotence')
  const explicitIdempotence = given.has('enable.idempotence')

  // Java: idempotence is on by default but silently yields to conflicting settings the user chose;
  // asked for explicitly, the conflict is an error.
  const conflicts: string[] = []
  if (acks !== -1) conflicts.push('acks must be all')
  if (retries === 0) conflicts.push('retries must be greater than 0')
  if (maxInFlight > 5) conflicts.push('max.in.flight.requests.per.connection must be at most 5')
  if (conflicts.length > 0) {
    if (explicitIdempotence && idempotence) {
      throw new ConfigException(`enable.idempotence=true requires: ${conflicts.join('; ')}. Fix those settings or set enable.idempotence=false`)
    }
    if (transactionalId !== null) {
      throw new ConfigException(`transactional.id requires idempotence, which conflicts with: ${conflicts.join('; ')}`)
    }
    idempotence = false
  }
  if (transactionalId !== null) {
    if (!idempotence) throw new ConfigException('transactional.id requires enable.idempotence=true; remove enable.idempotence=false or the transactional.id')
    if (transactionalId.length === 0) throw new ConfigException('transactional.id must not be empty')
  }

  const lingerMs = get<number>('linger.ms')
  const requestTimeoutMs = get<number>('request.timeout.ms')
  let deliveryTimeoutMs = get<number>('delivery.timeout.ms')
  if (deliveryTimeoutMs < lingerMs + requestTimeoutMs) {
    if (given.has('delivery.timeout.ms')) {
      throw new ConfigException(`delivery.timeout.ms (${deliveryTimeoutMs}) must be at least linger.ms + request.timeout.ms (${lingerMs + requestTimeoutMs})`)
    }
    deliveryTimeoutMs = lingerMs + requestTimeoutMs
  }

  const compressionType = get<CompressionType>('compression.type')
  const levelKey = `compression.${compressionType}.level`
  const compressionLevel = BY_KEY.has(levelKey) ? get<number>(levelKey) : undefined
  const transport = get<Transport>('transport')
  if (!transport || typeof (transport as Transport).open !== 'function') throw new ConfigException('transport must be a Transport, e.g. tcp() or websocket({ url })')

  const security = (extensions.security?.settings ?? plaintextOnly)(get, given, transport)
  const checkpoint = get<CheckpointStore | null>('checkpoint')
  if (checkpoint && !idempotence) {
    throw new ConfigException('checkpoint needs enable.idempotence=true: without producer ids and sequences the broker cannot recognise a resent batch')
  }
  if (checkpoint && transactionalId !== null) {
    throw new ConfigException('checkpoint is for idempotent producers; a transactional producer resumes by re-sending its records ' +
      'in a new transaction after initTransactions() (docs/producer.md)')
  }

  return {
    bootstrapServers: get('bootstrap.servers') ?? (() => { throw new ConfigException('bootstrap.servers is required') })(),
    clientId: get('client.id'),
    acks,
    idempotence,
    lingerMs,
    batchSize: get('batch.size'),
    maxInFlight,
    retries,
    deliveryTimeoutMs,
    requestTimeoutMs,
    retryBackoffMs: get('retry.backoff.ms'),
    retryBackoffMaxMs: Math.max(get<number>('retry.backoff.max.ms'), get<number>('retry.backoff.ms')),
    maxRequestSize: get('max.request.size'),
    bufferMemory: get('buffer.memory'),
    maxBlockMs: get('max.block.ms'),
    compressionType,
    compressionLevel,
    transactionalId,
    transactionTimeoutMs: get('transaction.timeout.ms'),
    metadataMaxAgeMs: get('metadata.max.age.ms'),
    partitionerIgnoreKeys: get('partitioner.ignore.keys'),
    partitionerAdaptive: get('partitioner.adaptive.partitioning.enable'),
    transport,
    checkpoint,
    security,
    log: makeLog(get<Logger | null>('logger'), get<LogContext[] | string>('debug')),
    observer: get('observer'),
    clock: get('clock'),
    random: get('random'),
    wasm: get('wasm'),
  }
}

/**
 * Security settings when no transport that carries TLS has been created (tcp() and cloudflareSockets()
 * install the real checks, security.ts): only PLAINTEXT, and any ssl.* or sasl.* setting is refused.
 */
function plaintextOnly(get: <T>(k: string) => T, given: Map<string, unknown>, transport: Transport): SecurityConfig {
  const protocol = get<SecurityProtocol>('security.protocol')
  const set = [...given.keys()].filter((k) => /^(ssl|sasl)\./.test(k))
  if (protocol !== 'PLAINTEXT' || set.length > 0) {
    throw new ConfigException(`${protocol === 'PLAINTEXT' ? set.join(', ') : `security.protocol ${protocol}`}: ` + (transport.tls
      ? 'TLS and SASL settings come with the tcp() and cloudflareSockets() transports; build the transport on one of them'
      : `the ${transport.name} transport carries no TLS or SASL to brokers: through the relay they are the relay's settings ` +
        '(SASL credentials stay in its config, never in the page), and the page uses a wss:// URL'))
  }
  return { protocol, tls: null, sasl: null }
}

function makeLog(logger: Logger | null, debug: LogContext[] | string): Log {
  const contexts = typeof debug === 'string' ? [] : debug
  return new Log(logger ?? (contexts.length > 0 ? consoleLogger : null), contexts)
}
