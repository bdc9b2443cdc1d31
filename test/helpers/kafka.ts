// Real-Kafka test helpers: clusters from scripts/kafka/kafka.mjs, the Java consumer as the
// independent reader, the Java AdminClient, DumpLogSegments for batch headers.
//
// Every Java call is one JVM (~0.5-1.5 s on this machine): batch work into as few calls as you can
// (readTopic once with `expected`, partitionsForKeys with all keys at once).
import { execFile } from 'node:child_process'
import path from 'node:path'
import * as harness from '../../scripts/kafka/kafka.mjs'
import type { ClusterJson, ClusterNodeJson, DumpedBatch, DumpedRecord, ProbeResult } from '../../scripts/kafka/kafka.mjs'

export type { DumpedBatch, DumpedRecord, ProbeResult }
export type Cluster = ClusterJson
export type ClusterNode = ClusterNodeJson

const KAFKA_MJS = path.join(harness.ROOT, 'scripts', 'kafka', 'kafka.mjs')

export interface ClusterOptions {
  /** default: 'default' for a plain 1-node cluster, else derived from the options (e.g. 'n3', 'n1-sasl-tv1') */
  name?: string
  nodes?: number
  /** add a SASL_PLAINTEXT listener (PLAIN, SCRAM-SHA-256/512; users admin/admin-secret, relay/relay-secret) */
  sasl?: boolean
  /** finalized transaction.version; unset = the release default (2 on Kafka 4.4) */
  tv?: 1 | 2
  /**
   * add an SSL listener that requires a client certificate (mTLS), and with `sasl` a SASL_SSL listener
   * (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER with unsecured JWTs); certificates in cluster.tls
   */
  tls?: boolean
  /** broker connections.max.reauth.ms (KIP-368) */
  reauthMs?: number
  /** extra server.properties (e.g. producer.id.expiration.ms); give such a cluster its own `name` */
  brokerProps?: Record<string, string | number>
}

export const SASL_USERS = { admin: 'admin-secret', relay: 'relay-secret' } as const

function clusterName(o: ClusterOptions): string {
  if (o.name) return o.name
  const nodes = o.nodes ?? 1
  if (nodes === 1 && !o.sasl && !o.tv && !o.tls && !o.reauthMs) return 'default'
  return `n${nodes}${o.sasl ? '-sasl' : ''}${o.tls ? '-tls' : ''}${o.tv ? `-tv${o.tv}` : ''}${o.reauthMs ? `-reauth${o.reauthMs}` : ''}`
}

function runKafkaMjs(args: string[], timeoutMs = 300_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [KAFKA_MJS, ...args], { timeout: timeoutMs, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`kafka.mjs ${args.join(' ')} failed (${err.killed ? `killed after ${timeoutMs}ms` : `exit ${err.code}`}):\n${stderr.trim()}`))
      else resolve(stdout)
    })
  })
}

const inflight = new Map<string, Promise<Cluster>>()

/**
 * Start (or reuse, when already up and healthy) a KRaft cluster and return its cluster.json.
 * Concurrent calls for the same name share one promise; later calls re-check health (cheap: ~0.1 s)
 * and re-create a cluster a previous suite left broken.
 */
export function ensureCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const name = clusterName(opts)
  const existing = inflight.get(name)
  if (existing) return existing
  const args = ['up', '--json', '--quiet', '--name', name, '--nodes', String(opts.nodes ?? 1)]
  if (opts.sasl) args.push('--sasl')
  if (opts.tls) args.push('--tls')
  if (opts.reauthMs) args.push('--reauth-ms', String(opts.reauthMs))
  if (opts.tv) args.push('--tv', String(opts.tv))
  if (opts.brokerProps) args.push('--broker-props', Object.entries(opts.brokerProps).map(([k, v]) => `${k}=${v}`).join(','))
  if (process.env.KAFKA_EDGE_RUN_ID) args.push('--owner', process.env.KAFKA_EDGE_RUN_ID)
  const p = runKafkaMjs(args)
    .then((out) => JSON.parse(out.trim().split('\n').pop()!) as Cluster)
    .finally(() => inflight.delete(name))
  inflight.set(name, p)
  return p
}

export async function stopCluster(cluster: Cluster | string): Promise<void> {
  await runKafkaMjs(['down', '--quiet', '--name', typeof cluster === 'string' ? cluster : cluster.name])
}

let topicSeq = 0
/** A topic name no other test (or earlier run on the same cluster) uses. */
export function uniqueTopic(prefix = 't'): string {
  return `${prefix}-${Date.now().toString(36)}-${process.pid.toString(36)}-${(topicSeq++).toString(36)}`
}

function tool(name: 'Reader' | 'Admin' | 'Produce', args: string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<string> {
  return harness.runTool(name, args, opts)
}

// ---- security: which listener, and how, a Java helper connects ------------------------------------

export type SecurityProtocol = 'PLAINTEXT' | 'SASL_PLAINTEXT' | 'SSL' | 'SASL_SSL'
export type SaslMechanism = 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512' | 'OAUTHBEARER'
/**
 * Java client properties (security.protocol, ssl.*, sasl.*), e.g. from javaSecurity(). The helpers
 * below connect to the listener `security.protocol` names and pass every entry on with --prop.
 */
export type JavaSecurity = Record<string, string>

const LISTENER_BOOTSTRAP = {
  PLAINTEXT: 'port', SASL_PLAINTEXT: 'saslPort', SSL: 'sslPort', SASL_SSL: 'saslSslPort',
} as const satisfies Record<SecurityProtocol, keyof ClusterNode>

/** The cluster's bootstrap list for `protocol`, without the nodes this process killed or stopped. */
export function bootstrapFor(cluster: Cluster, protocol: SecurityProtocol = 'PLAINTEXT'): string {
  const key = LISTENER_BOOTSTRAP[protocol]
  if (!key) throw new Error(`unknown security protocol ${protocol}`)
  if (cluster.nodes.some((n) => n[key] === undefined)) {
    const needs = { PLAINTEXT: '', SASL_PLAINTEXT: 'sasl', SSL: 'tls', SASL_SSL: 'sasl and tls' }[protocol]
    throw new Error(`cluster ${cluster.name} has no ${protocol} listener (it needs the ClusterOptions ${needs})`)
  }
  const gone = down.get(cluster.name)
  const live = cluster.nodes.filter((n) => !gone?.has(n.id))
  return (live.length ? live : cluster.nodes).map((n) => `${n.host}:${n[key]}`).join(',')
}

/**
 * Java client properties for one of the cluster's secured listeners. SSL presents the test client
 * certificate (the listener requires one); SASL_SSL and SASL_PLAINTEXT authenticate `user` with
 * `mechanism` (default PLAIN as admin). TLS listeners are verified against the test CA, hostname
 * included. OAUTHBEARER logs in with an unsecured JWT whose `sub` is `user` (no password).
 */
export function javaSecurity(
  cluster: Cluster, protocol: 'SSL' | 'SASL_SSL' | 'SASL_PLAINTEXT', mechanism: SaslMechanism = 'PLAIN',
  user: string = 'admin', password?: string,
): JavaSecurity {
  const p: JavaSecurity = { 'security.protocol': protocol }
  if (protocol !== 'SASL_PLAINTEXT') {
    if (!cluster.tls) throw new Error(`cluster ${cluster.name} has no TLS listeners (start it with tls: true)`)
    p['ssl.truststore.type'] = 'PEM'
    p['ssl.truststore.location'] = cluster.tls.ca
  }
  if (protocol === 'SSL') {
    p['ssl.keystore.type'] = 'PEM'
    p['ssl.keystore.location'] = cluster.tls!.clientKeystore
    return p
  }
  p['sasl.mechanism'] = mechanism
  if (mechanism === 'OAUTHBEARER') {
    p['sasl.jaas.config'] = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="${user}";`
  } else {
    const pass = password ?? SASL_USERS[user as keyof typeof SASL_USERS]
    if (pass === undefined) throw new Error(`javaSecurity: no password for SASL user ${user}`)
    const module = mechanism === 'PLAIN' ? 'org.apache.kafka.common.security.plain.PlainLoginModule' : 'org.apache.kafka.common.security.scram.ScramLoginModule'
    p['sasl.jaas.config'] = `${module} required username="${user}" password="${pass}";`
  }
  return p
}

/** [bootstrap of the listener `security` is for, --prop args]. */
function endpoint(cluster: Cluster, security?: JavaSecurity): [string, string[]] {
  if (!security) return [bs(cluster), []]
  const protocol = (security['security.protocol'] ?? 'PLAINTEXT') as SecurityProtocol
  return [bootstrapFor(cluster, protocol), Object.entries(security).flatMap(([k, v]) => ['--prop', `${k}=${v}`])]
}

/** An unsecured JWT as Kafka's OAuthBearerUnsecuredValidatorCallbackHandler accepts it: alg "none", no signature, `sub` and `exp` required. */
export function unsecuredJwt(sub: string, opts: { iat?: number; exp?: number; lifetimeS?: number; claims?: Record<string, unknown> } = {}): string {
  const iat = opts.iat ?? Math.floor(Date.now() / 1000)
  const exp = opts.exp ?? iat + (opts.lifetimeS ?? 3600)
  const b64u = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url')
  return `${b64u({ alg: 'none' })}.${b64u({ ...opts.claims, sub, iat, exp })}.`
}

export interface TopicOptions {
  partitions?: number
  /** default: min(3, nodes) */
  replicationFactor?: number
  minIsr?: number
  /** Topic configs, e.g. { 'max.message.bytes': '2000' }. */
  configs?: Record<string, string>
  /** connect through a secured listener (see javaSecurity); default PLAINTEXT */
  security?: JavaSecurity
}

/** Create a topic and wait until every partition has a leader and a full ISR. */
export async function createTopic(cluster: Cluster, topic: string, opts: TopicOptions = {}): Promise<void> {
  const rf = opts.replicationFactor ?? Math.min(3, cluster.nodes.length)
  const [bootstrap, props] = endpoint(cluster, opts.security)
  const args = ['create-topic', bootstrap, topic, String(opts.partitions ?? 1), String(rf)]
  args.push(opts.minIsr !== undefined ? String(opts.minIsr) : '-')
  for (const [k, v] of Object.entries(opts.configs ?? {})) args.push(`${k}=${v}`)
  await tool('Admin', [...args, ...props])
}

export async function deleteTopic(cluster: Cluster, topic: string, security?: JavaSecurity): Promise<void> {
  const [bootstrap, props] = endpoint(cluster, security)
  await tool('Admin', ['delete-topic', bootstrap, topic, ...props])
}

export interface ReadRecord {
  partition: number
  offset: number
  timestamp: number
  timestampType: 'CreateTime' | 'LogAppendTime'
  key: Uint8Array | null
  value: Uint8Array | null
  headers: { key: string; value: Uint8Array | null }[]
}

const b64 = (s: string | null): Uint8Array | null => (s === null ? null : new Uint8Array(Buffer.from(s, 'base64')))

function parseRecords(stdout: string): ReadRecord[] {
  return stdout.split('\n').filter((l) => l.length).map((l) => {
    const r = JSON.parse(l)
    return {
      partition: r.partition, offset: r.offset, timestamp: r.timestamp, timestampType: r.timestampType,
      key: b64(r.key), value: b64(r.value),
      headers: r.headers.map((h: { key: string; value: string | null }) => ({ key: h.key, value: b64(h.value) })),
    }
  })
}

export interface ReadOptions {
  /** default read_committed */
  isolation?: 'read_committed' | 'read_uncommitted'
  /** wait until this many records were read (and the end offsets then reached); throws on timeout */
  expected?: number
  /** default 30 s */
  timeoutMs?: number
  /** connect through a secured listener (see javaSecurity); default PLAINTEXT */
  security?: JavaSecurity
}

/**
 * Read the whole topic with the Java consumer (assign + seekToBeginning, all partitions), ordered by
 * partition then offset. Without `expected` it reads up to the end offsets at start.
 */
export async function readTopic(cluster: Cluster, topic: string, opts: ReadOptions = {}): Promise<ReadRecord[]> {
  const timeoutMs = opts.timeoutMs ?? 30_000
  const [bootstrap, props] = endpoint(cluster, opts.security)
  const args = [bootstrap, topic, '--isolation', opts.isolation ?? 'read_committed', '--timeout', String(timeoutMs), ...props]
  if (opts.expected !== undefined) args.push('--expected', String(opts.expected))
  const out = await tool('Reader', args, { timeoutMs: timeoutMs + 60_000 })
  return parseRecords(out).sort((a, b) => a.partition - b.partition || a.offset - b.offset)
}

/** End offsets per partition (read_committed: the last stable offset). */
export async function endOffsets(cluster: Cluster, topic: string, isolation: ReadOptions['isolation'] = 'read_uncommitted', security?: JavaSecurity): Promise<Record<number, number>> {
  const [bootstrap, props] = endpoint(cluster, security)
  return JSON.parse(await tool('Reader', [bootstrap, topic, '--isolation', isolation, '--end-offsets', ...props]))
}

export interface DumpOptions {
  /**
   * 'leader' (default): each partition's batches from its current leader's log dir.
   * 'all': every replica's copy (each batch says which `node` it came from).
   * a node id: that node's copy only.
   */
  from?: 'leader' | 'all' | number
}

/** RecordBatch headers (and per-record summaries) of a topic, via DumpLogSegments --deep-iteration. */
export async function dumpBatches(cluster: Cluster, topic: string, opts: DumpOptions = {}): Promise<DumpedBatch[]> {
  const from = opts.from ?? 'leader'
  let batches: DumpedBatch[]
  if (from === 'all') batches = await harness.dumpBatches(cluster.name, topic)
  else if (typeof from === 'number') batches = await harness.dumpBatches(cluster.name, topic, { node: from })
  else if (cluster.nodes.length === 1) batches = await harness.dumpBatches(cluster.name, topic)
  else {
    const byLeader = new Map<number, number[]>()
    for (const [p, l] of Object.entries(await leaders(cluster, topic))) {
      if (l < 0) throw new Error(`dumpBatches: partition ${p} of ${topic} has no leader`)
      byLeader.set(l, [...(byLeader.get(l) ?? []), Number(p)])
    }
    batches = (await Promise.all([...byLeader].map(([node, partitions]) => harness.dumpBatches(cluster.name, topic, { node, partitions })))).flat()
  }
  return batches.sort((a, b) => a.partition - b.partition || a.node - b.node || a.baseOffset - b.baseOffset)
}

/** The partition the Java producer's default partitioner picks for each key (murmur2), one JVM run. */
export async function partitionsForKeys(keys: Uint8Array[], numPartitions: number): Promise<number[]> {
  if (keys.length === 0) return []
  const input = keys.map((k) => Buffer.from(k).toString('base64')).join('\n') + '\n'
  const out = (await tool('Admin', ['partition-for', String(numPartitions)], { input })).trim().split('\n').map(Number)
  if (out.length !== keys.length) throw new Error(`partition-for returned ${out.length} results for ${keys.length} keys`)
  return out
}

/** {partition: leaderId} (-1 when a partition has no leader). */
export async function leaders(cluster: Cluster, topic: string, security?: JavaSecurity): Promise<Record<number, number>> {
  const [bootstrap, props] = endpoint(cluster, security)
  return JSON.parse(await tool('Admin', ['leaders', bootstrap, topic, ...props]))
}

export async function leaderOf(cluster: Cluster, topic: string, partition: number, security?: JavaSecurity): Promise<number> {
  const l = (await leaders(cluster, topic, security))[partition]
  if (l === undefined) throw new Error(`${topic} has no partition ${partition}`)
  return l
}

export interface PartitionState { partition: number; leader: number; replicas: number[]; isr: number[] }
export async function describeTopic(cluster: Cluster, topic: string, security?: JavaSecurity): Promise<PartitionState[]> {
  const [bootstrap, props] = endpoint(cluster, security)
  return JSON.parse(await tool('Admin', ['describe-topic', bootstrap, topic, ...props]))
}

/** Committed offsets of a consumer group: [{topic, partition, offset, metadata}]. */
export async function groupOffsets(cluster: Cluster, group: string, security?: JavaSecurity): Promise<{ topic: string; partition: number; offset: number; metadata: string }[]> {
  const [bootstrap, props] = endpoint(cluster, security)
  return JSON.parse(await tool('Admin', ['group-offsets', bootstrap, group, ...props]))
}

/** Finalized feature levels as the Admin API reports them, e.g. {'transaction.version': 2, ...}. */
export async function finalizedFeatures(cluster: Cluster, security?: JavaSecurity): Promise<Record<string, number>> {
  const [bootstrap, props] = endpoint(cluster, security)
  return JSON.parse(await tool('Admin', ['features', bootstrap, ...props])).finalized
}

/** The Admin API's view of the cluster; with `security`, also proves that the listener lets the client in. */
export async function describeCluster(cluster: Cluster, security?: JavaSecurity): Promise<{ clusterId: string; controller: number; nodes: number[] }> {
  const [bootstrap, props] = endpoint(cluster, security)
  return JSON.parse(await tool('Admin', ['cluster', bootstrap, ...props]))
}

/** ApiVersions v3 + Metadata straight from one node over TCP (no JVM): finalized features, live brokers. */
export function probeNode(cluster: Cluster, nodeId?: number): Promise<ProbeResult> {
  const n = nodeId === undefined ? cluster.nodes[0] : cluster.nodes.find((x) => x.id === nodeId)
  if (!n) throw new Error(`cluster ${cluster.name} has no node ${nodeId}`)
  return harness.probe(n.host, n.port)
}

export interface ProduceJavaRecord {
  key?: Uint8Array | string | null
  value?: Uint8Array | string | null
  headers?: { key: string; value: Uint8Array | string | null }[]
  partition?: number
  timestamp?: number
}
export interface ProduceJavaOptions {
  /** producer configs, e.g. {'compression.type': 'lz4', acks: 'all'} */
  config?: Record<string, string | number | boolean>
  transactionalId?: string
  /** abort the transaction instead of committing it */
  abort?: boolean
  /** connect through a secured listener (see javaSecurity); default PLAINTEXT */
  security?: JavaSecurity
}

/** Produce with the Java producer (a reference, never kafka-edge). Returns metadata in input order. */
export async function produceJava(
  cluster: Cluster, topic: string, records: ProduceJavaRecord[], opts: ProduceJavaOptions = {},
): Promise<{ partition: number; offset: number; timestamp: number }[]> {
  const enc = (v: Uint8Array | string | null | undefined) => (v === null || v === undefined ? null : Buffer.from(v).toString('base64'))
  const input = records.map((r) => JSON.stringify({
    key: enc(r.key), value: enc(r.value), partition: r.partition, timestamp: r.timestamp,
    headers: (r.headers ?? []).map((h) => ({ key: h.key, value: enc(h.value) })),
  })).join('\n') + '\n'
  const [bootstrap, props] = endpoint(cluster, opts.security)
  const args = [bootstrap, topic, ...props]
  for (const [k, v] of Object.entries(opts.config ?? {})) args.push('--set', `${k}=${v}`)
  if (opts.transactionalId) args.push('--transactional-id', opts.transactionalId)
  if (opts.abort) args.push('--abort')
  const out = await tool('Produce', args, { input })
  return out.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l))
}

// ---- fault injection -------------------------------------------------------------------------

const down = new Map<string, Set<number>>() // nodes this process killed or stopped, per cluster

/** PLAINTEXT bootstrap without the nodes this process killed or stopped (a SIGSTOPped node would stall Java clients). */
export function bs(cluster: Cluster): string {
  return bootstrapFor(cluster, 'PLAINTEXT')
}

function mark(cluster: Cluster, id: number, isDown: boolean) {
  const s = down.get(cluster.name) ?? new Set<number>()
  if (isDown) s.add(id)
  else s.delete(id)
  down.set(cluster.name, s)
}

/** kill -9 a node. */
export async function killNode(cluster: Cluster, nodeId: number): Promise<void> {
  await runKafkaMjs(['kill', '--quiet', cluster.name, String(nodeId)])
  mark(cluster, nodeId, true)
}

/** SIGSTOP a node (it keeps its sockets open but answers nothing). */
export async function stopNode(cluster: Cluster, nodeId: number): Promise<void> {
  await runKafkaMjs(['stop', '--quiet', cluster.name, String(nodeId)])
  mark(cluster, nodeId, true)
}

/** SIGCONT a stopped node. */
export async function contNode(cluster: Cluster, nodeId: number): Promise<void> {
  await runKafkaMjs(['cont', '--quiet', cluster.name, String(nodeId)])
  mark(cluster, nodeId, false)
}

/** Start a (killed) node again on the same dir and ports; resolves once it serves Metadata and the others see it. */
export async function restartNode(cluster: Cluster, nodeId: number): Promise<void> {
  const out = await runKafkaMjs(['restart', '--quiet', cluster.name, String(nodeId)])
  const { pid } = JSON.parse(out.trim().split('\n').pop()!)
  const n = cluster.nodes.find((x) => x.id === nodeId)
  if (n) n.pid = pid
  mark(cluster, nodeId, false)
}

/** Poll `fn` until it returns a truthy value (returned) or the timeout passes (throws with the last value/error). */
export async function waitFor<T>(fn: () => Promise<T> | T, { timeoutMs = 30_000, intervalMs = 200, what = 'condition' } = {}): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await fn()
      if (v) return v as NonNullable<T>
      last = v
    } catch (e) { last = e }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`)
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}
