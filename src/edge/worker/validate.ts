/**
 * Validation of the telemetry Worker's input: pure functions, no I/O, so they run (and are tested)
 * anywhere. An event is
 *
 *   { "type": "page_view",          required: 1..100 chars of [A-Za-z0-9_.:/-]
 *     "id": "…",                    optional: 1..128 chars; generated (crypto.randomUUID) when absent
 *     "key": "user-1",              optional: the Kafka record key (partitioning), up to 256 chars
 *     "timestamp": 1720000000000,   optional: ms since the epoch or an ISO-8601 string; default now
 *     "data": { … } }               optional: any JSON value
 *
 * The body is one event or an array of them. The id travels inside the record value: it is what a
 * consumer dedupes on when a client retries a request whose answer it never saw (the idempotent
 * producer dedupes its own retries, not a second HTTP request).
 */

export interface TelemetryLimits {
  /** Largest accepted request body (413 above it). */
  maxBodyBytes: number
  /** Most events in one request (413 above it). */
  maxEvents: number
  /** Largest serialized event (413 above it). */
  maxEventBytes: number
}

export const DEFAULT_LIMITS: TelemetryLimits = { maxBodyBytes: 1 << 20, maxEvents: 1000, maxEventBytes: 64 << 10 }

/** What the Worker hands the Durable Object: one Kafka record per event. */
export interface TelemetryRecord {
  id: string
  key: string | null
  /** The record value: the normalized event as JSON. */
  value: string
  timestamp: number
  type: string
  /**
   * The event came without an id and the app named it. No resend can carry that id (a resent event
   * without one is named anew), so the object does not remember it against resends.
   */
  generated?: true
}

/**
 * The events of one accepted request as the app hands them to its object and the object stores
 * them: one line per event, `JSON(id) TAB JSON(key), or nothing for none TAB timestamp TAB type TAB
 * value`. The value is already JSON (validateEvent's), so it travels as it is: inside a JSON array of
 * records it was escaped once more by the app and unescaped by the object each time the row went
 * to the producer. JSON.stringify writes no raw tab or newline and a type holds neither, so the
 * separators cannot occur inside a field.
 */
export function encodeRecords(records: readonly TelemetryRecord[]): string {
  let out = ''
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!
    out += `${i === 0 ? '' : '\n'}${JSON.stringify(r.id)}\t${r.key === null ? '' : JSON.stringify(r.key)}\t${r.timestamp}\t${r.type}\t${r.value}`
  }
  return out
}

/** The records of encodeRecords' text, or of a JSON array of records (rows stored by earlier code). */
export function decodeRecords(text: string): TelemetryRecord[] {
  if (text.charCodeAt(0) === 0x5b) return JSON.parse(text) as TelemetryRecord[]
  const out: TelemetryRecord[] = []
  let at = 0
  while (at < text.length) {
    const t1 = text.indexOf('\t', at)
    const t2 = t1 < 0 ? -1 : text.indexOf('\t', t1 + 1)
    const t3 = t2 < 0 ? -1 : text.indexOf('\t', t2 + 1)
    const t4 = t3 < 0 ? -1 : text.indexOf('\t', t3 + 1)
    if (t4 < 0) throw new Error(`stored telemetry row is corrupt: event ${out.length} has fewer than 5 fields`)
    let end = text.indexOf('\n', t4 + 1)
    if (end < 0) end = text.length
    out.push({
      id: jsonString(text.slice(at, t1)),
      key: t2 === t1 + 1 ? null : jsonString(text.slice(t1 + 1, t2)),
      timestamp: Number(text.slice(t2 + 1, t3)),
      type: text.slice(t3 + 1, t4),
      value: text.slice(t4 + 1, end),
    })
    at = end + 1
  }
  return out
}

// Ids and keys are mostly plain: without a backslash, the quotes are all there is to take off.
const jsonString = (s: string): string => (s.includes('\\') ? JSON.parse(s) as string : s.slice(1, -1))

export class TelemetryInputError extends Error {
  constructor(readonly status: 400 | 413, message: string) {
    super(message)
    this.name = 'TelemetryInputError'
  }
}

const TYPE = /^[A-Za-z0-9_.:/-]{1,100}$/
const FIELDS = new Set(['type', 'id', 'key', 'timestamp', 'data'])
// Kafka rejects timestamps it cannot store; keep them to a sane window (year 2000 .. 9999).
const MIN_TS = 946684800000
const MAX_TS = 253402300799999
const utf8 = new TextEncoder()

/** Parses and validates a request body (already size-checked) into records. Throws TelemetryInputError. */
export function parseTelemetry(body: string, limits: TelemetryLimits = DEFAULT_LIMITS, now = Date.now(), newId: () => string = () => crypto.randomUUID()): TelemetryRecord[] {
  if (body.trim() === '') throw new TelemetryInputError(400, 'empty body: send one event object or an array of them as JSON')
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch (e) {
    throw new TelemetryInputError(400, `body is not valid JSON: ${(e as Error).message}`)
  }
  const events = Array.isArray(parsed) ? parsed : [parsed]
  if (events.length === 0) throw new TelemetryInputError(400, 'empty array: send at least one event')
  if (events.length > limits.maxEvents) throw new TelemetryInputError(413, `${events.length} events in one request; at most ${limits.maxEvents} are accepted, split the batch`)
  const seen = new Set<string>()
  return events.map((e, i) => {
    const r = validateEvent(e, Array.isArray(parsed) ? i : -1, limits, now, newId)
    if (seen.has(r.id)) throw new TelemetryInputError(400, `event[${i}]: id ${JSON.stringify(r.id)} appears twice in the request`)
    seen.add(r.id)
    return r
  })
}

// Module-level rather than a closure per event: a bundler's keepNames (wrangler's default) wraps
// every named closure in a call that sets its name, once per event. The event's place is formatted
// only for an error (`at` is its index in the array, -1 for a body of one event).
const where = (at: number) => (at < 0 ? 'event' : `event[${at}]`)
const bad = (at: number, msg: string) => new TelemetryInputError(400, `${where(at)}: ${msg}`)

function validateEvent(e: unknown, at: number, limits: TelemetryLimits, now: number, newId: () => string): TelemetryRecord {
  if (e === null || typeof e !== 'object' || Array.isArray(e)) {
    throw bad(at, `must be an object like {"type": "page_view", "data": {...}}, got ${e === null ? 'null' : Array.isArray(e) ? 'an array' : typeof e}`)
  }
  const ev = e as Record<string, unknown>
  // for-in: no array of keys per event (a parsed object has no inherited enumerable keys).
  for (const k in ev) if (!FIELDS.has(k)) throw bad(at, `unknown field ${JSON.stringify(k)}; allowed: ${[...FIELDS].join(', ')} (put custom fields under "data")`)
  if (typeof ev.type !== 'string' || !TYPE.test(ev.type)) throw bad(at, `"type" is required: 1-100 characters of A-Z a-z 0-9 _ . : / -, got ${JSON.stringify(ev.type)}`)
  let id: string
  const generated = ev.id === undefined
  if (generated) id = newId()
  else if (typeof ev.id === 'string' && ev.id.length >= 1 && ev.id.length <= 128) id = ev.id
  else throw bad(at, `"id" must be a string of 1-128 characters, got ${JSON.stringify(ev.id)}`)
  let key: string | null = null
  if (ev.key !== undefined && ev.key !== null) {
    if (typeof ev.key !== 'string' || ev.key.length > 256) throw bad(at, `"key" must be a string of at most 256 characters`)
    key = ev.key
  }
  let timestamp = now
  if (ev.timestamp !== undefined) {
    const t = typeof ev.timestamp === 'number' ? ev.timestamp : typeof ev.timestamp === 'string' ? Date.parse(ev.timestamp) : NaN
    if (!Number.isInteger(t) || t < MIN_TS || t > MAX_TS) {
      throw bad(at, `"timestamp" must be integer ms since the epoch or an ISO-8601 string between 2000 and 9999, got ${JSON.stringify(ev.timestamp)}`)
    }
    timestamp = t
  }
  const normalized: { id: string; type: string; timestamp: number; key?: string; data?: unknown } = { id, type: ev.type, timestamp }
  if (key !== null) normalized.key = key
  if (ev.data !== undefined) normalized.data = ev.data
  const value = JSON.stringify(normalized)
  // A UTF-16 code unit is at most 3 bytes of UTF-8: most events need no encoding to be counted.
  if (value.length * 3 > limits.maxEventBytes) {
    const size = utf8.encode(value).length
    if (size > limits.maxEventBytes) throw new TelemetryInputError(413, `${where(at)}: ${size} bytes serialized; one event may be at most ${limits.maxEventBytes} bytes`)
  }
  return generated ? { id, key, value, timestamp, type: ev.type, generated } : { id, key, value, timestamp, type: ev.type }
}

/**
 * Reads a request body as text, refusing (413) more than `max` bytes without buffering them: the
 * Content-Length is checked first, then the stream is counted as it arrives (chunked uploads).
 */
const DRAIN_LIMIT = 16 << 20

export async function readBodyLimited(request: Request, max: number): Promise<string> {
  const declared = request.headers.get('content-length')
  // Unread, the body is discarded by the runtime (and by wrangler dev's drain middleware).
  if (declared !== null && Number(declared) > max) throw new TelemetryInputError(413, `body is ${declared} bytes; at most ${max} are accepted`)
  if (!request.body) return ''
  // A declared length within the limit is the body's length (HTTP framing holds the body to it): one
  // read of the whole, rather than a stream read chunk by chunk.
  if (declared !== null && /^\d+$/.test(declared)) {
    const body = new Uint8Array(await request.arrayBuffer())
    if (body.length > max) throw new TelemetryInputError(413, `body is ${body.length} bytes; at most ${max} are accepted`)
    return utf8Body(body)
  }
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > max) {
      // Discard the rest (bounded) so the connection stays usable, as servers do before a 413.
      let discarded = 0
      while (discarded < DRAIN_LIMIT) {
        const next = await reader.read().catch(() => ({ done: true as const, value: undefined }))
        if (next.done) break
        discarded += next.value.byteLength
      }
      if (discarded >= DRAIN_LIMIT) reader.cancel().catch(() => {})
      throw new TelemetryInputError(413, `body is more than ${max} bytes; at most ${max} are accepted`)
    }
    chunks.push(value)
  }
  const all = new Uint8Array(total)
  let at = 0
  for (const c of chunks) { all.set(c, at); at += c.byteLength }
  return utf8Body(all)
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

function utf8Body(bytes: Uint8Array): string {
  try {
    return strictUtf8.decode(bytes)
  } catch {
    throw new TelemetryInputError(400, 'body is not valid UTF-8')
  }
}
