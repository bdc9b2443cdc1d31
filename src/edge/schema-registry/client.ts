import { parseRegistryConfig, type RegistryConfig, type SchemaRegistrySettings } from './config.js'
import { ConfigException } from '../errors.js'
import { SchemaRegistryException, SchemaRegistryUnavailableException, registryError } from './errors.js'

export type SchemaType = 'AVRO' | 'PROTOBUF' | 'JSON'

/** A schema another one imports: the name it is imported by, and where the registry holds it. */
export interface SchemaReference { name: string; subject: string; version: number }

/** A schema as the registry's REST API carries it. schemaType is absent for Avro. */
export interface RegistrySchema { schema: string; schemaType?: SchemaType; references?: SchemaReference[] }

/** A registered schema: its id and, where the registry said, its subject and version. */
export interface RegisteredSchema extends RegistrySchema { id: number; subject?: string; version?: number }

const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json'

/** A Map bounded to `capacity` entries that drops the least recently used. */
export class LruCache<K, V> {
  private readonly map = new Map<K, V>()
  constructor(private readonly capacity: number) {}
  get(k: K): V | undefined {
    const v = this.map.get(k)
    if (v !== undefined) { this.map.delete(k); this.map.set(k, v) }
    return v
  }
  set(k: K, v: V): void {
    this.map.delete(k)
    this.map.set(k, v)
    if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value as K)
  }
  /** Drops k if it still holds v. */
  delete(k: K, v: V): void { if (this.map.get(k) === v) this.map.delete(k) }
  get size(): number { return this.map.size }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const body = (s: RegistrySchema): string => JSON.stringify({
  schema: s.schema, ...(s.schemaType && s.schemaType !== 'AVRO' ? { schemaType: s.schemaType } : {}), ...(s.references?.length ? { references: s.references } : {}),
})

/**
 * The Confluent Schema Registry REST calls a producer makes, on fetch alone: register, look up, by id
 * and latest. Answers are cached (bounded), and concurrent asks for the same thing share one request,
 * so a burst of first sends makes one registry call. Network errors and 5xx answers are retried on the
 * next URL, with exponential backoff once every URL has failed.
 */
export class SchemaRegistryClient {
  /** @internal */
  readonly config: RegistryConfig
  private readonly ids: LruCache<string, Promise<RegisteredSchema>>
  private readonly byId: LruCache<string, Promise<RegistrySchema>>
  private readonly latest: LruCache<string, { at: number; value: Promise<RegisteredSchema> }>
  private next = 0
  /** Requests sent (every attempt), for tests and metrics. */
  requests = 0

  constructor(settings: SchemaRegistrySettings | RegistryConfig) {
    this.config = 'urls' in settings ? settings : parseRegistryConfig(settings)
    const n = this.config.cacheCapacity
    this.ids = new LruCache(n)
    this.byId = new LruCache(n)
    this.latest = new LruCache(n)
  }

  /** POST /subjects/{s}/versions: the id of the schema under the subject, registered if new. */
  register(subject: string, schema: RegistrySchema, normalize = this.config.normalize): Promise<RegisteredSchema> {
    if (this.config.relay) return readOnly('register a schema', subject)
    return this.cached(this.ids, `r ${subject} ${normalize} ${body(schema)}`, async () => {
      const r = await this.call<{ id: number }>('POST', `/subjects/${encodeURIComponent(subject)}/versions${normalize ? '?normalize=true' : ''}`,
        body(schema), `register a schema under subject ${subject}`, subject)
      return { ...schema, id: r.id, subject }
    })
  }

  /** POST /subjects/{s}: the id and version of a schema already registered under the subject (404 if not). */
  lookup(subject: string, schema: RegistrySchema, normalize = this.config.normalize): Promise<RegisteredSchema> {
    if (this.config.relay) return readOnly('look a schema up by its text', subject)
    return this.cached(this.ids, `l ${subject} ${normalize} ${body(schema)}`, async () => {
      const r = await this.call<{ id: number; version: number; subject: string }>('POST', `/subjects/${encodeURIComponent(subject)}${normalize ? '?normalize=true' : ''}`,
        body(schema), `find the schema under subject ${subject}`, subject)
      return { ...schema, id: r.id, version: r.version, subject }
    })
  }

  /** GET /schemas/ids/{id}: the schema with this id. */
  getSchemaById(id: number, subject?: string): Promise<RegistrySchema> {
    return this.cached(this.byId, `${id} ${subject ?? ''}`, () =>
      this.call<RegistrySchema>('GET', `/schemas/ids/${id}${subject ? `?subject=${encodeURIComponent(subject)}` : ''}`, undefined, `get the schema with id ${id}`, subject))
  }

  /** GET /subjects/{s}/versions/{v}, v a number or 'latest'. Latest is cached for latest.cache.ttl.sec. */
  getVersion(subject: string, version: number | 'latest'): Promise<RegisteredSchema> {
    const ask = (): Promise<RegisteredSchema> => this.call<RegisteredSchema>('GET', `/subjects/${encodeURIComponent(subject)}/versions/${version}`, undefined,
      `get version ${version} of subject ${subject}`, subject)
    if (version !== 'latest') return this.cached(this.ids, `v ${subject} ${version}`, ask)
    const hit = this.latest.get(subject)
    if (hit && Date.now() - hit.at < this.config.latestTtlMs) return hit.value
    const value = ask()
    const entry = { at: Date.now(), value }
    this.latest.set(subject, entry)
    value.catch(() => this.latest.delete(subject, entry))
    return value
  }

  getLatest(subject: string): Promise<RegisteredSchema> { return this.getVersion(subject, 'latest') }

  /** A cached answer, or one request shared by everyone asking; failures are not cached. */
  private cached<T>(cache: LruCache<string, Promise<T>>, key: string, ask: () => Promise<T>): Promise<T> {
    const hit = cache.get(key)
    if (hit) return hit
    const p = ask()
    cache.set(key, p)
    p.catch(() => cache.delete(key, p))
    return p
  }

  /** @internal */
  protected async call<T>(method: string, path: string, payload: string | undefined, what: string, subject: string | undefined): Promise<T> {
    const c = this.config
    if (c.urls.length === 0) throw new ConfigException('schema.registry.url is not set')
    let last: unknown
    for (let attempt = 0; attempt <= c.maxRetries; attempt++) {
      // Each attempt goes to the next URL; once every URL has failed in a row, back off.
      if (attempt > 0 && attempt % c.urls.length === 0) {
        const wait = Math.min(c.retryMaxWaitMs, c.retryWaitMs * 2 ** (attempt / c.urls.length - 1))
        await sleep(wait * (0.8 + Math.random() * 0.4))
      }
      const url = c.urls[this.next % c.urls.length]!
      const headers: Record<string, string> = { Accept: `${CONTENT_TYPE}, application/json`, ...c.headers }
      if (payload !== undefined) headers['Content-Type'] = CONTENT_TYPE
      if (c.authorization) headers.Authorization = await c.authorization()
      let res: Response
      this.requests++
      try {
        res = await c.fetch(url + path, { method, headers, body: payload, signal: AbortSignal.timeout(c.requestTimeoutMs) })
      } catch (e) {
        last = new SchemaRegistryUnavailableException(`schema registry ${url} could not be reached to ${what}: ${(e as Error).message ?? e}`, { subject, cause: e })
        this.next++
        continue
      }
      let json: unknown = null
      try { json = await res.json() } catch { /* an empty or non-JSON body: the status says enough */ }
      if (res.ok) {
        if (json === null || typeof json !== 'object') throw new SchemaRegistryException(`schema registry ${url} answered ${what} with a body that is not JSON`, { status: res.status, subject })
        return json as T
      }
      last = registryError(res.status, json as { error_code?: unknown; message?: unknown } | null, what, subject)
      if (res.status < 500) throw last
      this.next++
    }
    throw last
  }
}

/** Through the relay a page only reads: by id, latest and numbered versions (docs/schema-registry.md, "Pages"). */
const readOnly = (what: string, subject: string): Promise<never> => Promise.reject(new ConfigException(
  `cannot ${what} under ${subject} through the relay (read-only): use use.latest.version or use.schema.id`))

/** A client for these settings (Java: new CachedSchemaRegistryClient(...)). */
export function schemaRegistryClient(settings: SchemaRegistrySettings): SchemaRegistryClient {
  return new SchemaRegistryClient(settings)
}
