// The telemetry component's pure parts: the shard of an event, the Prometheus page, the checkpoint's
// storage form, and the app's fan-out over shards (against recording stand-ins for the objects; the
// objects themselves run in workerd in test/e2e/worker*.test.ts).
import { describe, expect, it } from 'vitest'
import { partitionForKey } from '../../src/edge/index.js'
import { SHARD_PREFIX, shardOf, telemetryApp } from '../../src/edge/worker/app.js'
import { decodeRecords } from '../../src/edge/worker/validate.js'
import type { DurableObjectNamespace, Env } from '../../src/edge/worker/env.js'
import { jsonToProto, protoToJson } from '../../src/edge/otlp/transcode.js'
import { batchRowKey, checkpointFromJson, checkpointHead, prometheus } from '../../src/edge/worker/settings.js'

describe('shardOf', () => {
  it('is the key\'s murmur2 partition (Kafka\'s default partitioner) over the shard count; keyless events by id', () => {
    for (const key of ['user-1', 'user-2', 'ü', '']) {
      expect(shardOf({ key, id: 'x' }, 4)).toBe(partitionForKey(new TextEncoder().encode(key), 4))
    }
    expect(shardOf({ key: null, id: 'abc' }, 4)).toBe(partitionForKey(new TextEncoder().encode('abc'), 4))
    expect(shardOf({ key: 'anything', id: 'x' }, 1)).toBe(0)
  })

  it('spreads keys over every shard', () => {
    const counts = new Array(4).fill(0)
    for (let i = 0; i < 4000; i++) counts[shardOf({ key: `user-${i}`, id: '' }, 4)]++
    for (const c of counts) expect(c).toBeGreaterThan(800)
  })
})

describe('prometheus()', () => {
  it('writes HELP and TYPE once per metric, a shard label per line, summaries as _sum and _count', () => {
    const text = prometheus([
      { shard: '0', samples: [{ name: 'a_total', type: 'counter', help: 'things', value: 3 }, { name: 'lat_seconds', type: 'summary', help: 'latency', value: 1.5, count: 4 }] },
      { shard: '1', samples: [{ name: 'a_total', type: 'counter', help: 'things', value: 5 }, { name: 'lat_seconds', type: 'summary', help: 'latency', value: 0, count: 0 }] },
    ])
    expect(text).toBe([
      '# HELP a_total things', '# TYPE a_total counter', 'a_total{shard="0"} 3', 'a_total{shard="1"} 5',
      '# HELP lat_seconds latency', '# TYPE lat_seconds summary',
      'lat_seconds_sum{shard="0"} 1.5', 'lat_seconds_count{shard="0"} 4', 'lat_seconds_sum{shard="1"} 0', 'lat_seconds_count{shard="1"} 0', '',
    ].join('\n'))
  })
})

describe('checkpoint storage form', () => {
  /** A RecordBatch v2's bytes: magic 2, the given producer id, epoch and base sequence in its header. */
  const batch = (producerId: bigint, epoch: number, baseSequence: number, length = 200) => {
    const bytes = Uint8Array.from({ length }, (_, i) => (i * 31) & 0xff)
    const dv = new DataView(bytes.buffer)
    dv.setInt8(16, 2)
    dv.setBigInt64(43, producerId)
    dv.setInt16(51, epoch)
    dv.setInt32(53, baseSequence)
    return bytes
  }
  const cp = {
    v: 1 as const, producerId: '9007199254740993', epoch: 3, savedAt: 1, nextSequence: [{ topic: 't', partition: 0, next: 7 }],
    pending: [{ topic: 't', partition: 0, baseSequence: 5, recordCount: 2, bytes: batch(9007199254740993n, 3, 5, 70_000) }], ticket: 'x',
  }

  it('reads the earlier form (one JSON text, batches as base64) with the batches\' bytes intact', () => {
    const old = JSON.stringify({ ...cp, pending: cp.pending.map((p) => ({ ...p, bytes: Buffer.from(p.bytes).toString('base64') })) })
    const back = checkpointFromJson(old)
    expect(back).toEqual(cp)
    expect(back.pending[0]!.bytes).toBeInstanceOf(Uint8Array)
  })

  it('keeps the batches out of the head, which JSON.parse gives back as the checkpoint without them', () => {
    const head = checkpointHead(cp)
    expect(head).not.toContain('pending')
    expect({ ...JSON.parse(head), pending: cp.pending }).toEqual(cp)
  })

  it('names a batch\'s row by its partition and header stamp: a restamped or relabelled batch is another row', () => {
    const p = { topic: 't', partition: 1, baseSequence: 5, recordCount: 2, bytes: batch(42n, 0, 5) }
    expect(batchRowKey(p)).toBe('b/t/1/42/0/5')
    expect(batchRowKey({ ...p, bytes: batch(42n, 1, 0) })).toBe('b/t/1/42/1/0')
    expect(batchRowKey({ ...p, relabelled: true })).toBe('r/t/1/42/0/5')
    expect(batchRowKey({ ...p, partition: 2 })).not.toBe(batchRowKey(p))
  })
})

/** Stand-ins for the objects: each named stub answers from `answer` and records what it was sent. */
function namespace(answer: (shard: number, body: unknown[]) => Response) {
  const calls: Array<{ shard: number; path: string; body: unknown[]; ids: unknown; hint?: string; generated: string | null }> = []
  const ns: DurableObjectNamespace = {
    idFromName: (name) => Number(name.slice(SHARD_PREFIX.length)),
    get: (id, opts) => ({
      fetch: async (input, init) => {
        const shard = id as number
        // A durable accept's body: the ids on one line, then the events; sync's: the events as JSON.
        const text = String(init?.body ?? '[]')
        const nl = text.indexOf('\n')
        const body = nl < 0 ? JSON.parse(text) as unknown[] : decodeRecords(text.slice(nl + 1))
        const generated = new Headers(init?.headers).get('x-generated-ids')
        calls.push({ shard, path: new URL(String(input)).pathname, body, ids: nl < 0 ? null : JSON.parse(text.slice(0, nl)), hint: opts?.locationHint, generated })
        return answer(shard, body)
      },
    }),
  }
  return { ns, calls }
}

const env = (ns: DurableObjectNamespace): Env => ({ PRODUCER: ns, KAFKA_BOOTSTRAP: 'b:9092', TELEMETRY_TOPIC: 'telemetry' })
const post = (app: ReturnType<typeof telemetryApp>, e: Env, events: object[]) =>
  app.request('/events', { method: 'POST', body: JSON.stringify(events), headers: { 'content-type': 'application/json' } }, e)

describe('telemetryApp() over shards', () => {
  const events = Array.from({ length: 40 }, (_, i) => ({ type: 'click', id: `e${i}`, key: `user-${i % 8}` }))

  it('sends each event to its key\'s shard (in request order), with the locationHint, and answers 202 with every id', async () => {
    const { ns, calls } = namespace((_s, body) => Response.json({ accepted: body.length, ids: (body as Array<{ id: string }>).map((r) => r.id) }, { status: 202 }))
    const res = await post(telemetryApp({ shards: 4, locationHint: 'weur' }), env(ns), events)
    expect(res.status).toBe(202)
    const body = await res.json() as { accepted: number; ids: string[] }
    expect(body.accepted).toBe(40)
    expect([...body.ids].sort()).toEqual(events.map((e) => e.id).sort())
    for (const c of calls) {
      expect(c.path).toBe('/accept')
      expect(c.hint).toBe('weur')
      for (const r of c.body as Array<{ key: string }>) expect(shardOf({ key: r.key, id: '' }, 4)).toBe(c.shard)
      expect(c.ids).toEqual((c.body as Array<{ id: string }>).map((r) => r.id))
      const ids = (c.body as Array<{ id: string }>).map((r) => Number(r.id.slice(1)))
      expect(ids).toEqual([...ids].sort((a, b) => a - b))
    }
  })

  it('one shard: the object\'s answer gets the ids in event order; ids the app generated go first to the object, counted', async () => {
    const { ns, calls } = namespace((_s, body) => Response.json({ accepted: body.length, topic: 'telemetry' }, { status: 202 }))
    const mixed = [{ type: 'a' }, { type: 'b', id: 'given-1' }, { type: 'c' }, { type: 'd', id: 'given-2' }]
    const res = await post(telemetryApp(), env(ns), mixed)
    expect(res.status).toBe(202)
    const body = await res.json() as { accepted: number; topic: string; ids: string[] }
    expect(body.accepted).toBe(4)
    expect(body.topic).toBe('telemetry')
    expect(body.ids).toHaveLength(4)
    expect([body.ids[1], body.ids[3]]).toEqual(['given-1', 'given-2'])
    expect(calls[0]!.generated).toBe('2')
    expect(calls[0]!.ids).toEqual([body.ids[0], body.ids[2], 'given-1', 'given-2'])

    const named = await (await post(telemetryApp(), env(ns), events.slice(0, 3))).json() as { ids: string[] }
    expect(named.ids).toEqual(['e0', 'e1', 'e2'])
    expect(calls[1]!.generated).toBeNull()
    const unnamed = await (await post(telemetryApp(), env(ns), [{ type: 'a' }, { type: 'b' }])).json() as { ids: string[] }
    expect(calls[2]!.generated).toBe('all')
    expect(calls[2]!.ids).toEqual(unnamed.ids)
  })

  it('a full shard makes the answer 429 with the largest Retry-After and the ids to resend', async () => {
    const { ns } = namespace((shard, body) => (shard === 1
      ? Response.json({ error: 'backlog full', ids: (body as Array<{ id: string }>).map((r) => r.id) }, { status: 429, headers: { 'retry-after': '7' } })
      : Response.json({ accepted: body.length, ids: (body as Array<{ id: string }>).map((r) => r.id) }, { status: 202 })))
    const res = await post(telemetryApp({ shards: 4 }), env(ns), events)
    expect(res.status).toBe(429)
    expect(res.headers.get('retry-after')).toBe('7')
    const body = await res.json() as { accepted: number; ids: string[]; refused: string[]; error: string }
    expect(body.error).toBe('backlog full')
    expect(body.accepted + body.refused.length).toBe(40)
    expect(body.refused.every((id) => shardOf({ key: events.find((e) => e.id === id)!.key, id }, 4) === 1)).toBe(true)
  })

  it('sync mode posts to /produce; a missing binding is a 500 that names it', async () => {
    const { ns, calls } = namespace((_s, body) => Response.json({ accepted: body.length, events: [] }, { status: 202 }))
    expect((await post(telemetryApp({ mode: 'sync' }), env(ns), events.slice(0, 3))).status).toBe(202)
    expect(calls.map((c) => c.path)).toEqual(['/produce'])
    expect(calls[0]!.ids).toBeNull()
    const res = await post(telemetryApp({ binding: 'NOPE' }), env(ns), events.slice(0, 1))
    expect(res.status).toBe(500)
    expect(((await res.json()) as { message: string }).message).toMatch(/no Durable Object binding NOPE/)
  })

  it('a var it cannot read is a 500 naming it (ConfigException), and no object is asked', async () => {
    const { ns, calls } = namespace((_s, body) => Response.json({ accepted: body.length }, { status: 202 }))
    for (const bad of [{ SHARDS: 'two' }, { ACCEPT_MODE: 'synch' }, { MAX_EVENTS: '1,000' }, { LOCATION_HINT: 'eu' }]) {
      const res = await post(telemetryApp(), { ...env(ns), ...bad }, events.slice(0, 1))
      expect(res.status).toBe(500)
      const body = await res.json() as { error: string; message: string }
      expect(body.error).toBe('ConfigException')
      expect(body.message).toContain(`${Object.keys(bad)[0]}=${JSON.stringify(Object.values(bad)[0])}`)
    }
    expect(calls).toEqual([])
    // The same vars read as numbers from wrangler.toml work.
    expect((await post(telemetryApp(), { ...env(ns), SHARDS: 2 as never }, events.slice(0, 1))).status).toBe(202)
    // A region in capitals reaches get() as Cloudflare spells it.
    expect((await post(telemetryApp(), { ...env(ns), LOCATION_HINT: ' APAC ' }, events.slice(0, 1))).status).toBe(202)
    expect(calls.at(-1)!.hint).toBe('apac')
  })
})

describe('telemetryApp() OTLP: authentication and a full backlog', () => {
  const logs = JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'hello' } }] }] }] })
  const otlp = (app: ReturnType<typeof telemetryApp>, e: Env, headers: Record<string, string>, type = 'application/json', body: string | Uint8Array<ArrayBuffer> = logs) =>
    app.request('/v1/logs', { method: 'POST', body, headers: { 'content-type': type, ...headers } }, e)
  /** Objects that answer every OTLP hand-over with `answer`, recording the paths they were sent to. */
  const objects = (answer: () => Response) => {
    const calls: Array<{ path: string }> = []
    const ns: DurableObjectNamespace = { idFromName: (n) => n, get: () => ({ fetch: async (input) => { calls.push({ path: new URL(String(input)).pathname }); return answer() } }) }
    return { ns, calls }
  }
  const stored = () => objects(() => Response.json({ records: 1, items: 1, rejected: 0 }))

  it('takes the secret in a header of the deployer\'s naming (OTLP_AUTH_HEADER), and only there', async () => {
    const { ns, calls } = stored()
    const e = { ...env(ns), OTLP_AUTH_TOKEN: 's3cret', OTLP_AUTH_HEADER: 'X-OTLP-Secret' }
    const app = telemetryApp()
    const missing = await otlp(app, e, { authorization: 'Bearer s3cret' })
    expect(missing.status).toBe(401)
    expect(((await missing.json()) as { message: string }).message).toMatch(/missing x-otlp-secret header/)
    const wrong = await otlp(app, e, { 'x-otlp-secret': 's3cret!' })
    expect(wrong.status).toBe(401)
    expect(((await wrong.json()) as { code: number }).code).toBe(16)
    expect(calls).toEqual([])
    expect((await otlp(app, e, { 'x-otlp-secret': 's3cret' })).status).toBe(200)
    expect(calls.map((c) => c.path)).toEqual(['/otlp'])
  })

  it('takes the bearer token with or without its "Bearer " prefix in the default authorization header', async () => {
    const { ns, calls } = stored()
    const e = { ...env(ns), OTLP_AUTH_TOKEN: 's3cret' }
    const app = telemetryApp()
    expect((await otlp(app, e, {})).status).toBe(401)
    expect((await otlp(app, e, { authorization: 'Bearer s3cre' })).status).toBe(401)
    expect((await otlp(app, e, { authorization: 'Bearer s3cret' })).status).toBe(200)
    expect((await otlp(app, e, { authorization: 's3cret' })).status).toBe(200)
    expect(calls).toHaveLength(2)
  })

  it('a full backlog is 429 with the object\'s Retry-After and a google.rpc.Status in the request\'s content type', async () => {
    const { ns } = objects(() => Response.json({ error: 'backlog full: 50 records wait' }, { status: 429, headers: { 'retry-after': '3' } }))
    const app = telemetryApp()
    const asJson = await otlp(app, env(ns), {})
    expect(asJson.status).toBe(429)
    expect(asJson.headers.get('retry-after')).toBe('3')
    expect(asJson.headers.get('content-type')).toMatch(/^application\/json/)
    expect(await asJson.json()).toEqual({ code: 8, message: 'backlog full: 50 records wait' })
    const asProto = await otlp(app, env(ns), {}, 'application/x-protobuf', jsonToProto(JSON.parse(logs), 'LogsData'))
    expect(asProto.status).toBe(429)
    expect(asProto.headers.get('retry-after')).toBe('3')
    expect(asProto.headers.get('content-type')).toBe('application/x-protobuf')
    expect(protoToJson(new Uint8Array(await asProto.arrayBuffer()), 'RpcStatus')).toEqual({ code: 8, message: 'backlog full: 50 records wait' })
  })
})
