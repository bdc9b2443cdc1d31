// The relay's upstream security settings: every bad value or combination stops start-up with a
// BridgeConfigError that says what to change; good ones resolve to what openUpstream uses.
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { BridgeConfigError, resolveConfig, type BridgeConfig } from '../../src/bridge/config.js'
import { makePki, type Pki } from '../helpers/pki.js'

const SECRET = 'unit-secret-0123456789-abcdefghijklmnop'
let pki: Pki
let dir: string
beforeAll(() => {
  pki = makePki()
  dir = mkdtempSync(path.join(tmpdir(), 'kafka-edge-bridge-config-'))
})

const b64url = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url')
const jwt = (expSec: number) => `${b64url({ alg: 'none' })}.${b64url({ sub: 'relay', iat: expSec - 3600, exp: expSec })}.`
const file = (name: string, text: string) => { const f = path.join(dir, name); writeFileSync(f, text); return f }

function cfg(extra: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): BridgeConfig {
  return resolveConfig({ brokers: ['kafka-1:9093'], auth: { secret: SECRET }, ...extra }, env)
}
/** The BridgeConfigError message for a config, failing the test when it resolves. */
function refused(extra: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): string {
  try { cfg(extra, env) } catch (e) {
    expect(e).toBeInstanceOf(BridgeConfigError)
    return (e as Error).message
  }
  throw new Error(`config resolved: ${JSON.stringify(extra)}`)
}

describe('upstream tls', () => {
  it('absent or false: plaintext to the brokers; true or {}: TLS with the default trust store and hostname checks', () => {
    expect(cfg({}).tls).toBeNull()
    expect(cfg({ tls: false }).tls).toBeNull()
    expect(cfg({ tls: true }).tls).toEqual({ verifyHostname: true })
    expect(cfg({ tls: {} }).tls).toEqual({ verifyHostname: true })
  })

  it('PEM from files (read at start-up) or inline text; client certificate and key; servername', () => {
    const fromFiles = cfg({ tls: { caFile: pki.files.ca, certFile: pki.files.clientCert, keyFile: pki.files.clientKey, servername: 'Kafka.Internal' } }).tls!
    expect(fromFiles).toEqual({ ca: pki.pem.ca, cert: pki.pem.clientCert, key: pki.pem.clientKey, servername: 'kafka.internal', verifyHostname: true })
    const inline = cfg({ tls: { ca: pki.pem.ca, cert: pki.pem.clientCert, key: pki.pem.clientKey, verifyHostname: false } }).tls!
    expect(inline).toEqual({ ca: pki.pem.ca, cert: pki.pem.clientCert, key: pki.pem.clientKey, verifyHostname: false })
    // SNI still matters without hostname checks (listeners behind an SNI-routing proxy)
    expect(cfg({ tls: { servername: 'b-1.kafka.internal', verifyHostname: false } }).tls).toEqual({ servername: 'b-1.kafka.internal', verifyHostname: false })
    // a CA bundle (several certificates) is one ca setting
    expect(cfg({ tls: { ca: pki.pem.ca + pki.pem.otherCa } }).tls!.ca).toContain(pki.pem.otherCa.trim())
  })

  it.each([
    ['not an object', { tls: 'yes' }, /tls must be an object/],
    ['an unknown key (typo)', { tls: { cafile: 'x' } }, /unknown setting tls\.cafile \(known: ca, caFile/],
    ['ca and caFile together', () => ({ tls: { ca: pki.pem.ca, caFile: pki.files.ca } }), /set tls\.ca \(PEM text\) or tls\.caFile \(a path\), not both/],
    ['a missing caFile', () => ({ tls: { caFile: path.join(dir, 'nope.pem') } }), /cannot read tls\.caFile .*nope\.pem: ENOENT/],
    ['a caFile that is a directory', () => ({ tls: { caFile: dir } }), /cannot read tls\.caFile .*: EISDIR/],
    ['a caFile without PEM', () => ({ tls: { caFile: file('junk.pem', 'hello') } }), /tls\.caFile .*junk\.pem is not PEM/],
    ['a path given as ca', () => ({ tls: { ca: pki.files.ca } }), /tls\.ca must be PEM text .*use tls\.caFile/],
    ['ca not a string', { tls: { ca: 42 } }, /tls\.ca must be PEM text/],
    ['an empty caFile path', { tls: { caFile: '' } }, /tls\.caFile must be a file path/],
    ['a ca PEM that is not a certificate', { tls: { ca: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' } }, /tls\.ca does not hold a readable certificate/],
    ['a key as caFile', () => ({ tls: { caFile: pki.files.clientKey } }), /tls\.caFile does not hold a readable certificate/],
    ['cert without key', () => ({ tls: { certFile: pki.files.clientCert } }), /tls\.cert\(File\) and tls\.key\(File\) go together/],
    ['key without cert', () => ({ tls: { keyFile: pki.files.clientKey } }), /go together \(mutual TLS\): set both or neither/],
    ['a key that is not the certificate\'s', () => ({ tls: { certFile: pki.files.clientCert, keyFile: pki.files.otherKey } }), /tls\.key\(File\) is not the private key of tls\.cert\(File\)/],
    ['a certificate as keyFile', () => ({ tls: { certFile: pki.files.clientCert, keyFile: pki.files.ca } }), /tls\.keyFile is not an unencrypted PEM private key/],
    ['a key as certFile', () => ({ tls: { certFile: pki.files.clientKey, keyFile: pki.files.clientKey } }), /tls\.certFile does not hold a readable certificate/],
    ['an IP as servername', { tls: { servername: '10.0.0.1' } }, /tls\.servername must be a DNS name/],
    ['a servername with a port', { tls: { servername: 'kafka:9093' } }, /tls\.servername must be a DNS name/],
    ['verifyHostname as a string', { tls: { verifyHostname: 'false' } }, /tls\.verifyHostname must be true or false/],
    ['a wildcard servername', { tls: { servername: '*.kafka.internal' } }, /tls\.servername must be a DNS name/],
  ] as Array<[string, Record<string, unknown> | (() => Record<string, unknown>), RegExp]>)('refused: %s', (_name, input, message) => {
    expect(refused(typeof input === 'function' ? input() : input)).toMatch(message)
  })

  it('an unreadable caFile is refused at start-up', () => {
    if (process.getuid?.() === 0) return // root reads anything
    const f = file('locked.pem', pki.pem.ca)
    chmodSync(f, 0o000)
    expect(refused({ tls: { caFile: f } })).toMatch(/cannot read tls\.caFile .*locked\.pem: EACCES/)
  })
})

describe('upstream sasl', () => {
  it('PLAIN / SCRAM from the config or the environment; SCRAM-SHA-512 is the default', () => {
    expect(cfg({ sasl: { username: 'relay', password: 'p' } }).sasl).toEqual({ mechanism: 'SCRAM-SHA-512', username: 'relay', password: 'p' })
    expect(cfg({ sasl: { mechanism: 'plain', usernameEnv: 'U', passwordEnv: 'P' } }, { U: 'relay', P: 'from-env' }).sasl).toEqual({ mechanism: 'PLAIN', username: 'relay', password: 'from-env' })
  })

  it('OAUTHBEARER from a token file, an environment variable, or a client-credentials endpoint, with extensions', () => {
    const tokenFile = file('token.jwt', `${jwt(Math.floor(Date.now() / 1000) + 3600)}\n`)
    expect(cfg({ sasl: { mechanism: 'OAUTHBEARER', tokenFile, extensions: { logicalCluster: 'lkc-1', identityPoolId: 'pool-2' } } }).sasl)
      .toEqual({ mechanism: 'OAUTHBEARER', token: { kind: 'file', path: tokenFile }, extensions: { logicalCluster: 'lkc-1', identityPoolId: 'pool-2' } })
    const env = { KAFKA_TOKEN: 'opaque-token' }
    expect(cfg({ sasl: { mechanism: 'OAUTHBEARER', tokenEnv: 'KAFKA_TOKEN' } }, env).sasl).toEqual({ mechanism: 'OAUTHBEARER', token: { kind: 'env', name: 'KAFKA_TOKEN', env }, extensions: {} })
    expect(cfg({ sasl: { mechanism: 'OAUTHBEARER', tokenEndpointUrl: 'https://idp.example/oauth2/token', clientId: 'relay', clientSecretEnv: 'S', scope: 'kafka' } }, { S: 'shh' }).sasl).toEqual({
      mechanism: 'OAUTHBEARER', extensions: {},
      token: { kind: 'clientCredentials', tokenEndpointUrl: 'https://idp.example/oauth2/token', clientId: 'relay', clientSecret: 'shh', scope: 'kafka' },
    })
    // http is fine to a token server on the same host
    expect(cfg({ sasl: { mechanism: 'OAUTHBEARER', tokenEndpointUrl: 'http://127.0.0.1:8099/token', clientId: 'a', clientSecret: 'b' } }).sasl).toMatchObject({ token: { scope: null } })
  })

  it('AWS_MSK_IAM needs a region, TLS and the standard credential variables', () => {
    const env = { AWS_ACCESS_KEY_ID: 'AKIA', AWS_SECRET_ACCESS_KEY: 'secret' }
    expect(cfg({ tls: {}, sasl: { mechanism: 'AWS_MSK_IAM', region: 'eu-west-1' } }, env).sasl).toEqual({ mechanism: 'AWS_MSK_IAM', region: 'eu-west-1', env })
  })

  const future = () => jwt(Math.floor(Date.now() / 1000) + 3600)
  it.each([
    ['sasl not an object', { sasl: 'PLAIN' }, {}, /sasl must be an object/],
    ['an unknown mechanism', { sasl: { mechanism: 'GSSAPI', username: 'a', password: 'b' } }, {}, /sasl\.mechanism must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, AWS_MSK_IAM, got GSSAPI/],
    ['an unknown key (typo)', { sasl: { mechanism: 'PLAIN', username: 'a', pasword: 'b' } }, {}, /unknown setting sasl\.pasword/],
    ['an OAUTHBEARER key with PLAIN', () => ({ sasl: { mechanism: 'PLAIN', username: 'a', password: 'b', tokenFile: 'x' } }), {}, /sasl\.tokenFile does not apply to sasl\.mechanism PLAIN; remove it/],
    ['OAUTHBEARER keys under the default mechanism', { sasl: { tokenEnv: 'T', extensions: {} } }, {}, /sasl\.tokenEnv, sasl\.extensions do not apply to sasl\.mechanism SCRAM-SHA-512 \(the default; set sasl\.mechanism/],
    ['a username with AWS_MSK_IAM', { tls: {}, sasl: { mechanism: 'AWS_MSK_IAM', region: 'us-east-1', username: 'x' } }, { AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b' }, /sasl\.username does not apply to sasl\.mechanism AWS_MSK_IAM/],
    ['PLAIN without a password', { sasl: { mechanism: 'PLAIN', username: 'a' } }, {}, /sasl\.mechanism PLAIN needs sasl\.username and sasl\.password \(or sasl\.usernameEnv \/ sasl\.passwordEnv\)/],
    ['SCRAM without a username', { sasl: { mechanism: 'SCRAM-SHA-256', password: 'b' } }, {}, /needs sasl\.username and sasl\.password/],
    ['password and passwordEnv together', { sasl: { username: 'a', password: 'b', passwordEnv: 'P' } }, { P: 'c' }, /set sasl\.password or sasl\.passwordEnv, not both/],
    ['an unset passwordEnv', { sasl: { username: 'a', passwordEnv: 'NOPE' } }, {}, /environment variable NOPE \(sasl\.passwordEnv\) is not set/],
    ['a password that is not a string', { sasl: { username: 'a', password: 5 } }, {}, /sasl\.password must be a string/],
    ['OAUTHBEARER without a token source', { sasl: { mechanism: 'OAUTHBEARER' } }, {}, /OAUTHBEARER needs exactly one token source: sasl\.tokenFile .*, sasl\.tokenEnv .* or sasl\.tokenEndpointUrl/],
    ['two token sources', { sasl: { mechanism: 'OAUTHBEARER', tokenEnv: 'T', tokenEndpointUrl: 'https://idp/t' } }, { T: 'x' }, /exactly one token source.*got sasl\.tokenEnv and sasl\.tokenEndpointUrl/],
    ['client credentials with a token file', () => ({ sasl: { mechanism: 'OAUTHBEARER', tokenFile: file('t1', future()), clientId: 'a', scope: 's' } }), {}, /sasl\.clientId, sasl\.scope only apply with sasl\.tokenEndpointUrl/],
    ['a missing token file', () => ({ sasl: { mechanism: 'OAUTHBEARER', tokenFile: path.join(dir, 'missing.jwt') } }), {}, /cannot read sasl\.tokenFile .*missing\.jwt: ENOENT/],
    ['an empty token file', () => ({ sasl: { mechanism: 'OAUTHBEARER', tokenFile: file('empty.jwt', '\n') } }), {}, /sasl\.tokenFile .*empty\.jwt is empty/],
    ['an expired JWT in the token file', () => ({ sasl: { mechanism: 'OAUTHBEARER', tokenFile: file('old.jwt', jwt(1_600_000_000)) } }), {}, /the token in sasl\.tokenFile .*old\.jwt expired at 2020-09-13T12:26:40\.000Z/],
    ['an unset tokenEnv', { sasl: { mechanism: 'OAUTHBEARER', tokenEnv: 'NOPE' } }, {}, /environment variable NOPE \(sasl\.tokenEnv\) is not set/],
    ['an empty tokenEnv name', { sasl: { mechanism: 'OAUTHBEARER', tokenEnv: '' } }, {}, /sasl\.tokenEnv must name an environment variable/],
    ['a token endpoint that is not a URL', { sasl: { mechanism: 'OAUTHBEARER', tokenEndpointUrl: 'idp/token', clientId: 'a', clientSecret: 'b' } }, {}, /sasl\.tokenEndpointUrl must be a URL/],
    ['an http token endpoint on another host', { sasl: { mechanism: 'OAUTHBEARER', tokenEndpointUrl: 'http://idp.example/token', clientId: 'a', clientSecret: 'b' } }, {}, /must be https:\/\/ .*localhost only/],
    ['a token endpoint without a client secret', { sasl: { mechanism: 'OAUTHBEARER', tokenEndpointUrl: 'https://idp/t', clientId: 'a' } }, {}, /needs sasl\.clientId and sasl\.clientSecret/],
    ['an unset clientSecretEnv', { sasl: { mechanism: 'OAUTHBEARER', tokenEndpointUrl: 'https://idp/t', clientId: 'a', clientSecretEnv: 'S' } }, {}, /environment variable S \(sasl\.clientSecretEnv\) is not set/],
    ['a scope list instead of a string', { sasl: { mechanism: 'OAUTHBEARER', tokenEndpointUrl: 'https://idp/t', clientId: 'a', clientSecret: 'b', scope: ['a', 'b'] } }, {}, /sasl\.scope must be a string \(space-separated scopes\)/],
    ['extensions not an object', { sasl: { mechanism: 'OAUTHBEARER', tokenEnv: 'T', extensions: 'a=b' } }, { T: 'x' }, /sasl\.extensions must be an object/],
    ['an extension value that is not a string', { sasl: { mechanism: 'OAUTHBEARER', tokenEnv: 'T', extensions: { n: 1 } } }, { T: 'x' }, /sasl\.extensions\.n must be a string/],
    ['the reserved extension name auth', { sasl: { mechanism: 'OAUTHBEARER', tokenEnv: 'T', extensions: { auth: 'x' } } }, { T: 'x' }, /sasl\.extensions: .*"auth"/],
    ['an extension name with digits', { sasl: { mechanism: 'OAUTHBEARER', tokenEnv: 'T', extensions: { pool1: 'x' } } }, { T: 'x' }, /sasl\.extensions: OAUTHBEARER extension name "pool1" is invalid/],
    ['an extension value with a control character', { sasl: { mechanism: 'OAUTHBEARER', tokenEnv: 'T', extensions: { pool: 'a\u0001b' } } }, { T: 'x' }, /sasl\.extensions: .*pool has a value/],
    ['AWS_MSK_IAM without a region', { tls: {}, sasl: { mechanism: 'AWS_MSK_IAM' } }, { AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b' }, /AWS_MSK_IAM needs sasl\.region, the cluster's AWS region such as "us-east-1"$/],
    ['AWS_MSK_IAM with a malformed region', { tls: {}, sasl: { mechanism: 'AWS_MSK_IAM', region: 'Frankfurt' } }, { AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b' }, /needs sasl\.region.*got "Frankfurt"/],
    ['AWS_MSK_IAM without tls', { sasl: { mechanism: 'AWS_MSK_IAM', region: 'us-east-1' } }, { AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b' }, /AWS_MSK_IAM needs a tls section: .*Add "tls": \{\}/],
    ['AWS_MSK_IAM without credentials in the environment', { tls: {}, sasl: { mechanism: 'AWS_MSK_IAM', region: 'us-east-1' } }, { AWS_ACCESS_KEY_ID: 'a' }, /AWS_SECRET_ACCESS_KEY is not set in the relay's environment/],
    ['AWS_MSK_IAM with no credential variable at all', { tls: {}, sasl: { mechanism: 'AWS_MSK_IAM', region: 'us-east-1' } }, {}, /AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set/],
  ] as Array<[string, Record<string, unknown> | (() => Record<string, unknown>), NodeJS.ProcessEnv, RegExp]>)('refused: %s', (_name, input, env, message) => {
    expect(refused(typeof input === 'function' ? input() : input, env)).toMatch(message)
  })

  it('a secret given twice (auth.secret and auth.secretEnv) is refused', () => {
    expect(() => resolveConfig({ brokers: ['k:1'], auth: { secret: SECRET, secretEnv: 'S' } }, { S: SECRET })).toThrow(/set auth\.secret or auth\.secretEnv, not both/)
  })
})

describe('relay identity settings (issue 12)', () => {
  it('listenTls: a certificate and its key, from files or PEM; a mismatched or missing half stops start-up', () => {
    expect(cfg({ listenTls: { certFile: pki.files.serverCert, keyFile: pki.files.serverKey } }).listenTls).toEqual({ cert: pki.pem.serverCert, key: pki.pem.serverKey })
    expect(refused({ listenTls: { certFile: pki.files.serverCert, keyFile: pki.files.clientKey } })).toMatch(/not the private key/)
    expect(refused({ listenTls: { certFile: pki.files.serverCert } })).toMatch(/--tls-cert and --tls-key/)
    expect(refused({ listenTls: { cert: 'not pem', key: pki.pem.serverKey } })).toMatch(/listenTls.cert must be PEM/)
    expect(cfg({}).listenTls).toBeNull()
  })

  it('auth: a JWKS URL or file instead of (or beside) the HS256 secret; algorithms, ticket keys checked', () => {
    const jwks = file('jwks.json', JSON.stringify({ keys: [] }))
    const noSecret = (auth: Record<string, unknown>) => resolveConfig({ brokers: ['k:1'], auth }, {})
    expect(noSecret({ jwksFile: jwks }).auth).toMatchObject({ secrets: [], jwksFile: jwks, algorithms: ['RS256', 'ES256', 'EdDSA'] })
    expect(noSecret({ jwksUrl: 'https://idp.example/jwks.json', algorithms: ['ES384'] }).auth.algorithms).toEqual(['ES384'])
    expect(() => noSecret({})).toThrow(/auth.jwksUrl or auth.jwksFile is required/)
    expect(refused({ auth: { secret: SECRET, jwksUrl: 'http://idp.example/jwks.json' } })).toMatch(/https/)
    expect(refused({ auth: { secret: SECRET, jwksUrl: 'https://a/j', jwksFile: jwks } })).toMatch(/not both/)
    expect(refused({ auth: { secret: SECRET, jwksFile: file('bad.json', '{"no":"keys"}') } })).toMatch(/not a JWKS/)
    expect(refused({ auth: { secret: SECRET, algorithms: ['HS256'] } })).toMatch(/HS256 is always accepted/)
    expect(refused({ auth: { secret: SECRET, algorithms: ['none'] } })).toMatch(/not one of/)
    expect(refused({ auth: { secret: SECRET, ticketSecret: 'short' } })).toMatch(/at least 32/)
    expect(cfg({ auth: { secret: SECRET, ticketSecretEnv: 'T' } }, { T: 't'.repeat(32) }).auth.ticketSecrets).toEqual(['t'.repeat(32)])
    expect(cfg({}).limits).toMatchObject({
      maxNamesPerRequest: 10_000, parseBudgetBytes: 32 * 1024 * 1024, initProducerIdsPerMinutePerPrincipal: 60, initProducerIdsPerMinutePerIp: 600,
    })
  })
})

describe('producer-id tickets', () => {
  it('verify with any listed key, carry the 64-bit id exactly, and refuse tampering, expiry and other keys', async () => {
    const { TicketKeys, ProducerIdBindings } = await import('../../src/bridge/tickets.js')
    const now = 1_800_000_000
    const old = new TicketKeys(['o'.repeat(32)])
    const rotated = new TicketKeys(['n'.repeat(32), 'o'.repeat(32)])
    const t = old.issue({ sub: 'alice', pid: 9_223_372_036_854_775_806n, epoch: 3, txn: 'shop-1', iat: now, exp: now + 60 })
    expect(t).toMatch(/^kpt1\.[\w-]+\.[\w-]+$/)
    expect(rotated.verify(t, now)).toEqual({ ok: true, ticket: { sub: 'alice', pid: 9_223_372_036_854_775_806n, epoch: 3, txn: 'shop-1', iat: now, exp: now + 60 } })
    expect(new TicketKeys(['n'.repeat(32)]).verify(t, now)).toMatchObject({ ok: false, reason: expect.stringMatching(/does not verify/) })
    expect(rotated.verify(t, now + 60)).toMatchObject({ ok: false, reason: expect.stringMatching(/expired/) })
    const [, payload, mac] = t.split('.')
    const other = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), sub: 'mallory' })).toString('base64url')
    expect(rotated.verify(`kpt1.${other}.${mac}`, now).ok).toBe(false)
    expect(rotated.verify('kpt1.x', now).ok).toBe(false)
    expect(rotated.verify('x'.repeat(5000), now).ok).toBe(false)
    // Bindings: per principal, several principals per id, oldest forgotten first.
    const b = new ProducerIdBindings(2)
    b.bind('a', 1n, 0); b.bind('b', 1n, 0)
    expect([b.holds('a', 1n), b.holds('b', 1n), b.holds('c', 1n)]).toEqual([true, true, false])
    b.bind('a', 2n, 0)
    expect([b.holds('a', 1n), b.holds('b', 1n), b.holds('a', 2n)]).toEqual([false, true, true])
  })
})

describe('registry (read-only lookups for pages)', () => {
  it('absent: null; URLs (a list), credentials from the environment, subjects and cache bounds with defaults', () => {
    expect(cfg({}).registry).toBeNull()
    expect(cfg({ registry: { url: ['https://sr-1:8081/', 'https://sr-2:8081'], userInfoEnv: 'SR', subjects: ['shop.*'] } }, { SR: 'k:s' }).registry).toEqual({
      urls: ['https://sr-1:8081', 'https://sr-2:8081'], userInfo: 'k:s', bearerToken: null, subjects: ['shop.*'], cacheTtlMs: 30_000, cacheMaxEntries: 1000, timeoutMs: 5000,
    })
    expect(cfg({ registry: { url: 'http://sr:8081', bearerToken: 't', cacheTtlMs: 0 } }).registry).toMatchObject({ bearerToken: 't', userInfo: null, cacheTtlMs: 0 })
  })

  it('a missing or bad URL, credentials in the URL, both kinds of credentials, or an unknown key stop start-up', () => {
    expect(refused({ registry: {} })).toMatch(/registry\.url must name/)
    expect(refused({ registry: { url: 'ftp://sr' } })).toMatch(/must be http/)
    expect(refused({ registry: { url: 'https://k:s@sr' } })).toMatch(/registry\.userInfo/)
    expect(refused({ registry: { url: 'https://sr', userInfo: 'k:s', bearerToken: 't' } })).toMatch(/not both/)
    expect(refused({ registry: { url: 'https://sr', userInfo: 'nocolon' } })).toMatch(/user:password/)
    expect(refused({ registry: { url: 'https://sr', ttl: 1 } })).toMatch(/unknown setting registry\.ttl/)
    expect(refused({ registry: { url: 'https://sr', cacheMaxEntries: 0 } })).toMatch(/cacheMaxEntries/)
  })
})
