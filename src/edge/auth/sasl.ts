import { IllegalSaslStateException, SaslAuthenticationException, UnsupportedSaslMechanismException } from '../errors.js'
import { SaslAuthenticate, SaslHandshake, errorCode, type RequestBody, type ResponseBody } from '../protocol/index.js'
import { utf8, type SaslExchange, type SaslMechanism, type SaslTarget } from './mechanism.js'

/** Sends one request on the connection being authenticated and returns the decoded response. */
export type SaslCall = <A extends typeof SaslHandshake | typeof SaslAuthenticate>(api: A, body: RequestBody<A>) => Promise<ResponseBody<A>>

export interface SaslSession {
  /** KIP-368: the broker closes the connection after this (0 = never); re-authenticate before it. */
  readonly lifetimeMs: number
}

/**
 * SaslHandshake then SaslAuthenticate rounds until the mechanism is done. The same driver runs the
 * first authentication of a connection and every KIP-368 re-authentication (the broker accepts a new
 * SaslHandshake on an authenticated connection for exactly that).
 */
export async function authenticate(mechanism: SaslMechanism, target: SaslTarget, call: SaslCall): Promise<SaslSession> {
  const where = `${target.host}:${target.port}`
  const hs = await call(SaslHandshake, { mechanism: mechanism.name })
  const hsCode = hs.errorCode
  if (hsCode === errorCode('UNSUPPORTED_SASL_MECHANISM')) {
    const offered = hs.mechanisms.join(', ') || 'none'
    throw new UnsupportedSaslMechanismException(`broker ${where} does not enable SASL mechanism ${mechanism.name}; it offers: ${offered}. Set sasl.mechanism to one of those`)
  }
  if (hsCode === errorCode('ILLEGAL_SASL_STATE')) {
    throw new IllegalSaslStateException(`broker ${where} did not expect a SASL handshake: ` +
      'its listener is probably not SASL_PLAINTEXT/SASL_SSL; check security.protocol and the port')
  }
  if (hsCode !== errorCode('NONE')) throw new SaslAuthenticationException(`SASL handshake with ${where} failed with error ${hsCode}`)

  const exchange = mechanism.begin(target)
  let lifetimeMs = 0
  let out = await exchange.respond(null)
  while (out !== null) {
    const res = await call(SaslAuthenticate, { authBytes: out })
    const code = res.errorCode
    if (code !== errorCode('NONE')) {
      const brokerMessage = res.errorMessage ?? `error ${code}`
      throw new SaslAuthenticationException(`SASL ${mechanism.name} authentication to ${where} failed: ${brokerMessage}`)
    }
    lifetimeMs = Number(res.sessionLifetimeMs)
    out = await exchange.respond(res.authBytes)
  }
  return { lifetimeMs }
}

/** When to re-authenticate: like Java, at a random point in 85-95% of the session, so a fleet spreads out. */
export function reauthenticationDelay(lifetimeMs: number, random: () => number = Math.random): number {
  return Math.floor(lifetimeMs * (0.85 + 0.1 * random()))
}

/** SASL PLAIN (RFC 4616): the password travels in the clear, so only over TLS in production. */
export function plain(options: { username: string; password: string }): SaslMechanism {
  return {
    name: 'PLAIN',
    begin: (): SaslExchange => {
      let step = 0
      return {
        respond: async () => (step++ === 0 ? utf8.encode(`\0${options.username}\0${options.password}`) : null),
      }
    },
  }
}

export interface OAuthBearerToken {
  /** The compact JWT (or any bearer token the broker's validator accepts). */
  token: string
  /** How long the token stays valid from now, in ms. */
  lifetimeMs: number
}

export interface OAuthBearerOptions {
  /** Called when there is no token yet or the current one has used 80% of its lifetime (Java's refresh window). */
  tokenProvider: () => Promise<OAuthBearerToken> | OAuthBearerToken
  /** SASL extensions (KIP-342), e.g. Confluent Cloud's logicalCluster and identityPoolId. */
  extensions?: Record<string, string>
  now?: () => number
}

const EXTENSION_KEY = /^[A-Za-z]+$/
const EXTENSION_VALUE = /^[\x21-\x7E \t\r\n]+$/

/** OAUTHBEARER (RFC 7628, KIP-255): a bearer token from the caller's provider, plus SASL extensions. */
export function oauthBearer(options: OAuthBearerOptions): SaslMechanism {
  const now = options.now ?? Date.now
  const extensions = Object.entries(options.extensions ?? {})
  for (const [k, v] of extensions) {
    if (k === 'auth' || !EXTENSION_KEY.test(k)) throw new SaslAuthenticationException(`OAUTHBEARER extension name ${JSON.stringify(k)} is invalid: letters only, and not "auth"`)
    if (!EXTENSION_VALUE.test(v)) throw new SaslAuthenticationException(`OAUTHBEARER extension ${k} has a value with characters RFC 7628 does not allow`)
  }
  let cached: { token: string; refreshAt: number } | null = null
  const token = async (): Promise<string> => {
    if (cached && now() < cached.refreshAt) return cached.token
    let t: OAuthBearerToken
    try {
      t = await options.tokenProvider()
    } catch (e) {
      throw new SaslAuthenticationException(`sasl.oauthbearer.token.provider failed: ${(e as Error)?.message ?? e}`, { cause: e })
    }
    if (!t || typeof t.token !== 'string' || t.token.length === 0 || !Number.isFinite(t.lifetimeMs)) {
      throw new SaslAuthenticationException('sasl.oauthbearer.token.provider must resolve to { token: string, lifetimeMs: number }')
    }
    cached = { token: t.token, refreshAt: now() + Math.floor(t.lifetimeMs * 0.8) }
    return t.token
  }
  return {
    name: 'OAUTHBEARER',
    begin: (): SaslExchange => {
      let step = 0
      let serverError: string | null = null
      return {
        respond: async (challenge) => {
          switch (step++) {
            case 0: {
              const ext = extensions.map(([k, v]) => `\x01${k}=${v}`).join('')
              return utf8.encode(`n,,\x01auth=Bearer ${await token()}${ext}\x01\x01`)
            }
            case 1:
              if (!challenge || challenge.length === 0) return null
              // RFC 7628 3.2.2: the server's error JSON must be acknowledged with a lone 0x01; the
              // broker then fails the exchange, and its error names the cause (e.g. expired token).
              serverError = new TextDecoder().decode(challenge)
              cached = null
              return Uint8Array.of(1)
            default:
              throw new SaslAuthenticationException(`OAUTHBEARER token refused: ${serverError ?? 'unexpected server message'}`)
          }
        },
      }
    },
  }
}

/**
 * The options of a Java `sasl.jaas.config` line, e.g.
 * `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`
 */
export function parseJaasConfig(text: string): { loginModule: string; options: Record<string, string> } {
  const m = /^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\b([\s\S]*?);?\s*$/.exec(text)
  if (!m) throw new Error('expected "<LoginModule class> required key="value" ...;"')
  const options: Record<string, string> = {}
  const rest = m[3]!
  const re = /\s*([\w.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s";]+))/gy
  let pos = 0
  for (;;) {
    re.lastIndex = pos
    const o = re.exec(rest)
    if (!o) break
    options[o[1]!] = o[2] !== undefined ? o[2].replace(/\\(.)/g, '$1') : o[3]!
    pos = re.lastIndex
  }
  if (rest.slice(pos).trim() !== '') throw new Error(`cannot parse ${JSON.stringify(rest.slice(pos).trim())}`)
  return { loginModule: m[1]!, options }
}
