// The telemetry Worker end to end: real workerd (wrangler dev, local mode) running the hono app and
// the ProducerObject Durable Object, whose producer reaches a real Kafka 4.4 broker on 127.0.0.1 with
// cloudflare:sockets. The Java consumer is the independent reader; DumpLogSegments shows that every
// request went through ONE producer (one producer id, one run of sequence numbers per partition).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bs, createTopic, dumpBatches, ensureCluster, readTopic, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { startWrangler, type WranglerDev } from './wrangler.js'

const PARTITIONS = 3
const MAX_BODY = 64 * 1024
const MAX_EVENTS = 200

interface Accepted {
  accepted: number
  topic: string
  producerId: string
  producerEpoch: number
  events: { id: string; partition: number; offset: string }[]
}

let cluster: Cluster
let topic: string
let dev: WranglerDev

const post = (body: string, type = 'application/json') => fetch(`${dev.url}/events`, { method: 'POST', body, headers: { 'content-type': type } })

beforeAll(async () => {
  cluster = await ensureCluster()
  topic = uniqueTopic('telemetry')
  await createTopic(cluster, topic, { partitions: PARTITIONS })
  // sync mode: 202 once Kafka acknowledged, with offsets (durable mode: worker-exactly-once.test.ts).
  dev = await startWrangler({ KAFKA_BOOTSTRAP: bs(cluster), TELEMETRY_TOPIC: topic, MAX_BODY_BYTES: String(MAX_BODY), MAX_EVENTS: String(MAX_EVENTS), ACCEPT_MODE: 'sync' })
})

afterAll(async () => {
  await dev?.stop()
})

describe('telemetry Worker under wrangler dev (workerd) -> real Kafka', () => {
  const sent = new Map<string, { type: string; key?: string; data?: unknown; timestamp?: number }>()
  const acked = new Map<string, { partition: number; offset: string }>()
  const producerIds = new Set<string>()

  it('starts idle: no producer until the first event', async () => {
    const h = await (await fetch(`${dev.url}/healthz`)).json()
    expect(h).toMatchObject({ ok: true, topic, producer: 'idle', producerId: null })
  })

  it('answers 202 with offsets once Kafka acknowledged; one producer across sequential and concurrent requests', async () => {
    const batches: object[][] = []
    // one array of keyed events, one single object, then 6 requests in parallel
    batches.push(Array.from({ length: 25 }, (_, i) => ({ type: 'page_view', id: `a-${i}`, key: `user-${i % 7}`, data: { path: `/p/${i}`, n: i }, timestamp: 1_750_000_000_000 + i })))
    batches.push([{ type: 'click', id: 'single-1', data: { button: 'buy' } }])
    for (let r = 0; r < 6; r++) batches.push(Array.from({ length: 10 }, (_, i) => ({ type: 'scroll', id: `c-${r}-${i}`, data: { depth: i * 10 } })))

    const send = async (events: object[], single: boolean) => {
      const res = await post(JSON.stringify(single ? events[0] : events))
      const body = await res.json() as Accepted
      expect(res.status, JSON.stringify(body)).toBe(202)
      expect(body.accepted).toBe(events.length)
      expect(body.topic).toBe(topic)
      expect(body.events.map((e) => e.id)).toEqual(events.map((e) => (e as { id: string }).id))
      for (const e of events as { id: string; type: string; key?: string; data?: unknown; timestamp?: number }[]) sent.set(e.id, e)
      for (const e of body.events) {
        expect(e.partition).toBeGreaterThanOrEqual(0)
        expect(e.partition).toBeLessThan(PARTITIONS)
        expect(BigInt(e.offset)).toBeGreaterThanOrEqual(0n)
        acked.set(e.id, { partition: e.partition, offset: e.offset })
      }
      producerIds.add(body.producerId)
      return body
    }
    await send(batches[0]!, false)
    const afterFirst = await (await fetch(`${dev.url}/healthz`)).json() as { connectionsOpened: number }
    await send(batches[1]!, true)
    await Promise.all(batches.slice(2).map((b) => send(b, false)))
    // the Durable Object's producer kept its broker connections: none opened after the first request
    const afterAll = await (await fetch(`${dev.url}/healthz`)).json() as { connectionsOpened: number }
    expect(afterFirst.connectionsOpened).toBeGreaterThan(0)
    expect(afterFirst.connectionsOpened).toBeLessThanOrEqual(2)
    expect(afterAll.connectionsOpened).toBe(afterFirst.connectionsOpened)

    // every (partition, offset) is distinct
    expect(new Set([...acked.values()].map((a) => `${a.partition}:${a.offset}`)).size).toBe(acked.size)
    expect(acked.size).toBe(25 + 1 + 60)
    expect(producerIds.size).toBe(1)
    expect(BigInt([...producerIds][0]!)).toBeGreaterThanOrEqual(0n)
  })

  it('rejects bad input with 400 and a clear message, and too-large input with 413; nothing of it reaches Kafka', async () => {
    const cases: [string, number, RegExp, string?][] = [
      ['{"type": "x",', 400, /not valid JSON/],
      ['', 400, /empty body/],
      ['[]', 400, /empty array/],
      ['{"data": {}}', 400, /"type" is required/],
      ['[{"type": "ok", "id": "bad-1"}, 42]', 400, /event\[1\]: must be an object/],
      ['{"type": "x", "colour": "red"}', 400, /unknown field "colour".*put custom fields under "data"/],
      ['{"type": "x", "timestamp": "yesterday"}', 400, /"timestamp" must be/],
      ['[{"type": "x", "id": "d"}, {"type": "y", "id": "d"}]', 400, /appears twice/],
      [JSON.stringify(Array.from({ length: MAX_EVENTS + 1 }, () => ({ type: 'x' }))), 413, new RegExp(`at most ${MAX_EVENTS}`)],
      [JSON.stringify({ type: 'big', data: 'x'.repeat(MAX_BODY) }), 413, new RegExp(`at most ${MAX_BODY} are accepted`)],
      ['{"type": "x"}', 415, /send application\/json/, 'application/x-www-form-urlencoded'],
    ]
    for (const [body, status, message, type] of cases) {
      const res = await post(body, type)
      const text = await res.text()
      let json: { error: string }
      try { json = JSON.parse(text) } catch { throw new Error(`${res.status} ${text}\n${dev.log()}`) }
      expect(res.status, `${body.slice(0, 60)} -> ${JSON.stringify(json)}`).toBe(status)
      expect(json.error).toMatch(message)
    }
    // a chunked body (no Content-Length) over the limit is cut off while streaming
    const chunks = new ReadableStream<Uint8Array>({
      start(c) { for (let i = 0; i < 20; i++) c.enqueue(new TextEncoder().encode(i === 0 ? '{"type":"x","data":"' : 'y'.repeat(8192))); c.close() },
    })
    const res = await fetch(`${dev.url}/events`, { method: 'POST', body: chunks, headers: { 'content-type': 'application/json' }, duplex: 'half' } as RequestInit)
    expect(res.status).toBe(413)
    expect(((await res.json()) as { error: string }).error).toMatch(/more than 65536 bytes/)
    // and the server is still in a state to answer the next request (the rejected body was discarded)
    const after = await post('{"type": 7}')
    expect(after.status).toBe(400)
    expect(((await after.json()) as { error: string }).error).toMatch(/"type" is required/)
  })

  it('the Java consumer reads exactly the acknowledged events, at the offsets the Worker returned', async () => {
    const records = await readTopic(cluster, topic, { expected: acked.size, isolation: 'read_uncommitted' })
    expect(records).toHaveLength(acked.size)
    const seen = new Set<string>()
    for (const r of records) {
      const v = JSON.parse(new TextDecoder().decode(r.value!)) as { id: string; type: string; timestamp: number; key?: string; data?: unknown }
      const want = sent.get(v.id)
      expect(want, `unexpected event ${v.id}`).toBeDefined()
      expect(seen.has(v.id), `duplicate ${v.id}`).toBe(false)
      seen.add(v.id)
      expect(acked.get(v.id)).toEqual({ partition: r.partition, offset: String(r.offset) })
      expect(v.type).toBe(want!.type)
      expect(v.data).toEqual(want!.data)
      expect(r.key === null ? undefined : new TextDecoder().decode(r.key)).toBe(want!.key)
      if (want!.timestamp !== undefined) expect(r.timestamp).toBe(want!.timestamp)
      expect(v.timestamp).toBe(r.timestamp)
      expect(r.headers.map((h) => [h.key, new TextDecoder().decode(h.value!)])).toEqual([['event-type', want!.type], ['content-type', 'application/json'], ['event-id', v.id]])
    }
    expect(seen.size).toBe(sent.size)
  })

  it('DumpLogSegments: every batch carries the one producer id, with gapless sequences per partition', async () => {
    const batches = await dumpBatches(cluster, topic)
    expect(batches.length).toBeGreaterThan(0)
    const pid = Number([...producerIds][0])
    const perPartition = new Map<number, typeof batches>()
    for (const b of batches) {
      expect(b.producerId).toBe(pid)
      expect(b.producerEpoch).toBe(0)
      expect(b.crcValid).toBe(true)
      perPartition.set(b.partition, [...(perPartition.get(b.partition) ?? []), b])
    }
    let records = 0
    for (const [partition, list] of perPartition) {
      let next = 0
      // On failure, the partition's batches as the log holds them (a CI run once saw a first batch at sequence 10).
      const layout = `partition ${partition}: ${list.map((b) => `@${b.baseOffset} seq ${b.baseSequence}-${b.lastSequence} (${b.count}) ${b.file.split('/').slice(-2).join('/')}`).join(', ')}`
      for (const b of list) {
        expect(b.baseSequence, layout).toBe(next)
        next = b.lastSequence + 1
        records += b.count
      }
    }
    expect(records).toBe(acked.size)
    // more requests than batches would be possible only if requests shared batches; at least the 8 requests reused one id
    expect(new Set(batches.map((b) => b.producerId)).size).toBe(1)
  })

  it('GET /metrics is Prometheus text with the producer metrics; GET /healthz the open producer and its id', async () => {
    const res = await fetch(`${dev.url}/metrics`)
    const text = await res.text()
    expect(res.status, `${text}\n${dev.log()}`).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
    const sample = (name: string) => Number(new RegExp(`^${name}\\{shard="0"\\} (\\S+)$`, 'm').exec(text)?.[1])
    expect(text).toMatch(/^# TYPE kafka_edge_backlog_events gauge$/m)
    expect(sample('kafka_edge_producer_record_send_total')).toBe(acked.size)
    expect(sample('kafka_edge_events_produced_total')).toBe(acked.size)
    expect(sample('kafka_edge_produce_latency_seconds_count')).toBe(acked.size)
    expect(sample('kafka_edge_producer_request_total')).toBeGreaterThan(0)
    expect(sample('kafka_edge_backlog_events')).toBe(0)
    const h = await (await fetch(`${dev.url}/healthz`)).json()
    expect(h).toMatchObject({ ok: true, producer: 'open', producerId: [...producerIds][0], producerEpoch: 0 })
    const nf = await fetch(`${dev.url}/nope`)
    expect(nf.status).toBe(404)
    expect(((await nf.json()) as { error: string }).error).toMatch(/POST \/events/)
  })
})
