// The demo the README's main command runs: sample telemetry through kafka-edge, read back by Java.
import { readFileSync } from 'node:fs'
import { createProducer } from '../src/edge/index.js'
import { tcp } from '../src/edge/node.js'
import { createTopic, readTopic, type Cluster } from '../test/helpers/kafka.js'

const cluster = JSON.parse(readFileSync(new URL('../.kafka/cluster.json', import.meta.url), 'utf8')) as Cluster
const topic = `telemetry-demo-${Date.now().toString(36)}`
await createTopic(cluster, topic, { partitions: 3 })

const producer = createProducer({ 'bootstrap.servers': cluster.bootstrap, transport: tcp(), 'client.id': 'kafka-edge-demo' })
const devices = ['sensor-a', 'sensor-b', 'sensor-c', 'sensor-d']
const sends = []
for (let i = 0; i < 20; i++) {
  const device = devices[i % devices.length]!
  sends.push(producer.send({
    topic,
    key: device,
    value: JSON.stringify({ device, seq: i, temperature: +(20 + Math.sin(i) * 3).toFixed(2), at: new Date().toISOString() }),
    headers: { source: 'kafka-edge-demo' },
  }))
}
const acks = await Promise.all(sends)
await producer.close()
console.log(`\nkafka-edge sent ${acks.length} records to ${topic}:`)
for (const a of acks.slice(0, 5)) console.log(`  partition ${a.partition} offset ${a.offset}`)

const read = await readTopic(cluster, topic, { isolation: 'read_committed', expected: acks.length })
console.log(`\nThe Java consumer (read_committed) sees ${read.length} records:`)
const dec = new TextDecoder()
for (const r of read) console.log(`  p${r.partition}@${r.offset} key=${r.key ? dec.decode(r.key) : null} value=${r.value ? dec.decode(r.value) : null}`)
console.log('\nproducer metrics:', JSON.stringify(Object.fromEntries(Object.entries(producer.metrics()).filter(([k]) => /batch-size-avg|records-per-request-avg|request-latency-avg/.test(k)))))
