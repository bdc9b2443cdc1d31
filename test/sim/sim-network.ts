import { NetworkException } from '../../src/edge/errors.js'
import type { BrokerAddress, Link, LinkHandlers, Transport } from '../../src/edge/transport/transport.js'
import type { ModelCluster } from './model-broker.js'
import type { VirtualClock } from './virtual-clock.js'

/** Probabilities (0..1) per event while `faultsOn` is set. */
export interface NetFaults {
  /**
   * The link goes dark toward the broker: this request and every later one on it vanish (a TCP
   * stream cannot lose one message and deliver the next), until the client's request.timeout.ms.
   */
  dropRequest: number
  /** The broker applied the request but this answer and all later ones on the link are lost: the ambiguous loss. */
  dropResponse: number
  /** The broker sees a request twice; the second answer carries a correlation id the client no longer expects. */
  duplicateRequest: number
  /** After the broker handled a request, the connection breaks before (some) answers get back. */
  disconnect: number
  connectFail: number
  /** Extra one-way delay drawn uniformly in [0, maxDelayMs] per message. */
  maxDelayMs: number
}

export const NO_NET_FAULTS: NetFaults = { dropRequest: 0, dropResponse: 0, duplicateRequest: 0, disconnect: 0, connectFail: 0, maxDelayMs: 0 }

/**
 * A Transport over virtual time and a seeded random source. Each link is one TCP connection: its
 * messages keep their order both ways (Kafka relies on that), while links race each other, so
 * answers from different brokers and from an old and a new connection arrive in any order.
 */
export class SimNetwork implements Transport {
  readonly name = 'sim'
  faults: NetFaults = NO_NET_FAULTS
  faultsOn = false
  readonly links = new Set<SimLink>()
  /** Base one-way latency in ms. */
  baseDelayMs = 1
  stats = { opened: 0, connectFailures: 0, droppedRequests: 0, droppedResponses: 0, duplicated: 0, disconnects: 0, throttled: 0, throttleViolations: 0 }
  /**
   * API keys whose requests `duplicateRequest` may duplicate (null: all). A real broker handles a
   * TCP request once; duplicating stands for a retry that lands twice, which only idempotence
   * absorbs: a duplicated InitProducerId would bump the epoch behind the client's back.
   */
  duplicateApis: ReadonlySet<number> | null = null
  /** Every frame the client wrote, by node: for byte-identity checks of retries. */
  readonly written: Array<{ node: number; frame: Uint8Array; at: number }> = []
  recordWrites = false

  constructor(readonly clock: VirtualClock, readonly random: () => number, readonly cluster: ModelCluster) {}

  private f(): NetFaults { return this.faultsOn ? this.faults : NO_NET_FAULTS }

  delay(): number {
    const max = this.f().maxDelayMs
    return this.baseDelayMs + (max > 0 ? Math.floor(this.random() * (max + 1)) : 0)
  }

  chance(p: number): boolean { return p > 0 && this.random() < p }

  open(address: BrokerAddress, handlers: LinkHandlers): Promise<Link> {
    const node = this.cluster.nodeFor(address.host, address.port)
    const failConnect = this.chance(this.f().connectFail)
    return new Promise<Link>((resolve, reject) => {
      this.clock.setTimeout(() => {
        if (node < 0 || !this.cluster.alive.has(node) || failConnect) {
          this.stats.connectFailures++
          reject(new NetworkException(`connect to ${address.host}:${address.port} failed (simulated)`))
          return
        }
        this.stats.opened++
        const link = new SimLink(this, node, handlers)
        this.links.add(link)
        resolve(link)
      }, this.delay())
    })
  }

  /** A broker died: every connection to it breaks. */
  severNode(node: number): void {
    for (const l of [...this.links]) if (l.node === node) l.remoteClose(new NetworkException(`broker ${node} went away (simulated)`))
  }

  severAll(): void {
    for (const l of [...this.links]) l.remoteClose(new NetworkException('network partition (simulated)'))
  }
}

class SimLink implements Link {
  private closed = false
  private requestsDark = false
  private throttledUntil = 0
  private throttleSetAt = 0
  private responsesDark = false
  private requestsArriveAt = 0
  private responsesArriveAt = 0

  constructor(private readonly net: SimNetwork, readonly node: number, private readonly handlers: LinkHandlers) {}

  write(frame: Uint8Array): Promise<void> {
    if (this.closed) return Promise.reject(new NetworkException('write on a closed link'))
    const net = this.net
    const copy = frame.slice()
    const isProduce = copy.length >= 6 && ((copy[4]! << 8) | copy[5]!) === 0
    // A request drained before the throttled answer was read may still be written in the same instant.
    if (isProduce && net.clock.now() > this.throttleSetAt && net.clock.now() < this.throttledUntil) net.stats.throttleViolations++
    if (net.recordWrites) net.written.push({ node: this.node, frame: copy, at: net.clock.now() })
    if (this.requestsDark || net.chance(net.faultsOn ? net.faults.dropRequest : 0)) {
      this.requestsDark = true
      net.stats.droppedRequests++
      return Promise.resolve()
    }
    const now = net.clock.now()
    const at = Math.max(this.requestsArriveAt, now + net.delay())
    this.requestsArriveAt = at
    net.clock.setTimeout(() => this.arrive(copy), at - now)
    return Promise.resolve()
  }

  private arrive(frame: Uint8Array): void {
    const net = this.net
    if (this.closed) return
    if (!net.cluster.alive.has(this.node)) { this.remoteClose(new NetworkException(`broker ${this.node} is down (simulated)`)); return }
    const f = net.faultsOn ? net.faults : null
    const times = f && net.chance(f.duplicateRequest) && (net.duplicateApis?.has((frame[4]! << 8) | frame[5]!) ?? true) ? 2 : 1
    if (times === 2) net.stats.duplicated++
    for (let i = 0; i < times; i++) {
      net.cluster.lastThrottle = { ms: 0, clientSide: true }
      const res = net.cluster.handle(this.node, frame)
      if (!res) continue
      if (this.responsesDark || (f && net.chance(f.dropResponse))) { this.responsesDark = true; net.stats.droppedResponses++; continue }
      const throttle = net.cluster.lastThrottle
      if (throttle.ms > 0) net.stats.throttled++
      const now = net.clock.now()
      const at = Math.max(this.responsesArriveAt, now + net.delay() + (throttle.clientSide ? 0 : throttle.ms))
      this.responsesArriveAt = at
      net.clock.setTimeout(() => {
        if (this.closed) return
        if (throttle.clientSide && throttle.ms > 0) {
          this.throttledUntil = Math.max(this.throttledUntil, net.clock.now() + throttle.ms)
          this.throttleSetAt = net.clock.now()
        }
        this.handlers.onFrame(res.subarray(4))
      }, at - now)
    }
    if (f && net.chance(f.disconnect)) {
      net.stats.disconnects++
      // Break the connection at some point while answers may still be travelling.
      net.clock.setTimeout(() => this.remoteClose(new NetworkException('connection reset (simulated)')), Math.floor(net.random() * 2 * (net.baseDelayMs + f.maxDelayMs)))
    }
  }

  remoteClose(error: Error): void {
    if (this.closed) return
    this.closed = true
    this.net.links.delete(this)
    this.handlers.onClose(error)
  }

  close(): void {
    this.closed = true
    this.net.links.delete(this)
  }
}
