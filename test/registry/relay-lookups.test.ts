// Schema registry lookups through the relay (issue 23 §4): a page's serializer reads the latest
// version and schemas by id with its relay token, the relay asks Apicurio Registry 3.3.3 with its own
// credentials and answers only for the subjects of the token's topics. The record a page sends this
// way is read back by the Java consumer and decoded by the independent Go reader (test/registry-reader).
import WebSocket from 'ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveConfig, signToken, startBridge, type Bridge } from '../../src/bridge/index.js'
import { ConfigException, createProducer, websocket, type Producer } from '../../src/edge/index.js'
import {
  SchemaNotFoundException, SchemaRegistryAuthenticationException, SchemaRegistryAuthorizationException, SchemaRegistryClient,
  SchemaRegistryUnavailableException, avroSerializer, withSerializers,
} from '../../src/edge/schema-registry/index.js'
import { bs, createTopic, ensureCluster, readTopic, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { buildReader, readBack, registryProxy, registryUnavailable, startRegistry, stopRegistry, type Proxy, type Registry } from '../helpers/registry.js'
import { AUDIENCE, SECRET, token as relayToken } from '../bridge/helpers.js'

const unavailable = registryUnavailable()
if (unavailable && process.env.CI) throw new Error(`the relay lookup suite cannot run under CI: ${unavailable}`)
const NAME = 'relay-lookups-test'
const ORIGIN = 'https://app.example'

let cluster: Cluster
let reg: Registry
let guarded: Proxy
const bridges: Bridge[] = []
const producers: Producer[] = []

const token = (topics: string[], sub = 'page'): string => relayToken({ sub, topics, transactional_ids: [], groups: [] })

async function relay(registry: Record<string, unknown>): Promise<Bridge> {
  const b = await startBridge(resolveConfig({
    listen: '127.0.0.1:0', brokers: [bs(cluster)], auth: { secret: SECRET, audience: AUDIENCE, clockSkewSec: 0 },
    origins: [ORIGIN], log: { level: 'silent' }, registry,
  }, { REGISTRY_USER_INFO: 'relay:relay-registry-secret' }))
  bridges.push(b)
  return b
}

interface Got { status: number; body: { error_code?: number; message?: string; id?: number; subject?: string; version?: number; schema?: string }; headers: Headers }
async function get(b: Bridge, route: string, o: { token?: string; origin?: string | null } = {}): Promise<Got> {
  const headers: Record<string, string> = {}
  if (o.origin !== null) headers.origin = o.origin ?? ORIGIN
  if (o.token) headers.authorization = `Bearer ${o.token}`
  const r = await fetch(`${b.httpUrl}/kafka/registry${route}`, { headers })
  return { status: r.status, body: await r.json() as Got['body'], headers: r.headers }
}

const schema = { type: 'record', name: 'Click', namespace: 'web', fields: [{ name: 'page', type: 'string' }, { name: 'ms', type: 'long' }] }

describe.skipIf(unavailable !== null)(`schema registry lookups through the relay: Apicurio 3.3.3 + Kafka 4.4${unavailable ? ` (skipped: ${unavailable})` : ''}`, () => {
  let topic: string
  let id: number
  let lookups: Bridge

  beforeAll(async () => {
    buildReader()
    ;[cluster, reg] = await Promise.all([ensureCluster({ nodes: 1 }), startRegistry(NAME)])
    topic = uniqueTopic('clicks')
    await createTopic(cluster, topic)
    const admin = new SchemaRegistryClient({ 'schema.registry.url': reg.url })
    id = (await admin.register(`${topic}-value`, { schema: JSON.stringify(schema) })).id
    await admin.register('shared.Audit', { schema: JSON.stringify({ ...schema, name: 'Audit', namespace: 'shared' }) })
    // The relay's credentials are checked by a proxy that wants them, so a page's lookup can only
    // succeed if the relay added them, and the test can see that they never come back.
    guarded = await registryProxy(reg.url, { user: 'relay:relay-registry-secret' })
    lookups = await relay({ url: guarded.url, userInfoEnv: 'REGISTRY_USER_INFO', subjects: ['shared.*'] })
  }, 600_000)
  afterAll(async () => {
    await Promise.all(producers.map((p) => p.close().catch(() => {})))
    await Promise.all(bridges.map((b) => b.close({ drainTimeoutMs: 100 })))
    await guarded?.close()
    if (!process.env.KAFKA_EDGE_KEEP_REGISTRY) await stopRegistry(NAME)
  })

  it('a token granted topic T reads the latest version of T-value and the schema by id, in the Confluent shape; the relay\'s credentials never reach the page', async () => {
    const tok = token([topic])
    const latest = await get(lookups, `/subjects/${topic}-value/versions/latest`, { token: tok })
    expect(latest.status).toBe(200)
    expect(latest.body).toEqual({ subject: `${topic}-value`, version: 1, id, schema: JSON.stringify(schema) })
    expect(latest.headers.get('access-control-allow-origin')).toBe(ORIGIN)
    const byId = await get(lookups, `/schemas/ids/${id}`, { token: tok })
    expect(byId).toMatchObject({ status: 200, body: { schema: JSON.stringify(schema) } })
    const numbered = await get(lookups, `/subjects/${topic}-value/versions/1`, { token: tok })
    expect(numbered.body.id).toBe(id)
    for (const r of [latest, byId, numbered]) expect(JSON.stringify(Object.fromEntries(r.headers as unknown as Iterable<[string, string]>)) + JSON.stringify(r.body)).not.toMatch(/relay-registry-secret|cmVsYXk6/)
    // The preflight a page's fetch with an Authorization header makes.
    const pre = await fetch(`${lookups.httpUrl}/kafka/registry/schemas/ids/${id}`, { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-headers': 'authorization' } })
    expect(pre.status).toBe(204)
    expect(pre.headers.get('access-control-allow-headers')).toBe('authorization')
    // Answers are cached (briefly, bounded): asking again does not reach the registry.
    const before = guarded.requests
    await get(lookups, `/subjects/${topic}-value/versions/latest`, { token: tok })
    await get(lookups, `/schemas/ids/${id}`, { token: tok })
    expect(guarded.requests).toBe(before)
  })

  it('not granted: 403 for another topic\'s subjects and ids and for RecordNameStrategy subjects the config does not list; 404 for a granted subject the registry does not have', async () => {
    const other = token(['other-*'])
    expect(await get(lookups, `/subjects/${topic}-value/versions/latest`, { token: other })).toMatchObject({ status: 403, body: { error_code: 40301 } })
    expect((await get(lookups, `/schemas/ids/${id}`, { token: other })).status).toBe(403)
    expect((await get(lookups, `/subjects/${topic}-key/versions/latest`, { token: other })).status).toBe(403)
    const mine = token([topic])
    expect((await get(lookups, '/subjects/web.Click/versions/latest', { token: mine })).status).toBe(403)
    // registry.subjects lists shared.*: any valid token reads it.
    expect((await get(lookups, '/subjects/shared.Audit/versions/latest', { token: other })).status).toBe(200)
    // TopicRecordNameStrategy subjects of the token's topic pass the grant; this one is not registered.
    expect(await get(lookups, `/subjects/${topic}-web.Click/versions/latest`, { token: mine })).toMatchObject({ status: 404, body: { error_code: 40401 } })
    expect((await get(lookups, '/schemas/ids/987654', { token: mine })).status).toBe(404)
    // A 404 is remembered for registry.cacheTtlMs: asking again for what does not exist costs the registry nothing.
    const before = guarded.requests
    expect((await get(lookups, '/schemas/ids/987654', { token: mine })).status).toBe(404)
    expect(await get(lookups, `/subjects/${topic}-web.Click/versions/latest`, { token: mine })).toMatchObject({ status: 404, body: { error_code: 40401 } })
    expect(guarded.requests).toBe(before)
    // Not a way to reach the rest of the registry's API.
    expect((await get(lookups, '/subjects', { token: mine })).status).toBe(404)
  })

  it('401 without a token or with a bad one, 403 from an Origin the relay does not allow', async () => {
    expect(await get(lookups, `/schemas/ids/${id}`)).toMatchObject({ status: 401, body: { error_code: 40101 } })
    expect((await get(lookups, `/schemas/ids/${id}`, { token: token([topic]).slice(0, -4) + 'AAAA' })).status).toBe(401)
    expect((await get(lookups, `/schemas/ids/${id}`, { token: signToken({ sub: 'x', aud: AUDIENCE, exp: 1, topics: [topic] }, SECRET) })).body.message).toBe('token expired')
    expect((await get(lookups, `/schemas/ids/${id}`, { token: token([topic]), origin: 'https://evil.example' })).status).toBe(403)
    // The page's client turns them into its typed errors.
    const client = (tok: string) => new SchemaRegistryClient({ 'schema.registry.relay.url': lookups.url, 'schema.registry.relay.token': tok, 'max.retries': 0 })
    await expect(client('not-a-token').getLatest(`${topic}-value`)).rejects.toBeInstanceOf(SchemaRegistryAuthenticationException)
    await expect(client(token(['x'])).getLatest(`${topic}-value`)).rejects.toBeInstanceOf(SchemaRegistryAuthorizationException)
    await expect(client(token([topic])).getSchemaById(987654)).rejects.toBeInstanceOf(SchemaNotFoundException)
  })

  it('registry down gives 502, a slow one 504: SchemaRegistryUnavailableException in the page, nothing sent', async () => {
    const down = await relay({ url: 'http://127.0.0.1:9', timeoutMs: 1000 })
    const tok = token([topic])
    expect(await get(down, `/subjects/${topic}-value/versions/latest`, { token: tok })).toMatchObject({ status: 502, body: { error_code: 50201 } })
    const slowProxy = await registryProxy(reg.url, { delayMs: 1500 })
    try {
      const slow = await relay({ url: slowProxy.url, timeoutMs: 300 })
      expect(await get(slow, `/schemas/ids/${id}`, { token: tok })).toMatchObject({ status: 504, body: { error_code: 50401 } })
    } finally { await slowProxy.close() }
    const p = withSerializers(createProducer({ 'bootstrap.servers': 'relay:443', transport: websocket({ url: down.url, token: tok, WebSocket: WebSocket as never }) }), {
      'schema.registry.relay.url': down.url, 'schema.registry.relay.token': tok, 'use.latest.version': true, 'max.retries': 1, 'retries.wait.ms': 10,
      'value.serializer': avroSerializer(),
    })
    producers.push(p.producer)
    const e = await p.send({ topic, value: { page: '/', ms: 1 } }).catch((x: unknown) => x)
    expect(e).toBeInstanceOf(SchemaRegistryUnavailableException)
    expect(e).toMatchObject({ status: 502, subject: `${topic}-value`, retriable: true, mayHaveBeenWritten: false })
  })

  it('a page config that would register through the relay is a ConfigException, at configure time or at its first send', async () => {
    const tok = token([topic])
    expect(() => new SchemaRegistryClient({ 'schema.registry.relay.url': lookups.url, 'schema.registry.relay.token': tok, 'auto.register.schemas': true })).toThrow(ConfigException)
    expect(() => new SchemaRegistryClient({ 'schema.registry.relay.url': lookups.url, 'schema.registry.relay.token': tok, 'schema.registry.url': reg.url })).toThrow(/no registry address or credentials/)
    expect(() => new SchemaRegistryClient({ 'schema.registry.relay.url': lookups.url })).toThrow(/schema.registry.relay.token/)
    const client = new SchemaRegistryClient({ 'schema.registry.relay.url': lookups.url, 'schema.registry.relay.token': tok })
    await expect(client.register(`${topic}-value`, { schema: JSON.stringify(schema) })).rejects.toThrow(/read-only/)
    // A bundled schema without use.latest.version would be looked up by its text: refused the same way.
    const p = withSerializers(createProducer({ 'bootstrap.servers': 'relay:443', transport: websocket({ url: lookups.url, token: tok, WebSocket: WebSocket as never }) }), {
      'schema.registry.relay.url': lookups.url, 'schema.registry.relay.token': tok, 'value.serializer': avroSerializer(schema),
    })
    producers.push(p.producer)
    const e = await p.send({ topic, value: { page: '/', ms: 1 } }).catch((x: unknown) => x)
    expect(e).toBeInstanceOf(ConfigException)
    expect(e).toMatchObject({ mayHaveBeenWritten: false })
  })

  it('a producer whose serializer looks the schema up through the relay sends records the Go reader decodes with the registered id', async () => {
    const tok = token([topic], 'page-2')
    const p = withSerializers(createProducer({ 'bootstrap.servers': 'relay:443', transport: websocket({ url: lookups.url, token: tok, WebSocket: WebSocket as never }) }), {
      'schema.registry.relay.url': lookups.url, 'schema.registry.relay.token': () => tok, 'use.latest.version': true, 'value.serializer': avroSerializer(),
    })
    producers.push(p.producer)
    const served = () => lookups.metrics.get('kafka_edge_bridge_registry_lookups_total', { status: '200' })
    const before = served()
    expect(before).toBeGreaterThan(0)
    const sent = [{ page: '/checkout', ms: 1_764_628_500_123 }, { page: '/ü', ms: -1 }]
    for (const value of sent) await p.send({ topic, value })
    expect(served()).toBe(before + 1) // one latest lookup through the relay, then the page's cache
    const read = await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected: 2, timeoutMs: 30_000 })
    const values = read.map((r) => r.value)
    expect(values.map((v) => new DataView(v!.buffer, v!.byteOffset).getInt32(1))).toEqual([id, id])
    const got = await readBack(reg.url, values)
    for (const g of got) expect(g.error).toBeUndefined()
    expect(got.map((g) => g.value)).toEqual(sent)
  }, 120_000)
})
