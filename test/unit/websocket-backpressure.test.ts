// websocket()'s write backpressure: a write waits while the socket has more than maxBufferedBytes
// queued. A hidden tab clamps every timer to 1 s, so a write that only polled on a timer moved one
// step per second there. Fake timers stand in for that clamp: unless a test advances them, no timer
// fires, and a waiting write must be woken by the socket's own events.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { NetworkException } from '../../src/edge/errors.js'
import { websocket, type WebSocketLike } from '../../src/edge/transport/websocket.js'
import type { Link } from '../../src/edge/transport/transport.js'

type Listener = (event: never) => void

/** A WebSocket whose send queue (bufferedAmount) and incoming messages the test controls. */
class FakeSocket implements WebSocketLike {
  static last: FakeSocket | null = null
  binaryType = 'blob'
  readyState = 0
  bufferedAmount = 0
  protocol = 'kafka-edge.v1'
  readonly sent: Array<Uint8Array | string> = []
  private readonly listeners = new Map<string, Listener[]>()
  constructor() { FakeSocket.last = this }
  send(data: Uint8Array | string): void { this.sent.push(data) }
  close(): void { this.emit('close', { code: 1000, reason: '' }) }
  addEventListener(type: string, listener: Listener): void { this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]) }
  emit(type: string, event: unknown = {}): void { for (const l of this.listeners.get(type) ?? []) l(event as never) }
  /** One response frame from the relay (size prefix, correlation id). */
  answer(): void {
    const data = new ArrayBuffer(8)
    new DataView(data).setInt32(0, 4)
    this.emit('message', { data })
  }
}

async function openLink(): Promise<{ link: Link; ws: FakeSocket }> {
  const transport = websocket({ url: 'wss://relay.test/kafka', token: 't', WebSocket: FakeSocket as never, maxBufferedBytes: 1000 })
  const opening = transport.open({ host: 'relay', port: 443, nodeId: -1 }, { onFrame: () => {}, onClose: () => {} })
  await Promise.resolve()
  const ws = FakeSocket.last!
  ws.readyState = 1
  ws.emit('open')
  return { link: await opening, ws }
}

/** Lets promise reactions run without letting any timer fire. */
async function microtasks(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve()
}

describe('websocket() write backpressure', () => {
  beforeEach(() => { vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] }) })
  afterEach(() => { vi.useRealTimers() })

  it('a write waiting for the queue to drain goes out on the relay\'s next message, with no timer firing', async () => {
    const { link, ws } = await openLink()
    ws.bufferedAmount = 5000
    let written = false
    void link.write(new Uint8Array([0, 0, 0, 1, 7])).then(() => { written = true })
    await microtasks()
    expect(written).toBe(false)
    expect(ws.sent).toHaveLength(0)
    // The queue drained while the relay read the requests; its answer is the event that says so.
    ws.bufferedAmount = 0
    ws.answer()
    await microtasks()
    expect(written).toBe(true)
    expect(ws.sent).toHaveLength(1)
    // Still above the limit after a message: the write keeps waiting for the next one.
    ws.bufferedAmount = 5000
    let second = false
    void link.write(new Uint8Array([0, 0, 0, 1, 8])).then(() => { second = true })
    ws.answer()
    await microtasks()
    expect(second).toBe(false)
    ws.bufferedAmount = 10
    ws.answer()
    await microtasks()
    expect(second).toBe(true)
    // A write woken by a message leaves no poll timer behind.
    expect(vi.getTimerCount()).toBe(0)
  })

  it('without an answer (acks=0) the write still goes once the poll sees the queue drained', async () => {
    const { link, ws } = await openLink()
    ws.bufferedAmount = 5000
    let written = false
    void link.write(new Uint8Array([0, 0, 0, 1, 7])).then(() => { written = true })
    await microtasks()
    ws.bufferedAmount = 0
    await vi.advanceTimersByTimeAsync(2)
    expect(written).toBe(true)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('a write waiting when the socket closes fails at once with a NetworkException', async () => {
    const { link, ws } = await openLink()
    ws.bufferedAmount = 5000
    const write = link.write(new Uint8Array([0, 0, 0, 1, 7]))
    await microtasks()
    ws.emit('close', { code: 1006, reason: '' })
    await expect(write).rejects.toBeInstanceOf(NetworkException)
  })
})
