import { readFileSync } from 'node:fs'

export interface HostPort { host: string; port: number }

export type SaslMechanism = 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512'

export interface BridgeConfig {
  listen: HostPort
  /** Path of the WebSocket endpoint. */
  path: string
  /** Bootstrap servers the relay uses when a client names no broker. */
  brokers: HostPort[]
  /** Extra endpoints a client may name (besides bootstrap servers and learned broker endpoints). */
  allowBrokers: HostPort[]
  sasl: { mechanism: SaslMechanism; username: string; password: string } | null
  auth: {
    /** HS256 secrets (first signs nothing: the relay only verifies; several allow rotation). */
    secrets: string[]
    audience: string
    issuer?: string
    clockSkewSec: number
    /** Accept `?token=` besides the Sec-WebSocket-Protocol header. */
    allowQueryToken: boolean
  }
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
}

export const DEFAULTS = {
  path: '/kafka',
  auth: { audience: 'kafka-edge', clockSkewSec: 30, allowQueryToken: true },
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
function secret(o: Json, key: string, env: NodeJS.ProcessEnv): string | undefined {
  const direct = o[key]
  const fromEnv = o[`${key}Env`]
  if (typeof fromEnv === 'string') {
    const v = env[fromEnv]
    if (v === undefined) throw new BridgeConfigError(`environment variable ${fromEnv} (${key}Env) is not set`)
    return v
  }
  if (direct !== undefined && typeof direct !== 'string') throw new BridgeConfigError(`${key} must be a string`)
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

  let sasl: BridgeConfig['sasl'] = null
  if (input.sasl !== undefined) {
    const s = obj(input.sasl, 'sasl')
    const mechanism = String(s.mechanism ?? 'SCRAM-SHA-512').toUpperCase()
    if (mechanism !== 'PLAIN' && mechanism !== 'SCRAM-SHA-256' && mechanism !== 'SCRAM-SHA-512') {
      throw new BridgeConfigError(`sasl.mechanism must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got ${mechanism}`)
    }
    const username = secret(s, 'username', env)
    const password = secret(s, 'password', env)
    if (!username || password === undefined) throw new BridgeConfigError('sasl needs username and password (or usernameEnv / passwordEnv)')
    sasl = { mechanism, username, password }
  }

  const a = obj(input.auth, 'auth')
  const secrets = list(a.secrets, 'auth.secrets')
  const one = secret(a, 'secret', env)
  if (one !== undefined) secrets.unshift(one)
  if (typeof a.secretsEnv === 'string') secrets.push(...list(env[a.secretsEnv] ?? '', 'auth.secretsEnv'))
  if (secrets.length === 0) throw new BridgeConfigError('auth.secret (or auth.secretEnv) is required: the relay never runs without token checks')
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

  const path = String(input.path ?? DEFAULTS.path)
  if (!path.startsWith('/')) throw new BridgeConfigError('path must start with /')
  return {
    listen, path, brokers, allowBrokers, sasl,
    auth: {
      secrets, audience: String(a.audience ?? DEFAULTS.auth.audience),
      issuer: a.issuer === undefined ? undefined : String(a.issuer),
      clockSkewSec: num(a.clockSkewSec, DEFAULTS.auth.clockSkewSec, 'auth.clockSkewSec'),
      allowQueryToken: a.allowQueryToken === undefined ? DEFAULTS.auth.allowQueryToken : a.allowQueryToken === true,
    },
    origins: list(input.origins, 'origins'),
    allowMissingOrigin: input.allowMissingOrigin === undefined ? DEFAULTS.allowMissingOrigin : input.allowMissingOrigin === true,
    limits, faults,
    log: { level: level as BridgeConfig['log']['level'] },
  }
}

export function loadConfigFile(file: string): Json {
  let text: string
  try { text = readFileSync(file, 'utf8') } catch (e) { throw new BridgeConfigError(`cannot read config ${file}: ${(e as Error).message}`) }
  try { return obj(JSON.parse(text), 'config') } catch (e) {
    if (e instanceof BridgeConfigError) throw e
    throw new BridgeConfigError(`config ${file} is not valid JSON: ${(e as Error).message}`)
  }
}
