/**
 * SASL/AWS_MSK_IAM: Amazon MSK's IAM authentication, as Amazon's aws-msk-iam-auth Java library
 * (software.amazon.msk:aws-msk-iam-auth) speaks it. The client sends one JSON object holding a SigV4
 * query-string signature of `GET https://<broker host>/?Action=kafka-cluster:Connect` for the service
 * `kafka-cluster`; the broker answers with `{"version":"2020_10_22","request-id":"..."}`.
 *
 * Web-standard APIs only (crypto.subtle, TextEncoder), so it runs unchanged in browsers, workerd,
 * Node, Deno and Bun. test/unit/auth-aws-msk-iam.test.ts compares its bytes with the Java library's.
 */
import { ConfigException, SaslAuthenticationException } from '../errors.js'
import type { SaslExchange, SaslMechanism, SaslTarget } from './mechanism.js'

export interface AwsCredentials {
  accessKeyId: string
  secretAccessKey: string
  sessionToken?: string
}

export interface AwsMskIamOptions {
  /** The cluster's region, e.g. 'us-east-1' (part of the signing scope). */
  region: string
  /**
   * Called for every (re-)authentication, so short-lived credentials (STS, instance roles) can be
   * refreshed in between. A session token, when present, is sent in the payload.
   */
  credentials: () => Promise<AwsCredentials> | AwsCredentials
  /** injected for tests; default Date.now */
  now?: () => number
  /** Sent as the payload's `user-agent`; the broker does not check it. Default 'kafka-edge'. */
  userAgent?: string
}


const MECHANISM = 'AWS_MSK_IAM'
const VERSION = '2020_10_22'
const SERVICE = 'kafka-cluster'
const ACTION = 'kafka-cluster:Connect'
const ALGORITHM = 'AWS4-HMAC-SHA256'
// The Java library's fixed 15 minutes: the broker checks the signature once, when the connection
// authenticates, so there is nothing to tune.
const EXPIRES_SECONDS = 900
// SHA-256 of the empty body: the signer hashes the (absent) payload of the presigned GET.
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'

export function awsMskIam(options: AwsMskIamOptions): SaslMechanism {
  if (typeof options?.region !== 'string' || options.region.trim() === '') {
    throw new ConfigException('awsMskIam: region is required, e.g. "us-east-1"')
  }
  if (typeof options.credentials !== 'function') {
    throw new ConfigException('awsMskIam: credentials must be a function returning { accessKeyId, secretAccessKey, sessionToken? }')
  }
  const region = options.region.trim()
  const now = options.now ?? Date.now
  const userAgent = options.userAgent ?? 'kafka-edge'
  return {
    name: MECHANISM,
    begin(target: SaslTarget): SaslExchange {
      let step: 'first' | 'server' | 'done' = 'first'
      return {
        async respond(challenge: Uint8Array | null): Promise<Uint8Array | null> {
          if (step === 'first') {
            if (challenge !== null && challenge.length > 0) {
              throw new SaslAuthenticationException(`${MECHANISM}: the client speaks first, but the server sent ${challenge.length} bytes`)
            }
            step = 'server'
            const credentials = await loadCredentials(options.credentials)
            return buildPayload({ host: target.host, region, credentials, userAgent, timeMs: now() })
          }
          if (step === 'server') {
            step = 'done'
            checkServerResponse(challenge)
            return null
          }
          throw new SaslAuthenticationException(`${MECHANISM}: the exchange is already complete`)
        },
      }
    },
  }
}

interface AwsMskIamPayloadInput {
  host: string
  region: string
  credentials: AwsCredentials
  userAgent: string
  timeMs: number
}

/** The UTF-8 JSON client message, key order and escaping included, as the Java library writes it. */
async function buildPayload(input: AwsMskIamPayloadInput): Promise<Uint8Array> {
  const subtle = webCrypto()
  if (!input.host) throw new SaslAuthenticationException(`${MECHANISM}: the broker host is empty; the signature binds to it`)
  // The AWS SDK trims credentials (String.trim: every char <= U+0020) before signing and sending them.
  const accessKeyId = javaTrim(input.credentials.accessKeyId)
  const secretAccessKey = javaTrim(input.credentials.secretAccessKey)
  // An empty token (e.g. an unset AWS_SESSION_TOKEN read as '') means long-term keys, not a token to send.
  const sessionToken = input.credentials.sessionToken ? javaTrim(input.credentials.sessionToken) || undefined : undefined

  const amzDate = formatAmzDate(input.timeMs)
  const day = amzDate.slice(0, 8)
  const scope = `${day}/${input.region}/${SERVICE}/aws4_request`
  const credential = `${accessKeyId}/${scope}`

  const query: [string, string][] = [
    ['Action', ACTION],
    ['X-Amz-Algorithm', ALGORITHM],
    ['X-Amz-Credential', credential],
    ['X-Amz-Date', amzDate],
    ['X-Amz-Expires', String(EXPIRES_SECONDS)],
    ['X-Amz-SignedHeaders', 'host'],
  ]
  if (sessionToken !== undefined) query.push(['X-Amz-Security-Token', sessionToken])
  const canonicalQuery = query
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&')
  // The library signs https://host with no port: the broker's port never enters the signature.
  const canonicalRequest = ['GET', '/', canonicalQuery, `host:${canonicalHeaderValue(input.host)}`, '', 'host', EMPTY_SHA256].join('\n')
  const stringToSign = [ALGORITHM, amzDate, scope, hex(await sha256(subtle, utf8(canonicalRequest)))].join('\n')

  let key = await hmac(subtle, utf8(`AWS4${secretAccessKey}`), utf8(day))
  for (const part of [input.region, SERVICE, 'aws4_request']) key = await hmac(subtle, key, utf8(part))
  const signature = hex(await hmac(subtle, key, utf8(stringToSign)))

  const values: Record<string, string | undefined> = {
    'x-amz-date': amzDate,
    'x-amz-signedheaders': 'host',
    'x-amz-signature': signature,
    host: input.host,
    action: ACTION,
    'x-amz-expires': String(EXPIRES_SECONDS),
    'x-amz-security-token': sessionToken,
    version: VERSION,
    'x-amz-algorithm': ALGORITHM,
    'x-amz-credential': credential,
    'user-agent': input.userAgent,
  }
  // Object literal order above is the Java library's: it fills a java.util.HashMap and Jackson
  // writes its iteration order, which for this fixed key set (11 keys, under the 16-bucket table's
  // resize threshold of 12) is always this one. The broker parses JSON and should not care, but
  // matching byte for byte lets the test compare whole payloads with the library's.
  const members: string[] = []
  for (const [k, v] of Object.entries(values)) if (v !== undefined) members.push(`${jsonString(k)}:${jsonString(v)}`)
  return utf8(`{${members.join(',')}}`)
}

async function loadCredentials(provider: AwsMskIamOptions['credentials']): Promise<AwsCredentials> {
  let c: AwsCredentials
  try {
    c = await provider()
  } catch (e) {
    throw new SaslAuthenticationException(`${MECHANISM}: the credentials provider failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e })
  }
  if (!c || typeof c.accessKeyId !== 'string' || typeof c.secretAccessKey !== 'string' || c.accessKeyId.trim() === '' || c.secretAccessKey.trim() === '') {
    throw new SaslAuthenticationException(`${MECHANISM}: the credentials provider returned no accessKeyId/secretAccessKey`)
  }
  if (c.sessionToken != null && typeof c.sessionToken !== 'string') {
    throw new SaslAuthenticationException(`${MECHANISM}: sessionToken must be a string when present`)
  }
  return c
}

function checkServerResponse(challenge: Uint8Array | null): void {
  // A successful broker always answers with a body; an empty one means the exchange went wrong.
  if (challenge === null || challenge.length === 0) {
    throw new SaslAuthenticationException(`${MECHANISM}: the broker's response is empty; expected {"version":"${VERSION}","request-id":...}`)
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(challenge))
  } catch (e) {
    throw new SaslAuthenticationException(`${MECHANISM}: the broker's response is not UTF-8 JSON`, { cause: e })
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new SaslAuthenticationException(`${MECHANISM}: the broker's response is not a JSON object`)
  }
  const r = parsed as Record<string, unknown>
  if (r.version !== VERSION) {
    throw new SaslAuthenticationException(`${MECHANISM}: the broker answered version ${JSON.stringify(r.version)}, expected "${VERSION}"`)
  }
  if (r['request-id'] !== undefined && r['request-id'] !== null && typeof r['request-id'] !== 'string') {
    throw new SaslAuthenticationException(`${MECHANISM}: the broker's request-id is not a string`)
  }
}

function webCrypto(): SubtleCrypto {
  const subtle = (globalThis as { crypto?: Crypto }).crypto?.subtle
  // Browsers hide crypto.subtle outside secure contexts (plain http:// pages).
  if (!subtle) throw new SaslAuthenticationException(`${MECHANISM}: needs WebCrypto (crypto.subtle), absent here (a browser page not served over https?)`)
  return subtle
}

// Uint8Array<ArrayBuffer>: WebCrypto's BufferSource excludes views of a SharedArrayBuffer.
type Bytes = Uint8Array<ArrayBuffer>

async function sha256(subtle: SubtleCrypto, data: Bytes): Promise<Bytes> {
  return new Uint8Array(await subtle.digest('SHA-256', data))
}

async function hmac(subtle: SubtleCrypto, key: Bytes, data: Bytes): Promise<Bytes> {
  const k = await subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
  return new Uint8Array(await subtle.sign('HMAC', k, data))
}

const encoder = new TextEncoder()
function utf8(s: string): Bytes {
  return encoder.encode(s)
}

function hex(b: Uint8Array): string {
  let s = ''
  for (const x of b) s += x.toString(16).padStart(2, '0')
  return s
}

/** yyyyMMdd'T'HHmmss'Z' in UTC, to the second (the signer drops milliseconds). */
function formatAmzDate(timeMs: number): string {
  return new Date(Math.floor(timeMs / 1000) * 1000).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '')
}

function javaTrim(s: string): string {
  return s.replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '')
}

/** SigV4 canonical header value as the SDK forms it: trimmed, runs of ASCII white space collapsed to one space. */
function canonicalHeaderValue(v: string): string {
  return v.replace(/^[ \t\n\v\r\f]+|[ \t\n\v\r\f]+$/g, '').replace(/[ \t\n\v\r\f]+/g, ' ')
}

/** RFC 3986 percent-encoding as SigV4 wants it: everything but A-Z a-z 0-9 - _ . ~ (so '/' too). */
function uriEncode(s: string): string {
  let encoded: string
  try {
    encoded = encodeURIComponent(s)
  } catch (e) {
    throw new SaslAuthenticationException(`${MECHANISM}: a credential holds an unpaired UTF-16 surrogate`, { cause: e })
  }
  return encoded.replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}

/**
 * A JSON string as the library's Jackson (2.18, writing bytes) writes it: '"' and '\\' escaped, C0
 * controls as \b \t \n \f \r or \u00XX, and every UTF-16 surrogate (paired or lone) as \uXXXX, hex
 * in upper case; everything else raw UTF-8. JSON.stringify differs on all three of the latter.
 */
function jsonString(s: string): string {
  let out = '"'
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === 0x22) out += '\\"'
    else if (c === 0x5c) out += '\\\\'
    else if (c < 0x20 || (c >= 0xd800 && c <= 0xdfff)) out += SHORT_ESCAPES[c] ?? `\\u${c.toString(16).toUpperCase().padStart(4, '0')}`
    else out += s[i]
  }
  return out + '"'
}
const SHORT_ESCAPES: Record<number, string> = { 0x08: '\\b', 0x09: '\\t', 0x0a: '\\n', 0x0c: '\\f', 0x0d: '\\r' }
