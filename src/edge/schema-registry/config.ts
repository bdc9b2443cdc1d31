import { ConfigException } from '../errors.js'

/** A function that gives the subject for a topic, the side (key or value) and the schema's record name. */
export type SubjectNameStrategy = (topic: string, isKey: boolean, recordName: string | undefined) => string
export type BearerTokenProvider = () => string | Promise<string>

/**
 * The Java serializer's settings (AbstractKafkaSchemaSerDeConfig), by the same names and with the same
 * defaults, plus `fetch` for runtimes or tests that bring their own.
 */
export interface SchemaRegistrySettings {
  /** One URL, several separated by commas, or an array: requests fail over between them. */
  'schema.registry.url'?: string | readonly string[]
  /** URL (Java's default: user:password in the URL), USER_INFO (basic.auth.user.info). SASL_INHERIT is not supported. */
  'basic.auth.credentials.source'?: 'URL' | 'USER_INFO'
  /** user:password (Confluent Cloud: API key:secret). */
  'basic.auth.user.info'?: string
  /** STATIC_TOKEN (bearer.auth.token is a string) or CUSTOM (bearer.auth.token is a function). */
  'bearer.auth.credentials.source'?: 'STATIC_TOKEN' | 'CUSTOM'
  /** A token, or a function asked before each request (it should cache and refresh the token itself). */
  'bearer.auth.token'?: string | BearerTokenProvider
  /** Confluent Cloud with OAuth: sent as the target-sr-cluster and Confluent-Identity-Pool-Id headers. */
  'bearer.auth.logical.cluster'?: string
  'bearer.auth.identity.pool.id'?: string
  'auto.register.schemas'?: boolean
  'use.latest.version'?: boolean
  /** A schema id fixed in advance (with the schema bundled, no registry call at all); -1: none. */
  'use.schema.id'?: number
  'normalize.schemas'?: boolean
  /** How long a latest version stays cached; -1: for good. */
  'latest.cache.ttl.sec'?: number
  /** Capacity of each cache (schema to id, id to schema, latest versions). */
  'max.schemas.per.subject'?: number
  'key.subject.name.strategy'?: StrategyName | SubjectNameStrategy
  'value.subject.name.strategy'?: StrategyName | SubjectNameStrategy
  /** Retries of a request after a network error or a 5xx, with exponential backoff between retries.wait.ms and retries.max.wait.ms. */
  'max.retries'?: number
  'retries.wait.ms'?: number
  'retries.max.wait.ms'?: number
  /** How long one request may take before it counts as a network error. */
  'http.read.timeout.ms'?: number
  /**
   * A page's way to the registry without credentials of its own: the relay's URL (the one its
   * websocket() transport uses, ws(s):// or http(s)://). Lookups by id and of versions then go to the
   * relay's read-only registry routes with the page's relay token; registering is refused.
   */
  'schema.registry.relay.url'?: string
  /** The relay token (or a function giving a fresh one, as websocket({ token }) takes) the lookups carry. */
  'schema.registry.relay.token'?: string | BearerTokenProvider
  fetch?: typeof fetch
}

type StrategyName = 'TopicNameStrategy' | 'RecordNameStrategy' | 'TopicRecordNameStrategy' | `io.confluent.kafka.serializers.subject.${string}`

export interface RegistryConfig {
  urls: string[]
  /** The Authorization header (or a function giving it), null without credentials. */
  authorization: (() => Promise<string>) | null
  headers: Record<string, string>
  autoRegister: boolean
  useLatestVersion: boolean
  useSchemaId: number
  normalize: boolean
  latestTtlMs: number
  cacheCapacity: number
  keyStrategy: SubjectNameStrategy
  valueStrategy: SubjectNameStrategy
  maxRetries: number
  retryWaitMs: number
  retryMaxWaitMs: number
  requestTimeoutMs: number
  /** Lookups go through the relay (schema.registry.relay.url): nothing may be registered or looked up by content. */
  relay: boolean
  fetch: typeof fetch
}

const STRATEGIES: Record<string, SubjectNameStrategy> = {
  TopicNameStrategy: (topic, isKey) => `${topic}-${isKey ? 'key' : 'value'}`,
  RecordNameStrategy: (_topic, _isKey, record) => record ?? missingRecordName(),
  TopicRecordNameStrategy: (topic, _isKey, record) => `${topic}-${record ?? missingRecordName()}`,
}
function missingRecordName(): never {
  throw new ConfigException('RecordNameStrategy and TopicRecordNameStrategy need a named schema (an Avro record, a Protobuf message, a JSON Schema with a title)')
}

function strategy(v: unknown, key: string): SubjectNameStrategy {
  if (v === undefined) return STRATEGIES.TopicNameStrategy!
  if (typeof v === 'function') return v as SubjectNameStrategy
  const s = typeof v === 'string' ? STRATEGIES[v.slice(v.lastIndexOf('.') + 1)] : undefined
  if (!s) throw new ConfigException(`${key} must be TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy or a function (topic, isKey, recordName) => subject; got ${String(v)}`)
  return s
}

const KNOWN = new Set(['schema.registry.url', 'basic.auth.credentials.source', 'basic.auth.user.info', 'bearer.auth.credentials.source', 'bearer.auth.token',
  'bearer.auth.logical.cluster', 'bearer.auth.identity.pool.id', 'auto.register.schemas', 'use.latest.version', 'use.schema.id', 'normalize.schemas',
  'latest.cache.ttl.sec', 'max.schemas.per.subject', 'key.subject.name.strategy', 'value.subject.name.strategy', 'max.retries', 'retries.wait.ms',
  'retries.max.wait.ms', 'http.read.timeout.ms', 'schema.registry.relay.url', 'schema.registry.relay.token', 'fetch'])

/** True for the keys this module reads, so a caller can split them from the producer's settings. */
export const isRegistrySetting = (key: string): boolean => KNOWN.has(key)

const base64 = (s: string): string => btoa(String.fromCharCode(...new TextEncoder().encode(s)))

export function parseRegistryConfig(s: SchemaRegistrySettings): RegistryConfig {
  for (const k of Object.keys(s)) if (!KNOWN.has(k)) throw new ConfigException(`unknown schema registry setting ${JSON.stringify(k)}`)
  const bool = (k: keyof SchemaRegistrySettings, d: boolean): boolean => {
    const v = s[k]
    if (v === undefined) return d
    if (typeof v === 'boolean') return v
    if (v === 'true' || v === 'false') return v === 'true'
    throw new ConfigException(`${k} must be true or false, got ${String(v)}`)
  }
  const int = (k: keyof SchemaRegistrySettings, d: number, min: number): number => {
    const v = s[k] === undefined ? d : Number(s[k])
    if (!Number.isInteger(v) || v < min) throw new ConfigException(`${k} must be an integer >= ${min}, got ${String(s[k])}`)
    return v
  }
  const relay = s['schema.registry.relay.url']
  const { urls, authorization, headers } = relay === undefined ? direct(s) : relayConnection(s, relay, bool)
  const f = s.fetch ?? globalThis.fetch
  if (typeof f !== 'function') throw new ConfigException('no fetch in this runtime: pass one as the fetch setting')
  const ttl = int('latest.cache.ttl.sec', -1, -1)
  return {
    urls, authorization, headers,
    // The relay's registry routes are read-only, so there registering is never the default.
    autoRegister: relay === undefined && bool('auto.register.schemas', true),
    useLatestVersion: bool('use.latest.version', false),
    useSchemaId: int('use.schema.id', -1, -1),
    normalize: bool('normalize.schemas', false),
    latestTtlMs: ttl < 0 ? Infinity : ttl * 1000,
    cacheCapacity: int('max.schemas.per.subject', 1000, 1),
    keyStrategy: strategy(s['key.subject.name.strategy'], 'key.subject.name.strategy'),
    valueStrategy: strategy(s['value.subject.name.strategy'], 'value.subject.name.strategy'),
    maxRetries: int('max.retries', 3, 0),
    retryWaitMs: int('retries.wait.ms', 1000, 0),
    retryMaxWaitMs: int('retries.max.wait.ms', 20000, 0),
    requestTimeoutMs: int('http.read.timeout.ms', 60000, 1),
    relay: relay !== undefined,
    fetch: f.bind(globalThis),
  }
}

type Connection = Pick<RegistryConfig, 'urls' | 'authorization' | 'headers'>

function direct(s: SchemaRegistrySettings): Connection {
  const raw = s['schema.registry.url']
  const list = raw === undefined ? [] : typeof raw === 'string' ? raw.split(',') : [...raw]
  let userInfo: string | undefined
  const urls = list.map((u) => u.trim()).filter(Boolean).map((u) => {
    let url: URL
    try { url = new URL(u) } catch { throw new ConfigException(`schema.registry.url ${JSON.stringify(u)} is not a URL`) }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigException(`schema.registry.url ${u} must be http: or https:`)
    // fetch refuses URLs with credentials in them, so they move to the Authorization header.
    if (url.username) userInfo = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`
    url.username = url.password = ''
    return url.href.replace(/\/+$/, '')
  })

  const source = s['basic.auth.credentials.source'] ?? 'URL'
  if (source !== 'URL' && source !== 'USER_INFO') {
    throw new ConfigException(`basic.auth.credentials.source must be URL or USER_INFO, got ${String(source)} (SASL_INHERIT is not supported: set USER_INFO)`)
  }
  if (source === 'USER_INFO') {
    userInfo = s['basic.auth.user.info']
    if (typeof userInfo !== 'string' || !userInfo.includes(':')) throw new ConfigException('basic.auth.credentials.source=USER_INFO needs basic.auth.user.info as user:password')
  } else if (s['basic.auth.user.info'] !== undefined) {
    throw new ConfigException('basic.auth.user.info is set but basic.auth.credentials.source is URL (the default), which ignores it: set basic.auth.credentials.source=USER_INFO')
  }
  const token = s['bearer.auth.token']
  if (token !== undefined && typeof token !== 'string' && typeof token !== 'function') throw new ConfigException('bearer.auth.token must be a string or a function returning one')
  if (token !== undefined && userInfo !== undefined) throw new ConfigException('set either basic auth or bearer.auth.token, not both')
  const bearerSource = s['bearer.auth.credentials.source']
  if (bearerSource === 'CUSTOM' && typeof token !== 'function') throw new ConfigException('bearer.auth.credentials.source=CUSTOM needs bearer.auth.token as a function')
  if (bearerSource === 'STATIC_TOKEN' && typeof token !== 'string') throw new ConfigException('bearer.auth.credentials.source=STATIC_TOKEN needs bearer.auth.token as a string')

  let authorization: RegistryConfig['authorization'] = null
  if (userInfo !== undefined) { const h = `Basic ${base64(userInfo)}`; authorization = () => Promise.resolve(h) }
  else if (typeof token === 'string') { const h = `Bearer ${token}`; authorization = () => Promise.resolve(h) }
  else if (typeof token === 'function') authorization = async () => `Bearer ${await (token as BearerTokenProvider)()}`

  const headers: Record<string, string> = {}
  if (s['bearer.auth.logical.cluster']) headers['target-sr-cluster'] = s['bearer.auth.logical.cluster']
  if (s['bearer.auth.identity.pool.id']) headers['Confluent-Identity-Pool-Id'] = s['bearer.auth.identity.pool.id']

  return { urls, authorization, headers }
}

/**
 * The relay's registry routes (docs/schema-registry.md, "Pages"): the relay holds the registry's
 * credentials, so a page that names a registry or credentials besides the relay is misconfigured.
 */
function relayConnection(s: SchemaRegistrySettings, relay: string, bool: (k: keyof SchemaRegistrySettings, d: boolean) => boolean): Connection {
  const direct = Object.keys(s).find((k) => /^(schema\.registry\.url|basic\.|bearer\.)/.test(k))
  if (direct) throw new ConfigException(`${direct} is set beside schema.registry.relay.url: a page holds no registry address or credentials`)
  if (bool('auto.register.schemas', false)) throw new ConfigException('auto.register.schemas must be false with schema.registry.relay.url (read-only)')
  let url: URL | undefined
  try { url = new URL(relay) } catch { /* reported below */ }
  const token = s['schema.registry.relay.token']
  if (!url || !/^(http|ws)s?:$/.test(url.protocol) || !token) throw new ConfigException('schema.registry.relay.url needs a ws(s):// or http(s):// URL and schema.registry.relay.token')
  return {
    urls: [`${url.protocol.replace('ws', 'http')}//${url.host}${url.pathname.replace(/\/+$/, '')}/registry`],
    authorization: async () => `Bearer ${typeof token === 'string' ? token : await token()}`,
    headers: {},
  }
}
