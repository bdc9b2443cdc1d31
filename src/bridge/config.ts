import { X509Certificate, createPrivateKey } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { createSecureContext } from 'node:tls'
import { oauthBearer } from '../edge/auth/sasl.js'
import { ASYMMETRIC_ALGS, jwtExpiry } from './token.js'

export interface HostPort { host: string; port: number }

export type SaslMechanism = 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512' | 'OAUTHBEARER' | 'AWS_MSK_IAM'

/** Where the relay gets its OAUTHBEARER token; file and env are read again for every broker connection. */
export type OAuthTokenSource =
  | { kind: 'file'; path: string }
  | { kind: 'env'; name: string; env: NodeJS.ProcessEnv }
  | { kind: 'clientCredentials'; tokenEndpointUrl: string; clientId: string; clientSecret: string; scope: string | null }

export type SaslConfig =
  | { mechanism: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512'; username: string; password: string }
  | { mechanism: 'OAUTHBEARER'; token: OAuthTokenSource; extensions: Record<string, string> }
  /** Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN in `env`, read per connection. */
  | { mechanism: 'AWS_MSK_IAM'; region: string; env: NodeJS.ProcessEnv }

/** TLS to the brokers (the relay's own listener is `listenTls`). */
export interface UpstreamTlsConfig {
  /** PEM text, read from the *File paths at start-up. Unset ca: Node's default trust store. */
  ca?: string
  cert?: string
  key?: string
  /** Name sent as SNI (and, with verifyHostname, checked against the certificate) instead of the broker host. */
  servername?: string
  verifyHostname: boolean
}

export interface BridgeConfig {
  listen: HostPort
  /** Path of the WebSocket endpoint. */
  path: string
  /** Bootstrap servers the relay uses when a client names no broker. */
  brokers: HostPort[]
  /** Extra endpoints a client may name (besides bootstrap servers and learned broker endpoints). */
  allowBrokers: HostPort[]
  sasl: SaslConfig | null
  /** null: plaintext to the brokers (PLAINTEXT / SASL_PLAINTEXT listeners). */
  tls: UpstreamTlsConfig | null
  auth: {
    /** HS256 secrets (first signs nothing: the relay only verifies; several allow rotation). */
    secrets: string[]
    audience: string
    issuer?: string
    clockSkewSec: number
    /** Accept `?token=` besides the Sec-WebSocket-Protocol header. */
    allowQueryToken: boolean
    /** RS256/ES256/EdDSA tokens from an identity provider: its JWKS as a URL or a file. */
    jwksUrl?: string
    jwksFile?: string
    /** Asymmetric algorithms accepted with the JWKS. */
    algorithms: string[]
    jwksCacheMaxAgeMs: number
    /** Least time between two JWKS fetches triggered by an unknown kid. */
    jwksCooldownMs: number
    /**
     * HMAC keys of producer-id tickets (the first signs, all verify). Every instance behind one load
     * balancer needs the same keys; derived from the first HS256 secret when unset.
     */
    ticketSecrets: string[]
    /** How long a producer-id ticket stays valid (default 7 days: Kafka's transactional.id.expiration.ms). */
    ticketTtlSec: number
  }
  /** TLS on the relay's own listener (wss:// without a proxy in front); PEM text read at start-up. */
  listenTls: { cert: string; key: string } | null
  /** Allowed Origin values; `*` allows any. */
  origins: string[]
  /** Clients that send no Origin (Workers, servers) are not browsers; CSWSH needs a browser. */
  allowMissingOrigin: boolean
  limits: {
    maxFrameBytes: number
    maxResponseFrameBytes: number
    /** 0 = unlimited for every rate below. */
    framesPerSec: number
    bytesPerSec: number
    principalFramesPerSec: number
    principalBytesPerSec: number
    /** A client throttled for longer than this is closed with 4429 instead. */
    maxThrottleMs: number
    connectionsPerPrincipal: number
    connectionsPerIp: number
    maxConnections: number
    /** Requests awaiting a response per connection before reading from the client pauses. */
    maxInFlight: number
    idleTimeoutMs: number
    pingIntervalMs: number
    /** From TCP accept to a finished WebSocket upgrade (slowloris bound). */
    upgradeTimeoutMs: number
    /** TCP connect + SASL to the broker. */
    upstreamTimeoutMs: number
    /** Buffered bytes toward either side before the other side stops being read. */
    highWaterBytes: number
    drainTimeoutMs: number
    /** How often a miss on an unknown broker may trigger a metadata refresh via the bootstrap servers. */
    metadataRefreshMinIntervalMs: number
    /** Topic names, transactional ids, groups and coordinator keys one request may carry. */
    maxNamesPerRequest: number
    /**
     * Bytes of partly received messages the whole relay holds at once. A message past 256 KiB needs
     * a share of it; connections that cannot get one stop being read until one is free.
     */
    parseBudgetBytes: number
    /** InitProducerId calls per minute (burst = the same number) for one principal / one client address. */
    initProducerIdsPerMinutePerPrincipal: number
    initProducerIdsPerMinutePerIp: number
    /** Producer-id bindings kept in memory (oldest forgotten first; a client's ticket restores one). */
    maxBoundProducerIds: number
  }
  faults: {
    enabled: boolean
    /** Close the connection after the Nth Produce reached the broker, before its response is relayed. */
    dropProduceResponseEvery: number
    /** Delay every response by this long. */
    delayMs: number
    /** Close the connection when its Nth client frame arrives (not forwarded). */
    closeOnFrame: number
  }
  log: { level: 'debug' | 'info' | 'warn' | 'error' | 'silent' }
  /** Read-only schema registry lookups for pages (registry.ts); null: the routes answer 404. */
  registry: RelayRegistryConfig | null
}

/** The registry the relay looks schemas up in for pages, with its own credentials. */
export interface RelayRegistryConfig {
  urls: string[]
  /** user:password (Basic) or a bearer token, never both; never sent to a page. */
  userInfo: string | null
  bearerToken: string | null
  /**
   * Subject patterns (`*` as in token grants) any valid token may read besides its topics' subjects:
   * RecordNameStrategy subjects and the subjects of referenced schemas.
   */
  subjects: string[]
  /** How long a latest version (and an id's subject list) is served from the relay's cache. */
  cacheTtlMs: number
  cacheMaxEntries: number
  /** One registry request's limit; past it the page gets 504. */
  timeoutMs: number
}

export const DEFAULTS = {
  path: '/kafka',
  auth: { audience: 'kafka-edge', clockSkewSec: 30, allowQueryToken: true, algorithms: ['RS256', 'ES256', 'EdDSA'], jwksCacheMaxAgeMs: 600_000, jwksCooldownMs: 30_000, ticketTtlSec: 7 * 86_400 },
  origins: [] as string[],
  allowMissingOrigin: true,
  limits: {
    maxFrameBytes: 8 * 1024 * 1024,
    maxResponseFrameBytes: 64 * 1024 * 1024,
    framesPerSec: 5000,
    bytesPerSec: 64 * 1024 * 1024,
    principalFramesPerSec: 50_000,
    principalBytesPerSec: 512 * 1024 * 1024,
    maxThrottleMs: 30_000,
    connectionsPerPrincipal: 100,
    connectionsPerIp: 200,
    maxConnections: 20_000,
    maxInFlight: 32,
    idleTimeoutMs: 300_000,
    pingIntervalMs: 30_000,
    upgradeTimeoutMs: 10_000,
    upstreamTimeoutMs: 10_000,
    highWaterBytes: 4 * 1024 * 1024,
    drainTimeoutMs: 10_000,
    metadataRefreshMinIntervalMs: 1000,
    maxNamesPerRequest: 10_000,
    parseBudgetBytes: 32 * 1024 * 1024,
    initProducerIdsPerMinutePerPrincipal: 60,
    initProducerIdsPerMinutePerIp: 600,
    maxBoundProducerIds: 1_000_000,
  },
  faults: { enabled: false, dropProduceResponseEvery: 0, delayMs: 0, closeOnFrame: 0 },
  log: { level: 'info' as const },
}

export class BridgeConfigError extends Error {}

export function parseHostPort(s: string, what = 'address', allowPortZero = false): HostPort {
  const m = /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/.exec(s) ?? /^([^:\s[\]]+):(\d{1,5})$/.exec(s)
  const port = m ? Number(m[2]) : NaN
  if (!m || port < (allowPortZero ? 0 : 1) || port > 65535) throw new BridgeConfigError(`${what} must be host:port, got ${JSON.stringify(s)}`)
  return { host: m[1]!.toLowerCase(), port }
}

export const hostPortKey = (h: HostPort): string => (h.host.includes(':') ? `[${h.host}]:${h.port}` : `${h.host}:${h.port}`)

type Json = Record<string, unknown>
const obj = (v: unknown, what: string): Json => {
  if (v === undefined) return {}
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new BridgeConfigError(`${what} must be an object`)
  return v as Json
}
const list = (v: unknown, what: string): string[] => {
  if (v === undefined) return []
  if (typeof v === 'string') return v.split(',').map((s) => s.trim()).filter(Boolean)
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new BridgeConfigError(`${what} must be a list of strings`)
  return v as string[]
}
const num = (v: unknown, dflt: number, what: string): number => {
  if (v === undefined) return dflt
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new BridgeConfigError(`${what} must be a non-negative number`)
  return v
}

/** Secrets may come from the environment so the config file can be committed. */
function secret(o: Json, key: string, env: NodeJS.ProcessEnv, prefix = ''): string | undefined {
  const direct = o[key]
  const fromEnv = o[`${key}Env`]
  if (fromEnv !== undefined && direct !== undefined) throw new BridgeConfigError(`set ${prefix}${key} or ${prefix}${key}Env, not both`)
  if (fromEnv !== undefined) {
    if (typeof fromEnv !== 'string' || fromEnv === '') throw new BridgeConfigError(`${prefix}${key}Env must name an environment variable`)
    const v = env[fromEnv]
    if (v === undefined) throw new BridgeConfigError(`environment variable ${fromEnv} (${prefix}${key}Env) is not set`)
    return v
  }
  if (direct !== undefined && typeof direct !== 'string') throw new BridgeConfigError(`${prefix}${key} must be a string`)
  return direct as string | undefined
}

/**
 * Builds a config from a JSON object (the --config file, with CLI flags merged in). Every value is
 * checked here so that a typo fails at start-up, not on the first client.
 */
export function resolveConfig(input: Json, env: NodeJS.ProcessEnv = process.env): BridgeConfig {
  const listen = parseHostPort(String(input.listen ?? '127.0.0.1:8080'), 'listen', true)
  const brokers = list(input.brokers, 'brokers').map((b) => parseHostPort(b, 'brokers'))
  if (brokers.length === 0) throw new BridgeConfigError('brokers (bootstrap servers) must list at least one host:port')
  const allowBrokers = list(input.allowBrokers, 'allowBrokers').map((b) => parseHostPort(b, 'allowBrokers'))

  const tls = input.tls === undefined || input.tls === false ? null : parseTls(input.tls === true ? {} : obj(input.tls, 'tls'))
  const sasl = input.sasl === undefined ? null : parseSasl(obj(input.sasl, 'sasl'), tls, env)

  const a = obj(input.auth, 'auth')
  const secrets = list(a.secrets, 'auth.secrets')
  const one = secret(a, 'secret', env, 'auth.')
  if (one !== undefined) secrets.unshift(one)
  if (typeof a.secretsEnv === 'string') secrets.push(...list(env[a.secretsEnv] ?? '', 'auth.secretsEnv'))
  const jwksUrl = a.jwksUrl === undefined ? undefined : String(a.jwksUrl)
  const jwksFile = a.jwksFile === undefined ? undefined : String(a.jwksFile)
  if (jwksUrl !== undefined && jwksFile !== undefined) throw new BridgeConfigError('set auth.jwksUrl or auth.jwksFile, not both')
  if (jwksUrl !== undefined) {
    let u: URL
    try { u = new URL(jwksUrl) } catch { throw new BridgeConfigError(`auth.jwksUrl must be a URL, got ${JSON.stringify(jwksUrl)}`) }
    const loopback = u.hostname === 'localhost' || u.hostname === '127.0.0.1' || u.hostname === '[::1]'
    if (u.protocol !== 'https:' && !(u.protocol === 'http:' && loopback)) throw new BridgeConfigError('auth.jwksUrl must be https:// (http:// is accepted for localhost only)')
  }
  if (jwksFile !== undefined) {
    let parsed: unknown
    try { parsed = JSON.parse(readFileSync(jwksFile, 'utf8')) } catch (e) { throw new BridgeConfigError(`cannot read auth.jwksFile ${jwksFile}: ${(e as Error).message}`) }
    if (!parsed || typeof parsed !== 'object' || !Array.isArray((parsed as { keys?: unknown }).keys)) throw new BridgeConfigError(`auth.jwksFile ${jwksFile} is not a JWKS ({ "keys": [...] })`)
  }
  const algorithms = list(a.algorithms, 'auth.algorithms')
  for (const alg of algorithms) if (!ASYMMETRIC_ALGS.includes(alg as typeof ASYMMETRIC_ALGS[number])) throw new BridgeConfigError(`auth.algorithms: ${alg} is not one of ${ASYMMETRIC_ALGS.join(', ')} (HS256 is always accepted with auth.secret)`)
  if (secrets.length === 0 && jwksUrl === undefined && jwksFile === undefined) throw new BridgeConfigError('auth.secret (or auth.secretEnv), auth.jwksUrl or auth.jwksFile is required: the relay never runs without token checks')
  const ticketSecrets = list(a.ticketSecrets, 'auth.ticketSecrets')
  const oneTicket = secret(a, 'ticketSecret', env, 'auth.')
  if (oneTicket !== undefined) ticketSecrets.unshift(oneTicket)
  if (ticketSecrets.some((s) => s.length < 32)) throw new BridgeConfigError('auth.ticketSecret(s) must be at least 32 characters')
  if (secrets.some((s) => s.length < 32)) throw new BridgeConfigError('auth secrets must be at least 32 characters (HS256 keys shorter than the hash are guessable)')

  const l = obj(input.limits, 'limits')
  const limits = { ...DEFAULTS.limits }
  for (const k of Object.keys(limits) as Array<keyof typeof limits>) limits[k] = num(l[k], DEFAULTS.limits[k], `limits.${k}`)
  for (const k of Object.keys(l)) if (!(k in limits)) throw new BridgeConfigError(`unknown setting limits.${k}`)
  if (limits.maxFrameBytes < 64) throw new BridgeConfigError('limits.maxFrameBytes must be at least 64')

  const f = obj(input.faults, 'faults')
  const faults = {
    enabled: f.enabled === true,
    dropProduceResponseEvery: num(f.dropProduceResponseEvery, 0, 'faults.dropProduceResponseEvery'),
    delayMs: num(f.delayMs, 0, 'faults.delayMs'),
    closeOnFrame: num(f.closeOnFrame, 0, 'faults.closeOnFrame'),
  }
  const lg = obj(input.log, 'log')
  const level = String(lg.level ?? DEFAULTS.log.level)
  if (!['debug', 'info', 'warn', 'error', 'silent'].includes(level)) throw new BridgeConfigError(`log.level must be debug, info, warn, error or silent`)

  const listenTls = input.listenTls === undefined ? null : parseListenTls(obj(input.listenTls, 'listenTls'))
  const path = String(input.path ?? DEFAULTS.path)
  if (!path.startsWith('/')) throw new BridgeConfigError('path must start with /')
  return {
    listen, path, brokers, allowBrokers, sasl, tls,
    auth: {
      secrets, audience: String(a.audience ?? DEFAULTS.auth.audience),
      issuer: a.issuer === undefined ? undefined : String(a.issuer),
      clockSkewSec: num(a.clockSkewSec, DEFAULTS.auth.clockSkewSec, 'auth.clockSkewSec'),
      allowQueryToken: a.allowQueryToken === undefined ? DEFAULTS.auth.allowQueryToken : a.allowQueryToken === true,
      ...(jwksUrl !== undefined && { jwksUrl }), ...(jwksFile !== undefined && { jwksFile }),
      algorithms: algorithms.length > 0 ? algorithms : DEFAULTS.auth.algorithms,
      jwksCacheMaxAgeMs: num(a.jwksCacheMaxAgeMs, DEFAULTS.auth.jwksCacheMaxAgeMs, 'auth.jwksCacheMaxAgeMs'),
      jwksCooldownMs: num(a.jwksCooldownMs, DEFAULTS.auth.jwksCooldownMs, 'auth.jwksCooldownMs'),
      ticketSecrets,
      ticketTtlSec: num(a.ticketTtlSec, DEFAULTS.auth.ticketTtlSec, 'auth.ticketTtlSec'),
    },
    listenTls,
    origins: list(input.origins, 'origins'),
    allowMissingOrigin: input.allowMissingOrigin === undefined ? DEFAULTS.allowMissingOrigin : input.allowMissingOrigin === true,
    limits, faults,
    log: { level: level as BridgeConfig['log']['level'] },
    registry: input.registry === undefined ? null : parseRegistry(obj(input.registry, 'registry'), env),
  }
}

const REGISTRY_KEYS = new Set(['url', 'userInfo', 'userInfoEnv', 'bearerToken', 'bearerTokenEnv', 'subjects', 'cacheTtlMs', 'cacheMaxEntries', 'timeoutMs'])

function parseRegistry(r: Json, env: NodeJS.ProcessEnv): RelayRegistryConfig {
  for (const k of Object.keys(r)) if (!REGISTRY_KEYS.has(k)) throw new BridgeConfigError(`unknown setting registry.${k}`)
  const urls = list(r.url, 'registry.url').map((u) => {
    let url: URL
    try { url = new URL(u) } catch { throw new BridgeConfigError(`registry.url ${JSON.stringify(u)} is not a URL`) }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new BridgeConfigError(`registry.url ${u} must be http:// or https://`)
    if (url.username) throw new BridgeConfigError('registry.url carries credentials: put them in registry.userInfo (or registry.userInfoEnv)')
    return url.href.replace(/\/+$/, '')
  })
  if (urls.length === 0) throw new BridgeConfigError('registry.url must name the schema registry (its Confluent-compatible API)')
  const userInfo = secret(r, 'userInfo', env, 'registry.') ?? null
  const bearerToken = secret(r, 'bearerToken', env, 'registry.') ?? null
  if (userInfo !== null && bearerToken !== null) throw new BridgeConfigError('set registry.userInfo or registry.bearerToken, not both')
  if (userInfo !== null && !userInfo.includes(':')) throw new BridgeConfigError('registry.userInfo must be user:password')
  const cacheMaxEntries = num(r.cacheMaxEntries, 1000, 'registry.cacheMaxEntries')
  if (cacheMaxEntries < 1 || !Number.isInteger(cacheMaxEntries)) throw new BridgeConfigError('registry.cacheMaxEntries must be a whole number >= 1')
  const timeoutMs = num(r.timeoutMs, 5000, 'registry.timeoutMs')
  if (timeoutMs < 1) throw new BridgeConfigError('registry.timeoutMs must be at least 1')
  return {
    urls, userInfo, bearerToken, subjects: list(r.subjects, 'registry.subjects'),
    cacheTtlMs: num(r.cacheTtlMs, 30_000, 'registry.cacheTtlMs'), cacheMaxEntries, timeoutMs,
  }
}

/** The relay's own certificate: files (certFile/keyFile) or PEM text, checked to belong together. */
function parseListenTls(t: Json): { cert: string; key: string } {
  for (const k of Object.keys(t)) if (!['cert', 'certFile', 'key', 'keyFile'].includes(k)) throw new BridgeConfigError(`unknown setting listenTls.${k} (known: cert, certFile, key, keyFile)`)
  const cert = pemSetting(t, 'cert', 'listenTls')
  const key = pemSetting(t, 'key', 'listenTls')
  if (cert === undefined || key === undefined) throw new BridgeConfigError('listenTls needs a certificate and its key (--tls-cert and --tls-key, or listenTls.certFile and listenTls.keyFile)')
  let x509: X509Certificate
  try { x509 = new X509Certificate(cert) } catch (e) { throw new BridgeConfigError(`listenTls certificate is not readable: ${(e as Error).message}`) }
  let privateKey: ReturnType<typeof createPrivateKey>
  try { privateKey = createPrivateKey(key) } catch (e) { throw new BridgeConfigError(`listenTls key is not an unencrypted PEM private key: ${(e as Error).message}`) }
  if (!x509.checkPrivateKey(privateKey)) throw new BridgeConfigError('listenTls key is not the private key of the certificate')
  return { cert, key }
}

const TLS_KEYS = ['ca', 'caFile', 'cert', 'certFile', 'key', 'keyFile', 'servername', 'verifyHostname']

/**
 * One PEM setting given as text (`ca`) or as a file path (`caFile`). Files are read once here: a
 * missing file must stop the relay at start-up, not fail every client later.
 */
function pemSetting(t: Json, key: 'ca' | 'cert' | 'key', section = 'tls'): string | undefined {
  const fileKey = `${key}File`
  const text = t[key]
  const file = t[fileKey]
  if (text !== undefined && file !== undefined) throw new BridgeConfigError(`set ${section}.${key} (PEM text) or ${section}.${fileKey} (a path), not both`)
  if (file !== undefined) {
    if (typeof file !== 'string' || file === '') throw new BridgeConfigError(`${section}.${fileKey} must be a file path`)
    let pem: string
    try { pem = readFileSync(file, 'utf8') } catch (e) { throw new BridgeConfigError(`cannot read ${section}.${fileKey} ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`) }
    if (!pem.includes('-----BEGIN ')) throw new BridgeConfigError(`${section}.${fileKey} ${file} is not PEM (no -----BEGIN line)`)
    return pem
  }
  if (text === undefined) return undefined
  if (typeof text !== 'string') throw new BridgeConfigError(`${section}.${key} must be PEM text`)
  if (!text.includes('-----BEGIN ')) throw new BridgeConfigError(`${section}.${key} must be PEM text (-----BEGIN ...); to give a path, use ${section}.${fileKey}`)
  return text
}

function parseTls(t: Json): UpstreamTlsConfig {
  for (const k of Object.keys(t)) if (!TLS_KEYS.includes(k)) throw new BridgeConfigError(`unknown setting tls.${k} (known: ${TLS_KEYS.join(', ')})`)
  const ca = pemSetting(t, 'ca')
  const cert = pemSetting(t, 'cert')
  const key = pemSetting(t, 'key')
  if ((cert === undefined) !== (key === undefined)) {
    throw new BridgeConfigError('tls.cert(File) and tls.key(File) go together (mutual TLS): set both or neither')
  }
  if (ca !== undefined) {
    try { new X509Certificate(ca) } catch (e) { throw new BridgeConfigError(`tls.ca${t.caFile !== undefined ? 'File' : ''} does not hold a readable certificate: ${(e as Error).message}`) }
  }
  if (cert !== undefined && key !== undefined) {
    let x509: X509Certificate
    try { x509 = new X509Certificate(cert) } catch (e) { throw new BridgeConfigError(`tls.cert${t.certFile !== undefined ? 'File' : ''} does not hold a readable certificate: ${(e as Error).message}`) }
    let privateKey: ReturnType<typeof createPrivateKey>
    // An encrypted key would need a passphrase the relay has no setting for.
    try { privateKey = createPrivateKey(key) } catch (e) { throw new BridgeConfigError(`tls.key${t.keyFile !== undefined ? 'File' : ''} is not an unencrypted PEM private key: ${(e as Error).message}`) }
    if (!x509.checkPrivateKey(privateKey)) throw new BridgeConfigError('tls.key(File) is not the private key of tls.cert(File)')
  }
  try { createSecureContext({ ca, cert, key }) } catch (e) { throw new BridgeConfigError(`tls settings are not usable: ${(e as Error).message}`) }
  const servername = t.servername
  if (servername !== undefined && (typeof servername !== 'string' || !/^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/.test(servername) || isIP(servername) !== 0)) {
    throw new BridgeConfigError(`tls.servername must be a DNS name (SNI carries no IP addresses), got ${JSON.stringify(servername)}`)
  }
  const verifyHostname = t.verifyHostname ?? true
  if (typeof verifyHostname !== 'boolean') throw new BridgeConfigError('tls.verifyHostname must be true or false')
  return { ...(ca !== undefined && { ca }), ...(cert !== undefined && { cert, key }), ...(servername !== undefined && { servername: servername.toLowerCase() }), verifyHostname }
}

const MECHANISMS: SaslMechanism[] = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER', 'AWS_MSK_IAM']
const SASL_KEYS: Record<SaslMechanism, string[]> = {
  PLAIN: ['username', 'usernameEnv', 'password', 'passwordEnv'],
  'SCRAM-SHA-256': ['username', 'usernameEnv', 'password', 'passwordEnv'],
  'SCRAM-SHA-512': ['username', 'usernameEnv', 'password', 'passwordEnv'],
  OAUTHBEARER: ['tokenFile', 'tokenEnv', 'tokenEndpointUrl', 'clientId', 'clientIdEnv', 'clientSecret', 'clientSecretEnv', 'scope', 'extensions'],
  AWS_MSK_IAM: ['region'],
}
const AWS_REGION = /^[a-z]{2}(-[a-z]+)+-\d+$/

function parseSasl(s: Json, tls: UpstreamTlsConfig | null, env: NodeJS.ProcessEnv): SaslConfig {
  const given = s.mechanism === undefined ? 'SCRAM-SHA-512' : String(s.mechanism).toUpperCase()
  if (!MECHANISMS.includes(given as SaslMechanism)) throw new BridgeConfigError(`sasl.mechanism must be one of ${MECHANISMS.join(', ')}, got ${given}`)
  const mechanism = given as SaslMechanism
  const allowed = SASL_KEYS[mechanism]
  const misplaced: string[] = []
  for (const k of Object.keys(s)) {
    if (k === 'mechanism' || allowed.includes(k)) continue
    if (!Object.values(SASL_KEYS).some((keys) => keys.includes(k))) throw new BridgeConfigError(`unknown setting sasl.${k}`)
    misplaced.push(`sasl.${k}`)
  }
  if (misplaced.length > 0) {
    const dflt = s.mechanism === undefined ? ' (the default; set sasl.mechanism to the one you mean)' : ''
    throw new BridgeConfigError(`${misplaced.join(', ')} ${misplaced.length > 1 ? 'do' : 'does'} not apply to sasl.mechanism ${mechanism}${dflt}; remove ${misplaced.length > 1 ? 'them' : 'it'}`)
  }

  if (mechanism === 'PLAIN' || mechanism === 'SCRAM-SHA-256' || mechanism === 'SCRAM-SHA-512') {
    const username = secret(s, 'username', env, 'sasl.')
    const password = secret(s, 'password', env, 'sasl.')
    if (!username || password === undefined) throw new BridgeConfigError(`sasl.mechanism ${mechanism} needs sasl.username and sasl.password (or sasl.usernameEnv / sasl.passwordEnv)`)
    return { mechanism, username, password }
  }

  if (mechanism === 'AWS_MSK_IAM') {
    if (typeof s.region !== 'string' || !AWS_REGION.test(s.region)) {
      throw new BridgeConfigError(`sasl.mechanism AWS_MSK_IAM needs sasl.region, the cluster's AWS region such as "us-east-1"${s.region === undefined ? '' : `, got ${JSON.stringify(s.region)}`}`)
    }
    if (!tls) throw new BridgeConfigError('sasl.mechanism AWS_MSK_IAM needs a tls section: MSK\'s IAM listeners (port 9098) accept TLS only. Add "tls": {} (MSK certificates chain to the default trust store)')
    const missing = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'].filter((k) => !env[k])
    if (missing.length > 0) {
      throw new BridgeConfigError(`sasl.mechanism AWS_MSK_IAM signs with the credentials in AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and (for temporary credentials) AWS_SESSION_TOKEN; ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not set in the relay's environment`)
    }
    return { mechanism, region: s.region, env }
  }

  // OAUTHBEARER
  const sources = (['tokenFile', 'tokenEnv', 'tokenEndpointUrl'] as const).filter((k) => s[k] !== undefined)
  if (sources.length !== 1) {
    throw new BridgeConfigError(`sasl.mechanism OAUTHBEARER needs exactly one token source: sasl.tokenFile (a file the relay re-reads), sasl.tokenEnv (an environment variable) or sasl.tokenEndpointUrl (OAuth client credentials)${sources.length > 1 ? `; got ${sources.map((k) => `sasl.${k}`).join(' and ')}` : ''}`)
  }
  const clientKeys = ['clientId', 'clientIdEnv', 'clientSecret', 'clientSecretEnv', 'scope'].filter((k) => s[k] !== undefined)
  if (sources[0] !== 'tokenEndpointUrl' && clientKeys.length > 0) {
    throw new BridgeConfigError(`${clientKeys.map((k) => `sasl.${k}`).join(', ')} only ${clientKeys.length > 1 ? 'apply' : 'applies'} with sasl.tokenEndpointUrl; remove ${clientKeys.length > 1 ? 'them' : 'it'}, or fetch tokens from an endpoint instead of sasl.${sources[0]}`)
  }
  let token: OAuthTokenSource
  if (sources[0] === 'tokenFile') {
    if (typeof s.tokenFile !== 'string' || s.tokenFile === '') throw new BridgeConfigError('sasl.tokenFile must be a file path')
    let text: string
    try { text = readFileSync(s.tokenFile, 'utf8').trim() } catch (e) { throw new BridgeConfigError(`cannot read sasl.tokenFile ${s.tokenFile}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`) }
    checkStartupToken(text, `sasl.tokenFile ${s.tokenFile}`)
    token = { kind: 'file', path: s.tokenFile }
  } else if (sources[0] === 'tokenEnv') {
    if (typeof s.tokenEnv !== 'string' || s.tokenEnv === '') throw new BridgeConfigError('sasl.tokenEnv must name an environment variable')
    const v = env[s.tokenEnv]
    if (v === undefined) throw new BridgeConfigError(`environment variable ${s.tokenEnv} (sasl.tokenEnv) is not set`)
    checkStartupToken(v.trim(), `environment variable ${s.tokenEnv}`)
    token = { kind: 'env', name: s.tokenEnv, env }
  } else {
    const raw = s.tokenEndpointUrl
    let url: URL
    try { url = new URL(String(raw)) } catch { throw new BridgeConfigError(`sasl.tokenEndpointUrl must be a URL, got ${JSON.stringify(raw)}`) }
    const loopback = url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]'
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
      throw new BridgeConfigError('sasl.tokenEndpointUrl must be https:// (the client secret travels in the request; http:// is accepted for localhost only)')
    }
    const clientId = secret(s, 'clientId', env, 'sasl.')
    const clientSecret = secret(s, 'clientSecret', env, 'sasl.')
    if (!clientId || !clientSecret) throw new BridgeConfigError('sasl.tokenEndpointUrl needs sasl.clientId and sasl.clientSecret (or sasl.clientIdEnv / sasl.clientSecretEnv)')
    if (s.scope !== undefined && typeof s.scope !== 'string') throw new BridgeConfigError('sasl.scope must be a string (space-separated scopes)')
    token = { kind: 'clientCredentials', tokenEndpointUrl: url.href, clientId, clientSecret, scope: (s.scope as string | undefined) ?? null }
  }
  const extensions = obj(s.extensions, 'sasl.extensions')
  for (const [k, v] of Object.entries(extensions)) if (typeof v !== 'string') throw new BridgeConfigError(`sasl.extensions.${k} must be a string`)
  // The mechanism checks extension names and values (RFC 7628); building one here moves that to start-up.
  try { oauthBearer({ tokenProvider: () => ({ token: '', lifetimeMs: 0 }), extensions: extensions as Record<string, string> }) } catch (e) {
    throw new BridgeConfigError(`sasl.extensions: ${(e as Error).message}`)
  }
  return { mechanism, token, extensions: extensions as Record<string, string> }
}

/** A token the relay could never use fails start-up, where the operator is looking. */
function checkStartupToken(token: string, where: string): void {
  if (token === '') throw new BridgeConfigError(`${where} is empty: it must hold the bearer token`)
  const exp = jwtExpiry(token)
  if (exp !== null && exp <= Date.now()) throw new BridgeConfigError(`the token in ${where} expired at ${new Date(exp).toISOString()}: whatever writes it has stopped refreshing it`)
}

export function loadConfigFile(file: string): Json {
  let text: string
  try { text = readFileSync(file, 'utf8') } catch (e) { throw new BridgeConfigError(`cannot read config ${file}: ${(e as Error).message}`) }
  try { return obj(JSON.parse(text), 'config') } catch (e) {
    if (e instanceof BridgeConfigError) throw e
    throw new BridgeConfigError(`config ${file} is not valid JSON: ${(e as Error).message}`)
  }
}
