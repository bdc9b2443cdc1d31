// The relay parses untrusted bytes (size prefix, request header, the bodies it checks); this suite
// throws >= 100,000 generated and mutated inputs at that parser, then a sample of them at a live relay.
import { describe, expect, it } from 'vitest'
import { CloseCode } from '../../src/bridge/codes.js'
import { checkMessage, grantsFor, inspectRequest, type RequestContext } from '../../src/bridge/policy.js'
import { compilePatterns, signToken, verifyToken } from '../../src/bridge/token.js'
import {
  AddOffsetsToTxn, AddPartitionsToTxn, ApiVersions, EndTxn, FindCoordinator, InitProducerId, Metadata, Produce, TxnOffsetCommit,
  decodeRequestBody, decodeRequestHeader, encodeRequest, encodeResponse, type ApiSchema, type Message,
} from '../../src/edge/protocol/index.js'
import { hasTopLevelTags } from '../../src/bridge/scan.js'
import { rng } from '../helpers/records.js'
import { AuthenticationException, AuthorizationException, NetworkException, RecordTooLargeException } from '../../src/edge/index.js'
import { closeError } from '../../src/edge/transport/websocket.js'
import { assertHealthy, rawClient, relayCluster, startRelay } from './helpers.js'

const grants = grantsFor({ sub: 'fuzz', aud: 'x', exp: 0, topics: ['ok-*'], transactional_ids: ['tx-*'], groups: ['g-*'] })
/** The relay's context for these frames: every producer id but 666 was issued to this principal. */
const ctx: RequestContext = { grants, ownsProducerId: (pid) => pid !== 666n, admitInitProducerId: () => true, maxNamesPerRequest: 10_000 }

/** A record batch header (magic 2) padded to `size` bytes, under producer id `pid`: what the relay reads of records. */
function batch(size: number, pid = 7n): Uint8Array {
  const b = new Uint8Array(size)
  const v = new DataView(b.buffer)
  v.setInt32(8, size - 12)
  v.setInt8(16, 2)
  v.setBigInt64(43, pid)
  return b
}

const SEEDS: Array<[ApiSchema, number, Message]> = [
  [Produce, 3, { transactionalId: null, acks: -1, timeoutMs: 1000, topicData: [{ name: 'ok-a', partitionData: [{ index: 0, records: batch(70) }] }] }],
  [Produce, 9, { transactionalId: 'tx-1', acks: 1, timeoutMs: 1000, topicData: [{ name: 'ok-a', partitionData: [{ index: 1, records: batch(90) }] }, { name: 'ok-b', partitionData: [] }] }],
  [Produce, 12, { transactionalId: null, acks: 0, timeoutMs: 1, topicData: [{ name: 'ok-z', partitionData: [{ index: 0, records: null }] }] }],
  [Metadata, 4, { topics: [{ name: 'ok-a' }], allowAutoTopicCreation: true }],
  [Metadata, 12, { topics: [{ topicId: new Uint8Array(16), name: 'ok-a' }, { topicId: new Uint8Array(16), name: 'ok-b' }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false }],
  [FindCoordinator, 2, { key: 'tx-1', keyType: 1 }],
  [FindCoordinator, 6, { keyType: 0, coordinatorKeys: ['g-1', 'g-2'] }],
  [InitProducerId, 5, { transactionalId: 'tx-9', transactionTimeoutMs: 1000, producerId: 5n, producerEpoch: 1 }],
  [AddPartitionsToTxn, 3, { transactionalId: 'tx-1', producerId: 1n, producerEpoch: 0, topics: [{ name: 'ok-a', partitions: [0, 1] }] }],
  [AddOffsetsToTxn, 3, { transactionalId: 'tx-1', producerId: 1n, producerEpoch: 0, groupId: 'g-1' }],
  [TxnOffsetCommit, 3, { transactionalId: 'tx-1', groupId: 'g-1', producerId: 1n, producerEpoch: 0, generationId: 1, memberId: 'm', groupInstanceId: null, topics: [{ name: 'ok-in', partitions: [{ partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: -1, committedMetadata: null }] }] }],
  [EndTxn, 4, { transactionalId: 'tx-1', producerId: 1n, producerEpoch: 0, committed: true }],
  [ApiVersions, 4, { clientSoftwareName: 'a', clientSoftwareVersion: '1' }],
]

function mutate(r: () => number, seed: Uint8Array): Uint8Array {
  const out = Uint8Array.from(seed)
  const kind = Math.floor(r() * 6)
  const n = 1 + Math.floor(r() * 4)
  if (kind === 0) for (let i = 0; i < n; i++) out[Math.floor(r() * out.length)]! ^= 1 << Math.floor(r() * 8)
  else if (kind === 1) for (let i = 0; i < n; i++) out[Math.floor(r() * out.length)] = Math.floor(r() * 256)
  else if (kind === 2) return out.subarray(0, Math.floor(r() * out.length))
  else if (kind === 3) { const at = 4 + Math.floor(r() * (out.length - 4)); out.fill(0xff, at, Math.min(out.length, at + 4)) }
  else if (kind === 4) { const at = 4 + Math.floor(r() * (out.length - 4)); out.fill(0x7f, at, Math.min(out.length, at + 1 + Math.floor(r() * 4))) }
  else { const extra = new Uint8Array(out.length + 1 + Math.floor(r() * 16)); extra.set(out); return extra }
  return out
}

function fixPrefix(f: Uint8Array): Uint8Array {
  if (f.length >= 4) new DataView(f.buffer, f.byteOffset, f.byteLength).setInt32(0, f.length - 4)
  return f
}

describe('relay frame + header parser fuzz', () => {
  it('120,000 mutated and random messages: no throw, every verdict is a documented code, memory bounded', () => {
    const r = rng(1337)
    const seeds = SEEDS.map(([api, v, body], i) => encodeRequest(api, v, 1000 + i, 'fuzz', body).slice())
    // Every seed is accepted as-is, so mutations start from frames that reach deep into the parser.
    for (const s of seeds) expect(checkMessage(s)).toBeNull()
    for (const s of seeds) expect(inspectRequest(s.slice(4), ctx).ok).toBe(true)
    const codes = new Set<number>([CloseCode.BAD_FRAME, CloseCode.FORBIDDEN, CloseCode.INVALID_NAME, CloseCode.FOREIGN_PRODUCER_ID])
    const tally = { ok: 0, badMessage: 0, refused: 0 }
    const rssBefore = process.memoryUsage().rss
    let rssPeak = rssBefore
    for (let i = 0; i < 120_000; i++) {
      let msg: Uint8Array
      if (i % 10 === 0) { msg = new Uint8Array(Math.floor(r() * 64)); for (let j = 0; j < msg.length; j++) msg[j] = Math.floor(r() * 256) }
      else {
        msg = mutate(r, seeds[i % seeds.length]!)
        if (i % 3 !== 0) msg = fixPrefix(msg) // most inputs get past the size check
      }
      const bad = checkMessage(msg)
      if (bad !== null) { tally.badMessage++; expect(typeof bad).toBe('string'); continue }
      const v = inspectRequest(msg.subarray(4), ctx)
      if (v.ok) {
        tally.ok++
        // What the relay lets through must be what the broker will parse the same way.
        const h = decodeRequestHeader(msg.subarray(4))
        expect(h.correlationId).toBe(v.correlationId)
        const api = SEEDS.find(([a]) => a.key === v.apiKey)![0]
        if (api !== ApiVersions) {
          const body = decodeRequestBody(api, v.apiVersion, msg.subarray(4), h.bodyOffset)
          if (api === Metadata) expect(body.allowAutoTopicCreation).toBe(false)
          if (api === Produce) for (const t of body.topicData as Array<{ name: string }>) expect(t.name.startsWith('ok-')).toBe(true)
        }
      } else {
        tally.refused++
        expect(codes.has(v.code)).toBe(true)
        expect(v.reason.length).toBeGreaterThan(0)
      }
      if (i % 10_000 === 0) rssPeak = Math.max(rssPeak, process.memoryUsage().rss)
    }
    console.log(JSON.stringify({ fuzz: tally, rssGrowthMB: Math.round((rssPeak - rssBefore) / 1e6) }))
    expect(tally.ok + tally.badMessage + tally.refused).toBe(120_000)
    expect(tally.ok).toBeGreaterThan(1000)
    expect(tally.refused).toBeGreaterThan(1000)
    expect(rssPeak - rssBefore).toBeLessThan(200 * 1024 * 1024)
  })

  it('a forged array count cannot make the parser allocate: 2^31-1 topics in 40 bytes is refused', () => {
    const f = encodeRequest(Produce, 3, 1, 'x', { transactionalId: null, acks: -1, timeoutMs: 1, topicData: [] }).slice()
    new DataView(f.buffer).setInt32(f.length - 4, 0x7fffffff)
    const v = inspectRequest(f.subarray(4), ctx)
    expect(v.ok).toBe(false)
    if (!v.ok) expect(v.code).toBe(CloseCode.BAD_FRAME)
  })

  it('names, client ids and producer ids the parser remembers are matched byte for byte', () => {
    const produce = (name: string, pids: bigint[], clientId = 'fuzz') => inspectRequest(encodeRequest(Produce, 9, 1, clientId, {
      transactionalId: null, acks: -1, timeoutMs: 1000,
      topicData: [{ name, partitionData: [{ index: 0, records: concat(pids.map((pid) => batch(70, pid))) }] }],
    }).subarray(4), ctx)
    const concat = (parts: Uint8Array[]) => {
      const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
      let at = 0
      for (const p of parts) { out.set(p, at); at += p.length }
      return out
    }
    const verdict = (v: ReturnType<typeof inspectRequest>) => (v.ok ? 'ok' : v.metric)
    expect(verdict(produce('ok-a', [7n]))).toBe('ok')
    // Same length as a remembered name, one byte apart.
    expect(verdict(produce('no-a', [7n]))).toBe('topic')
    expect(verdict(produce('ok-a', [7n]))).toBe('ok')
    // More names than are remembered, then the first ones again.
    for (let i = 0; i < 40; i++) expect(verdict(produce(`ok-${i}`, [7n]))).toBe('ok')
    expect(verdict(produce('no-a', [7n]))).toBe('topic')
    expect(verdict(produce('ok-a', [-1n]))).toBe('ok')
    expect(verdict(produce('ok-a\u00e9', [7n]))).toBe('invalid_name')
    // A batch under another producer id behind batches under a remembered one.
    expect(verdict(produce('ok-a', [7n, 7n, 666n]))).toBe('foreign_producer_id')
    expect(verdict(produce('ok-a', [666n, 7n]))).toBe('foreign_producer_id')
    expect(verdict(produce('ok-a', [-1n, 7n, -1n]))).toBe('ok')
    // A client id of the remembered one's length that is not UTF-8.
    const bad = encodeRequest(Produce, 9, 1, 'fuzz', { transactionalId: null, acks: -1, timeoutMs: 1000, topicData: [{ name: 'ok-a', partitionData: [] }] })
    bad.set([0xff, 0xfe, 0xfd, 0xfc], 14)
    expect(verdict(inspectRequest(bad.subarray(4), ctx))).toBe('bad_frame')
    expect(verdict(produce('ok-a', [7n]))).toBe('ok')
  })

  it('Metadata with AllowAutoTopicCreation=true is rewritten to false in place (v4, v9, v12)', () => {
    for (const version of [4, 9, 12]) {
      const f = encodeRequest(Metadata, version, 5, 'x', { topics: [{ topicId: new Uint8Array(16), name: 'ok-a' }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: true }).slice()
      const v = inspectRequest(f.subarray(4), ctx)
      expect(v.ok && v.rewritten).toBe(true)
      const body = decodeRequestBody(Metadata, version, f.subarray(4), decodeRequestHeader(f.subarray(4)).bodyOffset)
      expect(body.allowAutoTopicCreation).toBe(false)
      expect(body.includeTopicAuthorizedOperations).toBe(version >= 8)
    }
  })
})

describe('relay building blocks', () => {
  it('token checks: claims types, nbf, issuer, key rotation', () => {
    const now = 1_800_000_000
    const o = { secrets: [Buffer.from('k'.repeat(32)), Buffer.from('n'.repeat(32))], audience: 'a', clockSkewSec: 0, nowSec: now }
    const t = (c: Record<string, unknown>, key = 'n'.repeat(32)) => signToken({ sub: 's', aud: 'a', exp: now + 60, ...c }, key)
    expect(verifyToken(t({}), o).ok).toBe(true)
    expect(verifyToken(t({}, 'k'.repeat(32)), o).ok).toBe(true)
    expect(verifyToken(t({}, 'z'.repeat(32)), o).ok).toBe(false)
    expect(verifyToken(t({ aud: ['b', 'a'] }), o).ok).toBe(true)
    expect(verifyToken(t({ nbf: now + 30 }), o).ok).toBe(false)
    expect(verifyToken(t({ topics: 'ok-*' }), o).ok).toBe(false)
    expect(verifyToken(t({ exp: now }), o)).toMatchObject({ ok: false, expired: true })
    expect(verifyToken(t({}), { ...o, issuer: 'me' }).ok).toBe(false)
    expect(verifyToken('a.b', o).ok).toBe(false)
  })

  it('the WebSocket transport maps relay close codes to typed errors', () => {
    const e = (code: number, fn = false) => closeError(code, 'why', 'relay', fn)
    expect(e(4401)).toBeInstanceOf(AuthenticationException)
    expect(e(4401).retriable).toBe(false)
    expect(e(4402).retriable).toBe(false)
    expect(e(4402, true)).toBeInstanceOf(AuthenticationException)
    expect(e(4402, true).retriable).toBe(true)
    expect(e(4403)).toBeInstanceOf(AuthorizationException)
    expect(e(4403).retriable).toBe(false)
    expect(e(1009)).toBeInstanceOf(RecordTooLargeException)
    // A destination the relay may not dial is a refusal, not an outage.
    expect(e(4404)).toBeInstanceOf(AuthorizationException)
    expect(e(4404).retriable).toBe(false)
    for (const code of [1001, 1006, 4408, 4429, 4502]) {
      expect(e(code)).toBeInstanceOf(NetworkException)
      expect(e(code).retriable).toBe(true)
    }
  })

  it('a Produce response is decoded for endpoints only when it carries top-level tagged fields (NodeEndpoints, KIP-951)', () => {
    const base = { responses: [{ name: 't', partitionResponses: [{ index: 0, errorCode: 6, baseOffset: -1n, logAppendTimeMs: -1n, logStartOffset: -1n, recordErrors: [{ batchIndex: 1, batchIndexErrorMessage: 'x' }], errorMessage: 'moved', currentLeader: { leaderId: 1, leaderEpoch: 2 } }] }], throttleTimeMs: 0 }
    for (const v of [10, 11, 12]) {
      expect(hasTopLevelTags(Produce, v, encodeResponse(Produce, v, 7, base).subarray(4))).toBe(false)
      expect(hasTopLevelTags(Produce, v, encodeResponse(Produce, v, 7, { ...base, nodeEndpoints: [{ nodeId: 1, host: 'h', port: 9, rack: null }] }).subarray(4))).toBe(true)
    }
    expect(hasTopLevelTags(Produce, 9, encodeResponse(Produce, 9, 7, base).subarray(4))).toBe(false)
  })

  it('topic patterns: * is the only wildcard; regex characters are literal', () => {
    const m = compilePatterns(['clicks.*', 'exact', 'a+b'])
    expect(m('clicks.eu')).toBe(true)
    expect(m('clicksXeu')).toBe(false)
    expect(m('exact')).toBe(true)
    expect(m('exactly')).toBe(false)
    expect(m('a+b')).toBe(true)
    expect(m('aab')).toBe(false)
    expect(compilePatterns(undefined)('anything')).toBe(false)
  })
})

describe('fuzzed messages against a live relay', () => {
  it('600 malformed messages over WebSockets: each is closed with a documented code, the relay stays healthy', async () => {
    const cluster = await relayCluster()
    const bridge = await startRelay(cluster)
    try {
      const r = rng(99)
      const seeds = SEEDS.map(([api, v, body], i) => encodeRequest(api, v, 1000 + i, 'fuzz', body).slice())
      const allowed = new Set<number>([CloseCode.BAD_FRAME, CloseCode.FORBIDDEN, CloseCode.NORMAL, CloseCode.INVALID_NAME, CloseCode.FOREIGN_PRODUCER_ID])
      let closedWithCode = 0
      for (let batch = 0; batch < 30; batch++) {
        await Promise.all(Array.from({ length: 20 }, async () => {
          const msg = mutate(r, seeds[Math.floor(r() * seeds.length)]!)
          const c = rawClient(bridge.url, { origin: 'https://app.example' })
          if (!(await c.opened)) throw new Error('did not open')
          c.send(msg)
          // A mutation that still parses gets a broker answer (or the broker closes); otherwise a code.
          const res = await Promise.race([c.closed, c.next(3000).then(() => null, () => null)])
          c.ws.close()
          if (res && !allowed.has(res.code) && res.code !== CloseCode.UPSTREAM_UNAVAILABLE) throw new Error(`unexpected close ${res.code} ${res.reason}`)
          if (res) closedWithCode++
        }))
      }
      expect(closedWithCode).toBeGreaterThan(300)
      const h = await assertHealthy(bridge)
      expect(h.health).toBe(200)
      expect(h.brokers).toBe(1)
    } finally { await bridge.close() }
  }, 120_000)
})
