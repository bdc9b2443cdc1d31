import { readFile } from 'node:fs/promises'
import { awsMskIam, type AwsCredentials } from '../edge/auth/aws-msk-iam.js'
import type { SaslMechanism } from '../edge/auth/mechanism.js'
import { oauthBearer, plain, type OAuthBearerToken } from '../edge/auth/sasl.js'
import { scram } from '../edge/auth/scram.js'
import type { OAuthTokenSource, SaslConfig } from './config.js'
import { jwtExpiry } from './token.js'

/**
 * The relay could not obtain its own credential (token file, environment, token endpoint). The
 * message names the source and never the credential itself: it ends up in the relay's logs.
 */
export class CredentialError extends Error {}

// One mechanism per config: the OAUTHBEARER token cache and the single-flight token fetch must be
// shared by every connection the relay opens, not rebuilt per connection.
const mechanisms = new WeakMap<SaslConfig, SaslMechanism>()

/** The shared SASL module's mechanism for the relay's configured credentials. */
export function saslMechanism(sasl: SaslConfig, timeoutMs: number): SaslMechanism {
  let m = mechanisms.get(sasl)
  if (!m) {
    m = build(sasl, timeoutMs)
    mechanisms.set(sasl, m)
  }
  return m
}

function build(sasl: SaslConfig, timeoutMs: number): SaslMechanism {
  switch (sasl.mechanism) {
    case 'PLAIN': return plain({ username: sasl.username, password: sasl.password })
    case 'SCRAM-SHA-256':
    case 'SCRAM-SHA-512':
      return scram({ hash: sasl.mechanism === 'SCRAM-SHA-256' ? 'SHA-256' : 'SHA-512', username: sasl.username, password: sasl.password })
    case 'OAUTHBEARER': return oauthBearer({ tokenProvider: tokenProvider(sasl.token, timeoutMs), extensions: sasl.extensions })
    case 'AWS_MSK_IAM': return awsMskIam({ region: sasl.region, credentials: () => awsCredentialsFromEnv(sasl.env), userAgent: 'kafka-edge-bridge' })
  }
}

/**
 * File and environment tokens report a lifetime of 0, so the mechanism asks again for every broker
 * connection: whatever rotates the file (a sidecar, a projected Kubernetes token) is picked up by the
 * next connection, without the relay guessing when it rotates.
 */
export function tokenProvider(source: OAuthTokenSource, timeoutMs: number): () => Promise<OAuthBearerToken> {
  if (source.kind === 'file') {
    return async () => {
      let text: string
      try { text = (await readFile(source.path, 'utf8')).trim() } catch (e) {
        throw new CredentialError(`cannot read sasl.tokenFile ${source.path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`)
      }
      return { token: usable(text, `sasl.tokenFile ${source.path}`), lifetimeMs: 0 }
    }
  }
  if (source.kind === 'env') {
    return async () => ({ token: usable((source.env[source.name] ?? '').trim(), `environment variable ${source.name}`), lifetimeMs: 0 })
  }
  return clientCredentials(source, timeoutMs)
}

function usable(token: string, where: string): string {
  if (token === '') throw new CredentialError(`${where} is empty: it must hold the bearer token`)
  const exp = jwtExpiry(token)
  if (exp !== null && exp <= Date.now()) throw new CredentialError(`the token in ${where} expired at ${new Date(exp).toISOString()}: whatever writes it has stopped refreshing it`)
  return token
}

/**
 * OAuth 2.0 client credentials (RFC 6749 4.4) as Kafka's Java login callback handler sends them:
 * HTTP Basic client authentication, form body with grant_type and scope. The mechanism caches the
 * token until 80% of expires_in; concurrent connections share one request.
 */
function clientCredentials(source: Extract<OAuthTokenSource, { kind: 'clientCredentials' }>, timeoutMs: number): () => Promise<OAuthBearerToken> {
  let inflight: Promise<OAuthBearerToken> | null = null
  const where = `token endpoint ${source.tokenEndpointUrl}`
  const fetchToken = async (): Promise<OAuthBearerToken> => {
    const basic = Buffer.from(`${encodeURIComponent(source.clientId)}:${encodeURIComponent(source.clientSecret)}`, 'utf8').toString('base64')
    const body = new URLSearchParams({ grant_type: 'client_credentials' })
    if (source.scope) body.set('scope', source.scope)
    let res: Response
    try {
      res = await fetch(source.tokenEndpointUrl, {
        method: 'POST',
        headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      })
    } catch (e) {
      const err = e as Error
      throw new CredentialError(`${where}: ${err.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (err.cause as Error | undefined)?.message ?? err.message}`)
    }
    const text = await res.text().catch(() => '')
    let json: Record<string, unknown> | null = null
    try { json = JSON.parse(text) as Record<string, unknown> } catch { /* reported below */ }
    if (!res.ok) {
      // RFC 6749 5.2 error fields only: the rest of an error page may echo request details.
      const detail = json && typeof json.error === 'string' ? `${json.error}${typeof json.error_description === 'string' ? `: ${json.error_description}` : ''}` : 'no OAuth error in the body'
      throw new CredentialError(`${where} answered HTTP ${res.status} (${detail.slice(0, 200)})${res.status === 401 ? ': check sasl.clientId and sasl.clientSecret' : ''}`)
    }
    const token = json?.access_token
    if (typeof token !== 'string' || token === '') throw new CredentialError(`${where} answered without an access_token`)
    const tokenType = json?.token_type
    if (typeof tokenType === 'string' && tokenType.toLowerCase() !== 'bearer') throw new CredentialError(`${where} issued a ${tokenType} token; OAUTHBEARER needs a Bearer token`)
    const expiresIn = json?.expires_in
    let lifetimeMs: number
    if (typeof expiresIn === 'number' && expiresIn > 0) lifetimeMs = expiresIn * 1000
    else {
      const exp = jwtExpiry(token)
      if (exp === null) throw new CredentialError(`${where} answered without expires_in, and the token is not a JWT with an exp claim: the relay cannot tell when to fetch a new one`)
      lifetimeMs = exp - Date.now()
    }
    if (lifetimeMs <= 0) throw new CredentialError(`${where} issued a token that has already expired`)
    return { token, lifetimeMs }
  }
  return () => {
    inflight ??= fetchToken().finally(() => { inflight = null })
    return inflight
  }
}

/**
 * The standard variables, read for every connection: whoever launches the relay with temporary
 * credentials (STS) can only hand over new ones through the environment it controls, and a
 * connection must not sign with a session token that has since been replaced.
 */
export function awsCredentialsFromEnv(env: NodeJS.ProcessEnv): AwsCredentials {
  const accessKeyId = env.AWS_ACCESS_KEY_ID
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY
  if (!accessKeyId || !secretAccessKey) throw new CredentialError('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set in the relay\'s environment for AWS_MSK_IAM')
  const sessionToken = env.AWS_SESSION_TOKEN
  return sessionToken ? { accessKeyId, secretAccessKey, sessionToken } : { accessKeyId, secretAccessKey }
}
