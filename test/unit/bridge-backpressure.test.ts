// A client that stops reading: the relay stops reading the broker once its socket to the client
// holds more than highWaterBytes, and the broker's answers arrive whole and in order once the client
// reads again. The broker is a stub that answers each Produce v9 with a large frame.
import { createServer, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { resolveConfig } from '../../src/bridge/config.js'
import { startBridge, type Bridge } from '../../src/bridge/server.js'
import { signToken } from '../../src/bridge/token.js'
import { Produce, encodeRequest } from '../../src/edge/protocol/index.js'

const SECRET = 'test-secret-0123456789-abcdefghijklmnop'
const ANSWER_BYTES = 768 * 1024
const REQUESTS = 80

let stub: Server
let brokerSide: Socket | null = null
let answered = 0
let bridge: Bridge

beforeAll(async () => {
  stub = createServer((s) => {
    brokerSide = s
    let buf = Buffer.alloc(0)
    s.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c])
      while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
        const correlationId = buf.readInt32BE(8)
        buf = buf.subarray(4 + buf.readInt32BE(0))
        // The body after the correlation id repeats its low byte, so a mixed-up answer shows.
        const answer = Buffer.alloc(4 + ANSWER_BYTES, correlationId & 0xff)
        answer.writeInt32BE(ANSWER_BYTES, 0)
        answer.writeInt32BE(correlationId, 4)
        s.write(answer)
        answered++
      }
    })
  })
  await new Promise<void>((r) => stub.listen(0, '127.0.0.1', r))
  const port = (stub.address() as { port: number }).port
  bridge = await startBridge(resolveConfig({
    listen: '127.0.0.1:0', brokers: [`127.0.0.1:${port}`], auth: { secret: SECRET, audience: 'bp' }, log: { level: 'silent' },
    limits: { highWaterBytes: 256 * 1024, maxInFlight: 1000, framesPerSec: 0, bytesPerSec: 0 },
  }, {}))
})

afterAll(async () => {
  await bridge?.close({ drainTimeoutMs: 100 })
  brokerSide?.destroy()
  await new Promise((r) => stub.close(r))
})

describe('relay backpressure toward a slow reader', () => {
  it('stops reading the broker while the client does not read, then delivers every answer in order', async () => {
    const tok = signToken({ sub: 'slow', aud: 'bp', exp: Math.floor(Date.now() / 1000) + 600, topics: ['*'] }, SECRET)
    const ws = new WebSocket(bridge.url, ['kafka-edge.v1', `kafka-edge.bearer.${tok}`])
    await new Promise((r, j) => { ws.once('open', r); ws.once('error', j) })
    const got: Buffer[] = []
    ws.on('message', (d: Buffer) => got.push(d))
    ws.pause()
    for (let i = 1; i <= REQUESTS; i++) {
      ws.send(encodeRequest(Produce, 9, i, 'bp', { transactionalId: null, acks: -1, timeoutMs: 1000, topicData: [{ name: 't', partitionData: [{ index: 0, records: null }] }] }))
    }
    // Every request reaches the broker (maxInFlight is out of the way); its answers (60 MB) then stay
    // on the broker's side: the relay holds about highWaterBytes of them, the kernel's buffers some more.
    const deadline = Date.now() + 20_000
    while (answered < REQUESTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    expect(answered).toBe(REQUESTS)
    await new Promise((r) => setTimeout(r, 1000))
    expect(brokerSide!.writableLength).toBeGreaterThan(30 * 1024 * 1024)
    ws.resume()
    while (got.length < REQUESTS && Date.now() < deadline + 20_000) await new Promise((r) => setTimeout(r, 50))
    expect(got.length).toBe(REQUESTS)
    got.forEach((f, i) => {
      expect(f.length).toBe(4 + ANSWER_BYTES)
      expect(f.readInt32BE(4)).toBe(i + 1)
      expect(f[f.length - 1]).toBe((i + 1) & 0xff)
    })
    ws.close()
  }, 60_000)
})
