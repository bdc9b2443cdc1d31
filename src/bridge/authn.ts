import { readFileSync, statSync } from 'node:fs'
import type { JWTVerifyGetKey } from 'jose'
import type { BridgeConfig } from './config.js'
import { checkClaims, fail, parsePart, verifyToken, type TokenResult } from './token.js'

type Jose = typeof import('jose')
let jose: Promise<Jose> | null = null
/** jose is an optional peer dependency: only a relay configured with a JWKS loads it. */
const loadJose = (): Promise<Jose> => (jose ??= import('jose'))

/**
 * Verifies a client's token: HS256 against the shared secrets (token.ts), or RS256/ES256/EdDSA
 * against a JWKS from a URL (jose's remote key set: cached, refetched when a token names a kid it
 * has not seen, so a provider's key rotation needs no restart) or a file (re-read when it changes).
 * Both paths end in the same claim rules.
 */
export class Authenticator {
  private readonly secrets: Uint8Array[]
  private keys: Promise<JWTVerifyGetKey> | null = null
  private fileKeys: { mtimeMs: number; checkedAt: number; keys: JWTVerifyGetKey } | null = null

  constructor(private readonly auth: BridgeConfig['auth']) {
    this.secrets = auth.secrets.map((s) => Buffer.from(s, 'utf8'))
  }

  /** Loads jose and the key set once at start-up, so a broken JWKS file fails there. */
  async init(): Promise<void> {
    if (this.auth.jwksUrl || this.auth.jwksFile) await this.keySet()
  }

  async verify(token: string): Promise<TokenResult> {
    const nowSec = Date.now() / 1000
    const o = { audience: this.auth.audience, issuer: this.auth.issuer, clockSkewSec: this.auth.clockSkewSec, nowSec }
    if (token.length > 8192) return fail('token too long')
    const parts = token.split('.')
    if (parts.length !== 3) return fail('token is not a JWS compact serialisation')
    const header = parsePart(parts[0]!)
    if (!header) return fail('token header is not a JSON object')
    if (header.alg === 'HS256') {
      if (this.secrets.length === 0) return fail('HS256 tokens are not accepted by this relay (no auth.secret)')
      return verifyToken(token, { ...o, secrets: this.secrets })
    }
    const alg = String(header.alg)
    if (!(this.auth.jwksUrl || this.auth.jwksFile) || !this.auth.algorithms.includes(alg)) {
      return fail(`token alg ${alg.slice(0, 16)} is not accepted (accepted: ${['HS256', ...(this.auth.jwksUrl || this.auth.jwksFile ? this.auth.algorithms : [])].join(', ')})`)
    }
    const j = await loadJose()
    try {
      const { payload } = await j.compactVerify(token, await this.keySet(), { algorithms: this.auth.algorithms })
      const claims = JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(payload)) as unknown
      if (!claims || typeof claims !== 'object' || Array.isArray(claims)) return fail('token payload is not a JSON object')
      return checkClaims(claims as Record<string, unknown>, o)
    } catch (e) {
      if (e instanceof j.errors.JWKSNoMatchingKey) return fail('no key in the JWKS matches the token (kid/alg)')
      if (e instanceof j.errors.JWSSignatureVerificationFailed) return fail('token signature does not verify')
      if (e instanceof j.errors.JWKSTimeout || e instanceof j.errors.JWKSInvalid) return fail('the relay could not load its JWKS')
      return fail(`token rejected: ${(e as Error).message.slice(0, 60)}`)
    }
  }

  private async keySet(): Promise<JWTVerifyGetKey> {
    const j = await loadJose()
    if (this.auth.jwksUrl) {
      return (this.keys ??= Promise.resolve(j.createRemoteJWKSet(new URL(this.auth.jwksUrl), {
        cacheMaxAge: this.auth.jwksCacheMaxAgeMs, cooldownDuration: this.auth.jwksCooldownMs, timeoutDuration: 5000,
      })))
    }
    const file = this.auth.jwksFile!
    const now = Date.now()
    // A rotated file is picked up within a second; stat is cheap next to a signature check.
    if (this.fileKeys && now - this.fileKeys.checkedAt < 1000) return this.fileKeys.keys
    const mtimeMs = statSync(file).mtimeMs
    if (this.fileKeys && this.fileKeys.mtimeMs === mtimeMs) { this.fileKeys.checkedAt = now; return this.fileKeys.keys }
    const keys = j.createLocalJWKSet(JSON.parse(readFileSync(file, 'utf8')) as Parameters<Jose['createLocalJWKSet']>[0])
    this.fileKeys = { mtimeMs, checkedAt: now, keys }
    return keys
  }
}
