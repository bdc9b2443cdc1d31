// Tokens that real identity providers issue (RS256/ES256/EdDSA from a JWKS, through jose, with key
// rotation) next to HS256, and the relay's own TLS listener (wss:// without a proxy in front).
import { createServer, type Server } from 'node:http'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignJWT, exportJWK, generateKeyPair, type JWK } from 'jose'
import WebSocket from 'ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CloseCode, type Bridge } from '../../src/bridge/index.js'
import { ApiVersions } from '../../src/edge/protocol/index.js'
import { createProducer, websocket } from '../../src/edge/index.js'
import { createTopic, readTopic, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { AUDIENCE, SECRET, rawClient, relayCluster, startRelay, token } from './helpers.js'

type Key = Awaited<ReturnType<typeof generateKeyPair>>['privateKey']
interface Signer { kid: string; alg: string; privateKey: Key; jwk: JWK }

async function signer(alg: 'RS256' | 'ES256' | 'EdDSA', kid: string): Promise<Signer> {
  const { privateKey, publicKey } = await generateKeyPair(alg, alg === 'EdDSA' ? { crv: 'Ed25519' } : {})
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } }
}

/** A token as Auth0/Cognito mint one: signed by the provider's key, the relay's claims inside. */
function idpToken(s: Signer, claims: Record<string, unknown> = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000)
  return new SignJWT({ topics: ['*'], transactional_ids: ['*'], groups: ['*'], ...claims })
    .setProtectedHeader({ alg: s.alg, kid: s.kid, typ: 'JWT' })
    .setSubject(String(claims.sub ?? 'idp-user')).setAudience(String(claims.aud ?? AUDIENCE)).setIssuer('https://idp.example/')
    .setIssuedAt(now).setExpirationTime(now + 600).sign(s.privateKey)
}

const av = { clientSoftwareName: 't', clientSoftwareVersion: '1' }

async function outcome(bridge: Bridge, tok: string): Promise<{ ok: boolean; code?: number; reason?: string }> {
  const c = rawClient(bridge.url, { token: tok })
  try {
    const res = await c.request(ApiVersions, 3, av)
    c.ws.close()
    return { ok: res.errorCode === 0 }
  } catch {
    const closed = await c.closed
    return { ok: false, code: closed.code, reason: closed.reason }
  }
}

let cluster: Cluster
let jwksServer: Server
let served: JWK[] = []
let fetches = 0
let jwksUrl = ''

beforeAll(async () => {
  cluster = await relayCluster()
  jwksServer = createServer((_req, res) => { fetches++; res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify({ keys: served })) })
  await new Promise<void>((r) => jwksServer.listen(0, '127.0.0.1', () => r()))
  jwksUrl = `http://127.0.0.1:${(jwksServer.address() as { port: number }).port}/.well-known/jwks.json`
})
afterAll(() => { jwksServer?.close() })

describe('tokens from an identity provider (jose, JWKS)', () => {
  it('RS256 from a JWKS URL: accepted, cached, a rotated-in key fetched on first sight, HS256 still accepted, claims checked alike', async () => {
    const k1 = await signer('RS256', 'k1')
    const k2 = await signer('RS256', 'k2')
    served = [k1.jwk]
    const bridge = await startRelay(cluster, { auth: { secret: SECRET, audience: AUDIENCE, clockSkewSec: 0, jwksUrl, issuer: 'https://idp.example/', jwksCooldownMs: 0 } })
    try {
      expect(await outcome(bridge, await idpToken(k1))).toEqual({ ok: true })
      const afterFirst = fetches
      expect(await outcome(bridge, await idpToken(k1, { sub: 'other' }))).toEqual({ ok: true })
      expect(fetches).toBe(afterFirst) // cached
      // The provider rotates: k2 appears in the JWKS; the relay fetches it when a token names it.
      const before = await outcome(bridge, await idpToken(k2))
      expect(before).toMatchObject({ ok: false, code: CloseCode.UNAUTHENTICATED })
      served = [k1.jwk, k2.jwk]
      expect(await outcome(bridge, await idpToken(k2))).toEqual({ ok: true })
      // The same claim rules as HS256: audience, issuer, expiry, claim types.
      expect(await outcome(bridge, await idpToken(k2, { aud: 'elsewhere' }))).toMatchObject({ code: CloseCode.UNAUTHENTICATED, reason: expect.stringMatching(/audience/) })
      expect(await outcome(bridge, await idpToken(k2, { topics: 'not-a-list' }))).toMatchObject({ code: CloseCode.UNAUTHENTICATED })
      const expired = await new SignJWT({}).setProtectedHeader({ alg: 'RS256', kid: 'k2' }).setSubject('x').setAudience(AUDIENCE).setIssuer('https://idp.example/')
        .setExpirationTime(Math.floor(Date.now() / 1000) - 10).sign(k2.privateKey)
      expect(await outcome(bridge, expired)).toMatchObject({ code: CloseCode.TOKEN_EXPIRED })
      // A key the provider does not publish, and a header that switches to HS256 with the public key as secret, are refused.
      const rogue = await signer('RS256', 'k1')
      expect(await outcome(bridge, await idpToken(rogue))).toMatchObject({ code: CloseCode.UNAUTHENTICATED, reason: expect.stringMatching(/signature/) })
      // HS256 with the shared secret still works (the configured issuer applies to every token).
      expect(await outcome(bridge, token({ iss: 'https://idp.example/' }))).toEqual({ ok: true })
      expect(await outcome(bridge, token())).toMatchObject({ code: CloseCode.UNAUTHENTICATED, reason: expect.stringMatching(/issuer/) })
    } finally { await bridge.close() }
  })

  it('ES256 and EdDSA from a JWKS file, re-read when the file changes; an alg outside auth.algorithms is refused', async () => {
    const es = await signer('ES256', 'es-1')
    const ed = await signer('EdDSA', 'ed-1')
    const dir = mkdtempSync(join(tmpdir(), 'kafka-edge-jwks-'))
    const file = join(dir, 'jwks.json')
    writeFileSync(file, JSON.stringify({ keys: [es.jwk] }))
    const bridge = await startRelay(cluster, { auth: { audience: AUDIENCE, clockSkewSec: 0, jwksFile: file, algorithms: ['ES256', 'EdDSA'] } })
    try {
      expect(await outcome(bridge, await idpToken(es))).toEqual({ ok: true })
      expect(await outcome(bridge, await idpToken(ed))).toMatchObject({ ok: false, code: CloseCode.UNAUTHENTICATED })
      writeFileSync(file, JSON.stringify({ keys: [es.jwk, ed.jwk] }))
      await new Promise((r) => setTimeout(r, 1100))
      expect(await outcome(bridge, await idpToken(ed))).toEqual({ ok: true })
      // No HS256 secret configured: HS256 tokens are refused, as is RS256 (not in auth.algorithms).
      expect(await outcome(bridge, token())).toMatchObject({ code: CloseCode.UNAUTHENTICATED, reason: expect.stringMatching(/HS256/) })
      const rs = await signer('RS256', 'rs-1')
      expect(await outcome(bridge, await idpToken(rs))).toMatchObject({ code: CloseCode.UNAUTHENTICATED, reason: expect.stringMatching(/not accepted/) })
    } finally { await bridge.close() }
  })

  it('a producer with an EdDSA token from the identity provider writes through the relay', async () => {
    const ed = await signer('EdDSA', 'ed-2')
    const dir = mkdtempSync(join(tmpdir(), 'kafka-edge-jwks-'))
    writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [ed.jwk] }))
    const bridge = await startRelay(cluster, { auth: { audience: AUDIENCE, clockSkewSec: 0, jwksFile: join(dir, 'jwks.json') } })
    const topic = uniqueTopic('idp')
    await createTopic(cluster, topic)
    const tok = await idpToken(ed, { topics: [topic] })
    const p = createProducer({ 'bootstrap.servers': 'relay:443', transport: websocket({ url: bridge.url, token: tok, WebSocket: WebSocket as never }) })
    try {
      await p.send({ topic, value: 'from-idp' })
    } finally { await p.close(); await bridge.close() }
    const log = await readTopic(cluster, topic, { expected: 1 })
    expect(new TextDecoder().decode(log[0]!.value!)).toBe('from-idp')
  })
})

describe('TLS on the relay\'s own listener', () => {
  it('wss:// with --tls-cert/--tls-key: a producer that trusts the CA writes; /healthz is https', async () => {
    const bridge = await startRelay(cluster, { listenTls: { certFile: cluster.tls!.cert, keyFile: cluster.tls!.key } })
    expect(bridge.url).toMatch(/^wss:\/\/127\.0\.0\.1:\d+\/kafka$/)
    const { readFileSync } = await import('node:fs')
    const ca = readFileSync(cluster.tls!.ca)
    const TrustingWs = class extends WebSocket { constructor(url: string, protocols?: string | string[]) { super(url, protocols, { ca }) } }
    const topic = uniqueTopic('wss')
    await createTopic(cluster, topic)
    const p = createProducer({ 'bootstrap.servers': 'relay:443', transport: websocket({ url: bridge.url, token: token({ topics: [topic] }), WebSocket: TrustingWs as never }) })
    try {
      await p.send({ topic, value: 'over-wss' })
      const { request } = await import('node:https')
      const status = await new Promise<number>((resolve, reject) => request(`${bridge.httpUrl}/healthz`, { ca }, (res) => { res.resume(); resolve(res.statusCode!) }).on('error', reject).end())
      expect(status).toBe(200)
      // A client that does not trust the certificate never gets a WebSocket.
      const untrusting = new WebSocket(bridge.url, ['kafka-edge.v1', `kafka-edge.bearer.${token()}`])
      const err = await new Promise<Error>((resolve) => untrusting.once('error', resolve))
      expect(err.message).toMatch(/certificate/i)
    } finally { await p.close(); await bridge.close() }
    const log = await readTopic(cluster, topic, { expected: 1 })
    expect(new TextDecoder().decode(log[0]!.value!)).toBe('over-wss')
  })
})
