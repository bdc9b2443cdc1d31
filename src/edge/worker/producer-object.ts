import coreModule from '../../../build/core.wasm'
import { KafkaEdgeError } from '../errors.js'
import '../producer/install.js'
import { createProducer, type Producer } from '../producer/producer.js'
import type { CompressionType } from '../wasm/core.js'
import { cloudflareSockets } from '../transport/cloudflare-sockets.js'
import type { DurableObjectState, Env } from './env.js'
import { countingOpens, securitySettings } from './settings.js'
import type { TelemetryRecord } from './validate.js'

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })

/** What the object answers for a produced event. Offsets are strings: JSON has no 64-bit integers. */
export interface ProducedEvent { id: string; partition: number; offset: string }
export interface FailedEvent { id: string; error: string; message: string; retriable: boolean; mayHaveBeenWritten: boolean }

/**
 * The Durable Object that owns ONE long-lived idempotent producer. A Worker request cannot keep a
 * socket past its own end; a Durable Object can, so the producer id, its sequence numbers, the
 * metadata cache and the broker connections survive across requests, and concurrent requests share
 * batches. Each request is answered only after Kafka acknowledged (acks=all) all of its records.
 *
 * Internal routes (reached through the stub from the Worker): POST /produce, GET /metrics, GET /status.
 */
export class ProducerObject {
  private producer: Producer | null = null
  private readonly env: Env
  /** Broker connections opened over the object's life: stays flat while the producer reuses them. */
  private connectionsOpened = 0

  constructor(_state: DurableObjectState, env: Env) {
    this.env = env
  }

  private getProducer(): Producer {
    if (this.producer && !this.producer.state.fatal) return this.producer
    if (this.producer) void this.producer.close({ timeoutMs: 0 }).catch(() => {})
    this.producer = createProducer({
      'bootstrap.servers': this.env.KAFKA_BOOTSTRAP,
      // cloudflare:sockets is imported on first use (workerd resolves it); no bundler config needed.
      transport: countingOpens(cloudflareSockets(), () => { this.connectionsOpened++ }),
      // workerd refuses to compile WASM from bytes at runtime: hand over the module wrangler compiled.
      wasm: coreModule,
      'client.id': 'kafka-edge-telemetry',
      'compression.type': (this.env.KAFKA_COMPRESSION || 'none') as CompressionType,
      // An HTTP caller is waiting: fail within 30 s rather than Java's 2 minutes.
      'delivery.timeout.ms': 30_000,
      'request.timeout.ms': 10_000,
      'max.block.ms': 15_000,
      ...securitySettings(this.env),
    })
    return this.producer
  }

  async fetch(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname
    try {
      if (request.method === 'POST' && path === '/produce') return await this.produce(await request.json() as TelemetryRecord[])
      if (request.method === 'GET' && path === '/metrics') return json(this.producer ? this.producer.metrics() : {})
      if (request.method === 'GET' && path === '/status') return json(this.status())
      return json({ error: 'not found' }, 404)
    } catch (e) {
      return json({ error: (e as Error).name, message: (e as Error).message }, 500)
    }
  }

  private status() {
    const state = this.producer?.state
    return {
      producer: this.producer ? 'open' : 'idle',
      producerId: state?.producerId?.toString() ?? null,
      producerEpoch: state?.producerEpoch ?? null,
      connectionsOpened: this.connectionsOpened,
      // The protocol only, never the credentials: enough to tell whether a deploy picked up its config.
      securityProtocol: this.env.KAFKA_SECURITY_PROTOCOL?.trim().toUpperCase() || 'PLAINTEXT',
    }
  }

  private async produce(records: TelemetryRecord[]): Promise<Response> {
    const producer = this.getProducer()
    const topic = this.env.TELEMETRY_TOPIC
    const settled = await Promise.allSettled(records.map((r) => producer.send({
      topic,
      key: r.key,
      value: r.value,
      timestamp: r.timestamp,
      headers: { 'event-type': r.type, 'content-type': 'application/json' },
    })))
    const produced: ProducedEvent[] = []
    const failed: FailedEvent[] = []
    settled.forEach((s, i) => {
      const id = records[i]!.id
      if (s.status === 'fulfilled') produced.push({ id, partition: s.value.partition, offset: s.value.offset.toString() })
      else {
        const e = s.reason as Error & { mayHaveBeenWritten?: boolean }
        failed.push({ id, error: e.name, message: e.message, retriable: e instanceof KafkaEdgeError ? e.retriable : false, mayHaveBeenWritten: e.mayHaveBeenWritten ?? true })
      }
    })
    const st = this.status()
    if (failed.length === 0) return json({ accepted: produced.length, topic, producerId: st.producerId, producerEpoch: st.producerEpoch, events: produced }, 202)
    // 503 when a retry may help, 500 otherwise; the caller retries the failed ids only.
    const status = failed.every((f) => f.retriable) ? 503 : 500
    return json({ error: 'some events were not acknowledged by Kafka', accepted: produced.length, topic, producerId: st.producerId, events: produced, failed }, status)
  }
}
