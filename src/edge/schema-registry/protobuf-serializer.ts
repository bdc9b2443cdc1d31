import type { RegistrySchema } from './client.js'
import { encodeProto, findMessage, parseProto, resolveProto, type ProtoFile } from './protobuf.js'
import { SchemaSerializer, type SchemaCodec, type SchemaSource, type SerializerOptions } from './serializer.js'
import { writeMessageIndexes } from './wire.js'

export interface ProtobufOptions extends SerializerOptions {
  /** The message to write, e.g. 'shop.Order.Line' (with or without the package); the file's first message by default. */
  messageName?: string
  /** The text of each file the schema imports, by its import name ('common/money.proto'). They are registered as references. */
  references?: Record<string, string>
}

/** Java: KafkaProtobufSerializer, with Confluent's message indexes before each payload. */
export class ProtobufSerializer<T = unknown> extends SchemaSerializer<T> {
  protected readonly format = 'PROTOBUF' as const
  private readonly messageName: string | undefined
  constructor(schema?: string, options: ProtobufOptions = {}) {
    const { messageName, references, ...rest } = options
    super(schema === undefined ? undefined : { schema, schemaType: 'PROTOBUF', references }, rest)
    this.messageName = messageName
  }

  protected codec(s: RegistrySchema, references: Map<string, string>): SchemaCodec {
    const main = parseProto(s.schema)
    const files: ProtoFile[] = [main]
    const load = (f: ProtoFile): void => {
      for (const name of f.imports) {
        if (files.some((x) => x.name === name)) continue
        const text = references.get(name)
        if (text === undefined) continue // resolveProto names the type that is missing, if one is
        const dep = parseProto(text, name)
        files.push(dep)
        load(dep)
      }
    }
    load(main)
    resolveProto(files)
    const { message, indexes } = findMessage(main, this.messageName)
    return {
      recordName: message.fullName,
      write: (w, v) => { writeMessageIndexes(w, indexes); encodeProto(w, message, v) },
    }
  }

  protected override imports(s: SchemaSource): string[] { return parseProto(s.schema).imports }
}

/** A Protobuf serializer for this .proto text (or, without one, the subject's latest version or use.schema.id). */
export function protobufSerializer<T = unknown>(schema?: string, options?: ProtobufOptions): ProtobufSerializer<T> {
  return new ProtobufSerializer<T>(schema, options)
}
