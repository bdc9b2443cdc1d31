import {
  AddOffsetsToTxn, AddPartitionsToTxn, API_NAMES, ApiVersions, EndTxn, FindCoordinator, InitProducerId, Metadata, Produce,
  Reader, TxnOffsetCommit, decodeRequestBody, decodeRequestHeader, type ApiSchema, type Message,
} from '../edge/protocol/index.js'
import { CloseCode } from './codes.js'
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
    topic: compilePatterns(claims.topics),
    transactionalId: compilePatterns(claims.transactional_ids),
    group: compilePatterns(claims.groups),
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
  }
  | { ok: false; code: number; reason: string; metric: string }

/**
 * The API firewall: the producer's APIs only, in the versions this codec parses (a version the relay
 * cannot parse is a version whose topic names it cannot check). Everything else, SASL from clients
 * included, is refused: the relay authenticates to the brokers itself.
 */
const ALLOWED = new Map<number, ApiSchema>([Produce, Metadata, FindCoordinator, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit, ApiVersions].map((a) => [a.key, a]))

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

/** Inspects one request frame body (size prefix removed). Never throws; may rewrite `body` in place. */
export function inspectRequest(body: Uint8Array, grants: Grants): Verdict {
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
  let header: ReturnType<typeof decodeRequestHeader>
  let msg: Message = {}
  try {
    header = decodeRequestHeader(body)
    if (api !== ApiVersions) msg = decodeRequestBody(api, apiVersion, body, header.bodyOffset)
  } catch (e) {
    return refuse(CloseCode.BAD_FRAME, `${api.name} request does not parse`, 'bad_frame')
  }
  const base = { ok: true as const, apiKey, apiVersion, correlationId: header.correlationId, expectResponse: true, learn: false }
  const txn = (id: unknown): Verdict | null =>
    typeof id === 'string' && !grants.transactionalId(id) ? forbidden(`transactional id ${clip(id)} is not allowed`, 'transactional_id') : null
  const group = (id: unknown): Verdict | null =>
    typeof id === 'string' && !grants.group(id) ? forbidden(`group ${clip(id)} is not allowed`, 'group') : null
  const topics = (names: Iterable<unknown>): Verdict | null => {
    for (const n of names) if (typeof n !== 'string' || !grants.topic(n)) return forbidden(`topic ${clip(String(n))} is not allowed`, 'topic')
    return null
  }

  switch (apiKey) {
    case ApiVersions.key:
      return base
    case Produce.key: {
      const data = msg.topicData as Array<{ name: string }>
      const v = txn(msg.transactionalId) ?? topics(data.map((t) => t.name))
      if (v) return v
      // Produce v10+ may name new leaders' endpoints (KIP-951); the client will ask for them next.
      return { ...base, expectResponse: msg.acks !== 0, learn: apiVersion >= 10 }
    }
    case Metadata.key: {
      const list = msg.topics as Array<{ name: string | null }> | null
      if (list === null) return forbidden('Metadata for all topics is not allowed; name the topics', 'topic')
      const v = topics(list.map((t) => t.name))
      if (v) return v
      if (msg.allowAutoTopicCreation === true) {
        // Never let a name typed in a browser create a topic: clear the flag in the frame itself
        // (the buffer is the relay's own copy of the message).
        body[metadataAutoCreateOffset(body, header.bodyOffset, apiVersion)] = 0
        return { ...base, learn: true, rewritten: true }
      }
      return { ...base, learn: true }
    }
    case FindCoordinator.key: {
      const keys = apiVersion >= 4 ? (msg.coordinatorKeys as string[]) : [msg.key as string]
      const check = msg.keyType === 1 ? txn : msg.keyType === 0 ? group : null
      if (!check) return forbidden(`FindCoordinator key type ${String(msg.keyType)} is not allowed`, 'api')
      for (const k of keys) { const v = check(k); if (v) return v }
      return { ...base, learn: true }
    }
    case InitProducerId.key:
      return txn(msg.transactionalId) ?? base
    case AddPartitionsToTxn.key:
      return txn(msg.transactionalId) ?? topics((msg.topics as Array<{ name: string }>).map((t) => t.name)) ?? base
    case AddOffsetsToTxn.key:
    case TxnOffsetCommit.key:
      return txn(msg.transactionalId) ?? group(msg.groupId) ?? base
    case EndTxn.key:
      return txn(msg.transactionalId) ?? base
  }
  return forbidden(`API ${apiKey} is not allowed`, 'api')
}

/** Offset of the AllowAutoTopicCreation byte: right after the topics array. */
function metadataAutoCreateOffset(body: Uint8Array, bodyOffset: number, version: number): number {
  const flexible = version >= Metadata.flexibleFrom
  const r = new Reader(body, bodyOffset)
  const n = r.arrayLength(flexible, 1)
  for (let i = 0; i < n; i++) {
    if (version >= 10) r.raw(16, 'uuid')
    r.string(flexible)
    if (flexible) {
      const tags = r.uvarint()
      for (let t = 0; t < tags; t++) { r.uvarint(); r.raw(r.uvarint()) }
    }
  }
  return r.pos
}
