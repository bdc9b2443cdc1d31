import { Hono } from 'hono'
import { ConfigException } from '../errors.js'
import { murmur2 } from '../producer/partitioner.js'
import type { DurableObjectNamespace, DurableObjectStub, Env } from './env.js'
import { OTLP_PATHS, OtlpRequestError, authorize, bodyType, exportResponse, metadataHeaders, otlpSettings, readOtlpBody, statusResponse } from './otlp.js'
import { acceptMode, intVar, locationHintVar, prometheus, type LocationHint, type MetricSample } from './settings.js'
import { DEFAULT_LIMITS, TelemetryInputError, encodeRecords, parseTelemetry, readBodyLimited, type TelemetryLimits, type TelemetryRecord } from './validate.js'

/** Objects are named `${SHARD_PREFIX}${i}`; the pre-sharding single object was 'telemetry-producer'. */
export const SHARD_PREFIX = 'telemetry-shard-'

export interface TelemetryAppOptions {
  /** The Durable Object namespace binding of the KafkaProducerObject class. Default 'PRODUCER'. */
  binding?: string
  /** Objects the events are spread over by key (per-key order holds). Default: env.SHARDS, else 1. */
  shards?: number
  /** Where to place the objects (Durable Objects locationHint). Default: env.LOCATION_HINT. */
  locationHint?: LocationHint
  /** 'durable': 202 once stored in the object; 'sync': 202 once Kafka acknowledged. Default: env.ACCEPT_MODE, else durable. */
  mode?: 'durable' | 'sync'
  /** Input limits; default from env (MAX_BODY_BYTES, MAX_EVENTS) or 1 MiB / 1000 events / 64 KiB per event. */
  limits?: Partial<TelemetryLimits>
}

const utf8 = new TextEncoder()
const positive = (n: number) => n & 0x7fffffff

/**
 * The shard of an event: murmur2 of its key (the same hash Kafka's partitioner uses), so one key's
 * events always go through one object and keep their order; keyless events spread by id.
 */
export function shardOf(r: Pick<TelemetryRecord, 'key' | 'id'>, shards: number): number {
  return shards <= 1 ? 0 : positive(murmur2(utf8.encode(r.key ?? r.id))) % shards
}

/**
 * The telemetry Worker as a hono app:
 *   POST /events   one event or an array (see validate.ts). durable: 202 {accepted, topic, ids} once
 *                  stored; 429 + Retry-After when an object's backlog is full. sync: 202 {accepted,
 *                  events: [{id, partition, offset}]} once Kafka acknowledged. 400/413/415 bad input.
 *   POST /v1/traces, /v1/logs, /v1/metrics   OTLP/HTTP (otlp.ts, docs/otlp.md): 200 once stored in an
 *                  object (always the durable accept), written as the Collector's kafkaexporter writes
 *   GET  /healthz  every shard's producer state and backlog
 *   GET  /metrics  Prometheus text: backlog, oldest event age, produce latency, producer metrics, per shard
 */
export function telemetryApp(options: TelemetryAppOptions = {}) {
  const app = new Hono<{ Bindings: Env }>()
  // The env is one object for the isolate's life: its settings are read once, not per request (a
  // setting that throws is not kept, so every request answers its error until it is fixed).
  const settings = new WeakMap<Env, ReturnType<typeof readSettings>>()
  const cfg = (env: Env) => {
    let s = settings.get(env)
    if (!s) settings.set(env, s = readSettings(env))
    return s
  }
  const readSettings = (env: Env) => {
    const ns = (env as unknown as Record<string, DurableObjectNamespace | undefined>)[options.binding ?? 'PRODUCER']
    if (!ns || typeof ns.idFromName !== 'function') {
      throw new Error(`no Durable Object binding ${options.binding ?? 'PRODUCER'}: bind the KafkaProducerObject class in wrangler.toml`)
    }
    const shards = options.shards ?? intVar(env, 'SHARDS', 1)
    const locationHint = options.locationHint ?? locationHintVar(env)
    const mode = options.mode ?? acceptMode(env)
    const limits: TelemetryLimits = {
      maxBodyBytes: options.limits?.maxBodyBytes ?? intVar(env, 'MAX_BODY_BYTES', DEFAULT_LIMITS.maxBodyBytes),
      maxEvents: options.limits?.maxEvents ?? intVar(env, 'MAX_EVENTS', DEFAULT_LIMITS.maxEvents),
      maxEventBytes: options.limits?.maxEventBytes ?? DEFAULT_LIMITS.maxEventBytes,
    }
    const ids: unknown[] = []
    const stub = (i: number): DurableObjectStub => ns.get(ids[i] ??= ns.idFromName(`${SHARD_PREFIX}${i}`), locationHint ? { locationHint } : undefined)
    return { shards, mode, limits, stub }
  }

  // Named so that a CPU profile of the isolate tells the Worker's own request handling (billed as
  // CPU time) from its Durable Objects' (billed by duration); bench/inspector.ts looks for them and
  // for the async functions they await (a resumed async function has no caller on the stack).
  app.post('/events', async function telemetryEvents(c) {
    const type = c.req.header('content-type') ?? ''
    if (type && !/^application\/(json|[\w.+-]*\+json)\b/i.test(type) && !/^text\/plain\b/i.test(type)) {
      return c.json({ error: `content-type ${JSON.stringify(type)} is not accepted; send application/json` }, 415)
    }
    const { shards, mode, limits, stub } = cfg(c.env)
    let records: TelemetryRecord[]
    try {
      records = parseTelemetry(await readBodyLimited(c.req.raw, limits.maxBodyBytes), limits)
    } catch (e) {
      if (e instanceof TelemetryInputError) return c.json({ error: e.message }, e.status)
      throw e
    }
    const byShard = new Map<number, TelemetryRecord[]>()
    for (const r of records) {
      const s = shardOf(r, shards)
      const list = byShard.get(s)
      if (list) list.push(r)
      else byShard.set(s, [r])
    }
    const route = mode === 'sync' ? '/produce' : '/accept'
    const answers = await Promise.all([...byShard].map(async function toShard([s, list]) {
      // A durable accept gets the ids as a JSON array on a line before the events, so the object
      // stores the events (in encodeRecords' lines) without reading them. Ids the app generated come
      // first and x-generated-ids counts them: the object remembers only the others against resends
      // (an object of earlier code ignores the header and remembers all of them, as before).
      let generated = 0
      for (const r of list) if (r.generated) generated++
      const named = generated === 0 || generated === list.length ? list : [...list.filter((r) => r.generated), ...list.filter((r) => !r.generated)]
      const ids = mode === 'sync' ? '' : JSON.stringify(named.map((r) => r.id))
      const res = await stub(s).fetch(`https://producer${route}`, mode === 'sync'
        ? { method: 'POST', body: JSON.stringify(list), headers: { 'content-type': 'application/json' } }
        : { method: 'POST', body: `${ids}\n${encodeRecords(list)}`, headers: { 'content-type': 'text/plain', ...(generated > 0 ? { 'x-generated-ids': generated === list.length ? 'all' : String(generated) } : {}) } })
      const body = await res.json() as Record<string, unknown>
      // A durable accept's answer names no events (the object stores them without parsing them):
      // the ids accepted or refused are the ones sent to it.
      // The ids in the order of the events.
      if (mode === 'durable' && (res.status === 202 || res.status === 429)) body.ids = list.map((r) => r.id)
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body }
    }))
    if (answers.length === 1) {
      const a = answers[0]!
      return new Response(JSON.stringify(a.body), { status: a.status, headers: { 'content-type': 'application/json', ...(a.retryAfter ? { 'retry-after': a.retryAfter } : {}) } })
    }
    // Several shards: the worst status wins; accepted and refused ids are listed so a client resends only the refused.
    const worst = answers.reduce((w, a) => (a.status > w ? a.status : w), 0)
    const accepted = answers.filter((a) => a.status === 202)
    const body: Record<string, unknown> = {
      accepted: accepted.reduce((n, a) => n + (a.body.accepted as number), 0),
      topic: c.env.TELEMETRY_TOPIC,
      ...(mode === 'sync' ? { events: answers.flatMap((a) => (a.body.events as unknown[] | undefined) ?? []) } : { ids: accepted.flatMap((a) => a.body.ids as string[]) }),
    }
    if (worst !== 202) {
      body.error = answers.find((a) => a.status === worst)!.body.error
      const refusedIds = (a: (typeof answers)[number]) => (a.body.ids as string[] | undefined) ?? (a.body.failed as Array<{ id: string }> | undefined)?.map((f) => f.id) ?? []
      body.refused = answers.filter((a) => a.status !== 202).flatMap(refusedIds)
    }
    const retryAfter = answers.map((a) => Number(a.retryAfter ?? 0)).reduce((m, x) => Math.max(m, x), 0)
    return new Response(JSON.stringify(body), { status: worst, headers: { 'content-type': 'application/json', ...(retryAfter > 0 ? { 'retry-after': String(retryAfter) } : {}) } })
  })

  for (const [route, signal] of Object.entries(OTLP_PATHS)) {
    app.post(route, async function telemetryOtlp(c) {
      const req = c.req.raw
      const type = bodyType(req.headers.get('content-type'))
      const settings = otlpSettings(c.env)
      let body: Uint8Array<ArrayBuffer>
      try {
        authorize(req, settings)
        if (!type) throw new OtlpRequestError(415, `content-type ${JSON.stringify(req.headers.get('content-type') ?? '')} is not OTLP: send application/x-protobuf or application/json`)
        body = await readOtlpBody(req, signal, type, settings)
      } catch (e) {
        if (e instanceof OtlpRequestError) return statusResponse(e.status, type ?? 'json', e.message)
        throw e
      }
      const { shards, stub } = cfg(c.env)
      // No key to keep in order across requests: any shard takes it (one shard keeps arrival order).
      const shard = shards <= 1 ? 0 : Math.floor(Math.random() * shards)
      const res = await stub(shard).fetch('https://producer/otlp', {
        method: 'POST', body,
        headers: { 'content-type': 'application/x-protobuf', 'x-otlp-signal': signal, 'x-otlp-metadata': JSON.stringify(metadataHeaders(req, settings)) },
      })
      const answer = await res.json() as { rejected?: number; error?: string; message?: string }
      if (res.status === 200) return exportResponse(signal, type, answer.rejected ?? 0, answer.error ?? '')
      const retryAfter = res.headers.get('retry-after')
      return statusResponse(res.status, type, answer.error ?? answer.message ?? 'not stored', retryAfter ? { 'retry-after': retryAfter } : {})
    })
  }

  app.get('/healthz', async (c) => {
    const { shards, mode, stub } = cfg(c.env)
    const status = await Promise.all(Array.from({ length: shards }, async (_, i) => {
      return (await stub(i).fetch('https://producer/status')).json() as Promise<Record<string, unknown>>
    }))
    // One shard: its fields at the top level too (what single-object deployments read).
    return c.json({ ok: true, topic: c.env.TELEMETRY_TOPIC, mode, shards: status, ...(shards === 1 ? status[0] : {}) })
  })

  app.get('/metrics', async (c) => {
    const { shards, stub } = cfg(c.env)
    const all = await Promise.all(Array.from({ length: shards }, async (_, i) => ({
      shard: String(i), samples: await (await stub(i).fetch('https://producer/metrics')).json() as MetricSample[],
    })))
    return new Response(prometheus(all), { headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' } })
  })

  app.notFound((c) => c.json({ error: `no route ${c.req.method} ${new URL(c.req.url).pathname}; try POST /events, POST /v1/traces|logs|metrics, GET /healthz, GET /metrics` }, 404))
  // A bad var fails every request the same way: say which one, as the object's answers do.
  app.onError((e, c) => c.json({ error: e instanceof ConfigException ? e.name : 'internal error', message: e.message }, 500))
  return app
}
