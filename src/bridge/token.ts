import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * HS256 JWTs, verified here against the relay's shared secrets; tokens signed by an identity
 * provider (RS256/ES256/EdDSA) are verified in authn.ts with jose and then meet the same claim
 * rules (checkClaims). `exp`, `sub` and `aud` are required.
 */
/** Asymmetric algorithms an identity provider signs with; `none` and HS* never reach jose. */
export const ASYMMETRIC_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'EdDSA'] as const

export interface TokenClaims {
  sub: string
  aud: string | string[]
  exp: number
  nbf?: number
  iat?: number
  iss?: string
  /** Topic patterns this principal may produce to and read metadata of (`*` matches any run of characters). */
  topics?: string[]
  /** Transactional id patterns this principal may use. */
  transactional_ids?: string[]
  /** Consumer group patterns (sendOffsetsToTransaction, FindCoordinator key type 0). */
  groups?: string[]
  [claim: string]: unknown
}

export type TokenResult =
  | { ok: true; claims: TokenClaims }
  | { ok: false; expired: boolean; reason: string }

export interface VerifyOptions {
  secrets: Uint8Array[]
  audience: string
  issuer?: string
  clockSkewSec: number
  nowSec: number
}

const b64url = (buf: Uint8Array): string => Buffer.from(buf).toString('base64url')
const B64URL = /^[A-Za-z0-9_-]*$/

export function parsePart(part: string): Record<string, unknown> | null {
  if (!B64URL.test(part)) return null
  try {
    const v: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'))
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null
  } catch { return null }
}

export const fail = (reason: string, expired = false): TokenResult => ({ ok: false, expired, reason })
const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string')

export function verifyToken(token: string, o: VerifyOptions): TokenResult {
  if (token.length > 8192) return fail('token too long')
  const parts = token.split('.')
  if (parts.length !== 3) return fail('token is not a JWS compact serialisation')
  const header = parsePart(parts[0]!)
  if (!header || header.alg !== 'HS256') return fail('token header must say alg HS256')
  if (header.crit !== undefined) return fail('token has critical header parameters the relay does not understand')
  if (!B64URL.test(parts[2]!)) return fail('token signature is not base64url')
  const given = Buffer.from(parts[2]!, 'base64url')
  const signed = `${parts[0]}.${parts[1]}`
  // Several secrets let operators rotate keys without a flag day.
  const good = o.secrets.some((s) => {
    const want = createHmac('sha256', s).update(signed).digest()
    return want.length === given.length && timingSafeEqual(want, given)
  })
  if (!good) return fail('token signature does not verify')
  const c = parsePart(parts[1]!)
  if (!c) return fail('token payload is not a JSON object')
  return checkClaims(c, o)
}

/**
 * The claim rules every token meets, whoever signed it (HS256 here, RS256/ES256/EdDSA through
 * jose in authn.ts): one policy for both paths.
 */
export function checkClaims(c: Record<string, unknown>, o: Pick<VerifyOptions, 'audience' | 'issuer' | 'clockSkewSec' | 'nowSec'>): TokenResult {
  if (typeof c.sub !== 'string' || c.sub.length === 0 || c.sub.length > 256) return fail('token has no sub')
  if (typeof c.exp !== 'number' || !Number.isFinite(c.exp)) return fail('token has no numeric exp')
  const auds = typeof c.aud === 'string' ? [c.aud] : isStringList(c.aud) ? c.aud : []
  if (!auds.includes(o.audience)) return fail(`token audience is not ${o.audience}`)
  if (o.issuer !== undefined && c.iss !== o.issuer) return fail('token issuer is not trusted')
  if (c.nbf !== undefined && (typeof c.nbf !== 'number' || c.nbf > o.nowSec + o.clockSkewSec)) return fail('token is not valid yet')
  for (const k of ['topics', 'transactional_ids', 'groups'] as const) {
    if (c[k] !== undefined && !isStringList(c[k])) return fail(`token claim ${k} must be a list of strings`)
  }
  if (c.exp <= o.nowSec - o.clockSkewSec) return fail('token expired', true)
  return { ok: true, claims: c as TokenClaims }
}

/** Issues a token (tests, `kafka-edge token`, and token endpoints written in Node). */
export function signToken(claims: Record<string, unknown>, secret: string | Uint8Array, header: Record<string, unknown> = { alg: 'HS256', typ: 'JWT' }): string {
  const enc = (v: unknown) => b64url(Buffer.from(JSON.stringify(v)))
  const signed = `${enc(header)}.${enc(claims)}`
  return `${signed}.${b64url(createHmac('sha256', secret).update(signed).digest())}`
}

/**
 * `*` matches any run of characters (dots included); everything else is literal. Matching is
 * linear in the name: the pattern's literal segments are found left to right with KMP, each text
 * position is looked at a bounded number of times, and nothing ever backtracks (a regex built from
 * a pattern such as `a*a*a*...b` took seconds on a crafted name).
 */
export function compilePatterns(patterns: readonly string[] | undefined): (name: string) => boolean {
  if (!patterns || patterns.length === 0) return () => false
  if (patterns.includes('*')) return () => true
  const exact = new Set(patterns.filter((p) => !p.includes('*')))
  const globs = patterns.filter((p) => p.includes('*')).map(compileGlob)
  if (globs.length === 0) return (name) => exact.has(name)
  return (name) => exact.has(name) || globs.some((g) => g(name))
}

function compileGlob(pattern: string): (name: string) => boolean {
  const parts = pattern.split('*')
  const prefix = parts[0]!
  const suffix = parts[parts.length - 1]!
  const middle = parts.slice(1, -1).filter((p) => p.length > 0).map((p) => ({ p, fail: kmpTable(p) }))
  const fixed = prefix.length + suffix.length
  return (name) => {
    if (name.length < fixed || !name.startsWith(prefix) || !name.endsWith(suffix)) return false
    // Leftmost match of each middle segment, in order, inside the span between prefix and suffix.
    let at = prefix.length
    const end = name.length - suffix.length
    for (const m of middle) {
      const found = kmpFind(name, m.p, m.fail, at, end)
      if (found < 0) return false
      at = found + m.p.length
    }
    return true
  }
}

function kmpTable(p: string): Int32Array {
  const t = new Int32Array(p.length)
  for (let i = 1, k = 0; i < p.length; i++) {
    while (k > 0 && p.charCodeAt(i) !== p.charCodeAt(k)) k = t[k - 1]!
    if (p.charCodeAt(i) === p.charCodeAt(k)) k++
    t[i] = k
  }
  return t
}

/** Index of the first occurrence of p in s[from, end), or -1; O(end - from + p.length). */
function kmpFind(s: string, p: string, t: Int32Array, from: number, end: number): number {
  for (let i = from, k = 0; i < end; i++) {
    while (k > 0 && s.charCodeAt(i) !== p.charCodeAt(k)) k = t[k - 1]!
    if (s.charCodeAt(i) === p.charCodeAt(k)) k++
    if (k === p.length) return i - k + 1
  }
  return -1
}

/**
 * The `exp` claim of a compact JWT in ms, or null when the token is not a JWT or has no exp. Not a
 * verification: the relay reads it from the OAUTHBEARER tokens it presents to brokers, to renew them.
 */
export function jwtExpiry(token: string): number | null {
  const parts = token.split('.')
  if (parts.length !== 3) return null
  try {
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as { exp?: unknown }
    return typeof claims.exp === 'number' && Number.isFinite(claims.exp) ? claims.exp * 1000 : null
  } catch { return null }
}
