// Topic auto-creation against a real Kafka 4.4 broker with auto.create.topics.enable=true (Kafka's own
// default; the other test clusters switch it off). Like Java's producer, kafka-edge asks for it in its
// Metadata requests, so a first send() to a new topic creates the topic, over PLAINTEXT and SASL_SSL.
// Through the relay it does not: the relay clears the flag in its clients' Metadata requests.
import fs from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TimeoutException, createProducer, type Producer, type ProducerSettings } from '../../src/edge/index.js'
import { tcp } from '../../src/edge/node.js'
import { bootstrapFor, createTopic, describeTopic, ensureCluster, javaSecurity, readTopic, stopCluster, uniqueTopic, type Cluster } from '../helpers/kafka.js'
import { startRelay, wsProducer } from '../bridge/helpers.js'

const NAME = 'auto-create'
let cluster: Cluster
beforeAll(async () => {
  cluster = await ensureCluster({ name: NAME, tls: true, sasl: true, brokerProps: { 'auto.create.topics.enable': 'true' } })
})

const producers: Producer[] = []
afterAll(async () => {
  await Promise.all(producers.map((p) => p.close()))
  await stopCluster(NAME)
})

function producer(settings: ProducerSettings): Producer {
  const p = createProducer({ transport: tcp(), 'max.block.ms': 20_000, ...settings })
  producers.push(p)
  return p
}

/** The first send() to a topic nobody created succeeds; the Java reader finds the record there. */
async function firstSendCreates(settings: ProducerSettings, security?: Record<string, string>): Promise<void> {
  const topic = uniqueTopic('auto')
  const p = producer(settings)
  const md = await p.send({ topic, key: 'k', value: 'first' })
  expect(md.offset).toBe(0n)
  const read = await readTopic(cluster, topic, { isolation: 'read_uncommitted', expected: 1, timeoutMs: 30_000, security })
  expect(read.map((r) => new TextDecoder().decode(r.value!))).toEqual(['first'])
}

describe('a broker with auto.create.topics.enable=true creates the topic of a first send(), as for the Java producer', () => {
  it('over PLAINTEXT', async () => {
    await firstSendCreates({ 'bootstrap.servers': bootstrapFor(cluster, 'PLAINTEXT') })
  })

  it('over SASL_SSL (SCRAM-SHA-512)', async () => {
    await firstSendCreates({
      'bootstrap.servers': bootstrapFor(cluster, 'SASL_SSL'), 'security.protocol': 'SASL_SSL', 'ssl.ca.pem': fs.readFileSync(cluster.tls!.ca, 'utf8'),
      'sasl.mechanism': 'SCRAM-SHA-512', 'sasl.username': 'admin', 'sasl.password': 'admin-secret',
    }, javaSecurity(cluster, 'SASL_SSL', 'SCRAM-SHA-512'))
  })

  it('through the relay the topic is not created, and the send fails naming why', async () => {
    const bridge = await startRelay(cluster)
    try {
      const topic = uniqueTopic('relayed')
      const p = wsProducer(bridge, { 'max.block.ms': 3000 })
      producers.push(p)
      const error = await p.send({ topic, value: 'x' }).then(() => { throw new Error('send succeeded') }, (e: Error & { mayHaveBeenWritten?: boolean }) => e)
      expect(error).toBeInstanceOf(TimeoutException)
      expect(error.mayHaveBeenWritten).toBe(false)
      expect(error.message).toMatch(/not present in metadata after 3000 ms .*UNKNOWN_TOPIC_OR_PARTITION and did not create it .*relay.*; create the topic/)
      await expect(describeTopic(cluster, topic)).rejects.toThrow(/UnknownTopicOrPartition|does not exist/)
      // The same relay and producer send to a topic that exists.
      const made = uniqueTopic('relayed')
      await createTopic(cluster, made)
      expect((await p.send({ topic: made, value: 'y' })).offset).toBe(0n)
    } finally {
      await bridge.close()
    }
  })
})
