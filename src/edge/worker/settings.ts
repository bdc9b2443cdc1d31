// The Worker's producer wiring that needs no WebAssembly module: kept apart from producer-object.ts
// (which imports build/core.wasm, loadable only by wrangler) so unit tests can import it.
import { batchIdentity, type PendingBatch, type ProducerCheckpoint } from '../producer/checkpoint.js'
import type { ProducerSettings } from '../producer/config.js'
import { ConfigException } from '../errors.js'
import type { Transport } from '../transport/transport.js'
import { websocket } from '../transport/websocket.js'
import type { Env } from './env.js'

/**
 * A var as wrangler hands it over, trimmed; '' when unset. wrangler.toml may give a var as a TOML
 * number or boolean (`SHARDS = 4`), which arrives as a JSON value rather than text.
 */
function rawVar(env: Env, name: keyof Env): string {
  const v = (env as unknown as Record<string, unknown>)[name]
  return v === undefined || v === null ? '' : String(v).trim()
}

/**
 * A whole-number var: unset or blank is `fallback`. Anything else that is not a whole number of at
 * least `min` is a ConfigException naming the var: a typo must not quietly become the default (a
 * SHARDS that fell back to 1 would move every key to another object).
 */
export function intVar(env: Env, name: keyof Env, fallback: number, min = 1): number {
  const s = rawVar(env, name)
  if (s === '') return fallback
  const n = Number(s)
  if (/^\d+$/.test(s) && Number.isSafeInteger(n) && n >= min) return n
  throw new ConfigException(`${name}=${JSON.stringify(s)} is not a whole number of at least ${min}: correct it in wrangler.toml [vars], or remove it for the default (${fallback})`)
}

/** One of `choices`, case-insensitive; unset or blank is the first. Anything else is a ConfigException naming the var. */
export function choiceVar<T extends string>(env: Env, name: keyof Env, choices: readonly [T, ...T[]]): T {
  const s = rawVar(env, name).toLowerCase()
  if (s === '') return choices[0]
  if ((choices as readonly string[]).includes(s)) return s as T
  throw new ConfigException(`${name}=${JSON.stringify(rawVar(env, name))}: use one of ${choices.join(', ')} (unset: ${choices[0]})`)
}

/** The regions Durable Objects take as a locationHint (Cloudflare's list, as workers-types has it). */
export const LOCATION_HINTS = ['wnam', 'enam', 'sam', 'weur', 'eeur', 'apac', 'oc', 'afr', 'me'] as const
export type LocationHint = (typeof LOCATION_HINTS)[number]

/** LOCATION_HINT: unset or blank places the objects where Cloudflare chooses; a name not on the list is a ConfigException. */
export function locationHintVar(env: Env): LocationHint | undefined {
  const s = rawVar(env, 'LOCATION_HINT').toLowerCase()
  if (s === '') return undefined
  if ((LOCATION_HINTS as readonly string[]).includes(s)) return s as LocationHint
  throw new ConfigException(`LOCATION_HINT=${JSON.stringify(rawVar(env, 'LOCATION_HINT'))} is not a Durable Objects region: use one of ${LOCATION_HINTS.join(', ')}, or remove it to let Cloudflare place the objects`)
}

const TRUE = ['1', 'true', 'yes', 'on']
const FALSE = ['', '0', 'false', 'no', 'off']

/** A true/false var: 1/true/yes/on or 0/false/no/off (case-insensitive), unset is false; anything else is a ConfigException. */
export function flagVar(env: Env, name: keyof Env): boolean {
  const s = rawVar(env, name).toLowerCase()
  if (TRUE.includes(s)) return true
  if (FALSE.includes(s)) return false
  throw new ConfigException(`${name}=${JSON.stringify(rawVar(env, name))}: use true or false (unset: false)`)
}

// Kafka's rule for topic names, as the producer's send() checks it (that copy is private to a module
// under an exact size budget, so this one is not shared with it).
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/

/**
 * A topic var: unset or blank is `fallback`, or a ConfigException when there is none; a name Kafka
 * refuses is one too. Checked before an event is stored: a durable accept of events that can never be
 * produced would answer 202 and leave them in the backlog for good.
 */
export function topicVar(env: Env, name: keyof Env, fallback?: string): string {
  const s = rawVar(env, name)
  if (s === '') {
    if (fallback !== undefined) return fallback
    throw new ConfigException(`${name} is not set: name the Kafka topic the events go to in wrangler.toml [vars]`)
  }
  if (!TOPIC_NAME.test(s) || s === '.' || s === '..') throw new ConfigException(`${name}=${JSON.stringify(s)} is not a topic name Kafka accepts: use 1-249 characters of a-z A-Z 0-9 . _ -`)
  return s
}

/**
 * KAFKA_BOOTSTRAP, which only the relay transport (KAFKA_RELAY_URL) can do without: unset, the
 * producer would dial a placeholder and every stored event would wait for a broker that is not there.
 */
export function bootstrapVar(env: Env, relayed: boolean): string {
  const s = rawVar(env, 'KAFKA_BOOTSTRAP')
  if (s !== '') return s
  if (relayed) return 'relay:443'
  throw new ConfigException('KAFKA_BOOTSTRAP is not set: list the brokers as host:port[,host:port] in wrangler.toml [vars], or reach them through the relay (KAFKA_RELAY_URL)')
}

/** ACCEPT_MODE: durable (202 once stored) or sync (202 once Kafka acknowledged). Read by the app and its objects alike. */
export const acceptMode = (env: Env): 'durable' | 'sync' => choiceVar(env, 'ACCEPT_MODE', ['durable', 'sync'])

/**
 * The object's linger.ms: KAFKA_LINGER_MS, else 20 in durable mode and the producer's 5 in sync
 * mode. A durable accept has answered before the producer sees the events, so lingering longer costs
 * no client any time; it lets a request's batches wait for the next request's, and each drain costs
 * the object a checkpoint save and a Produce round trip (at 5 ms, one of each per 100-event POST of a
 * client that posts back to back; at 20, about half: docs/benchmarks.md, eighth session).
 */
export const lingerMsVar = (env: Env): number => intVar(env, 'KAFKA_LINGER_MS', acceptMode(env) === 'sync' ? 5 : 20, 0)

/**
 * The producer's security settings from the Worker's vars and secrets. An empty value counts as unset
 * (`--var KAFKA_SASL_MECHANISM:` or an empty secret), so a half-cleared config fails in createProducer
 * with its ConfigException rather than sending an empty password. No ssl.* settings: cloudflare:sockets
 * verifies brokers against workerd's own trust store and takes no CA or client certificate.
 */
export function securitySettings(env: Env): ProducerSettings {
  const v = (s: string | undefined) => (s === undefined || s.trim() === '' ? undefined : s.trim())
  const settings: ProducerSettings = {}
  const protocol = v(env.KAFKA_SECURITY_PROTOCOL)?.toUpperCase()
  // Checked by the producer's config like any other value; a typo is a ConfigException naming it.
  if (protocol) settings['security.protocol'] = protocol as ProducerSettings['security.protocol']
  const mechanism = v(env.KAFKA_SASL_MECHANISM)?.toUpperCase()
  if (mechanism) settings['sasl.mechanism'] = mechanism as ProducerSettings['sasl.mechanism']
  const username = v(env.KAFKA_SASL_USERNAME)
  if (username !== undefined) settings['sasl.username'] = username
  // Passwords may legitimately begin or end with spaces: only an all-blank one counts as unset.
  if (v(env.KAFKA_SASL_PASSWORD) !== undefined) settings['sasl.password'] = env.KAFKA_SASL_PASSWORD
  return settings
}

/**
 * The relay transport when KAFKA_RELAY_URL is set, else null (cloudflare:sockets to the brokers). The
 * relay speaks TLS and SASL to the brokers itself, so the security vars and the relay exclude each other.
 */
export function relayTransport(env: Env): Transport | null {
  const url = env.KAFKA_RELAY_URL?.trim()
  if (!url) return null
  if (env.KAFKA_SECURITY_PROTOCOL?.trim()) {
    throw new ConfigException('KAFKA_RELAY_URL and KAFKA_SECURITY_PROTOCOL are both set: the relay connects to the brokers with its own TLS and SASL; remove one')
  }
  const token = env.KAFKA_RELAY_TOKEN?.trim()
  if (!token) throw new ConfigException('KAFKA_RELAY_URL is set without KAFKA_RELAY_TOKEN: add the relay token as a secret (wrangler secret put KAFKA_RELAY_TOKEN)')
  return websocket({ url, token })
}

/**
 * `inner`, calling `onOpen` for every connection it opened. It keeps the inner transport's TLS
 * capability and passes the per-connection options through: without them the producer would refuse
 * SSL/SASL_SSL (no TLS capability) or dial brokers in plaintext. A relay transport's producer-id
 * ticket stays reachable, so the object's checkpoint keeps it and a resumed producer presents it.
 */
export function countingOpens(inner: Transport, onOpen: () => void): Transport {
  const counted: Transport = {
    name: inner.name,
    ...(inner.tls && { tls: inner.tls }),
    open: async (address, handlers, options) => {
      const link = await inner.open(address, handlers, options)
      onOpen()
      return link
    },
  }
  if (inner.producerIdTicket === undefined) return counted
  return Object.defineProperty(counted, 'producerIdTicket', {
    get: () => inner.producerIdTicket, set: (t: string | null) => { inner.producerIdTicket = t }, enumerable: true,
  })
}

/**
 * The checkpoint as the object stores it: this head row (everything but the batches, as JSON) and
 * one row per pending batch, its bytes a BLOB written once, when the batch is first checkpointed.
 */
export function checkpointHead(cp: ProducerCheckpoint): string {
  const { pending: _, ...head } = cp
  return JSON.stringify(head)
}

/**
 * A pending batch's row: its partition and the identity stamped in its header, so a batch an epoch
 * bump restamped is a new row; a batch whose records are being relabelled is another row again.
 */
export function batchRowKey(p: PendingBatch): string {
  const id = batchIdentity(p.bytes)
  return `${p.relabelled ? 'r' : 'b'}/${p.topic}/${p.partition}/${id.producerId}/${id.epoch}/${id.baseSequence}`
}

/**
 * A checkpoint in the object's earlier storage form: one JSON text, batches as base64. An object
 * that still has one resumes from it; its first save writes the rows and drops the old table.
 */
export function checkpointFromJson(text: string): ProducerCheckpoint {
  const cp = JSON.parse(text) as Omit<ProducerCheckpoint, 'pending'> & { pending: Array<Omit<PendingBatch, 'bytes'> & { bytes: string }> }
  return { ...cp, pending: cp.pending.map((p) => ({ ...p, bytes: fromBase64(p.bytes) })) }
}

function fromBase64(s: string): Uint8Array {
  const bin = atob(s)
  const out = new Uint8Array(bin.length)
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i)
  return out
}

/** One metric of one object; `count` with a summary's sum. */
export interface MetricSample { name: string; type: 'gauge' | 'counter' | 'summary'; help: string; value: number; count?: number }

/** Every shard's samples as one Prometheus text exposition (format 0.0.4): TYPE and HELP once per name, a shard label per line. */
export function prometheus(shards: ReadonlyArray<{ shard: string; samples: readonly MetricSample[] }>): string {
  const byName = new Map<string, { type: string; help: string; lines: string[] }>()
  for (const { shard, samples } of shards) {
    for (const s of samples) {
      let m = byName.get(s.name)
      if (!m) { m = { type: s.type, help: s.help, lines: [] }; byName.set(s.name, m) }
      const label = `{shard="${shard.replace(/["\\\n]/g, '_')}"}`
      if (s.type === 'summary') {
        m.lines.push(`${s.name}_sum${label} ${s.value}`, `${s.name}_count${label} ${s.count ?? 0}`)
      } else m.lines.push(`${s.name}${label} ${s.value}`)
    }
  }
  let out = ''
  for (const [name, m] of byName) out += `# HELP ${name} ${m.help}\n# TYPE ${name} ${m.type}\n${m.lines.join('\n')}\n`
  return out
}
