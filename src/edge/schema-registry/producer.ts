import { ConfigException, markDelivery } from '../errors.js'
import type { Producer, ProducerRecord, RecordMetadata, SendCallback } from '../producer/producer.js'
import { SchemaRegistryClient } from './client.js'
import { isRegistrySetting, type SchemaRegistrySettings } from './config.js'
import { SchemaRegistryTimeoutException } from './errors.js'
import type { Serializer } from './serializer.js'

/** The producer's settings for serializers, with Java's names: the serializers and the registry settings they share. */
export interface SerializerSettings extends SchemaRegistrySettings {
  'key.serializer'?: Serializer
  'value.serializer'?: Serializer
}

/** A record whose key and value are whatever the serializers take (plain objects for the schema formats). */
export interface SerializingRecord<K = unknown, V = unknown> extends Omit<ProducerRecord, 'key' | 'value'> { key?: K; value: V }

type Bytes = Uint8Array | string | null
interface Waiting {
  record: SerializingRecord
  key: Bytes | Promise<Bytes> | undefined
  value: Bytes | Promise<Bytes>
  startedMs: number
  resolve: (m: RecordMetadata) => void
  reject: (e: unknown) => void
}

/**
 * A producer whose send() takes plain objects and serializes them with key.serializer and
 * value.serializer before they reach the producer (Java: the serializers given to KafkaProducer).
 *
 * A send whose schema id is cached goes to the producer at once, in the same call. A send that waits
 * for the registry (the first of each subject), and every send after it until it is through, wait in
 * order, so records keep the order of the send() calls. A serializer or registry failure rejects that
 * send alone, with nothing sent (mayHaveBeenWritten: false), and later sends go on; the wait for the
 * registry is bounded by the producer's max.block.ms (SchemaRegistryTimeoutException).
 */
export class SerializingProducer<K = unknown, V = unknown> {
  private readonly keySerializer: Serializer | undefined
  private readonly valueSerializer: Serializer | undefined
  private readonly queue: Waiting[] = []
  private pumping: Promise<void> | null = null

  constructor(readonly producer: Producer, settings: SerializerSettings) {
    const { 'key.serializer': k, 'value.serializer': v, ...rest } = settings
    const registry = Object.fromEntries(Object.entries(rest).filter(([key]) => isRegistrySetting(key))) as SchemaRegistrySettings
    const client = registry['schema.registry.url'] === undefined && registry['schema.registry.relay.url'] === undefined ? undefined : new SchemaRegistryClient(registry)
    k?.configure?.(registry, true, client)
    v?.configure?.(registry, false, client)
    this.keySerializer = k
    this.valueSerializer = v
  }

  /**
   * As Producer.send: a promise, or with a callback (Java's send(record, callback)) nothing. The
   * callback is called from the promise's settlement, so it never runs before send() returned.
   */
  send(record: SerializingRecord<K, V>): Promise<RecordMetadata>
  send(record: SerializingRecord<K, V>, callback: SendCallback): void
  send(record: SerializingRecord<K, V>, callback?: SendCallback): Promise<RecordMetadata> | void {
    if (callback === undefined) return this.serializeAndSend(record)
    if (typeof callback !== 'function') throw new ConfigException('send(record, callback): the callback must be a function')
    this.serializeAndSend(record).then((md) => callback(md, null), (e: Error) => callback(null, e))
  }

  private serializeAndSend(record: SerializingRecord<K, V>): Promise<RecordMetadata> {
    let key: Bytes | Promise<Bytes> | undefined, value: Bytes | Promise<Bytes>
    try {
      key = this.serialize(this.keySerializer, record.topic, record.key)
      value = this.serialize(this.valueSerializer, record.topic, record.value) as Bytes | Promise<Bytes>
    } catch (e) {
      return Promise.reject(markDelivery(e as Error, false))
    }
    if (this.queue.length === 0 && !(key instanceof Promise) && !(value instanceof Promise)) {
      return this.producer.send({ ...record, key, value })
    }
    // Settle (and so stop an unhandled-rejection report) the serializations that will fail; the queue reports them.
    if (key instanceof Promise) key.catch(() => {})
    if (value instanceof Promise) value.catch(() => {})
    return new Promise<RecordMetadata>((resolve, reject) => {
      this.queue.push({ record, key, value, startedMs: Date.now(), resolve, reject })
      this.pumping ??= this.pump().finally(() => { this.pumping = null })
    })
  }

  /** Hands every queued send to the producer, then flushes it. */
  async flush(): Promise<void> {
    await this.pumping
    await this.producer.flush()
  }

  async close(opts?: { timeoutMs?: number }): Promise<void> {
    await this.pumping
    await this.producer.close(opts)
  }

  private serialize(s: Serializer | undefined, topic: string, v: unknown): Bytes | Promise<Bytes> | undefined {
    if (!s) return v as Bytes | undefined
    if (v === null || v === undefined) return null // a null value is a tombstone, as with the Java serializers
    return s.serialize(topic, v)
  }

  private async pump(): Promise<void> {
    const maxBlockMs = this.producer.config.maxBlockMs
    while (this.queue.length) {
      const w = this.queue[0]!
      let key: Bytes | undefined, value: Bytes
      try {
        const subjects = [w.key instanceof Promise && this.keySerializer, w.value instanceof Promise && this.valueSerializer]
          .map((s) => s && s.subject?.(w.record.topic)).filter(Boolean) as string[]
        ;[key, value] = await withDeadline(Promise.all([w.key, w.value]), w.startedMs + maxBlockMs - Date.now(), w.record.topic, subjects, maxBlockMs)
      } catch (e) {
        this.queue.shift()
        w.reject(markDelivery(e as Error, false))
        continue
      }
      this.queue.shift()
      this.producer.send({ ...w.record, key, value }).then(w.resolve, w.reject)
    }
  }
}

function withDeadline<T>(p: Promise<T>, ms: number, topic: string, subjects: string[], maxBlockMs: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SchemaRegistryTimeoutException(
      `the schema registry did not answer within max.block.ms (${maxBlockMs} ms) for a record to ${topic}${subjects.length ? ` (subject ${subjects.join(', ')})` : ''}: ` +
      'nothing was sent; check the registry or raise max.block.ms', { subject: subjects[0] })), Math.max(0, ms))
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}

/** Wraps a producer so that send() serializes keys and values first (Java: key.serializer, value.serializer). */
export function withSerializers<K = unknown, V = unknown>(producer: Producer, settings: SerializerSettings): SerializingProducer<K, V> {
  return new SerializingProducer<K, V>(producer, settings)
}
