import { isUtf8 } from 'node:buffer'
import {
  AddOffsetsToTxn, AddPartitionsToTxn, API_NAMES, ApiVersions, DescribeProducers, EndTxn, FindCoordinator, InitProducerId, Metadata, Produce,
  Reader, TxnOffsetCommit, type ApiSchema,
} from '../edge/protocol/index.js'
import { CloseCode } from './codes.js'
import { ScanRefusal, sameBytes, scanRequest, type RequestFacts } from './scan.js'
import { compilePatterns, type TokenClaims } from './token.js'

/** What the token lets a connection do, compiled once per connection. */
export interface Grants {
  principal: string
  topic: (name: string) => boolean
  transactionalId: (id: string) => boolean
  group: (id: string) => boolean
}

export function grantsFor(claims: TokenClaims): Grants {
  return {
    principal: claims.sub,
    topic: remembered(compilePatterns(claims.topics)),
    transactionalId: compilePatterns(claims.transactional_ids),
    group: compilePatterns(claims.groups),
  }
}

/** A connection names the same few topics in every Produce: decide each once (bounded, so names cannot grow it). */
function remembered(match: (name: string) => boolean): (name: string) => boolean {
  const seen = new Map<string, boolean>()
  return (name) => {
    let v = seen.get(name)
    if (v === undefined) {
      v = match(name)
      if (seen.size < 256) seen.set(name, v)
    }
    return v
  }
}

export type Verdict =
  | {
    ok: true
    apiKey: number
    apiVersion: number
    correlationId: number
    /** acks=0 Produce gets no response. */
    expectResponse: boolean
    /** The response carries broker endpoints the relay must learn. */
    learn: boolean
    /** The relay rewrote bytes of the frame in place (Metadata auto-creation flag). */
    rewritten?: boolean
    /** An InitProducerId: its answer binds a producer id to the principal. */
    initProducerId?: { transactionalId: string | null }
  }
  | { ok: false; code: number; reason: string; metric: string }

/**
 * The API firewall: the producer's APIs only, in the versions this codec parses (a version the relay
 * cannot parse is a version whose topic names it cannot check). Everything else, SASL from clients
 * included, is refused: the relay authenticates to the brokers itself. DescribeProducers (for the
 * topics the token grants) is how a resumed producer learns whether the broker still knows it
 * (producer.id.expiration.ms); its answer lists producer ids and sequences of those partitions,
 * which the producer-id bindings make useless to anyone but their owner.
 */
const ALLOWED = new Map<number, ApiSchema>([
  Produce, Metadata, FindCoordinator, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit, ApiVersions, DescribeProducers,
].map((a) => [a.key, a]))

type Accepted = Extract<Verdict, { ok: true }>
const accepted = (apiKey: number, apiVersion: number, correlationId: number, expectResponse: boolean, learn: boolean): Accepted =>
  ({ ok: true, apiKey, apiVersion, correlationId, expectResponse, learn })
const refuse = (code: number, reason: string, metric: string): Verdict => ({ ok: false, code, reason, metric })
const forbidden = (reason: string, metric: string) => refuse(CloseCode.FORBIDDEN, reason, metric)
// Close reasons are limited to 123 bytes by RFC 6455; names in them are clipped.
const clip = (s: string) => (s.length > 40 ? `${s.slice(0, 37)}...` : s)

/**
 * Checks that one WebSocket message is exactly one size-prefixed frame. Returns null when it is, else
 * why not. Never throws.
 */
export function checkMessage(data: Uint8Array): string | null {
  if (data.length < 4) return 'message shorter than a size prefix'
  const size = ((data[0]! << 24) | (data[1]! << 16) | (data[2]! << 8) | data[3]!)
  if (size < 0) return `negative size prefix ${size}`
  if (size > data.length - 4) return `size prefix ${size} but message carries ${data.length - 4} bytes: one frame per message, never split`
  if (size < data.length - 4) return `size prefix ${size} but message carries ${data.length - 4} bytes: one frame per message`
  return null
}

/**
 * What a request is checked against besides the token's grants. The WebSocket connection and any
 * other entry point into the relay (an HTTP route taking a pre-encoded request) supply the same
 * context, so there is one policy.
 */
export interface RequestContext {
  grants: Grants
  /** Whether this producer id was issued to (or presented with a ticket by) this principal. */
  ownsProducerId(pid: bigint): boolean
  /** Takes one InitProducerId from the principal's and the address's allowance; false when spent. */
  admitInitProducerId(): boolean
  maxNamesPerRequest: number
}

/** The last client id found valid UTF-8: every request of a producer carries the same one. */
let lastClientId = new Uint8Array(0)

/** Inspects one request frame body (size prefix removed). Never throws; may rewrite `body` in place. */
export function inspectRequest(body: Uint8Array, ctx: RequestContext): Verdict {
  if (body.length < 8) return refuse(CloseCode.BAD_FRAME, 'request shorter than a request header', 'bad_frame')
  const apiKey = (body[0]! << 8 | body[1]!) << 16 >> 16
  const apiVersion = (body[2]! << 8 | body[3]!) << 16 >> 16
  const api = ALLOWED.get(apiKey)
  if (!api) return forbidden(`API ${API_NAMES[apiKey] ?? apiKey} is not allowed through the relay`, 'api')
  // ApiVersions is answered in v0 shape for versions a broker does not know, so any version may pass.
  if (api !== ApiVersions && (apiVersion < api.minVersion || apiVersion > api.maxVersion)) {
    return forbidden(`${api.name} v${apiVersion} is outside the relay's checked range ${api.minVersion}-${api.maxVersion}`, 'api_version')
  }
  if (apiVersion < 0) return refuse(CloseCode.BAD_FRAME, 'negative API version', 'bad_frame')
  let correlationId: number
  let facts: RequestFacts | null = null
  try {
    // The header is read, not decoded: the client id is only skipped (it is checked by no rule).
    const r = new Reader(body, 4)
    correlationId = r.int32()
    const clientIdLength = r.int16()
    if (clientIdLength < -1) return refuse(CloseCode.BAD_FRAME, 'negative client id length', 'bad_frame')
    if (clientIdLength > 0) {
      const at = r.pos
      r.skip(clientIdLength, 'client id')
      if (!sameBytes(lastClientId, body, at, clientIdLength)) {
        if (!isUtf8(body.subarray(at, at + clientIdLength))) return refuse(CloseCode.BAD_FRAME, 'client id is not valid UTF-8', 'bad_frame')
        if (clientIdLength <= 256) lastClientId = Uint8Array.from(body.subarray(at, at + clientIdLength))
      }
    }
    if (apiVersion >= api.flexibleFrom) {
      const tags = r.uvarint()
      for (let i = 0; i < tags; i++) { r.uvarint(); r.skip(r.uvarint(), 'tagged header field') }
    }
    if (api !== ApiVersions) facts = scanRequest(api, apiVersion, r, ctx.maxNamesPerRequest)
  } catch (e) {
    if (e instanceof ScanRefusal) {
      // Names Kafka would refuse are refused before anything else is looked at.
      if (e.kind === 'invalid_name') return refuse(CloseCode.INVALID_NAME, e.message, 'invalid_name')
      return refuse(CloseCode.BAD_FRAME, e.message, e.kind)
    }
    return refuse(CloseCode.BAD_FRAME, `${api.name} request does not parse`, 'bad_frame')
  }
  if (!facts) return accepted(apiKey, apiVersion, correlationId, true, false)
  const { grants } = ctx
  const { transactionalIds, groups, topics, producerIds } = facts
  for (let i = 0; i < transactionalIds.length; i++) if (!grants.transactionalId(transactionalIds[i]!)) return forbidden(`transactional id ${clip(transactionalIds[i]!)} is not allowed`, 'transactional_id')
  for (let i = 0; i < groups.length; i++) if (!grants.group(groups[i]!)) return forbidden(`group ${clip(groups[i]!)} is not allowed`, 'group')
  if (facts.allTopics) return forbidden('Metadata for all topics is not allowed; name the topics', 'topic')
  if (facts.byTopicId) return forbidden('lookups by topic id are not allowed; name the topics', 'topic_id')
  for (let i = 0; i < topics.length; i++) if (!grants.topic(topics[i]!)) return forbidden(`topic ${clip(topics[i]!)} is not allowed`, 'topic')
  for (let i = 0; i < producerIds.length; i++) {
    if (!ctx.ownsProducerId(producerIds[i]!)) return refuse(CloseCode.FOREIGN_PRODUCER_ID, `producer id ${producerIds[i]} was not issued to this principal`, 'foreign_producer_id')
  }

  switch (apiKey) {
    case Produce.key:
      // Produce v10+ may name new leaders' endpoints (KIP-951); the client will ask for them next.
      return accepted(apiKey, apiVersion, correlationId, facts.acks !== 0, apiVersion >= 10)
    case Metadata.key: {
      const base = accepted(apiKey, apiVersion, correlationId, true, true)
      if (facts.autoCreateAt >= 0) {
        // Never let a name typed in a browser create a topic: clear the flag in the frame itself
        // (the buffer is the relay's own copy of the message).
        body[facts.autoCreateAt] = 0
        return { ...base, rewritten: true }
      }
      return base
    }
    case FindCoordinator.key: {
      const txn = facts.keyType === 1
      if (!txn && facts.keyType !== 0) return forbidden(`FindCoordinator key type ${facts.keyType} is not allowed`, 'api')
      for (const k of facts.coordinatorKeys) {
        if (!(txn ? grants.transactionalId(k) : grants.group(k))) return forbidden(`${txn ? 'transactional id' : 'group'} ${clip(k)} is not allowed`, txn ? 'transactional_id' : 'group')
      }
      return accepted(apiKey, apiVersion, correlationId, true, true)
    }
    case InitProducerId.key:
      if (!ctx.admitInitProducerId()) return refuse(CloseCode.PRODUCER_ID_RATE_LIMITED, 'too many InitProducerId calls: reuse the producer (or its saved producer-id ticket)', 'init_producer_id_rate')
      return { ...accepted(apiKey, apiVersion, correlationId, true, false), initProducerId: { transactionalId: facts.transactionalIds[0] ?? null } }
    default:
      return accepted(apiKey, apiVersion, correlationId, true, false)
  }
}
