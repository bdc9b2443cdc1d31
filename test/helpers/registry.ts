// Schema registry test helpers: Apicurio Registry from scripts/registry/registry.mjs, the
// independent reader in test/registry-reader (Go: franz-go's sr, hamba/avro, protobuf-go), Apicurio's
// Java serdes (test/registry-java), and a 127.0.0.1 proxy in front of the registry that can ask for
// credentials or answer slowly.
import { execFile, execFileSync, spawnSync } from 'node:child_process'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import * as registry from '../../scripts/registry/registry.mjs'

const ROOT = path.resolve(import.meta.dirname, '../..')
const READER_DIR = path.join(ROOT, 'test', 'registry-reader')
const READER_BIN = path.join(ROOT, '.kafka', 'registry-reader', 'registry-reader')

export interface Registry { name: string; url: string; base: string; pid: number }

type AvroField = { name: string; type: unknown; default?: unknown }
/**
 * The Avro `shop.v1.Order` record both registry suites write: every primitive, named types in two
 * namespaces, unions, defaults and the logical types. `extra` lands after `ltm`, where each suite
 * adds the fields only its own judge reads.
 */
export function orderAvroSchema(options: { statusDefault?: string; extra?: AvroField[] } = {}): { type: 'record'; name: string; namespace: string; fields: AvroField[] } {
  const status = { type: 'enum', name: 'Status', symbols: ['NEW', 'PAID', 'SHIPPED'], ...(options.statusDefault ? { default: options.statusDefault } : {}) }
  return {
    type: 'record', name: 'Order', namespace: 'shop.v1',
    fields: [
      { name: 'id', type: 'long' },
      { name: 'customer', type: { type: 'record', name: 'Customer', namespace: 'crm', fields: [{ name: 'name', type: 'string' }, { name: 'vip', type: 'boolean', default: false }] } },
      { name: 'previous', type: ['null', 'crm.Customer'], default: null },
      { name: 'status', type: status },
      { name: 'choice', type: ['int', 'string', { type: 'record', name: 'Gift', fields: [{ name: 'note', type: 'string' }] }] },
      { name: 'lines', type: { type: 'array', items: { type: 'record', name: 'Line', fields: [{ name: 'sku', type: 'string' }, { name: 'qty', type: 'int' }] } } },
      { name: 'attrs', type: { type: 'map', values: 'long' } },
      { name: 'note', type: 'string', default: 'none' },
      { name: 'price', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
      { name: 'fee', type: { type: 'fixed', name: 'Fee', size: 4, logicalType: 'decimal', precision: 6, scale: 3 } },
      { name: 'ref', type: { type: 'string', logicalType: 'uuid' } },
      { name: 'day', type: { type: 'int', logicalType: 'date' } },
      { name: 'tm', type: { type: 'int', logicalType: 'time-millis' } },
      { name: 'tu', type: { type: 'long', logicalType: 'time-micros' } },
      { name: 'tsm', type: { type: 'long', logicalType: 'timestamp-millis' } },
      { name: 'tsu', type: { type: 'long', logicalType: 'timestamp-micros' } },
      { name: 'ltm', type: { type: 'long', logicalType: 'local-timestamp-millis' } },
      ...(options.extra ?? []),
      { name: 'score', type: 'float' },
      { name: 'ratio', type: 'double' },
      { name: 'raw', type: 'bytes' },
      { name: 'tag', type: { type: 'fixed', name: 'Tag', size: 2 } },
    ],
  }
}

/** What is missing to run the registry suites here, or null. */
export function registryUnavailable(): string | null {
  if (!registry.java21()) return 'no Java 21+ (Apicurio Registry 3 needs it; set JAVA21_HOME)'
  if (spawnSync('go', ['version']).status !== 0) return 'no Go toolchain (the independent reader is Go)'
  return null
}

/** What is missing to run Apicurio's Java serdes here, or null. */
export function javaSerdeUnavailable(): string | null {
  if (!registry.java21()) return 'no Java 21+ (Apicurio Registry 3 needs it; set JAVA21_HOME)'
  if (!registry.serdeReady()) return 'the Java serde program is not built or out of date (npm run registry:fetch)'
  return null
}

export interface JavaSerdeRequest {
  op: 'serialize' | 'deserialize'
  format: 'avro' | 'protobuf' | 'json'
  topic: string
  schema?: string
  /** Protobuf: the message's full name. */
  message?: string
  /** serialize: Avro's JSON encoding, protobuf's JSON mapping, or the JSON Schema value. */
  value?: unknown
  /** deserialize: the Confluent-framed bytes. */
  hex?: string
}

/** hex: what the serializer wrote; value (and for Avro, logical: Java's conversions of the logical types): what the deserializer read. */
export interface JavaSerdeAnswer { hex?: string; value?: unknown; logical?: Record<string, string>; error?: string }

/** Answers the requests in one run of test/registry-java (a JVM start costs seconds) against the registry at `base`. */
export function javaSerde(base: string, requests: JavaSerdeRequest[]): Promise<JavaSerdeAnswer[]> {
  return new Promise((resolve, reject) => {
    const child = execFile(registry.java21()!, ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-cp', registry.serdeClasspath(), 'RegistrySerde', base],
      { maxBuffer: 64 << 20, timeout: 120_000 }, (err, stdout, stderr) => {
        if (err) reject(new Error(`RegistrySerde failed: ${err.message}\n${stderr.slice(-3000)}`))
        else resolve(stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as JavaSerdeAnswer))
      })
    child.stdin!.end(requests.map((r) => JSON.stringify(r)).join('\n') + '\n')
  })
}

export async function startRegistry(name: string): Promise<Registry> {
  return await registry.up({ name }) as Registry
}

export async function stopRegistry(name: string): Promise<void> { await registry.down({ name }) }

/** Builds the reader once (Go caches the build in ~/.cache/go-build, so a rebuild is quick). */
export function buildReader(): string {
  execFileSync('go', ['build', '-o', READER_BIN, '.'], { cwd: READER_DIR, stdio: 'pipe', timeout: 900_000 })
  return READER_BIN
}

export interface ReadBack { id: number; index?: number[]; message?: string; value: unknown; same: boolean; error?: string }

/** Every value decoded by the independent reader, in order. */
export function readBack(url: string, values: Array<Uint8Array | null>): Promise<ReadBack[]> {
  return new Promise((resolve, reject) => {
    const child = execFile(READER_BIN, ['-registry', url], { maxBuffer: 64 << 20, timeout: 120_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`registry-reader failed: ${err.message}\n${stderr}`))
      else resolve(stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as ReadBack))
    })
    child.stdin!.end(values.map((v) => Buffer.from(v ?? []).toString('hex')).join('\n') + '\n')
  })
}

export interface Proxy { url: string; requests: number; close(): Promise<void>; delayMs: number; user: string | null; down: boolean }

/**
 * A proxy to the registry on 127.0.0.1: with `user` ("name:password") it answers 401 to requests
 * without those Basic credentials, as a registry with authentication does; `delayMs` holds each
 * answer back; `down` answers 503.
 */
export async function registryProxy(target: string, opts: { user?: string; delayMs?: number } = {}): Promise<Proxy> {
  const state = { requests: 0, delayMs: opts.delayMs ?? 0, user: opts.user ?? null, down: false }
  const base = new URL(target)
  const server = http.createServer((req, res) => {
    state.requests++
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      setTimeout(async () => {
        if (state.down) { res.writeHead(503, { 'content-type': 'application/json' }).end('{"error_code":50301,"message":"registry is down for the test"}'); return }
        const want = state.user && `Basic ${Buffer.from(state.user).toString('base64')}`
        if (want && req.headers.authorization !== want) {
          res.writeHead(401, { 'content-type': 'application/json' }).end('{"error_code":401,"message":"Unauthorized: bad credentials"}')
          return
        }
        try {
          const r = await fetch(`${base.origin}${req.url}`, {
            method: req.method, body: chunks.length ? Buffer.concat(chunks) : undefined,
            headers: { 'content-type': req.headers['content-type'] ?? 'application/json', accept: req.headers.accept ?? '*/*' },
          })
          res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await r.arrayBuffer()))
        } catch (e) { res.writeHead(502).end(String(e)) }
      }, state.delayMs)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  const prefix = base.pathname.replace(/\/$/, '')
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}${prefix}`,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()) }),
  })
}
