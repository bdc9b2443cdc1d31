import { describe, expect, it } from 'vitest'
import { authenticate, oauthBearer, parseJaasConfig, plain, reauthenticationDelay, type SaslCall } from '../../src/edge/auth/sasl.js'
import { scram } from '../../src/edge/auth/scram.js'
import { ConfigException, IllegalSaslStateException, SaslAuthenticationException, UnsupportedSaslMechanismException } from '../../src/edge/errors.js'
import { parseConfig } from '../../src/edge/producer/config.js'
import '../../src/edge/producer/install.js'
import type { ApiSchema, Message } from '../../src/edge/protocol/index.js'
import { cloudflareSockets } from '../../src/edge/transport/cloudflare-sockets.js'
import { tcp } from '../../src/edge/transport/node-tcp.js'
import { websocket } from '../../src/edge/transport/websocket.js'

const text = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b))
const bytes = (s: string) => new TextEncoder().encode(s)
const target = { host: 'b1.example', port: 9096 }

// RFC 7677 section 3: the SCRAM-SHA-256 example exchange.
const RFC7677 = {
  nonce: 'rOprNGfwEbeRWgbNEkqO',
  serverFirst: 'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096',
  clientFinal: 'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=',
  serverFinal: 'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=',
}

describe('SCRAM', () => {
  const rfcExchange = () => scram({ hash: 'SHA-256', username: 'user', password: 'pencil', nonce: RFC7677.nonce }).begin(target)

  it('SCRAM-SHA-256 matches the RFC 7677 exchange and verifies the server signature', async () => {
    const x = rfcExchange()
    expect(text(await x.respond(null))).toBe('n,,n=user,r=rOprNGfwEbeRWgbNEkqO')
    expect(text(await x.respond(bytes(RFC7677.serverFirst)))).toBe(RFC7677.clientFinal)
    expect(await x.respond(bytes(RFC7677.serverFinal))).toBeNull()
  })

  it('a server that cannot prove it knows the credential is refused', async () => {
    const x = rfcExchange()
    await x.respond(null)
    await x.respond(bytes(RFC7677.serverFirst))
    await expect(x.respond(bytes('v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4='))).rejects.toThrow(SaslAuthenticationException)
  })

  it('a server nonce that does not extend ours, or an iteration count outside 4096..16384, is refused', async () => {
    const first = async (serverFirst: string) => { const x = rfcExchange(); await x.respond(null); return x.respond(bytes(serverFirst)) }
    await expect(first('r=somebodyElse123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096')).rejects.toThrow(/nonce/)
    await expect(first(`r=${RFC7677.nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096`)).rejects.toThrow(/nonce/)
    await expect(first('r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1')).rejects.toThrow(/iteration count 1/)
    await expect(first('r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=100000000')).rejects.toThrow(/iteration count/)
    await expect(first('e=unknown-user')).rejects.toThrow(/unknown-user/)
  })

  it('escapes = and , in the user name and sends the password bytes unnormalised, as Kafka derives them', async () => {
    const x = scram({ hash: 'SHA-512', username: 'a=b,c', password: 'ﬁ', nonce: 'abc' }).begin(target)
    expect(text(await x.respond(null))).toBe('n,,n=a=3Db=2Cc,r=abc')
  })
})

describe('PLAIN and OAUTHBEARER', () => {
  it('PLAIN sends authzid-less credentials once', async () => {
    const x = plain({ username: 'alice', password: 's3cret' }).begin(target)
    expect(text(await x.respond(null))).toBe('\0alice\0s3cret')
    expect(await x.respond(new Uint8Array(0))).toBeNull()
  })

  it('OAUTHBEARER sends the RFC 7628 client response with extensions, and reuses the token for 80% of its life', async () => {
    let now = 1000
    let calls = 0
    const m = oauthBearer({ tokenProvider: async () => ({ token: `tok${++calls}`, lifetimeMs: 10_000 }), extensions: { logicalCluster: 'lkc-1', identityPoolId: 'pool-2' }, now: () => now })
    expect(text(await m.begin(target).respond(null))).toBe('n,,\x01auth=Bearer tok1\x01logicalCluster=lkc-1\x01identityPoolId=pool-2\x01\x01')
    now += 7_999
    expect(text(await m.begin(target).respond(null))).toContain('Bearer tok1')
    now += 2
    expect(text(await m.begin(target).respond(null))).toContain('Bearer tok2')
  })

  it('OAUTHBEARER answers a server error with 0x01 and reports the server JSON', async () => {
    const x = oauthBearer({ tokenProvider: () => ({ token: 't', lifetimeMs: 60_000 }) }).begin(target)
    await x.respond(null)
    expect(Array.from((await x.respond(bytes('{"status":"invalid_token"}')))!)).toEqual([1])
    await expect(x.respond(new Uint8Array(0))).rejects.toThrow(/invalid_token/)
  })

  it('OAUTHBEARER refuses reserved or malformed extension names, and a provider that fails is named', async () => {
    expect(() => oauthBearer({ tokenProvider: () => ({ token: 't', lifetimeMs: 1 }), extensions: { auth: 'x' } })).toThrow(SaslAuthenticationException)
    expect(() => oauthBearer({ tokenProvider: () => ({ token: 't', lifetimeMs: 1 }), extensions: { 'bad-key': 'x' } })).toThrow(SaslAuthenticationException)
    const x = oauthBearer({ tokenProvider: async () => { throw new Error('IdP down') } }).begin(target)
    await expect(x.respond(null)).rejects.toThrow(/token.provider failed: IdP down/)
  })
})

describe('the SaslHandshake / SaslAuthenticate driver', () => {
  const broker = (answers: Message[]): { call: SaslCall; sent: Array<{ api: string; body: Message }> } => {
    const sent: Array<{ api: string; body: Message }> = []
    // A decoded response has every field; the fake fills the ones an answer leaves out with their defaults.
    const call = (async (api: ApiSchema, body: Message) => {
      sent.push({ api: api.name, body })
      return { errorMessage: null, authBytes: new Uint8Array(0), sessionLifetimeMs: 0n, mechanisms: [], ...answers.shift()! }
    }) as SaslCall
    return { sent, call }
  }

  it('runs the handshake, every round, and returns the session lifetime', async () => {
    const b = broker([
      { errorCode: 0, mechanisms: ['PLAIN'] },
      { errorCode: 0, errorMessage: null, authBytes: new Uint8Array(0), sessionLifetimeMs: 3_600_000n },
    ])
    const session = await authenticate(plain({ username: 'u', password: 'p' }), target, b.call)
    expect(session.lifetimeMs).toBe(3_600_000)
    expect(b.sent.map((s) => s.api)).toEqual(['SaslHandshake', 'SaslAuthenticate'])
    expect(b.sent[0]!.body).toEqual({ mechanism: 'PLAIN' })
  })

  it('names what the broker offers when the mechanism is not enabled', async () => {
    const b = broker([{ errorCode: 33, mechanisms: ['SCRAM-SHA-512', 'OAUTHBEARER'] }])
    const err = await authenticate(plain({ username: 'u', password: 'p' }), target, b.call).catch((e) => e)
    expect(err).toBeInstanceOf(UnsupportedSaslMechanismException)
    expect(err.message).toMatch(/PLAIN.*SCRAM-SHA-512, OAUTHBEARER/)
  })

  it('a handshake the listener does not expect says to check security.protocol', async () => {
    const err = await authenticate(plain({ username: 'u', password: 'p' }), target, broker([{ errorCode: 34, mechanisms: [] }]).call).catch((e) => e)
    expect(err).toBeInstanceOf(IllegalSaslStateException)
    expect(err.message).toMatch(/security.protocol/)
  })

  it("a refused credential carries the broker's message and is not retriable", async () => {
    const b = broker([{ errorCode: 0, mechanisms: ['PLAIN'] }, { errorCode: 58, errorMessage: 'Authentication failed: Invalid username or password', authBytes: new Uint8Array(0), sessionLifetimeMs: 0n }])
    const err = await authenticate(plain({ username: 'u', password: 'wrong' }), target, b.call).catch((e) => e)
    expect(err).toBeInstanceOf(SaslAuthenticationException)
    expect(err.retriable).toBe(false)
    expect(err.message).toContain('Invalid username or password')
    expect(err.message).toContain('b1.example:9096')
  })

  it('re-authenticates between 85% and 95% of the session lifetime', () => {
    expect(reauthenticationDelay(10_000, () => 0)).toBe(8_500)
    expect(reauthenticationDelay(10_000, () => 0.999999)).toBe(9_499)
  })
})

describe('sasl.jaas.config', () => {
  it('parses quoted and unquoted options with escapes', () => {
    expect(parseJaasConfig('org.apache.kafka.common.security.plain.PlainLoginModule required username="al\\"ice" password=p4ss;')).toEqual({
      loginModule: 'org.apache.kafka.common.security.plain.PlainLoginModule', options: { username: 'al"ice', password: 'p4ss' },
    })
    expect(() => parseJaasConfig('username="x"')).toThrow()
  })
})

describe('security settings', () => {
  const base = { 'bootstrap.servers': 'b:9093', transport: tcp() }
  const cfg = (extra: Record<string, unknown>) => parseConfig({ ...base, ...extra })
  const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'

  it('maps the Java names onto TLS settings and a SASL mechanism', () => {
    const c = cfg({ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'SCRAM-SHA-512', 'sasl.jaas.config': 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";', 'ssl.ca.pem': PEM })
    expect(c.security.protocol).toBe('SASL_SSL')
    expect(c.security.tls).toEqual({ ca: PEM, verifyHostname: true })
    expect(c.security.sasl?.name).toBe('SCRAM-SHA-512')
    expect(cfg({}).security).toEqual({ protocol: 'PLAINTEXT', tls: null, sasl: null })
    expect(cfg({ 'security.protocol': 'SSL', 'ssl.endpoint.identification.algorithm': '' }).security.tls).toEqual({ verifyHostname: false })
  })

  it.each([
    [{ 'sasl.mechanism': 'PLAIN' }, /security.protocol is PLAINTEXT.*SASL_PLAINTEXT/],
    [{ 'ssl.ca.pem': PEM }, /security.protocol is PLAINTEXT.*SSL/],
    [{ 'security.protocol': 'SASL_SSL' }, /sasl.mechanism is required/],
    [{ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'GSSAPI' }, /must be one of/],
    [{ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'PLAIN' }, /needs sasl.username and sasl.password/],
    [{ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'PLAIN', 'sasl.jaas.config': 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";' }, /needs org.apache.kafka.common.security.plain.PlainLoginModule/],
    [{ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'OAUTHBEARER', 'sasl.username': 'u' }, /does not apply to sasl.mechanism OAUTHBEARER/],
    [{ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'OAUTHBEARER' }, /token.provider/],
    [{ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'AWS_MSK_IAM', 'sasl.aws.region': 'eu-west-1' }, /credentials.provider/],
    [{ 'security.protocol': 'SSL', 'ssl.ca.pem': '/etc/ssl/ca.pem' }, /PEM text.*not a file name/],
    [{ 'security.protocol': 'SSL', 'ssl.certificate.pem': PEM }, /go together/],
    [{ 'security.protocol': 'TLS' }, /must be one of/],
  ])('%j is a ConfigException that says what to change', (extra, message) => {
    expect(() => cfg(extra)).toThrow(ConfigException)
    expect(() => cfg(extra)).toThrow(message)
  })

  it('TLS options a transport cannot honour are refused at construction', () => {
    const cf = { 'bootstrap.servers': 'b:9093', transport: cloudflareSockets({ connect: () => { throw new Error('unused') } }) }
    expect(parseConfig({ ...cf, 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'PLAIN', 'sasl.username': 'u', 'sasl.password': 'p' }).security.tls).toEqual({ verifyHostname: true })
    expect(() => parseConfig({ ...cf, 'security.protocol': 'SSL', 'ssl.ca.pem': PEM })).toThrow(/own trust store.*ssl.ca.pem.*NODE_EXTRA_CA_CERTS/)
    const ws = { 'bootstrap.servers': 'relay:443', transport: websocket({ url: 'wss://relay.example/kafka', token: 't' }) }
    expect(() => parseConfig({ ...ws, 'security.protocol': 'SSL' })).toThrow(/relay/)
    expect(() => parseConfig({ ...ws, 'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanism': 'PLAIN', 'sasl.username': 'u', 'sasl.password': 'p' })).toThrow(/credentials stay on the relay/)
  })
})
