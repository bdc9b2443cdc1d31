// A fault-injecting TCP proxy for real-Kafka tests: one listener per broker between the producer and
// the cluster. Route the producer through it with `tcp({ resolve: proxy.resolve })`: brokers keep
// advertising their real ports in Metadata and the resolve hook maps each of them to its proxy port.
//
// The proxy re-frames both directions (FrameDecoder + request headers), so it knows which response
// answers which request and can fail exactly the request it picked:
//   - ambiguous loss: forward a Produce request, wait until the broker has answered it (so the write
//     certainly happened), then close both sockets instead of returning the answer. The producer sees
//     a disconnect with the outcome unknown: the case idempotence exists for.
//   - delayed responses (order kept per connection);
//   - blackhole: frames are swallowed, sockets stay open (a silent partition), both ways or only the
//     answers (the broker keeps appending, the producer learns nothing).
//
// A client without a resolve hook (the Java producer, librdkafka, kafkajs, ...) is routed with
// `advertiseProxy: true`: the proxy rewrites each Metadata answer so the brokers are advertised at
// their proxy ports, and bootstraps from `proxyBootstrap`.
import { createServer, connect, type Server, type Socket } from 'node:net'
import { Metadata, decodeRequestHeader, decodeResponse, encodeResponse, type ApiSchema } from '../../src/edge/protocol/index.js'
import { field } from '../../src/edge/protocol/schema.js'
import { FrameDecoder } from '../../src/edge/protocol/frame-decoder.js'
import type { BrokerAddress } from '../../src/edge/transport/transport.js'
import { rng } from './records.js'

const PRODUCE = 0
const METADATA = 3

/**
 * Metadata as any client may speak it: the producer's schema describes v0-v12 fields but accepts v4+;
 * v13 (KIP-1102) adds a top-level error code.
 */
const METADATA_ANY: ApiSchema = {
  ...Metadata, minVersion: 0, maxVersion: 13,
  response: [...Metadata.response, field('errorCode', 'int16', '13+', { default: 0 })],
}

export interface FaultRules {
  /** Lose the answer of every Nth Produce request (counted over all brokers). */
  dropProduceEvery?: number
  /** Lose the answer of a Produce request with this probability (seeded). */
  dropProduceProbability?: number
  /** Delay every response by this many ms (plus up to `responseJitterMs`, seeded). */
  responseDelayMs?: number
  responseJitterMs?: number
  /** Lose the answer of the first Produce request sent after each interval of this many ms (all brokers). */
  dropProduceEveryMs?: number
}

export interface FaultCounters {
  connections: number
  requests: number
  produceRequests: number
  responses: number
  /** Produce answers withheld and their connection closed (ambiguous losses). */
  droppedProduce: number
  /** Frames forwarded after answering it, lost with a dropped connection. */
  lostWithDrop: number
  delayedResponses: number
  blackholedFrames: number
  /** Metadata answers rewritten to advertise the proxy (advertiseProxy), and those it could not decode. */
  metadataRewritten: number
  metadataRewriteFailed: number
}

interface Upstream { host: string; port: number }

interface Pipe {
  nodeKey: string
  client: Socket
  broker: Socket
  /** correlation id -> api key and version of requests forwarded and not yet answered */
  pending: Map<number, { apiKey: number; apiVersion: number }>
  /** correlation id whose answer must not reach the client */
  dropAt: Set<number>
  /** responses queued behind a delay, in order */
  outQueue: Array<{ at: number; frame: Uint8Array }>
  outTimer: NodeJS.Timeout | null
  closed: boolean
}

const withSize = (body: Uint8Array): Uint8Array => {
  const out = new Uint8Array(body.length + 4)
  new DataView(out.buffer).setInt32(0, body.length)
  out.set(body, 4)
  return out
}

export class FaultProxy {
  readonly counters: FaultCounters = {
    connections: 0, requests: 0, produceRequests: 0, responses: 0, droppedProduce: 0, lostWithDrop: 0,
    delayedResponses: 0, blackholedFrames: 0, metadataRewritten: 0, metadataRewriteFailed: 0,
  }
  /** What happened, for failure messages: "<ms> drop node 2 corr 1234", ... (last 200 entries). */
  readonly log: string[] = []
  rules: FaultRules = {}
  private readonly servers = new Map<string, { server: Server; port: number; upstream: Upstream }>()
  private readonly pipes = new Set<Pipe>()
  private readonly blackholed = new Map<string, 'both' | 'responses'>()
  private produceSeen = 0
  private lastTimedDrop = Date.now()
  private advertiseProxy = false
  private readonly random: () => number
  private readonly started = Date.now()

  private constructor(seed: number) { this.random = rng(seed) }

  /** One listener per broker address, on 127.0.0.1 ephemeral ports. */
  static async start(brokers: ReadonlyArray<Upstream>, opts: { seed?: number; rules?: FaultRules; advertiseProxy?: boolean } = {}): Promise<FaultProxy> {
    const p = new FaultProxy(opts.seed ?? 1)
    p.rules = opts.rules ?? {}
    p.advertiseProxy = opts.advertiseProxy ?? false
    for (const b of brokers) await p.listen(b)
    return p
  }

  /** For `tcp({ resolve })`: a broker's advertised address -> its proxy. Unknown addresses pass straight through. */
  readonly resolve = (address: BrokerAddress): { host: string; port: number } => {
    const s = this.servers.get(`${address.host}:${address.port}`)
    return s ? { host: '127.0.0.1', port: s.port } : { host: address.host, port: address.port }
  }

  /** bootstrap.servers through the proxy (the resolve hook rewrites these too; either works). */
  get bootstrap(): string {
    return [...this.servers.keys()].join(',')
  }

  /** bootstrap.servers at the proxy's own ports, for clients without a resolve hook (with advertiseProxy). */
  get proxyBootstrap(): string {
    return [...this.servers.values()].map((s) => `127.0.0.1:${s.port}`).join(',')
  }

  private note(msg: string): void {
    this.log.push(`${Date.now() - this.started}ms ${msg}`)
    if (this.log.length > 200) this.log.shift()
  }

  private listen(upstream: Upstream): Promise<void> {
    const key = `${upstream.host}:${upstream.port}`
    const server = createServer((client) => this.accept(key, upstream, client))
    return new Promise((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => {
        const addr = server.address()
        if (!addr || typeof addr === 'string') return reject(new Error('proxy listen failed'))
        this.servers.set(key, { server, port: addr.port, upstream })
        resolve()
      })
    })
  }

  private accept(nodeKey: string, upstream: Upstream, client: Socket): void {
    this.counters.connections++
    client.setNoDelay(true)
    const broker = connect({ host: upstream.host, port: upstream.port, noDelay: true })
    const pipe: Pipe = { nodeKey, client, broker, pending: new Map(), dropAt: new Set(), outQueue: [], outTimer: null, closed: false }
    this.pipes.add(pipe)
    const up = new FrameDecoder()
    const down = new FrameDecoder()
    client.on('data', (chunk: Buffer) => {
      if (pipe.closed) return
      for (const f of up.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))) this.onRequest(pipe, f)
    })
    broker.on('data', (chunk: Buffer) => {
      if (pipe.closed) return
      for (const f of down.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))) this.onResponse(pipe, f)
    })
    const close = () => this.closePipe(pipe)
    client.on('error', close).on('close', close)
    broker.on('error', close).on('close', close)
  }

  private onRequest(pipe: Pipe, frame: Uint8Array): void {
    if (pipe.closed) return
    if (this.blackholed.get(pipe.nodeKey) === 'both') { this.counters.blackholedFrames++; return }
    this.forwardRequest(pipe, frame)
  }

  private forwardRequest(pipe: Pipe, frame: Uint8Array): void {
    const h = decodeRequestHeader(frame)
    this.counters.requests++
    pipe.pending.set(h.correlationId, { apiKey: h.apiKey, apiVersion: h.apiVersion })
    if (h.apiKey === PRODUCE) {
      this.counters.produceRequests++
      this.produceSeen++
      const { dropProduceEvery, dropProduceProbability, dropProduceEveryMs } = this.rules
      let drop = (dropProduceEvery !== undefined && dropProduceEvery > 0 && this.produceSeen % dropProduceEvery === 0) ||
        (dropProduceProbability !== undefined && this.random() < dropProduceProbability)
      // By time rather than by count: clients that put 1,000 records in a request and clients that
      // put 50 meet the same number of losses in the same schedule.
      if (dropProduceEveryMs !== undefined && Date.now() - this.lastTimedDrop >= dropProduceEveryMs) {
        this.lastTimedDrop = Date.now()
        drop = true
      }
      if (drop) pipe.dropAt.add(h.correlationId)
    }
    pipe.broker.write(withSize(frame))
  }

  private onResponse(pipe: Pipe, frame: Uint8Array): void {
    if (pipe.closed) return
    if (this.blackholed.has(pipe.nodeKey)) { this.counters.blackholedFrames++; return }
    this.forwardResponse(pipe, frame)
  }

  private forwardResponse(pipe: Pipe, frame: Uint8Array): void {
    const correlationId = new DataView(frame.buffer, frame.byteOffset, 4).getInt32(0)
    const request = pipe.pending.get(correlationId)
    pipe.pending.delete(correlationId)
    if (this.advertiseProxy && request?.apiKey === METADATA) frame = this.rewriteMetadata(frame, correlationId, request.apiVersion)
    this.counters.responses++
    if (pipe.dropAt.has(correlationId)) {
      // The broker has written the batch and answered; the producer must not learn it.
      this.counters.droppedProduce++
      this.counters.lostWithDrop += pipe.pending.size
      this.note(`drop ${pipe.nodeKey} corr ${correlationId} (${pipe.pending.size} more in flight lost)`)
      // Responses queued behind a delay would arrive after this one: they go down with it.
      pipe.outQueue.length = 0
      this.closePipe(pipe)
      return
    }
    const delay = (this.rules.responseDelayMs ?? 0) + (this.rules.responseJitterMs ? Math.floor(this.random() * this.rules.responseJitterMs) : 0)
    if (delay <= 0 && pipe.outQueue.length === 0) { pipe.client.write(withSize(frame)); return }
    this.counters.delayedResponses++
    pipe.outQueue.push({ at: Date.now() + delay, frame })
    this.pumpOut(pipe)
  }

  /** A Metadata answer with every proxied broker advertised at its proxy port. */
  private rewriteMetadata(frame: Uint8Array, correlationId: number, version: number): Uint8Array {
    try {
      const body = decodeResponse(METADATA_ANY, version, frame)
      for (const b of body.brokers as { host: string; port: number }[]) {
        const s = this.servers.get(`${b.host}:${b.port}`)
        if (s) { b.host = '127.0.0.1'; b.port = s.port }
      }
      this.counters.metadataRewritten++
      return encodeResponse(METADATA_ANY, version, correlationId, body).subarray(4)
    } catch (e) {
      this.counters.metadataRewriteFailed++
      this.note(`metadata v${version} not rewritten: ${(e as Error).message}`)
      return frame
    }
  }

  private pumpOut(pipe: Pipe): void {
    if (pipe.outTimer || pipe.closed) return
    const head = pipe.outQueue[0]
    if (!head) return
    pipe.outTimer = setTimeout(() => {
      pipe.outTimer = null
      const now = Date.now()
      while (pipe.outQueue.length > 0 && pipe.outQueue[0]!.at <= now && !pipe.closed) pipe.client.write(withSize(pipe.outQueue.shift()!.frame))
      this.pumpOut(pipe)
    }, Math.max(0, head.at - Date.now()))
  }

  private closePipe(pipe: Pipe): void {
    if (pipe.closed) return
    pipe.closed = true
    if (pipe.outTimer) clearTimeout(pipe.outTimer)
    pipe.client.destroy()
    pipe.broker.destroy()
    this.pipes.delete(pipe)
  }

  /**
   * Swallow frames to and from the broker at `host:port` (all brokers when omitted); sockets stay
   * open. `responses` swallows only the answers: the broker still appends what it is sent, and the
   * producer never learns it, which makes every request ambiguous until it expires.
   */
  blackhole(nodeKey?: string, direction: 'both' | 'responses' = 'both'): void {
    for (const k of nodeKey ? [nodeKey] : this.servers.keys()) this.blackholed.set(k, direction)
    this.note(`blackhole ${direction} ${nodeKey ?? 'all'}`)
  }

  /**
   * End a blackhole. Connections that lost frames cannot be trusted any more (their peers wait for
   * answers that will never come), so they are closed; new ones work normally.
   */
  unblackhole(nodeKey?: string): void {
    for (const k of nodeKey ? [nodeKey] : [...this.blackholed.keys()]) {
      this.blackholed.delete(k)
      for (const p of [...this.pipes]) if (p.nodeKey === k) this.closePipe(p)
    }
    this.note(`unblackhole ${nodeKey ?? 'all'}`)
  }

  /** The proxy key (`host:port` as advertised) of a broker. */
  static key(node: { host: string; port: number }): string { return `${node.host}:${node.port}` }

  /** Close every proxied connection now (a network flap). */
  disconnectAll(): void {
    for (const p of [...this.pipes]) this.closePipe(p)
    this.note('disconnect all')
  }

  get openConnections(): number { return this.pipes.size }

  async close(): Promise<void> {
    for (const p of [...this.pipes]) this.closePipe(p)
    await Promise.all([...this.servers.values()].map((s) => new Promise<void>((r) => s.server.close(() => r()))))
    this.servers.clear()
  }
}
