// #region recipe
import { createProducer, cloudflareSockets } from 'kafka-edge'

export default {
  async fetch(request, env) {
    // A producer lives as long as the request that made it; a Durable Object keeps one across
    // requests (the kafka-edge/worker entry does that for telemetry).
    const producer = createProducer({ 'bootstrap.servers': env.KAFKA_BOOTSTRAP, transport: cloudflareSockets() })
    try {
      const md = await producer.send({ topic: env.KAFKA_TOPIC, key: 'user-1', value: await request.text() })
      return Response.json({ partition: md.partition, offset: String(md.offset) })
    } finally {
      await producer.close()
    }
  },
}
// #endregion recipe
