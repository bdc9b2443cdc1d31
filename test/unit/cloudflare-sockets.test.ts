// cloudflareSockets() with an injected fake connect(): framing across chunk boundaries, peer close,
// refused connections, timeouts, write failures and local close. The real thing (workerd's
// cloudflare:sockets against Kafka) is exercised by test/e2e/worker.test.ts.
import { describe, expect, it } from 'vitest'
import { NetworkException, ProtocolError, SslAuthenticationException } from '../../src/edge/errors.js'
import { cloudflareSockets, type CloudflareConnect, type CloudflareSocketLike } from '../../src/edge/transport/cloudflare-sockets.js'

interface FakeSocket extends CloudflareSocketLike {
  written: Uint8Array[]
  push(bytes: Uint8Array): void
  end(): void
  error(e: Error): void
  closedLocally: boolean
  address: { hostname: string; port: number }
  options: unknown
}

function fakeConnect(opts: { refuse?: boolean | string; never?: boolean; failWrites?: boolean } = {}): { connect: CloudflareConnect; sockets: FakeSocket[] } {
  const sockets: FakeSocket[] = []
  const connect: CloudflareConnect = (address, options) => {
    let ctl!: ReadableStreamDefaultController<Uint8Array>
    const readable = new ReadableStream<Uint8Array>({ start(c) { ctl = c } })
    const written: Uint8Array[] = []
    const writable = new WritableStream<Uint8Array>({
      write(chunk) {
        if (opts.failWrites) throw new Error('broken pipe')
        written.push(chunk.slice())
      },
    })
    let resolveClosed!: () => void
    const closed = new Promise<void>((r) => { resolveClosed = r })
    const s: FakeSocket = {
      readable, writable, closed, written, address, options, closedLocally: false,
      opened: opts.refuse ? Promise.reject(new Error(typeof opts.refuse === 'string' ? opts.refuse : 'connection refused')) : opts.never ? new Promise(() => {}) : Promise.resolve({}),
      close: async () => { s.closedLocally = true; resolveClosed() },
      push: (b) => ctl.enqueue(b),
      end: () => ctl.close(),
      error: (e) => ctl.error(e),
    }
    s.opened!.catch(() => {})
    sockets.push(s)
    return s
  }
  return { connect, sockets }
}

const frame = (body: number[]) => {
  const out = new Uint8Array(4 + body.length)
  new DataView(out.buffer).setInt32(0, body.length)
  out.set(body, 4)
  return out
}
const tick = () => new Promise((r) => setTimeout(r, 0))

describe('cloudflareSockets transport', () => {
  it('connects to the (resolved) broker address with TLS off by default and re-frames split and merged chunks', async () => {
    const { connect, sockets } = fakeConnect()
    const frames: number[][] = []
    const t = cloudflareSockets({ connect, resolve: (a) => ({ host: `nat-${a.host}`, port: a.port + 1 }) })
    expect(t.name).toBe('cloudflare-sockets')
    await t.open({ host: 'b1', port: 9092, nodeId: 1 }, { onFrame: (f) => frames.push([...f]), onClose: () => {} })
    const s = sockets[0]!
    expect(s.address).toEqual({ hostname: 'nat-b1', port: 9093 })
    expect(s.options).toMatchObject({ secureTransport: 'off' })
    const a = frame([1, 2, 3]), b = frame([4]), c = frame([5, 6, 7, 8, 9])
    const all = new Uint8Array([...a, ...b, ...c])
    s.push(all.subarray(0, 2)) // inside the first size prefix
    s.push(all.subarray(2, 9)) // rest of a, part of b's prefix
    s.push(all.subarray(9))    // rest of b and all of c
    await tick()
    expect(frames).toEqual([[1, 2, 3], [4], [5, 6, 7, 8, 9]])
  })

  it('writes frames through the socket writer, in order', async () => {
    const { connect, sockets } = fakeConnect()
    const link = await cloudflareSockets({ connect }).open({ host: 'h', port: 1, nodeId: -1 }, { onFrame: () => {}, onClose: () => {} })
    await Promise.all([link.write(frame([1])), link.write(frame([2, 2])), link.write(frame([3]))])
    expect(sockets[0]!.written.map((w) => [...w])).toEqual([[...frame([1])], [...frame([2, 2])], [...frame([3])]])
  })

  it('reports a peer close once, as a retriable NetworkException', async () => {
    const { connect, sockets } = fakeConnect()
    const closes: (Error | undefined)[] = []
    const link = await cloudflareSockets({ connect }).open({ host: 'h', port: 1, nodeId: 3 }, { onFrame: () => {}, onClose: (e) => closes.push(e) })
    sockets[0]!.end()
    await tick()
    expect(closes).toHaveLength(1)
    expect(closes[0]).toBeInstanceOf(NetworkException)
    expect((closes[0] as NetworkException).retriable).toBe(true)
    expect(closes[0]!.message).toMatch(/h:1 closed by peer/)
    await expect(link.write(frame([1]))).rejects.toBeInstanceOf(NetworkException)
    expect(sockets[0]!.closedLocally).toBe(true)
  })

  it('turns a read error into onClose(NetworkException)', async () => {
    const { connect, sockets } = fakeConnect()
    const closes: (Error | undefined)[] = []
    await cloudflareSockets({ connect }).open({ host: 'h', port: 1, nodeId: 3 }, { onFrame: () => {}, onClose: (e) => closes.push(e) })
    sockets[0]!.error(new Error('reset'))
    await tick()
    expect(closes).toHaveLength(1)
    expect(closes[0]!.message).toMatch(/reset/)
  })

  it('closes the link on a corrupt size prefix with a ProtocolError', async () => {
    const { connect, sockets } = fakeConnect()
    const closes: (Error | undefined)[] = []
    await cloudflareSockets({ connect, maxFrameBytes: 1024 }).open({ host: 'h', port: 1, nodeId: 3 }, { onFrame: () => {}, onClose: (e) => closes.push(e) })
    sockets[0]!.push(new Uint8Array([0x7f, 0, 0, 0, 1]))
    await tick()
    expect(closes[0]).toBeInstanceOf(ProtocolError)
    expect(sockets[0]!.closedLocally).toBe(true)
  })

  it('rejects open() when the connection is refused or does not open in time', async () => {
    const refused = fakeConnect({ refuse: true })
    await expect(cloudflareSockets({ connect: refused.connect }).open({ host: 'h', port: 2, nodeId: -1 }, { onFrame: () => {}, onClose: () => {} }))
      .rejects.toThrow(/cannot connect to h:2: connection refused/)
    const slow = fakeConnect({ never: true })
    const err = await cloudflareSockets({ connect: slow.connect, connectTimeoutMs: 20 }).open({ host: 'h', port: 2, nodeId: -1 }, { onFrame: () => {}, onClose: () => {} }).catch((e) => e)
    expect(err).toBeInstanceOf(NetworkException)
    expect(err.message).toMatch(/timed out after 20 ms/)
    expect(slow.sockets[0]!.closedLocally).toBe(true)
  })

  it('TLS: workerd\'s "proxy request failed" is a TLS error until a broker was verified, then a broker that is down (retried)', async () => {
    // workerd uses the same words for a certificate it does not trust and for a host it cannot reach.
    const plan: Array<boolean | string> = ['proxy request failed', false, 'proxy request failed', 'TLS peer certificate is not trusted']
    const fakes: Array<ReturnType<typeof fakeConnect>> = []
    const connect: CloudflareConnect = (address, options) => {
      const f = fakeConnect({ refuse: plan.shift()! })
      fakes.push(f)
      return f.connect(address, options)
    }
    const t = cloudflareSockets({ connect })
    const tls = { tls: {} } as Parameters<typeof t.open>[2]
    const quiet = { onFrame: () => {}, onClose: () => {} }
    const first = await t.open({ host: 'b1', port: 9093, nodeId: -1 }, quiet, tls).catch((e) => e)
    expect(first).toBeInstanceOf(SslAuthenticationException)
    expect(first.message).toMatch(/TLS to b1:9093 failed: proxy request failed.*not trusted by workerd.*or the host is unreachable/)
    const frames: Uint8Array[] = []
    await t.open({ host: 'b1', port: 9093, nodeId: -1 }, { onFrame: (f) => frames.push(f), onClose: () => {} }, tls)
    fakes[1]!.sockets[0]!.push(frame([1, 2]))
    await tick()
    expect(frames).toHaveLength(1)
    const down = await t.open({ host: 'b2', port: 9093, nodeId: 2 }, quiet, tls).catch((e) => e)
    expect(down).toBeInstanceOf(NetworkException)
    expect(down.retriable).toBe(true)
    expect(down.message).toMatch(/cannot connect to b2:9093: proxy request failed/)
    // Words that can only mean TLS stay a TLS error.
    expect(await t.open({ host: 'b3', port: 9093, nodeId: 3 }, quiet, tls).catch((e) => e)).toBeInstanceOf(SslAuthenticationException)
  })

  it('a failed write rejects with NetworkException and closes the link', async () => {
    const { connect } = fakeConnect({ failWrites: true })
    const closes: (Error | undefined)[] = []
    const link = await cloudflareSockets({ connect }).open({ host: 'h', port: 1, nodeId: 1 }, { onFrame: () => {}, onClose: (e) => closes.push(e) })
    await expect(link.write(frame([1]))).rejects.toThrow(/write to h:1 failed: broken pipe/)
    expect(closes).toHaveLength(1)
  })

  it('a local close() closes the socket without reporting onClose', async () => {
    const { connect, sockets } = fakeConnect()
    const closes: (Error | undefined)[] = []
    const frames: Uint8Array[] = []
    const link = await cloudflareSockets({ connect }).open({ host: 'h', port: 1, nodeId: 1 }, { onFrame: (f) => frames.push(f), onClose: (e) => closes.push(e) })
    link.close()
    await tick()
    expect(sockets[0]!.closedLocally).toBe(true)
    expect(closes).toHaveLength(0)
    expect(frames).toHaveLength(0)
  })

  it('outside workerd, without an injected connect, fails with a message that says what to use instead', async () => {
    await expect(cloudflareSockets().open({ host: 'h', port: 1, nodeId: -1 }, { onFrame: () => {}, onClose: () => {} }))
      .rejects.toThrow(/needs the cloudflare:sockets module.*use tcp\(\) or websocket\(\)/)
  })
})
