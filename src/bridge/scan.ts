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

/** Whether a struct type has a checked name among its fields: decided once per schema struct. */
const structHoldsName = new WeakMap<readonly Field[], boolean>()
function holdsName(type: Field['type']): boolean {
  if (typeof type === 'string') return false
  let v = structHoldsName.get(type)
  if (v === undefined) {
    v = type.some((f) => f.type === 'string' && STRING_ROLES[f.name] !== undefined)
    structHoldsName.set(type, v)
  }
  return v
}

/**
 * Topic names the relay decoded lately, with their bytes. A connection names the same few topics in
 * every Produce; a name whose bytes equal a remembered one's is that string, without a new one.
 */
const recentTopics: Array<{ bytes: Uint8Array; name: string }> = []
let recentNext = 0

/** Whether `a` holds exactly the `n` bytes at `at` of `b`. */
export function sameBytes(a: Uint8Array, b: Uint8Array, at: number, n: number): boolean {
  if (a.length !== n) return false
  for (let i = 0; i < n; i++) if (a[i] !== b[at + i]) return false
  return true
}

/** A remembered name with exactly these bytes (so legal already), or null. */
function recentTopic(body: Uint8Array, at: number, n: number): string | null {
  for (let i = 0; i < recentTopics.length; i++) {
    const t = recentTopics[i]!
    if (sameBytes(t.bytes, body, at, n)) return t.name
  }
  return null
}

/** A legal topic name's string (ASCII, so latin1 is exact), remembered with a copy of its bytes. */
function rememberTopic(body: Uint8Array, at: number, n: number): string {
  const bytes = Uint8Array.from(body.subarray(at, at + n))
  const name = Buffer.from(bytes.buffer, 0, n).toString('latin1')
  const entry = { bytes, name }
  if (recentTopics.length < 16) recentTopics.push(entry)
  else recentTopics[recentNext] = entry
  recentNext = (recentNext + 1) % 16
  return name
}

const int32At = (b: Uint8Array, at: number): number => (b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!

/**
 * One request's walk. Its methods are the walk's steps, so a request costs this object and the
 * lists it fills, not a set of closures.
 */
class RequestScan implements RequestFacts {
  topics: string[] = []
  transactionalIds: string[] = []
  groups: string[] = []
  coordinatorKeys: string[] = []
  keyType = -1
  producerIds: bigint[] = []
  allTopics = false
  byTopicId = false
  acks = -1
  autoCreateAt = -1
  private names = 0
  private readonly flexible: boolean
  /** The last batch producer id read, as two int32 halves: the batches of one producer repeat it. */
  private pidHigh = -1
  private pidLow = -1

  constructor(private readonly api: ApiSchema, private readonly version: number, private readonly r: Reader, private readonly maxNames: number) {
    this.flexible = version >= api.flexibleFrom
  }

  private inRange(range: readonly [number, number] | null): boolean { return range !== null && this.version >= range[0] && this.version <= range[1] }

  private addName(role: Role, at: number, n: number): void {
    if (++this.names > this.maxNames) throw new ScanRefusal('too_many_names', `a request may carry at most ${this.maxNames} names`)
    const body = this.r.buf
    if (role === 'topic') {
      let name = recentTopic(body, at, n)
      if (name === null) {
        const problem = topicNameProblem(body.subarray(at, at + n))
        if (problem) throw new ScanRefusal('invalid_name', problem)
        name = rememberTopic(body, at, n)
      }
      this.topics.push(name)
      return
    }
    let s: string
    try { s = exact.decode(body.subarray(at, at + n)) } catch { throw new ScanRefusal('invalid_name', `a ${role === 'txn' ? 'transactional id' : role === 'group' ? 'group id' : 'coordinator key'} is not valid UTF-8`) }
    if (role === 'txn') this.transactionalIds.push(s)
    else if (role === 'group') this.groups.push(s)
    else this.coordinatorKeys.push(s)
  }

  private addPid(pid: bigint): void {
    if (pid !== -1n && !this.producerIds.includes(pid)) this.producerIds.push(pid)
  }

  /** A batch header's producer id (8 bytes at `at` of the body); a BigInt only when it differs from the last one. */
  private addBatchPid(at: number): void {
    const body = this.r.buf
    const high = int32At(body, at)
    const low = int32At(body, at + 4)
    if (high === this.pidHigh && low === this.pidLow) return
    this.pidHigh = high
    this.pidLow = low
    this.addPid(BigInt.asIntN(64, (BigInt(high >>> 0) << 32n) | BigInt(low >>> 0)))
  }

  /** A string's length and start; its bytes are left in place (-1 for null). */
  private str(): number {
    const { r } = this
    const n = this.flexible ? r.uvarint() - 1 : r.int16()
    if (n < -1) throw new ProtocolError(`invalid string length ${n}`)
    if (n > 0) r.skip(n, 'string')
    return n
  }

  walk(fields: readonly Field[]): void {
    const { r } = this
    for (let k = 0; k < fields.length; k++) {
      const f = fields[k]!
      if (!this.inRange(f.versions) || f.tag !== null) continue
      if (f.array) {
        const n = r.arrayLength(this.flexible, 1)
        if (n === -1) {
          if (!this.inRange(f.nullable)) throw new ProtocolError(`${f.name} is null but not nullable in version ${this.version}`)
          if (f.name === 'topics' && this.api.name === 'Metadata') this.allTopics = true
          continue
        }
        // Refused from the count alone: a frame of 380,000 names costs one read, not 380,000 strings.
        if ((f.type === 'string' && STRING_ROLES[f.name]) || holdsName(f.type)) {
          if (this.names + n > this.maxNames) throw new ScanRefusal('too_many_names', `a request may carry at most ${this.maxNames} names; this one has ${n} in ${f.name}`)
        }
        for (let i = 0; i < n; i++) this.value(f)
        continue
      }
      this.value(f)
    }
    if (this.flexible) {
      const tags = r.uvarint()
      for (let i = 0; i < tags; i++) { r.uvarint(); r.skip(r.uvarint(), 'tagged field') }
    }
  }

  private value(f: Field): void {
    const { r } = this
    const type = f.type
    if (typeof type !== 'string') return this.walk(type)
    switch (type) {
      case 'int8':
        if (f.name === 'keyType') this.keyType = r.int8(); else r.int8()
        return
      case 'bool': {
        const at = r.pos
        if (r.bool() && f.name === 'allowAutoTopicCreation') this.autoCreateAt = at
        return
      }
      case 'int16':
        if (f.name === 'acks') this.acks = r.int16(); else r.int16()
        return
      case 'uint16': r.uint16(); return
      case 'int32': r.int32(); return
      case 'float64': r.skip(8); return
      case 'int64':
        if (f.name === 'producerId') this.addPid(r.int64()); else r.skip(8)
        return
      case 'uuid': {
        const at = r.pos
        r.skip(16, 'uuid')
        if (f.name === 'topicId') {
          const b = r.buf
          for (let i = at; i < at + 16; i++) if (b[i] !== 0) { this.byTopicId = true; break }
        }
        return
      }
      case 'string': {
        const n = this.str()
        const role = STRING_ROLES[f.name]
        if (n === -1) {
          if (!this.inRange(f.nullable)) throw new ProtocolError(`${f.name} is null but not nullable in version ${this.version}`)
          if (role === 'topic') this.byTopicId = true
          return
        }
        const at = r.pos - n
        if (role) this.addName(role, at, n)
        // Any other string must still read the same on both sides: invalid UTF-8 is refused.
        else if (n > 0 && !isUtf8(r.buf.subarray(at, at + n))) throw new ScanRefusal('invalid_name', `${f.name} is not valid UTF-8`)
        return
      }
      case 'bytes': case 'records': {
        const n = this.flexible ? r.uvarint() - 1 : r.int32()
        if (n < -1) throw new ProtocolError(`invalid bytes length ${n}`)
        if (n === -1) {
          if (!this.inRange(f.nullable)) throw new ProtocolError(`${f.name} is null but not nullable in version ${this.version}`)
          return
        }
        const at = r.pos
        r.skip(n, 'bytes')
        // Records are read in place (batch headers only); other bytes are not looked at.
        if (type === 'records') this.batches(at, n)
        return
      }
    }
  }

  /**
   * Every record batch header in a partition's records (`length` bytes at `start` of the request
   * body): the producer id the broker will append under. Only magic 2 batches (the only kind Produce
   * v3+ carries) are accepted; the records themselves are never read.
   */
  private batches(start: number, length: number): void {
    const body = this.r.buf
    const end = start + length
    let at = start
    while (at < end) {
      if (end - at < 61) throw new ScanRefusal('bad_records', 'a record batch is shorter than its header')
      const batchLength = int32At(body, at + 8)
      if (batchLength < 49 || batchLength > end - at - 12) throw new ScanRefusal('bad_records', 'a record batch length does not match the records it is in')
      if (body[at + 16] !== 2) throw new ScanRefusal('bad_records', 'a record batch is not magic 2')
      this.addBatchPid(at + 43)
      at += 12 + batchLength
    }
  }
}

/** Walks a request body from the reader's position (past the request header) to its end. */
export function scanRequest(api: ApiSchema, version: number, r: Reader, maxNames: number): RequestFacts {
  const scan = new RequestScan(api, version, r, maxNames)
  scan.walk(api.request)
  if (r.remaining !== 0) throw new ProtocolError(`${api.name} v${version} request has ${r.remaining} trailing bytes`)
  return scan
}

/**
 * Whether a response body (from `start` of `buf`, e.g. 4 of a frame with its size prefix) carries
 * top-level tagged fields. A Produce response names new leaders' endpoints (KIP-951) only there, and
 * only after a leader change, so the relay decodes a Produce response only when this says so: the
 * common answer is walked, not built.
 */
export function hasTopLevelTags(api: ApiSchema, version: number, buf: Uint8Array, start = 0): boolean {
  const flexible = version >= api.flexibleFrom
  if (!flexible) return false
  const r = new Reader(buf, start)
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
