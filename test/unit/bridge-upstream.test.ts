// The relay's upstream side without a broker: local TLS / TCP servers that speak just enough Kafka
// (ApiVersions v0, SaslHandshake, SaslAuthenticate) to check which versions the relay sends, how the
// shared transport's and SASL module's failures become UpstreamError kinds, and where the relay's
// own credentials (token file, token endpoint, AWS environment) come from.
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http'
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net'
import { createServer as createTlsServer } from 'node:tls'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { CloseCode, resolveConfig, startBridge, signToken, type BridgeConfig } from '../../src/bridge/index.js'
import { awsCredentialsFromEnv, saslMechanism, tokenProvider } from '../../src/bridge/credentials.js'
import { UpstreamError, openUpstream } from '../../src/bridge/upstream.js'
import { SaslAuthenticationException, SslAuthenticationException, UnsupportedSaslMechanismException } from '../../src/edge/errors.js'
import { ApiVersions, SaslAuthenticate, SaslHandshake, decodeRequest, encodeResponse, type Message } from '../../src/edge/protocol/index.js'
import { FrameDecoder } from '../../src/edge/protocol/frame-decoder.js'
import { makePki, type Pki } from '../helpers/pki.js'

const SECRET = 'unit-secret-0123456789-abcdefghijklmnop'
let pki: Pki
const servers: Array<NetServer | HttpServer> = []
beforeAll(() => { pki = makePki() })
const sockets = new Set<Socket>()
afterAll(async () => {
  const closed = Promise.all(servers.map((s) => new Promise((r) => s.close(r))))
  for (const s of sockets) s.destroy()
  await closed
})
/** Servers are tracked so that afterAll can end the connections a silent server holds open. */
function track<S extends NetServer | HttpServer>(server: S): S {
  servers.push(server)
  server.on('connection', (s: Socket) => { sockets.add(s); s.once('close', () => sockets.delete(s)) })
  return server
}

interface FakeBrokerOptions {
  tls?: { requestCert?: boolean }
  /** SaslAuthenticate max version in the ApiVersions answer */
  saslAuthenticateMax?: number
  mechanisms?: string[]
  /** answer to each SaslAuthenticate (default: accept, lifetime 0) */
  authenticate?: (authBytes: Uint8Array, version: number) => Message
  /** accept connections and never answer */
  silent?: boolean
}

interface FakeBroker { port: number; seen: Array<{ api: string; version: number; body: Message }> }

/** A broker that speaks only the relay's set-up requests. */
async function fakeBroker(o: FakeBrokerOptions = {}): Promise<FakeBroker> {
  const seen: FakeBroker['seen'] = []
  const onSocket = (socket: Socket) => {
    socket.on('error', () => {})
    if (o.silent) return
    const decoder = new FrameDecoder(1 << 20)
    socket.on('data', (chunk: Buffer) => {
      let frames: Uint8Array[]
      // Like Kafka: a size prefix beyond the request limit (a TLS ClientHello reads as ~369 MB) drops the connection.
      try { frames = decoder.push(chunk) } catch { return socket.destroy() }
      for (const f of frames) {
        const frame = new Uint8Array(f.length + 4)
        new DataView(frame.buffer).setInt32(0, f.length)
        frame.set(f, 4)
        const { header, api, body } = decodeRequest(frame)
        seen.push({ api: api!.name, version: header.apiVersion, body: body! })
        let res: Message
        if (api === ApiVersions) {
          res = { errorCode: 0, apiKeys: [
            { apiKey: 0, minVersion: 3, maxVersion: 12 }, { apiKey: 17, minVersion: 0, maxVersion: 1 },
            { apiKey: 18, minVersion: 0, maxVersion: 4 }, { apiKey: 36, minVersion: 0, maxVersion: o.saslAuthenticateMax ?? 2 },
          ] }
        } else if (api === SaslHandshake) {
          const mechanisms = o.mechanisms ?? ['PLAIN', 'SCRAM-SHA-512', 'OAUTHBEARER']
          res = { errorCode: mechanisms.includes(body!.mechanism as string) ? 0 : 33, mechanisms }
        } else if (api === SaslAuthenticate) {
          res = o.authenticate?.(body!.authBytes as Uint8Array, header.apiVersion) ?? { errorCode: 0, errorMessage: null, authBytes: new Uint8Array(0), sessionLifetimeMs: 0n }
        } else throw new Error(`unexpected ${api?.name}`)
        socket.write(encodeResponse(api!, header.apiVersion, header.correlationId, res))
      }
    })
  }
  const server = o.tls
    ? createTlsServer({
      cert: pki.pem.serverCert, key: pki.pem.serverKey, ca: pki.pem.ca, requestCert: o.tls.requestCert ?? false, rejectUnauthorized: o.tls.requestCert ?? false,
    }, onSocket)
    : createNetServer(onSocket)
  server.on('tlsClientError', () => {})
  track(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  return { port: (server.address() as { port: number }).port, seen }
}

function config(extra: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): BridgeConfig {
  return resolveConfig({ listen: '127.0.0.1:0', brokers: ['127.0.0.1:1'], auth: { secret: SECRET }, log: { level: 'silent' }, ...extra }, env)
}

async function upstreamFailure(port: number, cfg: BridgeConfig, timeoutMs = 3000): Promise<UpstreamError> {
  const e = await openUpstream({ host: '127.0.0.1', port }, cfg, timeoutMs, 1 << 20).then((u) => { u.socket.destroy(); throw new Error('connected') }, (e: unknown) => e)
  expect(e).toBeInstanceOf(UpstreamError)
  return e as UpstreamError
}

const PLAIN = { mechanism: 'PLAIN', username: 'relay', password: 'relay-secret' }

describe('TLS to the broker: the producer\'s dial(), failures as UpstreamError kind tls', () => {
  it('a CA that did not sign the broker certificate: kind tls, cause SslAuthenticationException(unknown CA), advice in relay terms', async () => {
    const b = await fakeBroker({ tls: {} })
    const e = await upstreamFailure(b.port, config({ tls: { caFile: pki.files.otherCa } }))
    expect(e.kind).toBe('tls')
    expect(e.cause).toBeInstanceOf(SslAuthenticationException)
    expect((e.cause as SslAuthenticationException).reason).toBe('unknown CA')
    expect((e.cause as SslAuthenticationException).host).toBe('127.0.0.1')
    expect(e.message).toMatch(/TLS to broker 127\.0\.0\.1:\d+ failed: unknown CA\. .*set tls\.caFile/)
  })

  it('the right CA connects; servername changes the name checked (and sent as SNI), not the address dialled', async () => {
    const b = await fakeBroker({ tls: {}, })
    const ok = await openUpstream({ host: '127.0.0.1', port: b.port }, config({ tls: { caFile: pki.files.ca, servername: 'localhost' }, sasl: PLAIN }), 3000, 1 << 20)
    expect(ok.socket.remoteAddress).toBe('127.0.0.1')
    ok.socket.destroy()
    const e = await upstreamFailure(b.port, config({ tls: { caFile: pki.files.ca, servername: 'kafka.other.example' } }))
    expect(e.kind).toBe('tls')
    expect((e.cause as SslAuthenticationException).reason).toBe('hostname mismatch')
    expect((e.cause as SslAuthenticationException).host).toBe('kafka.other.example')
    expect(e.message).toMatch(/tls\.servername/)
    // verifyHostname false keeps the chain check: the wrong CA still fails
    const unverifiedName = await openUpstream({ host: '127.0.0.1', port: b.port }, config({ tls: { caFile: pki.files.ca, verifyHostname: false } }), 3000, 1 << 20)
    unverifiedName.socket.destroy()
    expect((await upstreamFailure(b.port, config({ tls: { caFile: pki.files.otherCa, verifyHostname: false } }))).kind).toBe('tls')
  })

  it('a listener that requires a client certificate: without one kind tls; with tls.certFile/keyFile it authenticates', async () => {
    const b = await fakeBroker({ tls: { requestCert: true } })
    const e = await upstreamFailure(b.port, config({ tls: { caFile: pki.files.ca }, sasl: PLAIN }))
    expect(e.kind).toBe('tls')
    expect(e.cause).toBeInstanceOf(SslAuthenticationException)
    expect(e.message).toMatch(/client certificate refused\. The listener requires mutual TLS.*set tls\.certFile and tls\.keyFile/)
    const ok = await openUpstream({ host: '127.0.0.1', port: b.port }, config({ tls: { caFile: pki.files.ca, certFile: pki.files.clientCert, keyFile: pki.files.clientKey }, sasl: PLAIN }), 3000, 1 << 20)
    ok.socket.destroy()
  })

  it('TLS configured against a plaintext port, and plaintext against a TLS port: kind tls, saying which side to change', async () => {
    const plainBroker = await fakeBroker()
    const a = await upstreamFailure(plainBroker.port, config({ tls: { caFile: pki.files.ca } }))
    expect(a.kind).toBe('tls')
    expect(a.message).toMatch(/plaintext listener.*remove the "tls" section/)
    // A TLS listener that answers the plaintext request with an alert record (as Java's SSLEngine does)...
    const alerting = createNetServer((s) => s.once('data', () => s.end(Buffer.from([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46]))))
    track(alerting)
    await new Promise<void>((r) => alerting.listen(0, '127.0.0.1', () => r()))
    const b = await upstreamFailure((alerting.address() as { port: number }).port, config({ sasl: PLAIN }))
    expect(b.kind).toBe('tls')
    expect(b.message).toMatch(/answered with TLS.*Add a "tls" section/)
    // ...and one that just hangs up (Node's): nothing says TLS for sure, so the message only suggests it.
    const tlsBroker = await fakeBroker({ tls: {} })
    const c = await upstreamFailure(tlsBroker.port, config({ sasl: PLAIN }))
    expect(c.kind).toBe('connect')
    expect(c.message).toMatch(/closed the connection during SASL authentication.*if that port is a TLS listener, add a "tls" section/)
  })
})

describe('SASL through the shared driver', () => {
  it('ApiVersions v0, SaslHandshake v1, SaslAuthenticate v1; the session lifetime reaches the relay', async () => {
    const b = await fakeBroker({ authenticate: () => ({ errorCode: 0, errorMessage: null, authBytes: new Uint8Array(0), sessionLifetimeMs: 60_000n }) })
    const up = await openUpstream({ host: '127.0.0.1', port: b.port }, config({ sasl: PLAIN }), 3000, 1 << 20)
    up.socket.destroy()
    expect(up.sessionLifetimeMs).toBe(60_000)
    expect(b.seen.map((s) => `${s.api} v${s.version}`)).toEqual(['ApiVersions v0', 'SaslHandshake v1', 'SaslAuthenticate v1'])
    expect(new TextDecoder().decode(b.seen[2]!.body.authBytes as Uint8Array)).toBe('\0relay\0relay-secret')
  })

  it('a broker without SaslAuthenticate v1 (before Kafka 2.2) gets v0, and the session has no lifetime', async () => {
    const b = await fakeBroker({ saslAuthenticateMax: 0 })
    const up = await openUpstream({ host: '127.0.0.1', port: b.port }, config({ sasl: PLAIN }), 3000, 1 << 20)
    up.socket.destroy()
    expect(b.seen.map((s) => `${s.api} v${s.version}`)).toEqual(['ApiVersions v0', 'SaslHandshake v1', 'SaslAuthenticate v0'])
    expect(up.sessionLifetimeMs).toBe(0)
  })

  it('refused credentials: kind sasl, cause SaslAuthenticationException, and the password is in no message', async () => {
    const b = await fakeBroker({ authenticate: () => ({ errorCode: 58, errorMessage: 'Authentication failed: Invalid username or password', authBytes: new Uint8Array(0), sessionLifetimeMs: 0n }) })
    const e = await upstreamFailure(b.port, config({ sasl: PLAIN }))
    expect(e.kind).toBe('sasl')
    expect(e.cause).toBeInstanceOf(SaslAuthenticationException)
    expect(e.message).toMatch(/relay could not authenticate to broker 127\.0\.0\.1:\d+ with PLAIN: .*Invalid username or password/)
    expect(e.message).not.toContain('relay-secret')
  })

  it('a mechanism the broker does not enable: kind sasl, cause UnsupportedSaslMechanismException listing what it offers', async () => {
    const b = await fakeBroker({ mechanisms: ['SCRAM-SHA-256'] })
    const e = await upstreamFailure(b.port, config({ sasl: PLAIN }))
    expect(e.kind).toBe('sasl')
    expect(e.cause).toBeInstanceOf(UnsupportedSaslMechanismException)
    expect(e.message).toMatch(/it offers: SCRAM-SHA-256/)
  })

  it('a broker that never answers: kind timeout at timeoutMs; a closed port: kind connect', async () => {
    const b = await fakeBroker({ silent: true })
    const t0 = Date.now()
    const e = await upstreamFailure(b.port, config({ sasl: PLAIN }), 300)
    expect(e.kind).toBe('timeout')
    expect(Date.now() - t0).toBeLessThan(1000)
    const tlsSilent = await fakeBroker({ tls: {}, silent: true })
    expect((await upstreamFailure(tlsSilent.port, config({ tls: { caFile: pki.files.ca }, sasl: PLAIN }), 300)).kind).toBe('timeout')
    const closed = createNetServer()
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()))
    const port = (closed.address() as { port: number }).port
    await new Promise((r) => closed.close(r))
    expect((await upstreamFailure(port, config({}))).kind).toBe('connect')
  })

  it('an OAUTHBEARER token file the relay cannot read any more: kind sasl, naming the file', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kafka-edge-upstream-'))
    const tokenFile = path.join(dir, 'token')
    writeFileSync(tokenFile, 'opaque')
    const cfg = config({ sasl: { mechanism: 'OAUTHBEARER', tokenFile } })
    writeFileSync(tokenFile, '')
    const b = await fakeBroker()
    const e = await upstreamFailure(b.port, cfg)
    expect(e.kind).toBe('sasl')
    expect(e.message).toMatch(/sasl\.tokenFile .*token is empty/)
  })
})

describe('the relay closes a client whose upstream TLS fails with 4502 and counts it', () => {
  it('close code 4502, reason naming the TLS failure, upstream_errors_total{kind="tls"}', async () => {
    const b = await fakeBroker({ tls: {} })
    const cfg = config({ brokers: [`127.0.0.1:${b.port}`], tls: { caFile: pki.files.otherCa }, sasl: PLAIN })
    const logs: string[] = []
    const { Logger } = await import('../../src/bridge/metrics.js')
    const relay = await startBridge(cfg, { logger: new Logger('debug', (l) => logs.push(l)) })
    try {
      const tok = signToken({ sub: 'u', aud: 'kafka-edge', exp: Math.floor(Date.now() / 1000) + 60, topics: ['*'] }, SECRET)
      const ws = new WebSocket(relay.url, ['kafka-edge.v1', `kafka-edge.bearer.${tok}`])
      ws.on('error', () => {})
      const closed = await new Promise<{ code: number; reason: string }>((r) => ws.on('close', (code, reason) => r({ code, reason: reason.toString() })))
      expect(closed).toEqual({ code: CloseCode.UPSTREAM_UNAVAILABLE, reason: 'TLS to the broker failed: unknown CA' })
      expect(relay.metrics.get('kafka_edge_bridge_upstream_errors_total', { kind: 'tls' })).toBe(1)
      const line = logs.map((l) => JSON.parse(l)).find((l) => l.event === 'upstream_failed')
      expect(line).toMatchObject({ level: 'warn', kind: 'tls' })
      expect(line.error).toMatch(/unknown CA.*tls\.caFile/)
      expect(logs.join('\n')).not.toContain('relay-secret')
    } finally { await relay.close() }
  })
})

describe('where the relay\'s own credentials come from', () => {
  it('a token file is read again for every connection (a rotated file is picked up at once)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kafka-edge-token-'))
    const f = path.join(dir, 'token')
    const next = tokenProvider({ kind: 'file', path: f }, 1000)
    writeFileSync(f, 'first\n')
    expect(await next()).toEqual({ token: 'first', lifetimeMs: 0 })
    writeFileSync(f, 'second')
    expect((await next()).token).toBe('second')
    const b64url = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url')
    writeFileSync(f, `${b64url({ alg: 'none' })}.${b64url({ sub: 'x', exp: 1_600_000_000 })}.`)
    await expect(next()).rejects.toThrow(/the token in sasl\.tokenFile .* expired at 2020-09-13/)
  })

  it('AWS credentials are read from the environment for every connection', async () => {
    const env: NodeJS.ProcessEnv = { AWS_ACCESS_KEY_ID: 'AKIA1', AWS_SECRET_ACCESS_KEY: 's1' }
    expect(awsCredentialsFromEnv(env)).toEqual({ accessKeyId: 'AKIA1', secretAccessKey: 's1' })
    env.AWS_ACCESS_KEY_ID = 'ASIA2'
    env.AWS_SESSION_TOKEN = 'tok'
    expect(awsCredentialsFromEnv(env)).toEqual({ accessKeyId: 'ASIA2', secretAccessKey: 's1', sessionToken: 'tok' })
    const cfg = config({ tls: {}, sasl: { mechanism: 'AWS_MSK_IAM', region: 'eu-west-1' } }, env)
    const m = saslMechanism(cfg.sasl!, 1000)
    const payload = async () => JSON.parse(new TextDecoder().decode((await m.begin({ host: 'b-1.msk.example', port: 9098 }).respond(null))!)) as Record<string, string>
    expect((await payload())['x-amz-credential']).toMatch(/^ASIA2\/\d{8}\/eu-west-1\/kafka-cluster\/aws4_request$/)
    env.AWS_ACCESS_KEY_ID = 'ASIA3'
    env.AWS_SESSION_TOKEN = 'tok3'
    const p = await payload()
    expect(p['x-amz-credential']).toMatch(/^ASIA3\//)
    expect(p['x-amz-security-token']).toBe('tok3')
    delete env.AWS_SECRET_ACCESS_KEY
    await expect(m.begin({ host: 'b-1.msk.example', port: 9098 }).respond(null)).rejects.toThrow(/AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set/)
  })

  describe('client credentials token endpoint', () => {
    let hits: Array<{ authorization: string; body: string }> = []
    let answer: (n: number) => { status: number; body: unknown; delayMs?: number } = () => ({ status: 200, body: {} })
    let url = ''
    beforeAll(async () => {
      const server = createHttpServer((req, res) => {
        let body = ''
        req.on('data', (d: Buffer) => { body += d.toString() })
        req.on('end', () => {
          hits.push({ authorization: String(req.headers.authorization), body })
          const a = answer(hits.length)
          setTimeout(() => { res.writeHead(a.status, { 'content-type': 'application/json' }); res.end(JSON.stringify(a.body)) }, a.delayMs ?? 0)
        })
      })
      track(server)
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
      url = `http://127.0.0.1:${(server.address() as { port: number }).port}/oauth2/token`
    })

    it('HTTP Basic client authentication and a form body; concurrent connections share one request; cached until 80% of expires_in', async () => {
      hits = []
      answer = (n) => ({ status: 200, body: { access_token: `tok-${n}`, token_type: 'Bearer', expires_in: 1 }, delayMs: 50 })
      const cfg = config({ sasl: { mechanism: 'OAUTHBEARER', tokenEndpointUrl: url, clientId: 'relay app', clientSecret: 's:cret', scope: 'kafka write', extensions: { logicalCluster: 'lkc-1' } } })
      const m = saslMechanism(cfg.sasl!, 2000)
      const first = async () => new TextDecoder().decode((await m.begin({ host: 'b', port: 1 }).respond(null))!)
      const [a, b2] = await Promise.all([first(), first()])
      expect(hits).toHaveLength(1)
      expect(a).toBe('n,,\x01auth=Bearer tok-1\x01logicalCluster=lkc-1\x01\x01')
      expect(b2).toBe(a)
      expect(hits[0]!.authorization).toBe(`Basic ${Buffer.from('relay%20app:s%3Acret').toString('base64')}`)
      expect(Object.fromEntries(new URLSearchParams(hits[0]!.body))).toEqual({ grant_type: 'client_credentials', scope: 'kafka write' })
      expect(await first()).toContain('tok-1')
      expect(hits).toHaveLength(1)
      await new Promise((r) => setTimeout(r, 850)) // past 80% of 1 s
      expect(await first()).toContain('tok-2')
      expect(hits).toHaveLength(2)
    })

    it('a refused client: the OAuth error and what to check, never the secret', async () => {
      hits = []
      answer = () => ({ status: 401, body: { error: 'invalid_client', error_description: 'bad secret' } })
      const next = tokenProvider({ kind: 'clientCredentials', tokenEndpointUrl: url, clientId: 'relay', clientSecret: 'hunter2', scope: null }, 2000)
      const e = await next().then(() => null, (x: Error) => x)
      expect(e?.message).toMatch(/token endpoint http:\/\/127\.0\.0\.1:\d+\/oauth2\/token answered HTTP 401 \(invalid_client: bad secret\): check sasl\.clientId and sasl\.clientSecret/)
      expect(e?.message).not.toContain('hunter2')
      expect(Object.fromEntries(new URLSearchParams(hits[0]!.body))).toEqual({ grant_type: 'client_credentials' })
    })

    it('answers the relay cannot use: no access_token, not a Bearer token, no expiry, a slow endpoint', async () => {
      const next = () => tokenProvider({ kind: 'clientCredentials', tokenEndpointUrl: url, clientId: 'a', clientSecret: 'b', scope: null }, 300)()
      answer = () => ({ status: 200, body: { token_type: 'Bearer', expires_in: 60 } })
      await expect(next()).rejects.toThrow(/answered without an access_token/)
      answer = () => ({ status: 200, body: { access_token: 'x', token_type: 'mac', expires_in: 60 } })
      await expect(next()).rejects.toThrow(/issued a mac token; OAUTHBEARER needs a Bearer token/)
      answer = () => ({ status: 200, body: { access_token: 'opaque' } })
      await expect(next()).rejects.toThrow(/without expires_in, and the token is not a JWT with an exp claim/)
      const b64url = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url')
      const exp = Math.floor(Date.now() / 1000) + 100
      answer = () => ({ status: 200, body: { access_token: `${b64url({ alg: 'none' })}.${b64url({ sub: 'r', exp })}.` } })
      const t = await next()
      expect(t.lifetimeMs).toBeGreaterThan(95_000)
      expect(t.lifetimeMs).toBeLessThanOrEqual(100_000)
      answer = () => ({ status: 200, body: {}, delayMs: 1000 })
      await expect(next()).rejects.toThrow(/no answer within 300 ms/)
    })
  })
})
