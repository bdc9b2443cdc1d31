import fc from 'fast-check'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { ProtocolError } from '../../src/edge/errors.js'
import {
  APIS, ApiVersions, Produce, Metadata, decodeRequest, decodeRequestHeader, decodeResponse, encodeRequest, encodeResponse,
  InitProducerId, Reader, Writer, errorCode, errorInfo, responseHeaderVersion, type ApiSchema, type Message, type RequestBody, type ResponseBody,
} from '../../src/edge/protocol/index.js'
import type { Field } from '../../src/edge/protocol/schema.js'
import { FrameDecoder } from '../../src/edge/protocol/frame-decoder.js'
import { rng } from '../helpers/records.js'

const inRange = (r: readonly [number, number] | null, v: number) => r !== null && v >= r[0] && v <= r[1]

/** A random message for a schema at a version, so every field of every version gets exercised. */
function sample(fields: readonly Field[], version: number, r: () => number): Message {
  const out: Message = {}
  for (const f of fields) {
    if (!inRange(f.versions, version)) continue
    if (f.array) {
      const n = Math.floor(r() * 3)
      out[f.name] = Array.from({ length: n }, () => value(f.type, version, r, f))
    } else out[f.name] = value(f.type, version, r, f)
  }
  return out
}

function value(type: Field['type'], version: number, r: () => number, f: Field): unknown {
  if (typeof type !== 'string') return sample(type, version, r)
  const nullable = inRange(f.nullable, version) && r() < 0.2
  switch (type) {
    case 'int8': return Math.floor(r() * 256) - 128
    case 'int16': return Math.floor(r() * 65536) - 32768
    case 'uint16': return Math.floor(r() * 65536)
    case 'int32': return (Math.floor(r() * 2 ** 32) | 0)
    case 'int64': return BigInt.asIntN(64, BigInt(Math.floor(r() * 2 ** 53)) * 1024n + BigInt(Math.floor(r() * 1024)))
    case 'float64': return r() * 1e6
    case 'bool': return r() < 0.5
    case 'uuid': return Uint8Array.from({ length: 16 }, () => Math.floor(r() * 256))
    case 'string': return nullable ? null : ['', 'a', 'topic-1', 'ключ', '🔑'][Math.floor(r() * 5)]
    case 'bytes': case 'records': return nullable ? null : Uint8Array.from({ length: Math.floor(r() * 20) }, () => Math.floor(r() * 256))
  }
}

/** What decoding returns for fields absent in this version: drop them before comparing. */
function strip(fields: readonly Field[], version: number, m: Message): Message {
  const out: Message = {}
  for (const f of fields) {
    if (!inRange(f.versions, version)) continue
    const v = m[f.name]
    if (f.array && Array.isArray(v) && typeof f.type !== 'string') out[f.name] = v.map((x) => strip(f.type as readonly Field[], version, x as Message))
    else if (!f.array && typeof f.type !== 'string' && v) out[f.name] = strip(f.type, version, v as Message)
    else out[f.name] = v
  }
  return out
}

const versions = (api: ApiSchema) => Array.from({ length: api.maxVersion - api.minVersion + 1 }, (_, i) => api.minVersion + i)

describe('schema engine', () => {
  for (const api of APIS) {
    it(`${api.name}: every version round-trips requests and responses`, () => {
      const r = rng(api.key + 1)
      for (const v of versions(api)) {
        for (let i = 0; i < 30; i++) {
          const req = sample(api.request, v, r)
          const frame = encodeRequest(api, v, 77, 'client-ä', req)
          const decoded = decodeRequest(frame)
          expect(decoded.header).toEqual({ apiKey: api.key, apiVersion: v, correlationId: 77, clientId: 'client-ä' })
          expect(strip(api.request, v, decoded.body!)).toEqual(strip(api.request, v, req))

          const res = sample(api.response, v, r)
          const out = encodeResponse(api, v, 91, res)
          expect(new DataView(out.buffer, out.byteOffset).getInt32(0)).toBe(out.length - 4)
          expect(strip(api.response, v, decodeResponse(api, v, out.subarray(4)))).toEqual(strip(api.response, v, res))
        }
      }
    })

    it(`${api.name}: random, truncated and mutated response bytes give ProtocolError only`, () => {
      const r = rng(1000 + api.key)
      for (const v of versions(api)) {
        const valid = encodeResponse(api, v, 5, sample(api.response, v, r)).subarray(4)
        for (let cut = 0; cut < valid.length; cut++) {
          expect(() => decodeResponse(api, v, valid.subarray(0, cut))).toThrow(ProtocolError)
        }
        fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), fc.nat(), (bytes, seed) => {
          const mutated = valid.slice()
          if (mutated.length > 0) for (let k = 0; k < 3; k++) mutated[(seed + k * 7919) % mutated.length]! ^= 1 << (k % 8)
          for (const input of [bytes, mutated]) {
            try { decodeResponse(api, v, input) } catch (e) { expect(e).toBeInstanceOf(ProtocolError) }
          }
        }), { numRuns: 150, seed: api.key * 31 + v })
      }
    })
  }

  it('a forged array count cannot make the decoder allocate: it is rejected against the bytes left', () => {
    const frame = new Uint8Array([0, 0, 0, 1, /* errorCode */ 0, 0, /* apiKeys count */ 0x7f, 0xff, 0xff, 0xff])
    expect(() => decodeResponse(ApiVersions, 0, frame)).toThrow(/cannot fit/)
  })

  it('ApiVersions responses use header v0 even in flexible versions; other flexible APIs use v1', () => {
    expect(responseHeaderVersion(ApiVersions, 4)).toBe(0)
    expect(responseHeaderVersion(Metadata, 9)).toBe(1)
    expect(responseHeaderVersion(Metadata, 8)).toBe(0)
    // A v4 ApiVersions response has no header tag byte: body starts right after the correlation id.
    const res = encodeResponse(ApiVersions, 4, 3, { errorCode: 0, apiKeys: [{ apiKey: 0, minVersion: 3, maxVersion: 12 }], throttleTimeMs: 0 })
    expect(Array.from(res.subarray(4, 10))).toEqual([0, 0, 0, 3, 0, 0])
  })

  it('the v0 ApiVersions fallback answer (UNSUPPORTED_VERSION) parses as v0', () => {
    const v0 = encodeResponse(ApiVersions, 0, 1, { errorCode: 35, apiKeys: [{ apiKey: 18, minVersion: 0, maxVersion: 3 }] })
    const m = decodeResponse(ApiVersions, 0, v0.subarray(4))
    expect(m.errorCode).toBe(35)
    expect(m.apiKeys).toEqual([{ apiKey: 18, minVersion: 0, maxVersion: 3 }])
  })

  it('tagged fields: Produce v10 CurrentLeader and NodeEndpoints survive, unknown tags are skipped', () => {
    const body = {
      responses: [{ name: 't', partitionResponses: [{ index: 0, errorCode: 6, baseOffset: -1n, logAppendTimeMs: -1n, logStartOffset: -1n, recordErrors: [], errorMessage: null, currentLeader: { leaderId: 2, leaderEpoch: 7 } }] }],
      throttleTimeMs: 0,
      nodeEndpoints: [{ nodeId: 2, host: 'b2', port: 9093, rack: null }],
    }
    const m = decodeResponse(Produce, 10, encodeResponse(Produce, 10, 1, body).subarray(4)) as ResponseBody<typeof Produce>
    expect(m.responses[0]!.partitionResponses[0]!.currentLeader).toEqual({ leaderId: 2, leaderEpoch: 7 })
    expect(m.nodeEndpoints).toEqual([{ nodeId: 2, host: 'b2', port: 9093, rack: null }])
    // Before v10 the hint does not exist.
    const m9 = decodeResponse(Produce, 9, encodeResponse(Produce, 9, 1, body).subarray(4)) as ResponseBody<typeof Produce>
    expect(m9.responses[0]!.partitionResponses[0]!.currentLeader).toBeNull()
  })

  it('request headers: client id is an int16 string even in header v2; tagged header fields are skipped', () => {
    const frame = encodeRequest(Produce, 12, 42, 'edge', { transactionalId: null, acks: -1, timeoutMs: 1000, topicData: [] })
    const h = decodeRequestHeader(frame.subarray(4))
    expect(h).toMatchObject({ apiKey: 0, apiVersion: 12, correlationId: 42, clientId: 'edge' })
    expect(Array.from(frame.subarray(12, 14))).toEqual([0, 4])
  })

  it('rejects versions outside what this client speaks', () => {
    expect(() => encodeRequest(Produce, 2, 1, null, {})).toThrow(ProtocolError)
    expect(() => encodeRequest(Produce, 13, 1, null, {})).toThrow(ProtocolError)
  })
})

describe('unsigned varints', () => {
  it('read back what was written at every 7-bit boundary up to 32 bits, and nothing longer or larger', () => {
    const values = [0, 1, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152, 268_435_455, 268_435_456, 2 ** 31, 0xffffffff]
    const w = new Writer()
    for (const v of values) w.uvarint(v)
    const r = new Reader(w.finish())
    expect(values.map(() => r.uvarint())).toEqual(values)
    expect(r.remaining).toBe(0)
    // 2^32 takes 5 bytes, as 0xffffffff does, but is past what the protocol's 32-bit varints hold.
    expect(() => new Reader(Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x10)).uvarint()).toThrow(/exceeds 32 bits/)
    expect(() => new Reader(Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x80, 0x01)).uvarint()).toThrow(/longer than 5 bytes/)
    expect(() => new Reader(Uint8Array.of(0x80, 0x80)).uvarint()).toThrow(ProtocolError)
  })
})

describe('strings', () => {
  it('are written as their UTF-8 bytes behind an int16 or a compact length, ASCII or not, and read back the same', () => {
    const enc = new TextEncoder()
    const text = fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: 'grapheme', maxLength: 60 }), fc.constantFrom('', 'é', 'a'.repeat(255), 'a'.repeat(256), 'topic-ü'))
    fc.assert(fc.property(text, fc.boolean(), (v, compact) => {
      const bytes = enc.encode(v)
      const frame = new Writer(8).int8(7).string(v, compact).int8(9).finish()
      const n = compact ? bytes.length + 1 : bytes.length
      const prefix = !compact ? [n >> 8, n & 0xff] : n < 0x80 ? [n] : [(n & 0x7f) | 0x80, n >> 7]
      expect([...frame]).toEqual([7, ...prefix, ...bytes, 9])
      const r = new Reader(frame)
      r.int8()
      expect(r.string(compact)).toBe(v)
    }), { numRuns: 300 })
  })
})

describe('typed messages: types derived from the same field lists the codec reads', () => {
  it('a decoded response has every field, typed by its declaration (int64 as bigint, nullable strings, nested arrays)', () => {
    const body = { throttleTimeMs: 0, errorCode: 0, producerId: 4242n, producerEpoch: 7 }
    const init = decodeResponse(InitProducerId, 4, encodeResponse(InitProducerId, 4, 1, body).subarray(4)) as ResponseBody<typeof InitProducerId>
    expectTypeOf(init.producerId).toEqualTypeOf<bigint>()
    expectTypeOf(init.producerEpoch).toEqualTypeOf<number>()
    expect(init).toEqual(body)

    const produced: ResponseBody<typeof Produce> = {
      responses: [{ name: 't', partitionResponses: [{
        index: 0, errorCode: 0, baseOffset: 10n, logAppendTimeMs: -1n, logStartOffset: 0n, recordErrors: [], errorMessage: null, currentLeader: null,
      }] }],
      throttleTimeMs: 0, nodeEndpoints: [],
    }
    const pr = produced.responses[0]!.partitionResponses[0]!
    expectTypeOf(pr.errorMessage).toEqualTypeOf<string | null>()
    expectTypeOf(pr.currentLeader).toEqualTypeOf<{ leaderId: number; leaderEpoch: number } | null>()
    const back = decodeResponse(Produce, 10, encodeResponse(Produce, 10, 1, produced).subarray(4)) as ResponseBody<typeof Produce>
    expect(back.responses[0]!.partitionResponses[0]!.baseOffset).toBe(10n)
  })

  it('a request may leave out fields (they are written as defaults), but not name fields the API does not have', () => {
    const req: RequestBody<typeof InitProducerId> = { transactionalId: null, transactionTimeoutMs: 60_000 }
    // @ts-expect-error InitProducerId has no field `topics`
    const wrong: RequestBody<typeof InitProducerId> = { topics: [] }
    // @ts-expect-error transactionTimeoutMs is an int32, not a string
    const mistyped: RequestBody<typeof InitProducerId> = { transactionTimeoutMs: '60000' }
    void wrong; void mistyped
    const frame = encodeRequest(InitProducerId, 4, 9, 'c', req)
    const decoded = decodeRequest(frame)
    expect(decoded.body).toMatchObject({ transactionalId: null, transactionTimeoutMs: 60_000, producerId: -1n, producerEpoch: -1 })
  })
})

describe('error table', () => {
  it('names, Java exceptions and retriable flags of the codes the producer depends on', () => {
    expect(errorInfo(6)).toMatchObject({ name: 'NOT_LEADER_OR_FOLLOWER', exception: 'NotLeaderOrFollowerException', retriable: true })
    expect(errorInfo(45)).toMatchObject({ name: 'OUT_OF_ORDER_SEQUENCE_NUMBER', retriable: false })
    expect(errorInfo(46)).toMatchObject({ name: 'DUPLICATE_SEQUENCE_NUMBER', retriable: false })
    expect(errorInfo(19).retriable).toBe(true)
    expect(errorInfo(20).retriable).toBe(true)
    expect(errorInfo(90)).toMatchObject({ name: 'PRODUCER_FENCED', exception: 'ProducerFencedException' })
    expect(errorCode('UNKNOWN_PRODUCER_ID')).toBe(59)
    expect(errorCode('TRANSACTION_ABORTABLE')).toBe(120)
    expect(errorInfo(9999).name).toBe('UNKNOWN_ERROR_CODE_9999')
  })
})

describe('FrameDecoder', () => {
  const frame = (body: number[]) => new Uint8Array([0, 0, 0, body.length, ...body])

  it('re-frames a stream cut at every possible position', () => {
    const stream = new Uint8Array([...frame([1, 2, 3]), ...frame([]), ...frame([9, 8, 7, 6, 5])])
    for (let a = 0; a <= stream.length; a++) {
      for (let b = a; b <= stream.length; b++) {
        const d = new FrameDecoder()
        const got = [...d.push(stream.subarray(0, a)), ...d.push(stream.subarray(a, b)), ...d.push(stream.subarray(b))].map((f) => Array.from(f))
        expect(got).toEqual([[1, 2, 3], [], [9, 8, 7, 6, 5]])
        expect(d.buffered).toBe(0)
      }
    }
  })

  it('rejects negative and oversized sizes with a ProtocolError', () => {
    expect(() => new FrameDecoder().push(new Uint8Array([0xff, 0xff, 0xff, 0xff]))).toThrow(ProtocolError)
    expect(() => new FrameDecoder(1000).push(new Uint8Array([0, 0, 0x10, 0]))).toThrow(/outside/)
  })
})
