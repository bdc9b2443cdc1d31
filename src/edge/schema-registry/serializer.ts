import { ConfigException } from '../errors.js'
import { SchemaRegistryClient, type RegisteredSchema, type RegistrySchema, type SchemaReference, type SchemaType } from './client.js'
import { parseRegistryConfig, type RegistryConfig, type SchemaRegistrySettings } from './config.js'
import { SchemaRegistryException, SerializationException } from './errors.js'
import { ByteWriter, writeHeader } from './wire.js'

/**
 * Java's Serializer: configure() with the producer's settings once, then serialize() per record. A
 * serializer answers at once (a Uint8Array) when it knows the schema's id, and with a promise only
 * while it asks the registry; withSerializers() keeps sends in call order across both.
 */
export interface Serializer<T = unknown> {
  configure?(settings: SchemaRegistrySettings, isKey: boolean, client?: SchemaRegistryClient): void
  serialize(topic: string, value: T): Uint8Array | Promise<Uint8Array>
  /** The subject a record to this topic goes under, where known (for error messages). */
  subject?(topic: string): string | undefined
}

/** How one schema turns a value into payload bytes. */
export interface SchemaCodec {
  /** The record name the subject name strategies use: Avro record, Protobuf message, JSON Schema title. */
  recordName: string | undefined
  /** Writes the bytes between the 5-byte header and the payload (Protobuf's message indexes), then the payload. */
  write(w: ByteWriter, value: unknown): void
}

/** A schema a serializer registers: its text, format and what it imports (name to text). */
export interface SchemaSource { schema: string; schemaType: SchemaType; references?: Record<string, string> }

const CLIENT_KEYS = /^(schema\.registry\.(url|relay\.)|basic\.auth\.|bearer\.auth\.|max\.retries|retries\.|http\.|fetch$|max\.schemas\.per\.subject|latest\.cache\.ttl\.sec)/

interface Resolved { id: number; codec: SchemaCodec; at: number }

/** Settings a serializer takes beside the registry's. */
export interface SerializerOptions extends SchemaRegistrySettings {
  /** Share one client (and its caches) between serializers; else each makes its own from the settings. */
  client?: SchemaRegistryClient
}

/**
 * The part every schema format shares: the subject name, how the id is found (use.schema.id, then
 * auto.register.schemas, then use.latest.version, else a lookup: the Java serializer's order), the
 * cache of ids by subject, and the Confluent framing.
 */
export abstract class SchemaSerializer<T = unknown> implements Serializer<T> {
  protected registry: SchemaRegistryClient | undefined
  protected config: RegistryConfig | undefined
  private isKey = false
  private readonly resolved = new Map<string, Resolved>()
  private readonly pending = new Map<string, Promise<Resolved>>()
  private readonly w = new ByteWriter()
  private own: SchemaCodec | undefined

  constructor(protected readonly source: SchemaSource | undefined, private readonly options: SerializerOptions = {}) {}

  /** The codec for a schema text of this format (the given one, the latest version, or the one by id). */
  protected abstract codec(schema: RegistrySchema, references: Map<string, string>): SchemaCodec | Promise<SchemaCodec>

  configure(settings: SchemaRegistrySettings, isKey: boolean, client?: SchemaRegistryClient): void {
    const { client: mine, ...rest } = this.options
    this.config = parseRegistryConfig({ ...settings, ...rest })
    // Settings of its own that change how the registry is reached call for a client of its own.
    const ownClient = Object.keys(rest).some((k) => CLIENT_KEYS.test(k))
    this.registry = mine ?? (ownClient ? undefined : client) ?? new SchemaRegistryClient(this.config)
    this.isKey = isKey
  }

  serialize(topic: string, value: T): Uint8Array | Promise<Uint8Array> {
    if (!this.config) this.configure({}, false)
    // The schema's own codec gives the record name the subject may need, so it comes first.
    if (this.source && !this.own) return this.ownCodec().then(() => this.serialize(topic, value))
    const c = this.config!
    const subject = (this.isKey ? c.keyStrategy : c.valueStrategy)(topic, this.isKey, this.own?.recordName)
    const r = this.resolved.get(subject)
    if (r && (c.latestTtlMs === Infinity || Date.now() - r.at < c.latestTtlMs)) return this.frame(r, value, subject)
    let p = this.pending.get(subject)
    if (!p) {
      p = this.resolve(subject).finally(() => this.pending.delete(subject))
      this.pending.set(subject, p)
    }
    return p.then((r) => { this.resolved.set(subject, r); return this.frame(r, value, subject) })
  }

  subject(topic: string): string | undefined {
    const c = this.config
    if (!c) return undefined
    try { return (this.isKey ? c.keyStrategy : c.valueStrategy)(topic, this.isKey, this.own?.recordName) } catch { return undefined }
  }

  private loading: Promise<SchemaCodec> | undefined
  private ownCodec(): Promise<SchemaCodec> {
    const s = this.source!
    this.loading ??= (async () => this.own = await this.codec({ schema: s.schema, schemaType: s.schemaType }, new Map(Object.entries(s.references ?? {}))))()
    this.loading.catch(() => { this.loading = undefined })
    return this.loading
  }

  private frame(r: Resolved, value: T, subject: string): Uint8Array {
    const w = this.w
    w.pos = 0
    writeHeader(w, r.id)
    try {
      r.codec.write(w, value)
    } catch (e) {
      w.pos = 0
      if (e instanceof SerializationException) throw new SerializationException(`${e.message} (subject ${subject}, schema id ${r.id})`, { subject, path: e.path, cause: e.cause })
      throw e
    }
    return w.take()
  }

  private async resolve(subject: string): Promise<Resolved> {
    const c = this.config!
    const reg = this.registry!
    const at = Date.now()
    try {
      if (c.useSchemaId >= 0) {
        if (this.source) return { id: c.useSchemaId, codec: this.own!, at: Infinity }
        const s = await reg.getSchemaById(c.useSchemaId, subject)
        return { id: c.useSchemaId, codec: await this.codec(s, await this.referenced(s.references ?? [])), at: Infinity }
      }
      if (this.source && (c.autoRegister || !c.useLatestVersion)) {
        const references = await this.references(this.source, c.autoRegister)
        const schema: RegistrySchema = { schema: this.source.schema, schemaType: this.source.schemaType, references }
        const got = c.autoRegister ? await reg.register(subject, schema) : await reg.lookup(subject, schema)
        return { id: got.id, codec: this.own!, at: Infinity }
      }
      if (!c.useLatestVersion) throw new ConfigException('a serializer without a schema needs use.latest.version=true or use.schema.id')
      const latest: RegisteredSchema = await reg.getLatest(subject)
      if ((latest.schemaType ?? 'AVRO') !== (this.source?.schemaType ?? this.format)) {
        throw new SchemaRegistryException(`the latest schema of subject ${subject} is ${latest.schemaType ?? 'AVRO'}, not ${this.format}`, { subject })
      }
      return { id: latest.id, codec: await this.codec(latest, await this.referenced(latest.references ?? [])), at }
    } catch (e) {
      if (e instanceof SchemaRegistryException && e.subject === undefined) Object.assign(e, { subject })
      throw e
    }
  }

  protected abstract readonly format: SchemaType

  /**
   * Registers (or looks up) what the schema imports, depth first, each under its import name as the
   * subject (Java's DefaultReferenceSubjectNameStrategy), and gives the references to send with it.
   */
  private async references(s: SchemaSource, register: boolean, seen = new Set<string>()): Promise<SchemaReference[]> {
    const out: SchemaReference[] = []
    for (const name of this.imports(s)) {
      if (seen.has(name)) continue
      seen.add(name)
      const text = s.references?.[name]
      if (text === undefined) throw new ConfigException(`the schema imports ${name}: pass its text in references`)
      const child: SchemaSource = { schema: text, schemaType: s.schemaType, references: s.references }
      const schema: RegistrySchema = { schema: text, schemaType: s.schemaType, references: await this.references(child, register, seen) }
      if (register) await this.registry!.register(name, schema)
      const { version } = await this.registry!.lookup(name, schema)
      out.push({ name, subject: name, version: version! })
    }
    return out
  }

  /** The texts of referenced schemas, fetched by subject and version (for a schema that came from the registry). */
  private async referenced(refs: SchemaReference[], into = new Map<string, string>()): Promise<Map<string, string>> {
    for (const r of refs) {
      if (into.has(r.name)) continue
      const s = await this.registry!.getVersion(r.subject, r.version)
      into.set(r.name, s.schema)
      await this.referenced(s.references ?? [], into)
    }
    return into
  }

  /** The names a schema imports (Protobuf's import statements); none by default. */
  protected imports(_s: SchemaSource): string[] { return [] }
}
