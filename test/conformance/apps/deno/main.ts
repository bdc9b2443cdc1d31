// Deno 2 with a package.json: `npm install kafka-edge`, then `deno run --allow-net --allow-env --allow-read main.ts`.
// The package root resolves to its Node entry (Deno runs node:net), so tcp() reaches the brokers.
// #region recipe
import { createProducer, tcp } from 'kafka-edge'

const producer = createProducer({
  'bootstrap.servers': Deno.env.get('KAFKA_BOOTSTRAP') ?? '127.0.0.1:9092',
  transport: tcp(),
})
const md = await producer.send({ topic: Deno.env.get('KAFKA_TOPIC') ?? 'clicks', key: 'user-1', value: 'hello from Deno' })
console.log(`written to ${md.topic}-${md.partition} at offset ${md.offset}`)
await producer.close()
// #endregion recipe

// The conformance scenarios, with the same transport.
import { runScenarios } from './scenarios.mjs'

const cfg = JSON.parse(Deno.env.get('CONFORMANCE')!)
const out = await runScenarios({
  ...cfg, createProducer, connection: { 'bootstrap.servers': cfg.bootstrap, transport: tcp() },
  registry: cfg.registry && { 'schema.registry.url': cfg.registry },
  runtime: { name: 'deno', version: Deno.version.deno },
})
console.log(`CONFORMANCE ${JSON.stringify(out)}`)
