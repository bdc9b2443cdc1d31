// Bun: `bun add kafka-edge`, then `bun main.ts`. The package root resolves to its Node entry.
// #region recipe
import { createProducer, tcp } from 'kafka-edge'

const producer = createProducer({
  'bootstrap.servers': Bun.env.KAFKA_BOOTSTRAP ?? '127.0.0.1:9092',
  transport: tcp(),
})
const md = await producer.send({ topic: Bun.env.KAFKA_TOPIC ?? 'clicks', key: 'user-1', value: 'hello from Bun' })
console.log(`written to ${md.topic}-${md.partition} at offset ${md.offset}`)
await producer.close()
// #endregion recipe

// The conformance scenarios, with the same transport.
import { runScenarios } from './scenarios.mjs'

const cfg = JSON.parse(Bun.env.CONFORMANCE!)
const out = await runScenarios({
  ...cfg, createProducer, connection: { 'bootstrap.servers': cfg.bootstrap, transport: tcp() },
  registry: cfg.registry && { 'schema.registry.url': cfg.registry },
  runtime: { name: 'bun', version: Bun.version },
})
console.log(`CONFORMANCE ${JSON.stringify(out)}`)
// A socket handle can outlive close() by a moment in Bun; the work is done.
process.exit(0)
