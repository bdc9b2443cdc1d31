// AWS_MSK_IAM: our client message must be the one Amazon's aws-msk-iam-auth sends, byte for byte
// (signature included), since MSK brokers are only ever tested against that library. The reference
// payloads come from the library itself, run by scripts/kafka/MskIamPayload.java in one JVM for all
// cases; its jars are fetched by `npm run kafka:fetch` (.ci/run does it).
import { execFile, spawnSync } from 'node:child_process'
import path from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { MSK_IAM_LIBS, ROOT, mskIamLibsReady } from '../../scripts/kafka/kafka.mjs'
import { awsMskIam, type AwsCredentials } from '../../src/edge/auth/aws-msk-iam.js'
import { SaslAuthenticationException } from '../../src/edge/errors.js'
import { ConfigException, KafkaEdgeError } from '../../src/edge/errors.js'

interface Case {
  name: string
  host: string
  region: string
  credentials: AwsCredentials
  userAgent: string
  /** null: the library's unmodified signedPayload() at the real time; we then sign at its x-amz-date. */
  timeMs: number | null
}

const AKID = 'AKIAIOSFODNN7EXAMPLE'
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'
// Real session tokens are base64: '+', '/' and '=' must be percent-encoded in the canonical query.
const TOKEN = 'IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD+abc/def+ghi=='
const US_EAST_1 = 'b-1.demo-cluster.abc123.c2.kafka.us-east-1.amazonaws.com'

const CASES: Case[] = [
  {
    // the last millisecond of a leap day: the date and the scope's day come from the same truncated second
    name: 'session token, us-east-1',
    host: US_EAST_1, region: 'us-east-1',
    credentials: { accessKeyId: AKID, secretAccessKey: SECRET, sessionToken: TOKEN },
    userAgent: 'kafka-edge-test', timeMs: Date.UTC(2024, 1, 29, 23, 59, 59, 999),
  },
  {
    name: 'no session token, us-east-1',
    host: US_EAST_1, region: 'us-east-1',
    credentials: { accessKeyId: AKID, secretAccessKey: SECRET },
    userAgent: 'kafka-edge-test', timeMs: 1_700_000_000_000,
  },
  {
    name: 'session token, eu-west-2',
    host: 'b-3.orders.x9y8z7.c4.kafka.eu-west-2.amazonaws.com', region: 'eu-west-2',
    credentials: { accessKeyId: 'ASIAEXAMPLEEUWEST2', secretAccessKey: 'secret+with/slashes=', sessionToken: TOKEN.split('').reverse().join('') },
    userAgent: 'kafka-edge/0.1.0', timeMs: Date.UTC(2031, 0, 1, 0, 0, 0, 0),
  },
  {
    // trimmed credentials, a mixed-case host, and a user agent that exercises Jackson's escaping
    name: 'no session token, ap-southeast-2, padded credentials, odd user agent',
    host: 'B-2.Demo.abc123.C3.kafka.ap-southeast-2.amazonaws.com', region: 'ap-southeast-2',
    credentials: { accessKeyId: ` ${AKID}\t`, secretAccessKey: `\n${SECRET} ` },
    userAgent: 'ua "q" \\ \u0001\u001f\n/é ✓ 😀', timeMs: 1_234_567_890_123,
  },
  {
    name: 'session token, us-west-2, the library unmodified at the real time',
    host: 'b-1.live.abc123.c1.kafka.us-west-2.amazonaws.com', region: 'us-west-2',
    credentials: { accessKeyId: AKID, secretAccessKey: SECRET, sessionToken: TOKEN },
    userAgent: 'kafka-edge-test', timeMs: null,
  },
]

// The Java library's key order (a HashMap's, see aws-msk-iam.ts), and so ours.
const KEYS = ['x-amz-date', 'x-amz-signedheaders', 'x-amz-signature', 'host', 'action', 'x-amz-expires',
  'x-amz-security-token', 'version', 'x-amz-algorithm', 'x-amz-credential', 'user-agent']

const text = (b: Uint8Array) => new TextDecoder('utf-8', { fatal: true }).decode(b)
const bytes = (s: string) => new TextEncoder().encode(s)

function firstMessage(c: Omit<Case, 'name' | 'timeMs'>, timeMs: number, port = 9098): Promise<Uint8Array | null> {
  return awsMskIam({ region: c.region, credentials: () => c.credentials, now: () => timeMs, userAgent: c.userAgent })
    .begin({ host: c.host, port })
    .respond(null)
}

/** '20240229T235959Z' -> epoch ms */
function parseAmzDate(d: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(d)
  if (!m) throw new Error(`bad x-amz-date ${d}`)
  const [, y, mo, da, h, mi, s] = m.map(Number) as number[]
  return Date.UTC(y!, mo! - 1, da!, h!, mi!, s!)
}

const JAVA = process.env.JAVA_HOME ? path.join(process.env.JAVA_HOME, 'bin', 'java') : 'java'

function referenceUnavailable(): string | null {
  const r = spawnSync(JAVA, ['-version'], { encoding: 'utf8' })
  if (r.error || r.status !== 0) return `no Java runtime (${r.error?.message ?? `java -version exited ${r.status}`})`
  if (!mskIamLibsReady()) return `aws-msk-iam-auth jars are not in ${MSK_IAM_LIBS} (run: npm run kafka:fetch)`
  return null
}

function runReference(cases: Case[]): Promise<Uint8Array[]> {
  const input = cases.map((c) => ({
    host: c.host, region: c.region, accessKeyId: c.credentials.accessKeyId, secretAccessKey: c.credentials.secretAccessKey,
    sessionToken: c.credentials.sessionToken ?? null, userAgent: c.userAgent, timeMs: c.timeMs,
  }))
  const args = ['-Xmx128m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-XX:-UsePerfData',
    '-cp', path.join(MSK_IAM_LIBS, '*'), path.join(ROOT, 'scripts/kafka/MskIamPayload.java')]
  return new Promise((resolve, reject) => {
    const child = execFile(JAVA, args, { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) { reject(new Error(`MskIamPayload.java failed: ${err.message}\n${stderr}`)); return }
      const lines = stdout.trim().split('\n')
      if (lines.length !== cases.length) { reject(new Error(`MskIamPayload.java printed ${lines.length} lines for ${cases.length} cases:\n${stdout}\n${stderr}`)); return }
      resolve(lines.map((l) => new Uint8Array(Buffer.from((JSON.parse(l) as { payload: string }).payload, 'base64'))))
    })
    child.stdin!.end(JSON.stringify(input))
  })
}

describe('AWS_MSK_IAM against aws-msk-iam-auth (Java)', () => {
  const unavailable = referenceUnavailable()
  // CI fetches the jars and has Java: there a missing reference is a failure, not a skip.
  const skip = unavailable !== null && !process.env.CI
  if (skip) console.warn(`auth-aws-msk-iam: skipping the comparison with the Java library: ${unavailable}`)
  const suffix = skip ? ` [skipped: ${unavailable}]` : ''
  let reference: Uint8Array[] = []

  beforeAll(async () => {
    if (skip) return
    if (unavailable) throw new Error(`the Java reference is required in CI: ${unavailable}`)
    reference = await runReference(CASES)
  })

  CASES.forEach((c, i) => {
    it.skipIf(skip)(`${c.name}: same bytes as the library${suffix}`, async () => {
      const java = reference[i]!
      const javaJson = JSON.parse(text(java)) as Record<string, string>
      const timeMs = c.timeMs ?? parseAmzDate(javaJson['x-amz-date']!)
      const ours = (await firstMessage(c, timeMs))!
      expect(text(ours)).toBe(text(java))
      expect(Buffer.from(ours).equals(Buffer.from(java))).toBe(true)
      expect(Object.keys(javaJson)).toEqual(KEYS.filter((k) => c.credentials.sessionToken !== undefined || k !== 'x-amz-security-token'))
    })
  })
})

describe('AWS_MSK_IAM client message', () => {
  const c = CASES[0]!
  it('is the known payload for fixed inputs (captured from aws-msk-iam-auth 2.3.6)', async () => {
    const ours = text((await firstMessage(c, c.timeMs!))!)
    expect(ours).toBe(GOLDEN_SESSION_TOKEN_US_EAST_1)
  })

  it('carries the fields the broker checks, credential and token unencoded', async () => {
    const p = JSON.parse(text((await firstMessage(c, c.timeMs!))!)) as Record<string, string>
    expect(p).toMatchObject({
      version: '2020_10_22',
      host: US_EAST_1,
      'user-agent': 'kafka-edge-test',
      action: 'kafka-cluster:Connect',
      'x-amz-algorithm': 'AWS4-HMAC-SHA256',
      'x-amz-credential': `${AKID}/20240229/us-east-1/kafka-cluster/aws4_request`,
      'x-amz-date': '20240229T235959Z',
      'x-amz-signedheaders': 'host',
      'x-amz-expires': '900',
      'x-amz-security-token': TOKEN,
    })
    expect(p['x-amz-signature']).toMatch(/^[0-9a-f]{64}$/)
  })

  it('treats an empty session token as none', async () => {
    const none = CASES[1]!
    const emptyToken = { ...none, credentials: { ...none.credentials, sessionToken: ' ' } }
    expect(text((await firstMessage(emptyToken, none.timeMs!))!)).toBe(text((await firstMessage(none, none.timeMs!))!))
  })

  it('signs the host alone: the broker port does not change the payload', async () => {
    expect(text((await firstMessage(c, c.timeMs!, 9098))!)).toBe(text((await firstMessage(c, c.timeMs!, 9198))!))
  })

  it('fetches credentials and reads the clock on every authentication', async () => {
    let calls = 0
    let t = Date.UTC(2025, 5, 1)
    const mech = awsMskIam({
      region: 'us-east-1',
      credentials: async () => ({ accessKeyId: `AKID${++calls}`, secretAccessKey: SECRET }),
      now: () => t,
    })
    expect(mech.name).toBe('AWS_MSK_IAM')
    const a = JSON.parse(text((await mech.begin({ host: US_EAST_1, port: 9098 }).respond(null))!)) as Record<string, string>
    t += 60 * 60 * 1000
    const b = JSON.parse(text((await mech.begin({ host: US_EAST_1, port: 9098 }).respond(null))!)) as Record<string, string>
    expect(calls).toBe(2)
    expect([a['x-amz-credential']!.split('/')[0], b['x-amz-credential']!.split('/')[0]]).toEqual(['AKID1', 'AKID2'])
    expect([a['x-amz-date'], b['x-amz-date']]).toEqual(['20250601T000000Z', '20250601T010000Z'])
    expect(a['user-agent']).toBe('kafka-edge')
  })
})

describe('AWS_MSK_IAM exchange', () => {
  const mech = awsMskIam({ region: 'us-east-1', credentials: () => ({ accessKeyId: AKID, secretAccessKey: SECRET }), now: () => 0 })
  const started = async () => {
    const x = mech.begin({ host: US_EAST_1, port: 9098 })
    await x.respond(null)
    return x
  }

  it('completes on the broker\'s version/request-id answer', async () => {
    const x = await started()
    expect(await x.respond(bytes('{"version":"2020_10_22","request-id":"c1f8e3a2-0b5d-4e1b-9b59-3c1a7f9e2d10"}'))).toBeNull()
    await expect(x.respond(bytes('{}'))).rejects.toThrow(/already complete/)
  })

  it.each([
    ['no bytes', null, /response is empty/],
    ['empty bytes', new Uint8Array(0), /response is empty/],
    ['not JSON', bytes('Authentication failed'), /not UTF-8 JSON/],
    ['not UTF-8', new Uint8Array([0x7b, 0xff, 0x7d]), /not UTF-8 JSON/],
    ['a JSON array', bytes('["2020_10_22"]'), /not a JSON object/],
    ['another version', bytes('{"version":"2021_01_01","request-id":"x"}'), /version "2021_01_01"/],
    ['no version', bytes('{"request-id":"x"}'), /version undefined/],
    ['a numeric request-id', bytes('{"version":"2020_10_22","request-id":5}'), /request-id is not a string/],
  ])('rejects a server answer with %s', async (_, answer, message) => {
    const x = await started()
    const err = await x.respond(answer).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(SaslAuthenticationException)
    expect(err).toBeInstanceOf(KafkaEdgeError)
    expect((err as Error).name).toBe('SaslAuthenticationException')
    expect((err as Error).message).toMatch(message)
  })

  it('expects to speak first', async () => {
    await expect(mech.begin({ host: US_EAST_1, port: 9098 }).respond(bytes('{}'))).rejects.toThrow(SaslAuthenticationException)
  })

  it('reports a failing or empty credentials provider as an authentication failure', async () => {
    const boom = new Error('STS unreachable')
    const failing = awsMskIam({ region: 'us-east-1', credentials: () => Promise.reject(boom) })
    const err = await failing.begin({ host: US_EAST_1, port: 9098 }).respond(null).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(SaslAuthenticationException)
    expect((err as Error).message).toMatch(/STS unreachable/)
    expect((err as Error).cause).toBe(boom)
    const empty = awsMskIam({ region: 'us-east-1', credentials: () => ({ accessKeyId: ' ', secretAccessKey: SECRET }) })
    await expect(empty.begin({ host: US_EAST_1, port: 9098 }).respond(null)).rejects.toThrow(/no accessKeyId/)
  })

  it('rejects options it cannot sign with', () => {
    expect(() => awsMskIam({ region: '', credentials: () => ({ accessKeyId: AKID, secretAccessKey: SECRET }) })).toThrow(ConfigException)
    expect(() => awsMskIam({ region: 'us-east-1', credentials: undefined as never })).toThrow(ConfigException)
  })
})

// aws-msk-iam-auth 2.3.6's payload for CASES[0], from MskIamPayload.java: a known answer that holds
// without a JVM.
const GOLDEN_SESSION_TOKEN_US_EAST_1 = '{"x-amz-date":"20240229T235959Z","x-amz-signedheaders":"host","x-amz-signature":"3d2d4769125b932d8bd4679d230ce09ade561f570f7af08156dfffbc350838bb","host":"b-1.demo-cluster.abc123.c2.kafka.us-east-1.amazonaws.com","action":"kafka-cluster:Connect","x-amz-expires":"900","x-amz-security-token":"IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD+abc/def+ghi==","version":"2020_10_22","x-amz-algorithm":"AWS4-HMAC-SHA256","x-amz-credential":"AKIAIOSFODNN7EXAMPLE/20240229/us-east-1/kafka-cluster/aws4_request","user-agent":"kafka-edge-test"}'
