import { Hono } from 'hono'
import type { Env } from './env.js'
import { DEFAULT_LIMITS, TelemetryInputError, parseTelemetry, readBodyLimited, type TelemetryLimits } from './validate.js'

/** The one Durable Object that holds the producer (one producer id, one set of connections). */
export const PRODUCER_OBJECT_NAME = 'telemetry-producer'

function limits(env: Env): TelemetryLimits {
  const n = (v: string | undefined, d: number) => (v && Number.isInteger(Number(v)) && Number(v) > 0 ? Number(v) : d)
  return { maxBodyBytes: n(env.MAX_BODY_BYTES, DEFAULT_LIMITS.maxBodyBytes), maxEvents: n(env.MAX_EVENTS, DEFAULT_LIMITS.maxEvents), maxEventBytes: DEFAULT_LIMITS.maxEventBytes }
}

const stub = (env: Env) => env.PRODUCER.get(env.PRODUCER.idFromName(PRODUCER_OBJECT_NAME))

/**
 * The telemetry Worker:
 *   POST /events   one event or an array (see validate.ts); 202 with {accepted, events: [{id, partition, offset}]}
 *                  once Kafka acknowledged every event; 400 bad input, 413 too large, 503/500 Kafka failures
 *   GET  /healthz  the Worker is up and whether the producer is open (and its producer id)
 *   GET  /metrics  producer.metrics() of the Durable Object's producer (Java metric names)
 */
export function createApp() {
  const app = new Hono<{ Bindings: Env }>()

  app.post('/events', async (c) => {
    const type = c.req.header('content-type') ?? ''
    if (type && !/^application\/(json|[\w.+-]*\+json)\b/i.test(type) && !/^text\/plain\b/i.test(type)) {
      return c.json({ error: `content-type ${JSON.stringify(type)} is not accepted; send application/json` }, 415)
    }
    let records
    try {
      const lim = limits(c.env)
      records = parseTelemetry(await readBodyLimited(c.req.raw, lim.maxBodyBytes), lim)
    } catch (e) {
      if (e instanceof TelemetryInputError) return c.json({ error: e.message }, e.status)
      throw e
    }
    const res = await stub(c.env).fetch('https://producer/produce', {
      method: 'POST', body: JSON.stringify(records), headers: { 'content-type': 'application/json' },
    })
    return new Response(res.body, { status: res.status, headers: { 'content-type': 'application/json' } })
  })

  app.get('/healthz', async (c) => {
    const res = await stub(c.env).fetch('https://producer/status')
    const status = await res.json() as Record<string, unknown>
    return c.json({ ok: true, topic: c.env.TELEMETRY_TOPIC, ...status })
  })

  app.get('/metrics', async (c) => {
    const res = await stub(c.env).fetch('https://producer/metrics')
    return new Response(res.body, { status: res.status, headers: { 'content-type': 'application/json' } })
  })

  app.notFound((c) => c.json({ error: `no route ${c.req.method} ${new URL(c.req.url).pathname}; try POST /events, GET /healthz, GET /metrics` }, 404))
  app.onError((e, c) => c.json({ error: 'internal error', message: e.message }, 500))
  return app
}
