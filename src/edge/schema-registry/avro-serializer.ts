import type { RegistrySchema } from './client.js'
import { encodeAvro, parseAvro, type AvroSchema } from './avro.js'
import { SchemaSerializer, type SchemaCodec, type SerializerOptions } from './serializer.js'

/** Java: KafkaAvroSerializer. */
export class AvroSerializer<T = unknown> extends SchemaSerializer<T> {
  protected readonly format = 'AVRO' as const
  constructor(schema?: AvroSchema, options?: SerializerOptions) {
    super(schema === undefined ? undefined : { schema: typeof schema === 'string' ? schema : JSON.stringify(schema), schemaType: 'AVRO' }, options)
  }

  protected codec(s: RegistrySchema): SchemaCodec {
    const { type, name } = parseAvro(s.schema)
    return { recordName: name, write: (w, v) => encodeAvro(w, type, v) }
  }
}

/**
 * An Avro serializer for this schema (an object or its JSON text). Without a schema it takes the
 * subject's latest version (use.latest.version=true) or the one with use.schema.id.
 */
export function avroSerializer<T = unknown>(schema?: AvroSchema, options?: SerializerOptions): AvroSerializer<T> {
  return new AvroSerializer<T>(schema, options)
}
