import { isUtf8 } from 'node:buffer'
import { ProtocolError } from '../edge/errors.js'
import { Reader, type ApiSchema } from '../edge/protocol/index.js'
import type { Field } from '../edge/protocol/schema.js'

/**
 * The relay's reading of a request body: the names and producer ids it must check, read from the
 * bytes the broker will read, walked by the same API schemas the producer encodes with but without
 * building the message (no per-field objects, records never decoded: only record batch headers are
 * read, for their producer ids).
 *
 * Names are compared as the broker sees them: a UTF-8 decoder that keeps a byte-order mark and
 * refuses invalid sequences makes the string a one-to-one image of the bytes (Java keeps U+FEFF
 * too), so a name that passes the relay is the name the broker registers.
 */
const exact = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

export interface RequestFacts {
  topics: string[]
  transactionalIds: string[]
  groups: string[]
  coordinatorKeys: string[]
  keyType: number
  /** Distinct producer ids other than -1: request fields and record batch headers. */
  producerIds: bigint[]
  /** Metadata: the topic list is null (all topics). */
  allTopics: boolean
  /** Metadata v10+: an entry carries a topic id or no name (a lookup by id). */
  byTopicId: boolean
  acks: number
  /** Offset of Metadata's AllowAutoTopicCreation byte when it is true, else -1. */
  autoCreateAt: number
}

/** Why a request is refused before its names are looked at. */
export class ScanRefusal extends Error {
  constructor(readonly kind: 'invalid_name' | 'too_many_names' | 'bad_records', message: string) { super(message) }
}

const clip = (s: string) => (s.length > 40 ? `${s.slice(0, 37)}...` : s)

/** Kafka's own rule (Topic.validate): 1-249 characters of [a-zA-Z0-9._-], not "." or "..". */
export function topicNameProblem(bytes: Uint8Array): string | null {
  if (bytes.length === 0) return 'a topic name is empty'
  if (bytes.length > 249) return `a topic name of ${bytes.length} bytes is longer than Kafka's 249`
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!
    const ok = (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x5f || c === 0x2d
    if (!ok) return `topic name ${JSON.stringify(clip(Buffer.from(bytes).toString('latin1')))} has a character Kafka refuses (allowed: a-z A-Z 0-9 . _ -)`
  }
  if (bytes.length <= 2 && bytes.every((c) => c === 0x2e)) return `"${'.'.repeat(bytes.length)}" is not a legal topic name`
  return null
}

type Role = 'topic' | 'txn' | 'group' | 'key'
/** Which request fields hold checked names; the schemas use these field names in every API the relay passes. */
const STRING_ROLES: Record<string, Role> = { name: 'topic', transactionalId: 'txn', groupId: 'group', key: 'key', coordinatorKeys: 'key' }

export function scanRequest(api: ApiSchema, version: number, body: Uint8Array, bodyOffset: number, maxNames: number): RequestFacts {
  const facts: RequestFacts = {
    topics: [], transactionalIds: [], groups: [], coordinatorKeys: [], keyType: -1, producerIds: [],
    allTopics: false, byTopicId: false, acks: -1, autoCreateAt: -1,
  }
  const flexible = version >= api.flexibleFrom
  const r = new Reader(body, bodyOffset)
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength)
  let names = 0
  const addName = (role: Role, bytes: Uint8Array): void => {
    if (++names > maxNames) throw new ScanRefusal('too_many_names', `a request may carry at most ${maxNames} names`)
    if (role === 'topic') {
      const problem = topicNameProblem(bytes)
      if (problem) throw new ScanRefusal('invalid_name', problem)
      // Legal topic names are ASCII: latin1 is exact and cheaper than UTF-8 decoding.
      facts.topics.push(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1'))
      return
    }
    let s: string
    try { s = exact.decode(bytes) } catch { throw new ScanRefusal('invalid_name', `a ${role === 'txn' ? 'transactional id' : role === 'group' ? 'group id' : 'coordinator key'} is not valid UTF-8`) }
    if (role === 'txn') facts.transactionalIds.push(s)
    else if (role === 'group') facts.groups.push(s)
    else facts.coordinatorKeys.push(s)
  }
  const addPid = (pid: bigint): void => {
    if (pid !== -1n && !facts.producerIds.includes(pid)) facts.producerIds.push(pid)
  }

  const str = (compact: boolean): Uint8Array | null => {
    const n = compact ? r.uvarint() - 1 : r.int16()
    if (n < -1) throw new ProtocolError(`invalid string length ${n}`)
    return n === -1 ? null : r.raw(n, 'string')
  }
  const inRange = (range: readonly [number, number] | null) => range !== null && version >= range[0] && version <= range[1]
  const holdsName = (type: Field['type']): boolean => typeof type === 'string' ? false : type.some((f) => typeof f.type === 'string' && f.type === 'string' && STRING_ROLES[f.name] !== undefined)

  const walk = (fields: readonly Field[]): void => {
    for (const f of fields) {
      if (!inRange(f.versions) || f.tag !== null) continue
      if (f.array) {
        const n = r.arrayLength(flexible, 1)
        if (n === -1) {
          if (!inRange(f.nullable)) throw new ProtocolError(`${f.name} is null but not nullable in version ${version}`)
          if (f.name === 'topics' && api.name === 'Metadata') facts.allTopics = true
          continue
        }
        // Refused from the count alone: a frame of 380,000 names costs one read, not 380,000 strings.
        if ((f.type === 'string' && STRING_ROLES[f.name]) || holdsName(f.type)) {
          if (names + n > maxNames) throw new ScanRefusal('too_many_names', `a request may carry at most ${maxNames} names; this one has ${n} in ${f.name}`)
        }
        for (let i = 0; i < n; i++) value(f)
        continue
      }
      value(f)
    }
    if (flexible) {
      const tags = r.uvarint()
      for (let i = 0; i < tags; i++) { r.uvarint(); r.skip(r.uvarint(), 'tagged field') }
    }
  }

  const value = (f: Field): void => {
    const type = f.type
    if (typeof type !== 'string') return walk(type)
    switch (type) {
      case 'int8':
        if (f.name === 'keyType') facts.keyType = r.int8(); else r.int8()
        return
      case 'bool': {
        const at = r.pos
        if (r.bool() && f.name === 'allowAutoTopicCreation') facts.autoCreateAt = at
        return
      }
      case 'int16':
        if (f.name === 'acks') facts.acks = r.int16(); else r.int16()
        return
      case 'uint16': r.uint16(); return
      case 'int32': r.int32(); return
      case 'float64': r.skip(8); return
      case 'int64':
        if (f.name === 'producerId') addPid(r.int64()); else r.skip(8)
        return
      case 'uuid': {
        const id = r.raw(16, 'uuid')
        if (f.name === 'topicId' && id.some((b) => b !== 0)) facts.byTopicId = true
        return
      }
      case 'string': {
        const bytes = str(flexible)
        const role = STRING_ROLES[f.name]
        if (bytes === null) {
          if (!inRange(f.nullable)) throw new ProtocolError(`${f.name} is null but not nullable in version ${version}`)
          if (role === 'topic') facts.byTopicId = true
          return
        }
        if (role) addName(role, bytes)
        // Any other string must still read the same on both sides: invalid UTF-8 is refused.
        else if (bytes.length > 0 && !isUtf8(bytes)) throw new ScanRefusal('invalid_name', `${f.name} is not valid UTF-8`)
        return
      }
      case 'bytes': case 'records': {
        const n = flexible ? r.uvarint() - 1 : r.int32()
        if (n < -1) throw new ProtocolError(`invalid bytes length ${n}`)
        if (n === -1) {
          if (!inRange(f.nullable)) throw new ProtocolError(`${f.name} is null but not nullable in version ${version}`)
          return
        }
        const at = r.pos
        r.skip(n, 'bytes')
        // Records are read in place (batch headers only); other bytes are not looked at.
        if (type === 'records') scanBatches(view, at, n, addPid)
        return
      }
    }
  }

  walk(api.request)
  if (r.remaining !== 0) throw new ProtocolError(`${api.name} v${version} request has ${r.remaining} trailing bytes`)
  return facts
}

/**
 * Every record batch header in a partition's records (`length` bytes at `start` of the request
 * body): the producer id the broker will append under. Only magic 2 batches (the only kind Produce v3+ carries) are accepted; the records
 * themselves are never read.
 */
function scanBatches(view: DataView, start: number, length: number, addPid: (pid: bigint) => void): void {
  const end = start + length
  let at = start
  while (at < end) {
    if (end - at < 61) throw new ScanRefusal('bad_records', 'a record batch is shorter than its header')
    const batchLength = view.getInt32(at + 8)
    if (batchLength < 49 || batchLength > end - at - 12) throw new ScanRefusal('bad_records', 'a record batch length does not match the records it is in')
    if (view.getInt8(at + 16) !== 2) throw new ScanRefusal('bad_records', 'a record batch is not magic 2')
    addPid(view.getBigInt64(at + 43))
    at += 12 + batchLength
  }
}

/**
 * Whether a response body (size prefix removed) carries top-level tagged fields. A Produce
 * response names new leaders' endpoints (KIP-951) only there, and only after a leader change, so
 * the relay decodes a Produce response only when this says so: the common answer is walked, not built.
 */
export function hasTopLevelTags(api: ApiSchema, version: number, body: Uint8Array): boolean {
  const flexible = version >= api.flexibleFrom
  if (!flexible) return false
  const r = new Reader(body)
  r.int32()
  skipTags(r)
  skipFields(api.response, version, r)
  return r.uvarint() > 0
}

function skipTags(r: Reader): void {
  const n = r.uvarint()
  for (let i = 0; i < n; i++) { r.uvarint(); r.skip(r.uvarint(), 'tagged field') }
}

/** Walks flexible-version fields without building anything. */
function skipFields(fields: readonly Field[], version: number, r: Reader): void {
  for (const f of fields) {
    if (version < f.versions[0] || version > f.versions[1] || f.tag !== null) continue
    const n = f.array ? r.arrayLength(true, 1) : 1
    for (let i = 0; i < n; i++) {
      const type = f.type
      if (typeof type !== 'string') { skipFields(type, version, r); skipTags(r); continue }
      switch (type) {
        case 'int8': case 'bool': r.skip(1); break
        case 'int16': case 'uint16': r.skip(2); break
        case 'int32': r.skip(4); break
        case 'int64': case 'float64': r.skip(8); break
        case 'uuid': r.skip(16); break
        case 'string': case 'bytes': case 'records': { const len = r.uvarint() - 1; if (len > 0) r.skip(len); break }
      }
    }
  }
}
