import type { SaslMechanism } from '../auth/mechanism.js'
import type { Clock } from '../clock.js'
import { silentLog, type Log } from '../log.js'
import { KafkaEdgeError, NetworkException } from '../errors.js'
import { Metadata, errorCode, type ResponseBody } from '../protocol/index.js'
import type { BrokerAddress, TlsSettings, Transport } from '../transport/transport.js'
import { Connection } from './connection.js'

export interface PartitionMetadata {
  readonly partition: number
  leader: number
  leaderEpoch: number
}

export interface TopicMetadata {
  readonly topic: string
  partitions: PartitionMetadata[]
  /** Error of the last metadata answer for this topic (0 = fine); the partitions above are kept through errors. */
  errorCode: number
}

export interface ClusterOptions {
  bootstrap: Array<{ host: string; port: number }>
  transport: Transport
  clock: Clock
  clientId: string
  requestTimeoutMs: number
  metadataMaxAgeMs: number
  tls?: TlsSettings | null
  sasl?: SaslMechanism | null
  random?: () => number
  log?: Log
}

/**
 * What the client knows of the cluster: brokers, topic -> partition leaders, and one connection per
 * broker. Metadata for a topic is kept when a refresh briefly loses it (a topic missing from one answer
 * keeps its partitions), so per-partition producer state never depends on a single metadata response.
 */
export class Cluster {
  readonly brokers = new Map<number, BrokerAddress>()
  readonly topics = new Map<string, TopicMetadata>()
  private readonly connections = new Map<number, Connection>()
  private bootstrapIndex = 0
  private refreshing: Promise<void> | null = null
  private lastRefreshMs = -Infinity
  private needsUpdate = false
  clusterId: string | null = null
  /** The most recent connection or metadata failure: what a max.block.ms timeout names as its cause. */
  lastError: Error | null = null

  constructor(private readonly opts: ClusterOptions) {}

  /** The connection for a node, opened on first use; a closed one is replaced. */
  connection(nodeId: number): Connection {
    const existing = this.connections.get(nodeId)
    if (existing && !existing.isClosed) return existing
    const address = this.brokers.get(nodeId)
    if (!address) throw new KafkaEdgeError(`node ${nodeId} is not in the cluster metadata`, { retriable: true })
    return this.open(nodeId, address)
  }

  hasConnection(nodeId: number): boolean {
    const c = this.connections.get(nodeId)
    return c !== undefined && !c.isClosed
  }

  private open(key: number, address: BrokerAddress): Connection {
    const conn = new Connection(address, this.opts.transport, {
      clientId: this.opts.clientId, requestTimeoutMs: this.opts.requestTimeoutMs, clock: this.opts.clock,
      tls: this.opts.tls, sasl: this.opts.sasl, random: this.opts.random, log: this.opts.log,
    })
    this.connections.set(key, conn)
    conn.connect().catch((e: unknown) => { this.lastError = e instanceof Error ? e : new NetworkException(String(e)) })
    return conn
  }

  /** Any live connection, preferring known brokers, else the next bootstrap server. */
  anyConnection(): Connection {
    for (const [id, c] of this.connections) if (id >= 0 && !c.isClosed) return c
    if (this.brokers.size > 0) {
      const ids = [...this.brokers.keys()]
      const id = ids[this.bootstrapIndex++ % ids.length]!
      return this.connection(id)
    }
    const b = this.opts.bootstrap[this.bootstrapIndex++ % this.opts.bootstrap.length]!
    const key = -1 - (this.bootstrapIndex % this.opts.bootstrap.length)
    const existing = this.connections.get(key)
    if (existing && !existing.isClosed) return existing
    return this.open(key, { host: b.host, port: b.port, nodeId: -1 })
  }

  requestUpdate(): void { this.needsUpdate = true }

  metadataStale(now: number): boolean {
    return this.needsUpdate || now - this.lastRefreshMs >= this.opts.metadataMaxAgeMs
  }

  /**
   * Fetches metadata for the given topics (deduplicated with a refresh already under way). Tries each
   * known broker / bootstrap server once before failing with the last error.
   */
  refresh(topics: Iterable<string>): Promise<void> {
    if (this.refreshing) return this.refreshing
    const names = [...new Set(topics)]
    this.needsUpdate = false
    this.refreshing = this.fetchMetadata(names).finally(() => { this.refreshing = null })
    return this.refreshing
  }

  private async fetchMetadata(names: string[]): Promise<void> {
    const attempts = Math.max(1, this.brokers.size + this.opts.bootstrap.length)
    let lastError: unknown
    for (let i = 0; i < attempts; i++) {
      const conn = this.anyConnection()
      try {
        const res = await conn.request(Metadata, {
          topics: names.map((name) => ({ topicId: new Uint8Array(16), name })),
          // As Java's producer (ProducerMetadata): a broker with auto.create.topics.enable=true (Kafka's
          // default) creates the topic of a first send. The relay clears the flag for its clients.
          allowAutoTopicCreation: true,
        }).response
        this.apply(res)
        this.lastRefreshMs = this.opts.clock.now()
        this.lastError = null
        const log = this.opts.log ?? silentLog
        if (log.on('metadata')) {
          log.debug('metadata', 'metadata updated', {
            broker: conn.describe(), brokers: this.brokers.size,
            topics: Object.fromEntries(names.map((t) => [t, this.topics.get(t)?.errorCode ? `error ${this.topics.get(t)!.errorCode}` : this.partitionCount(t)])),
          })
        }
        return
      } catch (e) {
        lastError = e
        this.lastError = e instanceof Error ? e : new NetworkException(String(e))
        ;(this.opts.log ?? silentLog).debug('metadata', 'metadata request failed', { broker: conn.describe(), error: this.lastError.name, reason: this.lastError.message })
        conn.close()
      }
    }
    this.needsUpdate = true
    throw lastError instanceof Error ? lastError : new NetworkException(String(lastError))
  }

  private apply(res: ResponseBody<typeof Metadata>): void {
    for (const b of res.brokers) {
      const old = this.brokers.get(b.nodeId)
      if (old && (old.host !== b.host || old.port !== b.port)) this.connections.get(b.nodeId)?.close()
      this.brokers.set(b.nodeId, { host: b.host, port: b.port, nodeId: b.nodeId })
    }
    this.clusterId = res.clusterId ?? this.clusterId
    for (const t of res.topics) {
      // Only a lookup by topic id answers without a name, and this client looks up by name.
      if (t.name === null) continue
      const existing = this.topics.get(t.name)
      if (t.errorCode !== errorCode('NONE') || t.partitions.length === 0) {
        if (existing) existing.errorCode = t.errorCode || existing.errorCode
        else this.topics.set(t.name, { topic: t.name, partitions: [], errorCode: t.errorCode })
        continue
      }
      const partitions = t.partitions
        .map((p) => ({ partition: p.partitionIndex, leader: p.errorCode === errorCode('NONE') || p.leaderId >= 0 ? p.leaderId : -1, leaderEpoch: p.leaderEpoch }))
        .sort((a, b) => a.partition - b.partition)
      // A stale answer (older leader epoch) must not undo a newer leader learned from a produce hint.
      if (existing) {
        for (const p of partitions) {
          const old = existing.partitions[p.partition]
          if (old && old.leaderEpoch > p.leaderEpoch && p.leaderEpoch >= 0) { p.leader = old.leader; p.leaderEpoch = old.leaderEpoch }
        }
      }
      this.topics.set(t.name, { topic: t.name, partitions, errorCode: errorCode('NONE') })
    }
  }

  partitionCount(topic: string): number {
    return this.topics.get(topic)?.partitions.length ?? 0
  }

  leaderFor(topic: string, partition: number): number {
    const p = this.topics.get(topic)?.partitions[partition]
    return p && p.leader >= 0 && this.brokers.has(p.leader) ? p.leader : -1
  }

  /** After a wire failure or NOT_LEADER: forget the leader so the retry waits for fresh metadata. */
  invalidateLeader(topic: string, partition: number): void {
    const p = this.topics.get(topic)?.partitions[partition]
    if (p) p.leader = -1
    this.needsUpdate = true
  }

  /** KIP-951: a Produce response names the new leader (and its endpoint), saving a metadata round trip. */
  applyLeaderHint(topic: string, partition: number, leaderId: number, leaderEpoch: number, endpoints: Array<{ nodeId: number; host: string; port: number }>): boolean {
    for (const e of endpoints) if (!this.brokers.has(e.nodeId)) this.brokers.set(e.nodeId, { host: e.host, port: e.port, nodeId: e.nodeId })
    const p = this.topics.get(topic)?.partitions[partition]
    if (!p || leaderId < 0 || !this.brokers.has(leaderId) || leaderEpoch < p.leaderEpoch) return false
    const changed = p.leader !== leaderId
    p.leader = leaderId
    p.leaderEpoch = leaderEpoch
    return changed
  }

  close(): void {
    for (const c of this.connections.values()) c.close()
    this.connections.clear()
  }
}
