// The producer scenarios every runtime runs, against a real Kafka 4.4 broker, with the package as
// installed from its tarball. Plain JavaScript that needs nothing but the producer and fetch(), so
// Node, Deno, Bun, workerd and a page bundled by Vite or esbuild all run this same file; each app
// in this folder only says how it reaches Kafka (tcp(), cloudflareSockets(), the relay).
//
// Every record carries its scenario in the value (`scenario|i|...`) and in a header, so the test
// (test/conformance/conformance.test.ts) checks what the Java consumer reads and what
// DumpLogSegments shows against what each scenario reports here. The two schema scenarios write
// Avro and Protobuf with kafka-edge/schema-registry; their values are in the Confluent wire format and
// an independent reader decodes them.
import { avroSerializer, protobufSerializer, withSerializers } from 'kafka-edge/schema-registry'
import { AVRO_SCHEMA, PROTO_MESSAGE, PROTO_SCHEMA, avroValues, protoSubject, protoValues } from './schemas.mjs'

export const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd']
export const COUNTS = { idempotent: 60, committed: 20, aborted: 10, perCodec: 20, restart: [10, 20, 10] }
/** The topic has 3 partitions: keyed records spread over them, the other scenarios pin one each. */
export const PARTITION = { transaction: 0, compression: 1, restart: 2, schema: 1 }

const range = (n) => Array.from({ length: n }, (_, i) => i)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
// Compressible on purpose: a codec that did nothing would still pass a size check otherwise.
const PADDING = ' the quick brown fox jumps over the lazy dog'.repeat(8)

function describeError(e) {
  return { name: e?.name ?? 'Error', message: String(e?.message ?? e).slice(0, 500), ...(e?.cause ? { cause: String(e.cause?.message ?? e.cause).slice(0, 300) } : {}) }
}

const producerIdOf = (p) => {
  const id = p.state.producerId
  return id === null ? null : String(id)
}

/** The schema id of each framed value the serializer returns (bytes 1-4 after the magic byte), as the app saw it. */
function noteIds(serializer, ids) {
  const note = (b) => { ids.add(new DataView(b.buffer, b.byteOffset, b.byteLength).getInt32(1)); return b }
  return {
    configure: (...a) => serializer.configure(...a),
    subject: (topic) => serializer.subject(topic),
    serialize(topic, value) {
      const r = serializer.serialize(topic, value)
      return r instanceof Promise ? r.then(note) : note(r)
    },
  }
}

/**
 * createProducer: the package's; connection: what the runtime adds to every producer's settings
 * (bootstrap.servers and transport); control: base URL of the test's broker control
 * (POST /broker/kill, /broker/start); txnId: a transactional.id no other run uses; registry: the
 * schema registry settings (a server's `schema.registry.url`, a page's relay lookups), or absent
 * where the test has no registry (the schema scenarios then do not run).
 */
export async function runScenarios({ createProducer, connection, topic, control, txnId, runtime, registry }) {
  const results = []
  const scenario = async (name, fn) => {
    const started = Date.now()
    try {
      results.push({ name, ok: true, ...(await fn()), ms: Date.now() - started })
    } catch (e) {
      results.push({ name, ok: false, ms: Date.now() - started, error: describeError(e) })
    }
  }
  const base = { ...connection, 'client.id': `conformance-${runtime.name}`, acks: 'all', 'enable.idempotence': true }

  await scenario('idempotent', async () => {
    const p = createProducer({ ...base, 'linger.ms': 5 })
    try {
      const acks = await Promise.all(range(COUNTS.idempotent).map((i) => {
        const record = { topic, key: `user-${i % 7}`, value: `idempotent|${i}`, headers: { scenario: 'idempotent' } }
        // Odd records go through send(record, callback), Java's callback form, so every runtime runs it too.
        if (i % 2 === 0) return p.send(record)
        return new Promise((resolve, reject) => p.send(record, (md, e) => (e ? reject(e) : resolve(md))))
      }))
      return { producerId: producerIdOf(p), acked: acks.length }
    } finally {
      await p.close()
    }
  })

  await scenario('transaction', async () => {
    const p = createProducer({ ...base, 'transactional.id': txnId })
    try {
      await p.initTransactions()
      p.beginTransaction()
      const committed = range(COUNTS.committed).map((i) => p.send({ topic, partition: PARTITION.transaction, value: `transaction|${i}|committed`, headers: { scenario: 'transaction' } }))
      await p.commitTransaction()
      await Promise.all(committed)
      p.beginTransaction()
      const aborted = range(COUNTS.aborted).map((i) => p.send({ topic, partition: PARTITION.transaction, value: `transaction|${i}|aborted`, headers: { scenario: 'transaction-aborted' } }))
      // Flushed first so the aborted records are in the log: read_committed must skip them there.
      await p.flush()
      await p.abortTransaction()
      await Promise.allSettled(aborted)
      return { producerId: producerIdOf(p), committed: committed.length, aborted: aborted.length }
    } finally {
      await p.close()
    }
  })

  for (const codec of CODECS) {
    await scenario(`compression ${codec}`, async () => {
      const p = createProducer({ ...base, 'compression.type': codec, 'linger.ms': 20 })
      try {
        const acks = await Promise.all(range(COUNTS.perCodec).map((i) => p.send({
          topic, partition: PARTITION.compression, value: `compression-${codec}|${i}|${PADDING}`, headers: { scenario: `compression-${codec}` },
        })))
        return { producerId: producerIdOf(p), acked: acks.length }
      } finally {
        await p.close()
      }
    })
  }

  await scenario('broker restart', async () => {
    const p = createProducer({ ...base, 'linger.ms': 5, 'delivery.timeout.ms': 180_000, 'request.timeout.ms': 15_000, 'max.block.ms': 120_000 })
    const post = async (what) => {
      const r = await fetch(`${control}/broker/${what}`, { method: 'POST' })
      if (!r.ok) throw new Error(`broker ${what}: HTTP ${r.status} ${await r.text()}`)
    }
    const [before, during, after] = COUNTS.restart
    let n = 0
    const send = () => {
      const i = n++
      return p.send({ topic, partition: PARTITION.restart, value: `restart|${i}`, headers: { scenario: 'restart' } })
    }
    try {
      const acks = await Promise.all(range(before).map(send))
      await post('kill')
      // Sent while the broker is down: they wait in the accumulator and the sender retries.
      const pending = range(during).map(send)
      await sleep(500)
      await post('start')
      acks.push(...(await Promise.all(pending)))
      acks.push(...(await Promise.all(range(after).map(send))))
      return { producerId: producerIdOf(p), acked: acks.length, offsets: acks.map((a) => String(a.offset)) }
    } finally {
      await p.close()
    }
  })

  if (registry) {
    // A page holds no registry credentials: it reads the latest version the test registered, through
    // the relay. A server registers the schema it carries (auto.register.schemas, the default).
    const page = registry['schema.registry.relay.url'] !== undefined
    const schemaScenario = (name, serializer, values) => scenario(name, async () => {
      const ids = new Set()
      const p = withSerializers(createProducer({ ...base, 'linger.ms': 5 }), { ...registry, 'value.serializer': noteIds(serializer, ids) })
      try {
        const acks = await Promise.all(values.map((value) => p.send({ topic, partition: PARTITION.schema, value, headers: { scenario: name.replace(' ', '-') } })))
        return { producerId: producerIdOf(p.producer), acked: acks.length, offsets: acks.map((a) => String(a.offset)), schemaIds: [...ids] }
      } finally {
        await p.close()
      }
    })
    await schemaScenario('schema avro', avroSerializer(page ? undefined : AVRO_SCHEMA, page ? { 'use.latest.version': true } : {}), avroValues())
    await schemaScenario('schema protobuf', protobufSerializer(page ? undefined : PROTO_SCHEMA, {
      messageName: PROTO_MESSAGE, 'value.subject.name.strategy': protoSubject, ...(page ? { 'use.latest.version': true } : {}),
    }), protoValues())
  }

  return { runtime, results }
}
