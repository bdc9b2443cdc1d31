// Types for the parts of scripts/kafka/kafka.mjs that TypeScript code (test/helpers/kafka.ts) imports.
import type { ConnectionOptions } from 'node:tls'

export interface ClusterNodeJson {
  id: number
  host: string
  port: number
  saslPort?: number
  /** with tls */
  sslPort?: number
  /** with tls and sasl */
  saslSslPort?: number
  controllerPort: number
  pid: number
  /** node directory: server.properties, log4j2.properties, logs/, data/, stdout.log */
  dir: string
  /** Kafka log.dirs (partition directories live here) */
  logDir: string
  serverLog: string
}
/** Absolute paths of the PEM files in KAFKA_HOME/tls (shared by every cluster of that KAFKA_HOME). */
export interface TlsFiles {
  /** test CA certificate (trust anchor) and its key */
  ca: string
  caKey: string
  /** broker certificate (SAN IP:127.0.0.1, DNS:localhost), its key, and both in one file (Kafka's PEM key store) */
  cert: string
  key: string
  keystore: string
  /** client certificate for mTLS (CN=kafka-edge-client), its key, and both in one file (Java PEM key store) */
  clientCert: string
  clientKey: string
  clientKeystore: string
  /** an unrelated CA that signed nothing here: trusting only it must fail */
  otherCa: string
  /** a server certificate signed by the test CA, valid only in January 2020 (same SAN as `cert`) */
  expiredCert: string
  expiredKey: string
}
export interface ClusterJson {
  name: string
  bootstrap: string
  saslBootstrap?: string
  saslUsers?: { user: string; password: string }[]
  saslMechanisms?: string[]
  /** with tls: the SSL listeners (client certificate required) */
  sslBootstrap?: string
  /** with tls and sasl: the SASL_SSL listeners */
  saslSslBootstrap?: string
  /** with tls and sasl: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER */
  saslSslMechanisms?: string[]
  /** with tls; `id` changes whenever the certificates are regenerated */
  tls?: TlsFiles & { id: string }
  /** broker connections.max.reauth.ms, when set */
  reauthMs?: number
  /** extra server.properties given with --broker-props */
  brokerProps?: Record<string, string>
  nodes: ClusterNodeJson[]
  clusterId: string
  transactionVersion: number
  basePort: number
  sasl: boolean
  startedAt: string
  startupMs: number
}
export interface ProbeResult {
  brokers: { id: number; host: string; port: number; rack: string | null }[]
  clusterId: string | null
  controllerId: number
  finalizedFeatures: Record<string, number>
  metadataVersion: number
}
export interface DumpedRecord {
  offset: number
  timestamp: number
  keySize: number
  valueSize: number
  sequence: number
  headerKeys: string[]
  endTxnMarker?: 'COMMIT' | 'ABORT'
  coordinatorEpoch?: number
}
export interface DumpedBatch {
  node: number
  partition: number
  baseOffset: number
  lastOffset: number
  count: number
  producerId: number
  producerEpoch: number
  baseSequence: number
  lastSequence: number
  isTransactional: boolean
  isControl: boolean
  /** 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd' as DumpLogSegments prints it */
  compressCodec: string
  crc: number
  crcValid: boolean
  magic: number
  position: number
  size: number
  partitionLeaderEpoch: number
  maxTimestamp: number | null
  timestampType: 'CreateTime' | 'LogAppendTime' | null
  /** marker type of a control batch */
  controlType: 'COMMIT' | 'ABORT' | null
  file: string
  records: DumpedRecord[]
}
export const ROOT: string
export const KAFKA_HOME: string
export const LIBS: string
export const CLUSTERS: string
export const USERS: { user: string; password: string }[]
export const TLS_DIR: string
export function ports(base: number, id: number): { port: number; saslPort: number; controllerPort: number; sslPort: number; saslSslPort: number }
export function ensureTls(): TlsFiles & { id: string }
export function libsReady(): boolean
export function fetchLibs(opts?: { force?: boolean }): void
export const MSK_IAM_LIBS: string
export function mskIamLibsReady(): boolean
export function fetchMskIamLibs(opts?: { force?: boolean }): void
export function classpath(): string
export function probe(host: string, port: number, timeoutMs?: number, opts?: { tls?: ConnectionOptions }): Promise<ProbeResult>
export interface SaslRound {
  errorCode: number
  errorMessage: string | null
  authBytes: Buffer | null
  sessionLifetimeMs: number
}
export function saslProbe(host: string, port: number, mechanism: string, messages: (Buffer | Uint8Array | string)[],
  opts?: { tls?: ConnectionOptions; timeoutMs?: number }): Promise<{ handshakeError: number; mechanisms: string[]; rounds: SaslRound[] }>
export function up(opts?: { name?: string; nodes?: number; sasl?: boolean; tls?: boolean; reauthMs?: number | null; brokerProps?: string | Record<string, string | number>; basePort?: number; tv?: number | null; owner?: string }): Promise<ClusterJson>
export function down(opts?: { name?: string; all?: boolean; owner?: string }): Promise<string[]>
export function signalNode(name: string, id: number, what: 'kill' | 'stop' | 'cont'): Promise<{ id: number; pid: number }>
export function restartNode(name: string, id: number, opts?: { timeoutMs?: number }): Promise<{ id: number; pid: number; ms: number }>
export function parseDumpOutput(text: string): Omit<DumpedBatch, 'node'>[]
export function dumpBatches(name: string, topic: string, opts?: { node?: number; partitions?: number[] }): Promise<DumpedBatch[]>
/** The classpath of the compiled Java helpers plus the Kafka jars. */
export function toolsClasspath(): string
export function toolCommand(name: 'Reader' | 'Admin' | 'Produce' | 'Follow', args?: string[]): [string, string[]]
export function runTool(name: 'Reader' | 'Admin' | 'Produce', args?: string[], opts?: { input?: string; timeoutMs?: number }): Promise<string>
