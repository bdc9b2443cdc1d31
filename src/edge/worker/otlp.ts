/**
 * OTLP/HTTP on the telemetry Worker: POST /v1/traces, /v1/logs, /v1/metrics. This file is the HTTP
 * side (content types, gzip, the body cap, authentication, the spec's answers); the records are made
 * and stored by the Durable Object (producer-object.ts, through src/edge/otlp/records.ts).
 */
import { SIGNALS, type RecordOptions, type Signal } from '../otlp/records.js'
import { checkProto, jsonToProto, OtlpJsonError, protoToJson } from '../otlp/transcode.js'
import { ProtobufError } from '../otlp/wire.js'
import type { Env } from './env.js'
import { choiceVar, flagVar, intVar, topicVar } from './settings.js'

export const DEFAULT_OTLP_MAX_BODY_BYTES = 16 << 20
export const DEFAULT_TOPICS: Record<Signal, string> = { traces: 'otlp_spans', logs: 'otlp_logs', metrics: 'otlp_metrics' }

/** The OTLP settings, from env (docs/otlp.md lists them). */
export interface OtlpSettings {
  topics: Record<Signal, string>
  records: Omit<RecordOptions, 'maxRecordBytes'>
  /** Request headers copied into every record's headers (the exporter's include_metadata_keys), lower case. */
  includeMetadataKeys: string[]
  /** The secret a request must present; unset: the routes are open. */
  authToken: string | null
  /** Where it is presented: `authorization` (Bearer <token>, the default) or any header name. */
  authHeader: string
  /** The largest body, as sent and after gunzip. */
  maxBodyBytes: number
}

export function otlpSettings(env: Env): OtlpSettings {
  const encoding = choiceVar(env, 'OTLP_ENCODING', ['otlp_proto', 'otlp_json'])
  return {
    topics: {
      traces: topicVar(env, 'OTLP_TRACES_TOPIC', DEFAULT_TOPICS.traces),
      logs: topicVar(env, 'OTLP_LOGS_TOPIC', DEFAULT_TOPICS.logs),
      metrics: topicVar(env, 'OTLP_METRICS_TOPIC', DEFAULT_TOPICS.metrics),
    },
    records: {
      encoding,
      partitionTracesById: flagVar(env, 'OTLP_PARTITION_TRACES_BY_ID'),
      partitionLogsByTraceId: flagVar(env, 'OTLP_PARTITION_LOGS_BY_TRACE_ID'),
      partitionLogsByResourceAttributes: flagVar(env, 'OTLP_PARTITION_LOGS_BY_RESOURCE_ATTRIBUTES'),
      partitionMetricsByResourceAttributes: flagVar(env, 'OTLP_PARTITION_METRICS_BY_RESOURCE_ATTRIBUTES'),
    },
    includeMetadataKeys: (env.OTLP_INCLUDE_METADATA_KEYS ?? '').split(',').map((k) => k.trim().toLowerCase()).filter(Boolean),
    authToken: env.OTLP_AUTH_TOKEN?.trim() || null,
    authHeader: env.OTLP_AUTH_HEADER?.trim().toLowerCase() || 'authorization',
    maxBodyBytes: intVar(env, 'OTLP_MAX_BODY_BYTES', DEFAULT_OTLP_MAX_BODY_BYTES),
  }
}

export type BodyType = 'protobuf' | 'json'
const CONTENT_TYPES: Record<BodyType, string> = { protobuf: 'application/x-protobuf', json: 'application/json' }

/** An OTLP request the route refuses: its status and message, answered as a google.rpc.Status. */
export class OtlpRequestError extends Error {
  constructor(readonly status: 400 | 401 | 413 | 415, message: string) {
    super(message)
    this.name = 'OtlpRequestError'
  }
}

// google.rpc.Code for each answer.
const RPC_CODE: Record<number, number> = { 400: 3, 401: 16, 413: 3, 415: 3, 429: 8, 500: 13, 503: 14 }

/** A google.rpc.Status body in `type` (the request's content type; JSON when it had none we take). */
export function statusResponse(status: number, type: BodyType, message: string, headers: Record<string, string> = {}): Response {
  const st = { code: RPC_CODE[status] ?? 2, message }
  const body = type === 'protobuf' ? jsonToProto(st, 'RpcStatus') : JSON.stringify(st)
  return new Response(body, { status, headers: { 'content-type': CONTENT_TYPES[type], ...headers } })
}

/** The 200 answer: an empty Export*ServiceResponse, or one with partial_success when some items were rejected. */
export function exportResponse(signal: Signal, type: BodyType, rejected: number, errorMessage: string): Response {
  const spec = SIGNALS[signal]
  const msg = rejected > 0 ? { partialSuccess: { [spec.rejectedField]: String(rejected), errorMessage } } : {}
  if (type === 'json') {
    const body = JSON.stringify(rejected > 0 ? protoToJson(jsonToProto(msg, spec.response), spec.response) : {})
    return new Response(body, { status: 200, headers: { 'content-type': CONTENT_TYPES.json } })
  }
  return new Response(jsonToProto(msg, spec.response), { status: 200, headers: { 'content-type': CONTENT_TYPES.protobuf } })
}

/** The body type of a Content-Type header, or null (415). */
export function bodyType(contentType: string | null): BodyType | null {
  const t = (contentType ?? '').split(';')[0]!.trim().toLowerCase()
  if (t === 'application/x-protobuf' || t === 'application/protobuf') return 'protobuf'
  if (t === 'application/json') return 'json'
  return null
}

/** Constant-time string comparison (the lengths may differ: compared over the longer one). */
function sameSecret(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a)
  const y = new TextEncoder().encode(b)
  let diff = x.length ^ y.length
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0)
  return diff === 0
}

export function authorize(req: Request, s: OtlpSettings): void {
  if (!s.authToken) return
  const raw = req.headers.get(s.authHeader)
  if (raw === null) throw new OtlpRequestError(401, `missing ${s.authHeader} header: send the Worker's OTLP_AUTH_TOKEN${s.authHeader === 'authorization' ? ' as "Bearer <token>"' : ''}`)
  const presented = s.authHeader === 'authorization' ? raw.replace(/^Bearer\s+/i, '') : raw
  if (!sameSecret(presented.trim(), s.authToken)) throw new OtlpRequestError(401, `wrong ${s.authHeader}: it does not match the Worker's OTLP_AUTH_TOKEN`)
}

/** How much of a refused body is read and dropped so the connection stays usable, as servers do before a 413. */
const DRAIN_LIMIT = 16 << 20

async function discardBody(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  let discarded = 0
  while (discarded < DRAIN_LIMIT) {
    const next = await reader.read().catch(() => ({ done: true as const, value: undefined }))
    if (next.done) return
    discarded += next.value.byteLength
  }
  reader.cancel().catch(() => {})
}

/** Reads at most `max` bytes from a stream; more is a 413 (the rest of a request body is drained, of a gunzip cancelled). */
async function readCapped(stream: ReadableStream<Uint8Array>, max: number, what: string, drainRest = true): Promise<Uint8Array<ArrayBuffer>> {
  const reader = stream.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    let next: ReadableStreamReadResult<Uint8Array>
    try {
      next = await reader.read()
    } catch (e) {
      throw new OtlpRequestError(400, `${what}: ${(e as Error).message}`)
    }
    if (next.done) break
    total += next.value.byteLength
    if (total > max) {
      if (drainRest) await discardBody(reader)
      else reader.cancel().catch(() => {})
      throw new OtlpRequestError(413, `${what} is more than ${max} bytes; at most ${max} are accepted (OTLP_MAX_BODY_BYTES): send smaller batches`)
    }
    chunks.push(next.value)
  }
  const out = new Uint8Array(total)
  let at = 0
  for (const c of chunks) { out.set(c, at); at += c.byteLength }
  return out
}

/**
 * The body of an OTLP request as a checked protobuf `*Data` message: size-capped as sent and again
 * after gunzip (a gzip bomb stops at the cap), JSON transcoded, protobuf checked. Throws OtlpRequestError.
 */
export async function readOtlpBody(req: Request, signal: Signal, type: BodyType, s: OtlpSettings): Promise<Uint8Array<ArrayBuffer>> {
  const declared = Number(req.headers.get('content-length') ?? NaN)
  if (declared > s.maxBodyBytes) {
    if (req.body) await discardBody(req.body.getReader())
    throw new OtlpRequestError(413, `body is ${declared} bytes; at most ${s.maxBodyBytes} are accepted (OTLP_MAX_BODY_BYTES): send smaller batches`)
  }
  const encoding = (req.headers.get('content-encoding') ?? 'identity').trim().toLowerCase()
  if (encoding !== 'identity' && encoding !== 'gzip') throw new OtlpRequestError(415, `Content-Encoding ${JSON.stringify(encoding)} is not accepted: send gzip or none`)
  if (!req.body) return new Uint8Array(0)
  let bytes = await readCapped(req.body, s.maxBodyBytes, 'body')
  if (encoding === 'gzip') {
    const inflated = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))
    bytes = await readCapped(inflated, s.maxBodyBytes, 'gunzipped body', false)
  }
  const data = SIGNALS[signal].data
  if (type === 'json') {
    let parsed: unknown
    try {
      const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
      // An empty body is an empty request (what a destination's connection test may send).
      parsed = text.trim() === '' ? {} : JSON.parse(text)
    } catch (e) {
      throw new OtlpRequestError(400, `body is not valid JSON: ${(e as Error).message}`)
    }
    try {
      return jsonToProto(parsed, data)
    } catch (e) {
      if (e instanceof OtlpJsonError) throw new OtlpRequestError(400, `not an OTLP/JSON ${data}: ${e.message}`)
      throw e
    }
  }
  try {
    checkProto(bytes, data)
  } catch (e) {
    if (e instanceof ProtobufError) throw new OtlpRequestError(400, `not an OTLP protobuf ${data}: ${e.message}`)
    throw e
  }
  return bytes
}

/** The request headers to copy into the records, as [key, value] in the configured order. */
export function metadataHeaders(req: Request, s: OtlpSettings): Array<[string, string]> {
  const out: Array<[string, string]> = []
  for (const k of s.includeMetadataKeys) {
    const v = req.headers.get(k)
    if (v !== null) out.push([k, v])
  }
  return out
}

export const OTLP_PATHS: Record<string, Signal> = { '/v1/traces': 'traces', '/v1/logs': 'logs', '/v1/metrics': 'metrics' }
