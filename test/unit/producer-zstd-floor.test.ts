// Produce below v7 cannot carry zstd batches (Kafka 2.1 added both; a newer broker refuses them on an
// older version with "Produce requests with version N are not allowed to use ZStandard compression").
// The producer talks the real protocol to the model broker of test/sim, whose ApiVersions answer caps
// Produce where the test says.
import { beforeAll, describe, expect, it } from 'vitest'
import { UnsupportedCompressionTypeException } from '../../src/edge/errors.js'
import { ZSTD_MIN_PRODUCE_VERSION } from '../../src/edge/producer/sender.js'
import { Produce, decodeRequest, encodeResponse } from '../../src/edge/protocol/index.js'
import { World } from '../sim/harness.js'

beforeAll(async () => { await World.preload() })

function world(produceMaxVersion: number, compression: string): World {
  return new World(3, {
    model: { brokers: 1, topics: { t: 2 }, produceMaxVersion },
    producer: { 'compression.type': compression, 'linger.ms': 0, 'request.timeout.ms': 2000, 'delivery.timeout.ms': 60_000 },
  })
}

/**
 * Produce requests are answered here (the model broker reads only uncompressed batches): each
 * partition's batch is acknowledged, and the request version and the batch's codec are recorded.
 */
function acceptProduce(w: World): Array<{ version: number; codecs: number[] }> {
  const seen: Array<{ version: number; codecs: number[] }> = []
  const handle = w.cluster.handle.bind(w.cluster)
  w.cluster.handle = (node, frame) => {
    const { header, api, body } = decodeRequest(frame)
    if (api !== Produce || !body) return handle(node, frame)
    const topics = body.topicData as Array<{ name: string; partitionData: Array<{ index: number; records: Uint8Array }> }>
    // RecordBatch v2: the attributes' low byte sits at offset 22; its low 3 bits name the codec.
    seen.push({ version: header.apiVersion, codecs: topics.flatMap((t) => t.partitionData.map((p) => p.records[22]! & 7)) })
    return encodeResponse(Produce, header.apiVersion, header.correlationId, {
      responses: topics.map((t) => ({
        name: t.name,
        partitionResponses: t.partitionData.map((p) => ({
          index: p.index, errorCode: 0, baseOffset: 0n, logAppendTimeMs: -1n, logStartOffset: 0n, recordErrors: [], errorMessage: null,
        })),
      })),
      throttleTimeMs: 0,
      nodeEndpoints: [],
    })
  }
  return seen
}

describe('zstd needs Produce v7', () => {
  for (const max of [5, 6]) {
    it(`a broker whose ApiVersions caps Produce at v${max}: zstd sends fail at once with UnsupportedCompressionTypeException, and nothing is sent`, async () => {
      const w = world(max, 'zstd')
      const seen = acceptProduce(w)
      const started = w.clock.now()
      const outs = [w.send('t', { partition: 0 }), w.send('t', { partition: 1 }), w.send('t', { partition: 0 })]
      expect(await w.settle()).toBe(true)
      expect(seen).toEqual([])
      // No retries until delivery.timeout.ms: the refusal is final.
      expect(w.clock.now() - started).toBeLessThan(1000)
      for (const o of outs) {
        expect(o.status).toBe('failed')
        const e = o.error as UnsupportedCompressionTypeException
        expect(e).toBeInstanceOf(UnsupportedCompressionTypeException)
        expect(e.name).toBe('UnsupportedCompressionTypeException')
        expect(e.code).toBe(76)
        expect(e.errorName).toBe('UNSUPPORTED_COMPRESSION_TYPE')
        expect(e.retriable).toBe(false)
        expect(e.mayHaveBeenWritten).toBe(false)
        expect(e.message).toContain(`takes Produce up to v${max}, and zstd batches need v${ZSTD_MIN_PRODUCE_VERSION}`)
      }
      expect(w.violations()).toEqual([])
      await w.close()
    })
  }

  it('the floor is for zstd alone: the same v6 broker takes uncompressed batches on Produce v6', async () => {
    const w = world(6, 'none')
    const seen = acceptProduce(w)
    const o = w.send('t', { partition: 0 })
    expect(await w.settle()).toBe(true)
    expect(o.status).toBe('acked')
    expect(seen).toEqual([{ version: 6, codecs: [0] }])
    await w.close()
  })

  it('a broker at Produce v7 or later gets zstd batches on the highest version both sides speak', async () => {
    for (const max of [7, 12]) {
      const w = world(max, 'zstd')
      const seen = acceptProduce(w)
      const o = w.send('t', { partition: 1 })
      expect(await w.settle()).toBe(true)
      expect(o.status).toBe('acked')
      expect(seen).toEqual([{ version: max, codecs: [4] }])
      await w.close()
    }
  })
})
