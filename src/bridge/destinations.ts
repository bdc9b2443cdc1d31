import { hostPortKey, parseHostPort, type BridgeConfig, type HostPort } from './config.js'

export type Destination = { ok: true; target: HostPort; nodeId: number } | { ok: false; reason: string }

const MAX_LEARNED = 10_000

/**
 * Where a client may be connected: the configured bootstrap servers, the static allowlist, and broker
 * endpoints the relay itself read in Metadata / FindCoordinator / Produce (KIP-951) responses from
 * those brokers. A client never supplies an address the relay would dial unchecked, so the relay
 * cannot be used to reach 127.0.0.1:22 or a cloud metadata service.
 *
 * Nothing here is durable: after a restart (or on another instance) an unknown endpoint triggers
 * one Metadata request to a bootstrap server before it is refused, so the relay stays stateless.
 */
export class Destinations {
  private readonly fixed = new Set<string>()
  private readonly learned = new Map<string, number>()
  private readonly byNode = new Map<number, HostPort>()
  private next = 0
  private refreshing: Promise<void> | null = null
  private lastRefresh = -Infinity

  constructor(
    private readonly cfg: BridgeConfig,
    private readonly fetchBrokers: (bootstrap: HostPort) => Promise<Array<{ nodeId: number; host: string; port: number }>>,
    private readonly onRefreshError: (e: unknown) => void = () => {},
  ) {
    for (const b of [...cfg.brokers, ...cfg.allowBrokers]) this.fixed.add(hostPortKey(b))
  }

  learn(brokers: Iterable<{ nodeId: number; host: string; port: number }>): void {
    for (const b of brokers) {
      if (typeof b.host !== 'string' || b.host.length === 0 || b.host.length > 255 || !(b.port > 0 && b.port < 65536)) continue
      const hp = { host: b.host.toLowerCase(), port: b.port }
      const key = hostPortKey(hp)
      if (!this.learned.has(key) && this.learned.size >= MAX_LEARNED) this.learned.delete(this.learned.keys().next().value!)
      this.learned.set(key, b.nodeId)
      if (b.nodeId >= 0) this.byNode.set(b.nodeId, hp)
    }
  }

  /** The next bootstrap server, round robin. */
  bootstrap(): HostPort {
    return this.cfg.brokers[this.next++ % this.cfg.brokers.length]!
  }

  get learnedCount(): number { return this.learned.size }

  /** Synchronous check only; `resolve` adds the refresh-on-miss. */
  lookup(param: string | null): Destination | 'unknown' | { ok: false; reason: string } {
    if (param === null || param === '') {
      const target = this.bootstrap()
      return { ok: true, target, nodeId: -1 }
    }
    if (param.length > 300) return { ok: false, reason: 'broker parameter too long' }
    if (/^\d{1,10}$/.test(param)) {
      const target = this.byNode.get(Number(param))
      return target ? { ok: true, target, nodeId: Number(param) } : 'unknown'
    }
    let target: HostPort
    try { target = parseHostPort(param, 'broker') } catch { return { ok: false, reason: 'broker must be a node id or host:port' } }
    const key = hostPortKey(target)
    if (this.fixed.has(key)) return { ok: true, target, nodeId: this.learned.get(key) ?? -1 }
    const nodeId = this.learned.get(key)
    return nodeId !== undefined ? { ok: true, target, nodeId } : 'unknown'
  }

  async resolve(param: string | null): Promise<Destination> {
    const first = this.lookup(param)
    if (first !== 'unknown') return first
    await this.refresh()
    const second = this.lookup(param)
    return second === 'unknown' ? { ok: false, reason: `broker ${param} is not a bootstrap server, a broker of this cluster or allowlisted` } : second
  }

  /** At most one refresh at a time and one per metadataRefreshMinIntervalMs, so misses cannot amplify into broker load. */
  refresh(): Promise<void> {
    if (this.refreshing) return this.refreshing
    if (Date.now() - this.lastRefresh < this.cfg.limits.metadataRefreshMinIntervalMs) return Promise.resolve()
    this.lastRefresh = Date.now()
    this.refreshing = (async () => {
      for (let i = 0; i < this.cfg.brokers.length; i++) {
        try { this.learn(await this.fetchBrokers(this.bootstrap())); return } catch (e) { this.onRefreshError(e) }
      }
    })().finally(() => { this.refreshing = null })
    return this.refreshing
  }
}
