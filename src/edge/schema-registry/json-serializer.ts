import type { RegistrySchema } from './client.js'
import { ConfigException } from '../errors.js'
import { InvalidSchemaException, SerializationException } from './errors.js'
import { SchemaSerializer, type SchemaCodec, type SerializerOptions } from './serializer.js'

export interface JsonSchemaOptions extends SerializerOptions {
  /**
   * Java's json.fail.invalid.schema: validate each value against the schema before writing it and
   * throw a SerializationException when it does not conform. Off by default, as in Java. It loads the
   * optional peer dependency @cfworker/json-schema (no code generation, so it runs in workerd).
   */
  'json.fail.invalid.schema'?: boolean
}

interface Validator { validate(v: unknown): { valid: boolean; errors: Array<{ instanceLocation: string; error: string }> } }

/** Java: KafkaJsonSchemaSerializer: UTF-8 JSON after the header. */
export class JsonSchemaSerializer<T = unknown> extends SchemaSerializer<T> {
  protected readonly format = 'JSON' as const
  private readonly validate: boolean
  constructor(schema?: string | Record<string, unknown>, options: JsonSchemaOptions = {}) {
    const { 'json.fail.invalid.schema': validate, ...rest } = options
    super(schema === undefined ? undefined : { schema: typeof schema === 'string' ? schema : JSON.stringify(schema), schemaType: 'JSON' }, rest)
    this.validate = validate === true || (validate as unknown) === 'true'
  }

  protected codec(s: RegistrySchema): SchemaCodec | Promise<SchemaCodec> {
    let parsed: unknown
    try { parsed = JSON.parse(s.schema) } catch (e) { throw new InvalidSchemaException(`invalid JSON Schema: ${(e as Error).message}`) }
    const title = typeof (parsed as { title?: unknown })?.title === 'string' ? (parsed as { title: string }).title : undefined
    const write = (validator: Validator | undefined): SchemaCodec['write'] => (w, v) => {
      if (validator) {
        const r = validator.validate(v)
        if (!r.valid) {
          const e = r.errors[r.errors.length - 1]!
          throw new SerializationException(`${e.instanceLocation}: ${e.error} (JSON Schema validation, json.fail.invalid.schema=true)`, { path: e.instanceLocation })
        }
      }
      const text = JSON.stringify(v)
      if (text === undefined) throw new SerializationException(`value: ${typeof v} has no JSON form`)
      w.utf8(text)
    }
    if (!this.validate) return { recordName: title, write: write(undefined) }
    return loadValidator(parsed).then((validator) => ({ recordName: title, write: write(validator) }))
  }
}

async function loadValidator(schema: unknown): Promise<Validator> {
  let mod: { Validator: new (schema: unknown, draft?: string, shortCircuit?: boolean) => Validator }
  try {
    mod = await import('@cfworker/json-schema') as typeof mod
  } catch (e) {
    throw new ConfigException('json.fail.invalid.schema=true needs the package @cfworker/json-schema: npm install @cfworker/json-schema', { cause: e })
  }
  return new mod.Validator(schema, '2020-12', false)
}

/** A JSON Schema serializer for this schema (or, without one, the subject's latest version or use.schema.id). */
export function jsonSchemaSerializer<T = unknown>(schema?: string | Record<string, unknown>, options?: JsonSchemaOptions): JsonSchemaSerializer<T> {
  return new JsonSchemaSerializer<T>(schema, options)
}
