// Read-only schema registry lookups for pages (GET <path>/registry/...): a page asks with its relay
// token, the relay asks the registry with its own credentials, and only what the token's topics
// reach is answered. docs/relay.md, "Schema registry lookups".
import type { Context, Hono } from 'hono'
import { LruCache, SchemaRegistryClient, type RegistrySchema } from '../edge/schema-registry/client.js'
import { parseRegistryConfig, type SchemaRegistrySettings } from '../edge/schema-registry/config.js'
import { SchemaNotFoundException, SchemaRegistryException } from '../edge/schema-registry/errors.js'
import type { RelayRegistryConfig } from './config.js'
import { BRIDGE_METRICS as M } from './metrics.js'
import { grantsFor, type Grants } from './policy.js'
import type { Relay } from './server.js'
import { compilePatterns } from './token.js'

/** The relay's own answer for a path that is none of the lookup routes (never cached as an unknown subject). */
const NOT_A_ROUTE = 40400

const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json'
/**
 * A record name as TopicRecordNameStrategy appends it: dotted identifiers (Avro, Protobuf). It holds
 * no '-', so a subject splits into topic and record at its last '-', whatever '-' the topic has.
 */
const RECORD = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/
const ROUTES = 'GET /schemas/ids/{id}, /subjects/{subject}/versions/latest and /subjects/{subject}/versions/{n}'

/** The registry routes under `<path>/registry/`; without a registry section they answer 404. */
export function registryRoutes(relay: Relay, app: Hono): void {
  const base = `${relay.cfg.path}/registry`
  const lookups = relay.cfg.registry ? new RegistryLookups(relay, relay.cfg.registry, base) : null
  app.on(['GET', 'OPTIONS'], `${base}/*`, (c) => lookups?.serve(c)
    ?? c.json({ error_code: NOT_A_ROUTE, message: 'this relay serves no schema registry lookups (its config has no registry section)' }, 404))
}

interface Failure { status: number; code: number; message: string; reason: string | null; headers?: Record<string, string> }

/** The edge client, plus the one call only the relay makes (Java: getAllVersionsById). */
class RelayRegistryClient extends SchemaRegistryClient {
  getAllVersionsById(id: number): Promise<Array<{ subject: string; version: number }>> {
    return this.call('GET', `/schemas/ids/${id}/versions`, undefined, `list the subjects of schema id ${id}`, undefined)
  }
}

class RegistryLookups {
  private readonly client: RelayRegistryClient
  private readonly allowed: (subject: string) => boolean
  /** Which subjects an id is registered under, for the grant check; it can grow, so it expires. */
  private readonly subjectsOfId: LruCache<number, { at: number; value: Promise<Array<{ subject: string; version: number }>> }>

  constructor(private readonly relay: Relay, private readonly cfg: RelayRegistryConfig, private readonly base: string) {
    const settings: SchemaRegistrySettings = {
      'schema.registry.url': cfg.urls,
      ...(cfg.userInfo !== null && { 'basic.auth.credentials.source': 'USER_INFO', 'basic.auth.user.info': cfg.userInfo }),
      ...(cfg.bearerToken !== null && { 'bearer.auth.credentials.source': 'STATIC_TOKEN', 'bearer.auth.token': cfg.bearerToken }),
      // One try per URL and no backoff: the page's own client retries, and its wait is bounded.
      'max.retries': cfg.urls.length - 1,
      'http.read.timeout.ms': cfg.timeoutMs,
      'max.schemas.per.subject': cfg.cacheMaxEntries,
    }
    this.client = new RelayRegistryClient({ ...parseRegistryConfig(settings), latestTtlMs: cfg.cacheTtlMs })
    this.allowed = compilePatterns(cfg.subjects)
    this.subjectsOfId = new LruCache(cfg.cacheMaxEntries)
    this.notFound = new LruCache(cfg.cacheMaxEntries)
  }

  /**
   * Recent 404s by route: a token may ask for names that do not exist as fast as its budget allows,
   * and each would otherwise be a registry request.
   */
  private readonly notFound: LruCache<string, { at: number; failure: Failure }>

  serve(c: Context): Promise<Response> | Response {
    const relay = this.relay
    const origin = c.req.header('origin')
    const cors: Record<string, string> = origin !== undefined && relay.originAllowed(origin) ? { 'access-control-allow-origin': origin, vary: 'Origin' } : {}
    const reply = (status: number, body: unknown, headers: Record<string, string> = {}): Response => {
      relay.metrics.inc('kafka_edge_bridge_registry_lookups_total', { status: String(status) })
      return new Response(JSON.stringify(body), { status, headers: { 'content-type': CONTENT_TYPE, 'cache-control': 'no-store', ...cors, ...headers } })
    }
    const fail = (f: Failure): Response => {
      if (f.reason) {
        relay.metrics.inc(M.rejects, { reason: `registry_${f.reason}` })
        relay.log.info('registry_lookup_rejected', { status: f.status, reason: f.message.slice(0, 120) })
      }
      // The Confluent error shape, so the page's client raises its usual typed errors.
      return reply(f.status, { error_code: f.code, message: f.message }, f.headers)
    }
    if (!relay.originAllowed(origin)) {
      return fail({ status: 403, code: 40301, message: origin === undefined ? 'a request without Origin is not allowed' : `Origin ${origin} is not allowed`, reason: 'origin' })
    }
    // A page's fetch with an Authorization header is preflighted.
    if (c.req.method === 'OPTIONS') {
      return new Response(null, { status: 204, headers: { ...cors, 'access-control-allow-methods': 'GET', 'access-control-allow-headers': 'authorization', 'access-control-max-age': '600' } })
    }
    const ip = (c.env as { ip?: string } | undefined)?.ip ?? 'unknown'
    if ((relay.perIp.get(ip) ?? 0) >= relay.cfg.limits.connectionsPerIp) {
      return fail({ status: 429, code: 42901, message: 'too many connections from this address', reason: 'connections_per_ip', headers: { 'retry-after': '1' } })
    }
    // A lookup in progress holds a slot of its address (and, once verified, of its principal) as a beacon does.
    relay.holdIp(ip)
    return this.authorized(c).then((r) => ('status' in r ? fail(r) : reply(200, r.body)), (e: unknown) => {
      relay.log.error('registry_lookup_error', { error: String((e as Error)?.stack ?? e).slice(0, 2000) })
      return fail({ status: 500, code: 50001, message: 'the relay failed to serve this lookup', reason: null })
    }).finally(() => relay.releaseIp(ip))
  }

  private async authorized(c: Context): Promise<Failure | { body: unknown }> {
    const relay = this.relay
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '')?.[1]
    const challenge = { 'www-authenticate': 'Bearer' }
    // Only the Authorization header: a token in the URL would land in access logs, and cookies are never read.
    if (!bearer) return { status: 401, code: 40101, message: 'no relay token: send Authorization: Bearer <token>', reason: 'unauthenticated', headers: challenge }
    const auth = await relay.authn.verify(bearer)
    if (!auth.ok) {
      return { status: 401, code: 40101, message: auth.expired ? 'token expired' : `authentication failed: ${auth.reason}`, reason: auth.expired ? 'token_expired' : 'unauthenticated', headers: challenge }
    }
    const principal = auth.claims.sub
    const budget = relay.admitPrincipal(principal)
    if (!budget) return { status: 429, code: 42902, message: 'too many connections for this principal', reason: 'connections_per_principal', headers: { 'retry-after': '1' } }
    try {
      // A lookup costs one frame of the principal's budget, as a WebSocket message would.
      const wait = budget.frames.take(1)
      if (wait > relay.cfg.limits.maxThrottleMs) return { status: 429, code: 42903, message: 'rate limit exceeded', reason: 'rate', headers: { 'retry-after': String(Math.ceil(wait / 1000)) } }
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
      const out = await this.lookup(new URL(c.req.url).pathname.slice(this.base.length), grantsFor(auth.claims))
      if ('body' in out) budget.bytes.take(JSON.stringify(out.body).length)
      return out
    } finally {
      relay.releasePrincipal(principal)
    }
  }

  /** A subject of a topic the token grants (`<topic>-key`, `-value`, `-<record>`), or one the config lists. */
  private granted(grants: Grants, subject: string): boolean {
    if (this.allowed(subject)) return true
    const dash = subject.lastIndexOf('-')
    return dash > 0 && RECORD.test(subject.slice(dash + 1)) && grants.topic(subject.slice(0, dash))
  }

  private async lookup(route: string, grants: Grants): Promise<Failure | { body: unknown }> {
    const out = await this.answer(route, grants)
    if ('status' in out && out.status === 404 && out.code !== NOT_A_ROUTE) this.notFound.set(route, { at: Date.now(), failure: out })
    return out
  }

  private unknown(route: string): Failure | null {
    const hit = this.notFound.get(route)
    return hit && Date.now() - hit.at < this.cfg.cacheTtlMs ? hit.failure : null
  }

  private async answer(route: string, grants: Grants): Promise<Failure | { body: unknown }> {
    const byId = /^\/schemas\/ids\/(\d{1,10})$/.exec(route)
    if (byId) {
      const id = Number(byId[1])
      const what = `schema id ${id}`
      if (id > 0x7fffffff) return { status: 404, code: 40403, message: `${what} not found`, reason: null }
      const unknown = this.unknown(route)
      if (unknown) return unknown
      try {
        const under = await this.subjectsOf(id)
        if (!under.some((v) => this.granted(grants, v.subject))) {
          return { status: 403, code: 40301, message: `${what} is under no subject this token grants`, reason: 'subject' }
        }
        return { body: shape(await this.client.getSchemaById(id)) }
      } catch (e) { return this.failure(e, what, 40403) }
    }
    const version = /^\/subjects\/([^/]+)\/versions\/(latest|\d{1,10})$/.exec(route)
    if (!version) return { status: 404, code: NOT_A_ROUTE, message: `not a route of the relay's registry lookups: it serves ${ROUTES}`, reason: null }
    let subject: string
    try { subject = decodeURIComponent(version[1]!) } catch { return { status: 400, code: 40001, message: 'the subject is not valid percent-encoding', reason: 'bad_http' } }
    const v = version[2] === 'latest' ? 'latest' : Number(version[2])
    const what = `version ${v} of subject ${subject.slice(0, 200)}`
    if (!this.granted(grants, subject)) {
      return { status: 403, code: 40301, message: `subject ${subject.slice(0, 200)} is not granted to this token (only <topic>-key, <topic>-value and <topic>-<record> of its topics, and the relay's registry.subjects)`, reason: 'subject' }
    }
    const unknown = this.unknown(route)
    if (unknown) return unknown
    try {
      const got = await this.client.getVersion(subject, v)
      return { body: { subject: got.subject ?? subject, version: got.version, id: got.id, ...shape(got) } }
    } catch (e) { return this.failure(e, what, 40401) }
  }

  private subjectsOf(id: number): Promise<Array<{ subject: string; version: number }>> {
    const hit = this.subjectsOfId.get(id)
    if (hit && Date.now() - hit.at < this.cfg.cacheTtlMs) return hit.value
    const entry = { at: Date.now(), value: this.client.getAllVersionsById(id) }
    this.subjectsOfId.set(id, entry)
    entry.value.catch(() => this.subjectsOfId.delete(id, entry))
    return entry.value
  }

  /** The registry's answer in the page's terms; its own message, status and credentials stay here. */
  private failure(e: unknown, what: string, notFound: number): Failure {
    if (e instanceof SchemaNotFoundException) return { status: 404, code: e.errorCode ?? notFound, message: `${what} not found`, reason: null }
    const relay = this.relay
    if (e instanceof SchemaRegistryException && e.status === 0) {
      const timedOut = (e.cause as Error | undefined)?.name === 'TimeoutError'
      relay.metrics.inc(M.upstreamErrors, { kind: timedOut ? 'registry_timeout' : 'registry_connect' })
      relay.log.warn('registry_unreachable', { error: e.message.slice(0, 300) })
      return timedOut
        ? { status: 504, code: 50401, message: `the schema registry did not answer within ${this.cfg.timeoutMs} ms`, reason: null }
        : { status: 502, code: 50201, message: 'the schema registry could not be reached', reason: null }
    }
    if (!(e instanceof SchemaRegistryException)) throw e
    relay.metrics.inc(M.upstreamErrors, { kind: 'registry_status' })
    relay.log.warn('registry_error', { status: e.status, error: e.message.slice(0, 300) })
    // A 401/403 here is the relay's own credentials refused: the page can do nothing about it but wait.
    return { status: 502, code: 50202, message: `the schema registry answered ${e.status} when asked for ${what}`, reason: null }
  }
}

/** Only the fields a Confluent client reads, so nothing else the registry says reaches a page. */
function shape(s: RegistrySchema): RegistrySchema {
  return { schema: s.schema, ...(s.schemaType && { schemaType: s.schemaType }), ...(s.references?.length && { references: s.references }) }
}
