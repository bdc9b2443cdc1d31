// `npm start`, part two: the telemetry Worker (worker/telemetry.ts: the kafka-edge/worker component) under
// `wrangler dev` on 127.0.0.1, producing to the local Kafka with cloudflare:sockets. POSTs sample
// events, prints the Worker's answers and what the Java consumer reads. With --once it stops the
// Worker afterwards; otherwise it keeps it running until Ctrl-C.
import { readFileSync } from 'node:fs'
import net from 'node:net'
import { createTopic, readTopic, type Cluster } from '../test/helpers/kafka.js'
import { freePort, startWrangler } from '../test/e2e/wrangler.js'

const once = process.argv.includes('--once')
const cluster = JSON.parse(readFileSync(new URL('../.kafka/cluster.json', import.meta.url), 'utf8')) as Cluster
const topic = `telemetry-worker-${Date.now().toString(36)}`
await createTopic(cluster, topic, { partitions: 3 })

const portFree = (p: number) => new Promise<boolean>((r) => {
  const s = net.createServer().once('error', () => r(false)).listen(p, '127.0.0.1', () => s.close(() => r(true)))
})
const port = (await portFree(8787)) ? 8787 : await freePort()

console.log(`\nStarting the telemetry Worker (wrangler dev, workerd) on 127.0.0.1:${port} -> ${cluster.bootstrap} topic ${topic} ...`)
const dev = await startWrangler({ KAFKA_BOOTSTRAP: cluster.bootstrap, TELEMETRY_TOPIC: topic }, { port, snapshot: false })
let stopping = false
const stop = async (code: number) => {
  if (stopping) return
  stopping = true
  await dev.stop()
  process.exit(code)
}
process.on('SIGINT', () => void stop(130))
process.on('SIGTERM', () => void stop(143))

try {
  const post = async (body: unknown) => {
    const res = await fetch(`${dev.url}/events`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } })
    const text = await res.text()
    console.log(`  POST /events -> ${res.status} ${text}`)
    if (res.status !== 202) throw new Error(`the Worker answered ${res.status}`)
  }
  await post([
    { type: 'page_view', key: 'user-1', data: { path: '/' } },
    { type: 'click', key: 'user-2', data: { button: 'signup' } },
    { type: 'page_view', key: 'user-1', data: { path: '/pricing' } },
  ])
  await post({ type: 'purchase', id: 'order-42', key: 'user-1', data: { amount: 19.9 } })
  const bad = await fetch(`${dev.url}/events`, { method: 'POST', body: '{"data": 1}', headers: { 'content-type': 'application/json' } })
  console.log(`  POST /events (no type) -> ${bad.status} ${await bad.text()}`)
  console.log(`  GET /healthz -> ${await (await fetch(`${dev.url}/healthz`)).text()}`)

  const read = await readTopic(cluster, topic, { isolation: 'read_committed', expected: 4 })
  console.log(`\nThe Java consumer sees ${read.length} records the Worker produced:`)
  const dec = new TextDecoder()
  for (const r of read) console.log(`  p${r.partition}@${r.offset} key=${r.key ? dec.decode(r.key) : null} value=${r.value ? dec.decode(r.value) : null}`)
  const metrics = await (await fetch(`${dev.url}/metrics`)).text()
  const wanted = /^kafka_edge_(backlog_events|events_accepted_total|events_produced_total|produce_latency_seconds_(sum|count)|producer_record_send_total|producer_batch_size_avg)\{/
  console.log(`Worker metrics (GET /metrics, Prometheus text), a few lines:\n${metrics.split('\n').filter((l) => wanted.test(l)).map((l) => `  ${l}`).join('\n')}`)
} catch (e) {
  console.error(`worker demo failed: ${(e as Error).message}\n${dev.log()}`)
  await stop(1)
}

if (once) await stop(0)
else {
  console.log(`\nThe Worker is up: curl -X POST ${dev.url}/events -H 'content-type: application/json' -d '{"type":"hello"}'`)
  console.log(`(GET ${dev.url}/healthz, GET ${dev.url}/metrics). Ctrl-C stops it and Kafka (.kafka/cluster.json).`)
  setInterval(() => {}, 1 << 30)
}
