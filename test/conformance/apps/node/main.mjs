// Node 20, 22 and 24: the package root resolves to its Node entry, which adds tcp().
// #region recipe
import { createProducer, tcp } from 'kafka-edge'

const producer = createProducer({
  'bootstrap.servers': process.env.KAFKA_BOOTSTRAP ?? '127.0.0.1:9092',
  transport: tcp(),
})
const md = await producer.send({ topic: process.env.KAFKA_TOPIC ?? 'clicks', key: 'user-1', value: 'hello from Node' })
console.log(`written to ${md.topic}-${md.partition} at offset ${md.offset}`)
await producer.close()
// #endregion recipe

// The conformance scenarios, with the same transport.
import { runScenarios } from './scenarios.mjs'

const cfg = JSON.parse(process.env.CONFORMANCE)
const out = await runScenarios({
  ...cfg, createProducer, connection: { 'bootstrap.servers': cfg.bootstrap, transport: tcp() },
  registry: cfg.registry && { 'schema.registry.url': cfg.registry },
  runtime: { name: 'node', version: process.versions.node },
})
console.log(`CONFORMANCE ${JSON.stringify(out)}`)
