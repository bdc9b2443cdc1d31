// A fake transaction/group coordinator for unit tests of src/edge/producer/transactions/: a few
// brokers that answer FindCoordinator, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
// TxnOffsetCommit and EndTxn on a virtual clock, with scripted errors, coordinator moves and
// disconnects. It keeps just enough coordinator state (producer id, epoch) to answer like Kafka.
import { NetworkException } from '../../src/edge/errors.js'
import { AddOffsetsToTxn, AddPartitionsToTxn, EndTxn, FindCoordinator, InitProducerId, Produce, TxnOffsetCommit, type ApiSchema, type Message } from '../../src/edge/protocol/index.js'
import { IdempotenceManager } from '../../src/edge/producer/idempotence.js'
import { TransactionCoordinatorClient } from '../../src/edge/producer/transactions/coordinator-client.js'
import { type CoordinatorCluster, type CoordinatorConnection, type TransactionHost } from '../../src/edge/producer/transactions/state.js'
import { VirtualClock } from '../sim/virtual-clock.js'

export interface LoggedRequest { api: string; version: number; node: number; body: Message; at: number }

type Scripted = { error: number } | { disconnect: true } | { respond: (body: Message, version: number) => Message }

export class FakeCoordinators {
  readonly clock = new VirtualClock(1_000_000)
  readonly log: LoggedRequest[] = []
  /** Node ids -> down (connect and requests fail). */
  readonly down = new Set<number>()
  txnCoordinator = 1
  groupCoordinator = 2
  producerId = 4000n
  epoch = -1
  /** EndTxn v5 at this epoch hands out a new producer id at epoch 0 (epoch exhaustion). */
  overflowAtEpoch = 32766
  latencyMs = 2
  tv = 2
  maxVersions: Record<string, number> = { Produce: 12, EndTxn: 5, TxnOffsetCommit: 5, InitProducerId: 5, AddPartitionsToTxn: 3, AddOffsetsToTxn: 4, FindCoordinator: 4 }
  private inFlight = 0
  maxInFlight = 0
  private readonly scripts = new Map<string, Scripted[]>()

  /** The next `api` request(s) get these answers instead of the model's. */
  script(api: string, ...answers: Scripted[]): void {
    this.scripts.set(api, [...(this.scripts.get(api) ?? []), ...answers])
  }

  requests(api?: string): LoggedRequest[] { return api ? this.log.filter((r) => r.api === api) : this.log }
  apis(): string[] { return this.log.map((r) => r.api) }

  connection(node: number): CoordinatorConnection {
    const features = new Map([['transaction.version', this.tv]])
    return {
      finalizedFeatures: features,
      connect: () => (this.down.has(node) ? Promise.reject(new NetworkException(`node ${node} is down`)) : Promise.resolve()),
      versionFor: (api: ApiSchema, cap?: number) => Math.min(cap ?? api.maxVersion, api.maxVersion, this.maxVersions[api.name] ?? api.maxVersion),
      request: (api: ApiSchema, body: Message, opts: { version?: number; cap?: number } = {}) => ({
        response: this.handle(node, api, opts.version ?? Math.min(opts.cap ?? api.maxVersion, api.maxVersion, this.maxVersions[api.name] ?? api.maxVersion), body),
      }),
    }
  }

  private handle(node: number, api: ApiSchema, version: number, body: Message): Promise<Message> {
    this.log.push({ api: api.name, version, node, body, at: this.clock.now() })
    this.inFlight++
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight)
    return new Promise<Message>((resolve, reject) => {
      this.clock.setTimeout(() => {
        this.inFlight--
        if (this.down.has(node)) return reject(new NetworkException(`node ${node} disconnected`))
        const s = this.scripts.get(api.name)?.shift()
        if (s && 'disconnect' in s) return reject(new NetworkException(`node ${node} disconnected`))
        if (s && 'respond' in s) return resolve(s.respond(body, version))
        resolve(this.answer(node, api, version, body, s ? s.error : null))
      }, this.latencyMs)
    })
  }

  private answer(node: number, api: ApiSchema, version: number, body: Message, scripted: number | null): Message {
    const wrongTxn = node !== this.txnCoordinator ? 16 : 0
    switch (api.name) {
      case FindCoordinator.name: {
        const nodeId = body.keyType === 1 ? this.txnCoordinator : this.groupCoordinator
        const errorCode = scripted ?? 0
        return { throttleTimeMs: 0, coordinators: [{ key: body.key, nodeId, host: 'fake', port: 9000 + nodeId, errorCode, errorMessage: null }] }
      }
      case InitProducerId.name: {
        const errorCode = scripted ?? wrongTxn
        if (errorCode === 0) this.epoch++
        return { throttleTimeMs: 0, errorCode, producerId: errorCode ? -1n : this.producerId, producerEpoch: errorCode ? -1 : this.epoch }
      }
      case AddPartitionsToTxn.name: {
        const errorCode = scripted ?? wrongTxn
        const topics = body.topics as Array<{ name: string; partitions: number[] }>
        return { throttleTimeMs: 0, results: topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p, errorCode })) })) }
      }
      case AddOffsetsToTxn.name:
        return { throttleTimeMs: 0, errorCode: scripted ?? wrongTxn }
      case TxnOffsetCommit.name: {
        const errorCode = scripted ?? (node !== this.groupCoordinator ? 16 : 0)
        const topics = body.topics as Array<{ name: string; partitions: Array<{ partitionIndex: number }> }>
        return { throttleTimeMs: 0, topics: topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })) })) }
      }
      case EndTxn.name: {
        const errorCode = scripted ?? wrongTxn
        if (errorCode !== 0 || version < 5) return { throttleTimeMs: 0, errorCode, producerId: -1n, producerEpoch: -1 }
        if (this.epoch >= this.overflowAtEpoch) { this.producerId += 1n; this.epoch = 0 } else this.epoch++
        return { throttleTimeMs: 0, errorCode: 0, producerId: this.producerId, producerEpoch: this.epoch }
      }
    }
    throw new Error(`fake coordinator: unexpected ${api.name}`)
  }

  cluster(): CoordinatorCluster {
    const brokers = new Map([1, 2, 3].map((id) => [id, { host: 'fake', port: 9000 + id, nodeId: id }]))
    let next = 0
    return {
      brokers,
      anyConnection: () => {
        const live = [1, 2, 3].filter((n) => !this.down.has(n))
        return this.connection(live[next++ % live.length] ?? 1)
      },
      connection: (nodeId: number) => this.connection(nodeId),
    }
  }
}

export class FakeHost implements TransactionHost {
  incomplete = 0
  flushes = 0
  aborted: Error[] = []
  wakeups = 0
  private waiters: Array<() => void> = []
  hasIncomplete(): boolean { return this.incomplete > 0 }
  flush(): Promise<void> {
    this.flushes++
    if (this.incomplete === 0) return Promise.resolve()
    return new Promise((r) => this.waiters.push(r))
  }
  /** The batches of the transaction completed. */
  complete(): void {
    this.incomplete = 0
    for (const w of this.waiters.splice(0)) w()
  }
  abortUndrainedBatches(e: Error): void { this.aborted.push(e) }
  wakeupSender(): void { this.wakeups++ }
}

export function setup(opts: { tv?: number; maxBlockMs?: number; retryBackoffMs?: number; transactionTimeoutMs?: number } = {}) {
  const fake = new FakeCoordinators()
  if (opts.tv !== undefined) fake.tv = opts.tv
  const host = new FakeHost()
  const epochs: Array<{ producerId: bigint; epoch: number }> = []
  const idem = new IdempotenceManager('tid-1', () => {}, (tp) => tm.isSendToPartitionAllowed(tp), (pe) => { epochs.push(pe) })
  const tm: TransactionCoordinatorClient = new TransactionCoordinatorClient({
    transactionalId: 'tid-1', transactionTimeoutMs: opts.transactionTimeoutMs ?? 60000, retryBackoffMs: opts.retryBackoffMs ?? 100,
    maxBlockMs: opts.maxBlockMs ?? 60000, clock: fake.clock, cluster: fake.cluster(), idempotence: idem, host,
  })
  /** Runs the clock until the promise settles; returns its outcome. */
  const run = async <T>(p: Promise<T>, maxMs = 120_000): Promise<{ ok: true; value: T } | { ok: false; error: Error }> => {
    let out: { ok: true; value: T } | { ok: false; error: Error } | null = null
    p.then((value) => { out = { ok: true, value } }, (error: Error) => { out = { ok: false, error } })
    await fake.clock.run({ done: () => out !== null, until: fake.clock.now() + maxMs })
    if (!out) throw new Error(`did not settle within ${maxMs} virtual ms; state ${tm.state}, queue ${tm.pendingRequests.join(',')}`)
    return out
  }
  const ok = async <T>(p: Promise<T>): Promise<T> => {
    const r = await run(p)
    if (!r.ok) throw r.error
    return r.value
  }
  const fails = async (p: Promise<unknown>): Promise<Error> => {
    const r = await run(p)
    if (r.ok) throw new Error('expected a failure')
    return r.error
  }
  return { fake, host, idem, tm, run, ok, fails, epochs }
}

export { Produce }
