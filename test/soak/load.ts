// The soak's producer process (test/soak/soak.ts starts it with the probe preloaded): idempotent and
// transactional kafka-edge producers at a steady rate, two straight to the broker over TCP (through
// the soak's fault proxy) and two through each relay. Each record's value is `<stream>:<n>`, n from 0
// up per stream, so the Java consumer's read can be checked against what was acknowledged.
//
// Sends are not awaited one by one: the rate holds through outages, and what the producer cannot
// send yet waits in its accumulator as it would in an app. On 'stop' it sends nothing more, waits for
// every outstanding send and transaction, reports, closes the producers and reports what it holds.
import WebSocket from 'ws'
import { createProducer, websocket, type Producer } from '../../src/edge/index.js'
import { tcp } from '../../src/edge/node.js'

export interface LoadConfig {
  /** the broker's PLAINTEXT bootstrap; `proxy` maps each advertised `host:port` to its fault-proxy port */
  bootstrap: string
  proxy: Record<string, number>
  /** relay WebSocket URLs by name */
  relays: Record<string, string>
  token: string
  topics: { idempotent: string; transactional: string }
  /** records per second per stream */
  rate: number
  progressMs: number
}

export interface StreamResult {
  stream: string
  kind: 'idempotent' | 'transactional'
  topic: string
  /** values `<stream>:0` .. `<stream>:<sent - 1>` were handed to send() */
  sent: number
  /** n of each record whose send failed, or whose transaction neither committed nor aborted for sure; the first errors */
  failed: number[]
  errors: string[]
  /**
   * transactional: the numbers of the transactions that were aborted (their records were sent again
   * in the next one). A transactional record's value is `<stream>:<n>@<transaction>`.
   */
  abortedTxns: number[]
  transactions: { committed: number }
}

export interface LoadResult {
  streams: StreamResult[]
  /** active resources and descriptors once every producer was closed */
  afterClose: { resources: number; sockets: number; fds: number; resourceTypes: Record<string, number> }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const TICK_MS = 100

interface Stream {
  result: StreamResult
  acked: number
  done: Promise<void>
}

function newResult(stream: string, kind: StreamResult['kind'], topic: string): StreamResult {
  return { stream, kind, topic, sent: 0, failed: [], errors: [], abortedTxns: [], transactions: { committed: 0 } }
}

function noteError(r: StreamResult, e: unknown): void {
  if (r.errors.length < 10) r.errors.push(`${(e as Error)?.name}: ${(e as Error)?.message}`)
}

/** `rate` records a second, sent every tick without waiting for earlier ones. */
function idempotent(name: string, p: Producer, topic: string, rate: number, stopped: () => boolean): Stream {
  const s: Stream = { result: newResult(name, 'idempotent', topic), acked: 0, done: Promise.resolve() }
  const inflight = new Set<Promise<unknown>>()
  s.done = (async () => {
    const t0 = Date.now()
    for (let tick = 1; !stopped(); tick++) {
      const due = Math.floor((tick * TICK_MS * rate) / 1000)
      while (s.result.sent < due) {
        const n = s.result.sent++
        const ack = p.send({ topic, key: `${name}-${n % 16}`, value: `${name}:${n}` }).then(
          () => { s.acked++ },
          (e: unknown) => { s.result.failed.push(n); noteError(s.result, e) },
        )
        inflight.add(ack)
        void ack.finally(() => inflight.delete(ack))
      }
      await sleep(Math.max(0, t0 + tick * TICK_MS - Date.now()))
    }
    await Promise.all(inflight)
  })()
  return s
}

/** One transaction every 500 ms holding half a second's records; a failed commit is aborted and its records sent again (or the producer replaced). */
function transactional(name: string, make: () => Producer, topic: string, rate: number, stopped: () => boolean): { stream: Stream; producer: () => Producer } {
  const s: Stream = { result: newResult(name, 'transactional', topic), acked: 0, done: Promise.resolve() }
  let p = make()
  const per = Math.max(1, Math.round(rate / 2))
  // As an app would: a producer whose initTransactions failed (max.block.ms ran out in an outage) is
  // replaced and initialised again.
  const init = async () => {
    for (;;) {
      try { await p.initTransactions(); return } catch (e) {
        noteError(s.result, e)
        await p.close().catch(() => {})
        if (stopped()) throw e
        await sleep(1000)
        p = make()
      }
    }
  }
  s.done = (async () => {
    await init()
    const t0 = Date.now()
    let again: number[] = []
    for (let slot = 1; !stopped() || again.length; slot++) {
      // The records of an aborted transaction go again in the next one, as an app would send them.
      const ns = again.length ? again : Array.from({ length: per }, (_, j) => s.result.sent + j)
      if (!again.length) s.result.sent += per
      again = []
      const txn = slot
      const acks: Array<Promise<unknown>> = []
      try {
        p.beginTransaction()
        for (const n of ns) acks.push(p.send({ topic, key: `${name}-${n % 16}`, value: `${name}:${n}@${txn}` }))
        await p.commitTransaction()
        await Promise.all(acks)
        s.acked += ns.length
        s.result.transactions.committed++
      } catch (e) {
        noteError(s.result, e)
        await Promise.allSettled(acks)
        try {
          await p.abortTransaction()
          s.result.abortedTxns.push(txn)
          again = ns
        } catch (e2) {
          // Neither committed nor aborted for sure: the records may be in the log, once each at most.
          noteError(s.result, e2)
          s.result.failed.push(...ns)
          await p.close().catch(() => {})
          p = make()
          await init()
        }
      }
      await sleep(Math.max(0, t0 + slot * 500 - Date.now()))
    }
  })().catch((e: unknown) => { noteError(s.result, e) })
  return { stream: s, producer: () => p }
}

async function main(): Promise<void> {
  const cfg = JSON.parse(process.env.SOAK_LOAD ?? '') as LoadConfig
  let stop = false
  const stopped = () => stop
  const resolve = (a: { host: string; port: number }) => {
    const port = cfg.proxy[`${a.host}:${a.port}`]
    return port ? { host: '127.0.0.1', port } : a
  }
  const common = { acks: 'all' as const, 'linger.ms': 20, 'request.timeout.ms': 10_000, 'retry.backoff.max.ms': 1000 }
  const direct = (extra: Record<string, unknown> = {}) => createProducer({ 'bootstrap.servers': cfg.bootstrap, transport: tcp({ resolve }), ...common, ...extra })
  const relayed = (url: string, extra: Record<string, unknown> = {}) => createProducer({
    'bootstrap.servers': 'relay:443', transport: websocket({ url, token: cfg.token, WebSocket: WebSocket as never }), ...common, ...extra,
  })
  const producers: Array<() => Producer> = []
  const streams: Stream[] = []
  const addIdempotent = (name: string, p: Producer) => { producers.push(() => p); streams.push(idempotent(name, p, cfg.topics.idempotent, cfg.rate, stopped)) }
  const addTransactional = (name: string, make: () => Producer) => {
    const t = transactional(name, make, cfg.topics.transactional, cfg.rate, stopped)
    producers.push(t.producer)
    streams.push(t.stream)
  }
  addIdempotent('direct-idem', direct())
  addTransactional('direct-txn', () => direct({ 'transactional.id': 'soak-direct-txn' }))
  for (const [relay, url] of Object.entries(cfg.relays)) {
    addIdempotent(`${relay}-idem`, relayed(url))
    addTransactional(`${relay}-txn`, () => relayed(url, { 'transactional.id': `soak-${relay}-txn` }))
  }
  const progress = setInterval(() => {
    // The last error goes with the counts: a run that dies before its end still says what went wrong.
    const counts = streams.map((s) => [s.result.stream, { sent: s.result.sent, acked: s.acked, failed: s.result.failed.length, lastError: s.result.errors.at(-1) }])
    process.send?.({ soakProgress: { at: Date.now(), streams: Object.fromEntries(counts) } })
  }, cfg.progressMs)
  await new Promise<void>((r) => process.on('message', (m) => { if (m === 'stop') r() }))
  stop = true
  await Promise.all(streams.map((s) => s.done))
  clearInterval(progress)
  const results = streams.map((s) => s.result)
  await Promise.all(producers.map((p) => p().close()))
  await sleep(1000) // sockets closed by the producers leave the resource list on the next loop turns
  const types: Record<string, number> = {}
  for (const t of process.getActiveResourcesInfo()) types[t] = (types[t] ?? 0) + 1
  const { readdirSync } = await import('node:fs')
  const out: LoadResult = {
    streams: results,
    afterClose: { resources: Object.values(types).reduce((a, b) => a + b, 0), sockets: types.TCPSocketWrap ?? 0, fds: readdirSync('/proc/self/fd').length, resourceTypes: types },
  }
  process.send?.({ soakResult: out }, undefined, undefined, () => process.disconnect())
}

main().catch((e: unknown) => {
  process.stderr.write(`soak load: ${String((e as Error)?.stack ?? e)}\n`)
  process.exit(1)
})
