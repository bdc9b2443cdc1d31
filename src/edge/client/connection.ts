import type { SaslMechanism } from '../auth/mechanism.js'
import type { SaslCall } from '../auth/sasl.js'
import { extensions } from '../extensions.js'
import type { Clock } from '../clock.js'
import { silentLog, type Log } from '../log.js'
import { ClosedError, KafkaEdgeError, NetworkException, ProtocolError, TimeoutException } from '../errors.js'
import {
  ApiVersions, apiError, decodeResponse, encodeRequest, errorCode, responseCorrelationId, type ApiSchema, type Message, type RequestBody, type ResponseBody,
} from '../protocol/index.js'
import type { BrokerAddress, Link, TlsSettings, Transport } from '../transport/transport.js'

export interface ConnectionOptions {
  clientId: string
  requestTimeoutMs: number
  clock: Clock
  clientSoftwareName?: string
  clientSoftwareVersion?: string
  /** Authenticate every connection (and re-authenticate before the broker's session lifetime ends). */
  sasl?: SaslMechanism | null
  /** Handed to the transport: TLS to the broker. */
  tls?: TlsSettings | null
  random?: () => number
  log?: Log
}

export interface PendingRequest<Res = Message> {
  /** Resolves once the frame was handed to the transport: the point where order on the wire is fixed. */
  readonly written: Promise<void>
  /** The decoded response body, or a typed error (NetworkException, TimeoutException, ProtocolError). */
  readonly response: Promise<Res>
}

interface InFlight {
  api: ApiSchema
  version: number
  resolve(m: Message): void
  reject(e: Error): void
  timer: unknown
}

/**
 * One connection to one broker: correlation ids, the in-flight map, request timeouts, and ApiVersions
 * negotiation before the first real request. Frames are written strictly in the order request() was
 * called (a FIFO write chain), which is what keeps per-partition sequence order on the wire with up
 * to max.in.flight requests outstanding. On any close every pending request fails: no promise hangs.
 */
export class Connection {
  private link: Link | null = null
  private ready: Promise<void> | null = null
  private readonly inFlight = new Map<number, InFlight>()
  private nextCorrelationId = 0
  private writeChain: Promise<void> = Promise.resolve()
  private closedError: Error | null = null
  private versions = new Map<number, { min: number; max: number }>()
  finalizedFeatures = new Map<string, number>()
  onClose: ((error: Error) => void) | null = null

  constructor(readonly address: BrokerAddress, private readonly transport: Transport, private readonly opts: ConnectionOptions) {}

  get isClosed(): boolean { return this.closedError !== null }
  /** Connected and versions negotiated: requests go out without waiting. */
  get isReady(): boolean { return this.negotiated && this.closedError === null }
  private negotiated = false
  get inFlightCount(): number { return this.inFlight.size }
  private reauthTimer: unknown = null
  /** KIP-368 re-authentications completed on this connection (tests count them to spot reconnect storms). */
  reauthentications = 0

  /** Opens the link and negotiates versions; safe to call repeatedly. */
  connect(): Promise<void> {
    if (!this.ready) {
      this.ready = this.open().catch((e: unknown) => {
        const err = e instanceof Error ? e : new NetworkException(String(e))
        this.fail(err)
        throw err
      })
      this.ready.catch(() => {})
    }
    return this.ready
  }

  private async open(): Promise<void> {
    const link = await this.transport.open(this.address, {
      onFrame: (frame) => this.onFrame(frame),
      onClose: (error) => this.fail(error ?? new NetworkException(`connection to ${this.describe()} closed`)),
    }, this.opts.tls ? { tls: this.opts.tls } : undefined)
    if (this.closedError) { link.close(); throw this.closedError }
    this.link = link
    await this.negotiateVersions()
    if (this.opts.sasl) this.scheduleReauthentication(await this.authenticate(this.opts.sasl))
    this.negotiated = true
    this.log.debug('connection', 'connected', { broker: this.describe(), tls: this.opts.tls !== undefined && this.opts.tls !== null, sasl: this.opts.sasl?.name ?? null })
  }

  private get log(): Log { return this.opts.log ?? silentLog }

  /** Runs on a quiet connection: before the first request, or behind the re-authentication gate. */
  private async authenticate(mechanism: SaslMechanism): Promise<number> {
    const call: SaslCall = (api, body) => {
      const version = this.versionFor(api)
      if (version === null) throw new KafkaEdgeError(`broker ${this.describe()} does not support ${api.name}; it cannot authenticate with SASL`)
      return this.rawRequest(api, version, body, true, this.opts.requestTimeoutMs, true).response
    }
    return (await extensions.sasl!.authenticate(mechanism, this.address, call)).lifetimeMs
  }

  private scheduleReauthentication(lifetimeMs: number): void {
    if (lifetimeMs <= 0 || this.closedError) return
    this.reauthTimer = this.opts.clock.setTimeout(() => { void this.reauthenticate() }, extensions.sasl!.reauthenticationDelay(lifetimeMs, this.opts.random))
  }

  /**
   * KIP-368 re-authentication without dropping the connection. Requests already written stay in
   * flight (the broker answers them before it reads the handshake, so their responses arrive in
   * order); requests made meanwhile wait behind a gate in the write chain until it completes.
   */
  private async reauthenticate(): Promise<void> {
    this.reauthTimer = null
    if (this.closedError || !this.opts.sasl) return
    let release!: () => void
    const gate = new Promise<void>((r) => { release = r })
    const before = this.writeChain
    this.writeChain = gate
    try {
      await before
      if (this.closedError) return
      const lifetimeMs = await this.authenticate(this.opts.sasl)
      this.reauthentications++
      this.log.debug('connection', 're-authenticated', { broker: this.describe(), sessionLifetimeMs: lifetimeMs })
      this.scheduleReauthentication(lifetimeMs)
    } catch (e) {
      this.fail(e instanceof Error ? e : new NetworkException(String(e)))
    } finally {
      release()
    }
  }

  private async negotiateVersions(): Promise<void> {
    let version = ApiVersions.maxVersion
    for (;;) {
      const res = await this.rawRequest(ApiVersions, version, {
        clientSoftwareName: this.opts.clientSoftwareName ?? 'kafka-edge',
        clientSoftwareVersion: this.opts.clientSoftwareVersion ?? '0.1.0',
      }).response
      const code = res.errorCode
      const keys = res.apiKeys
      if (code === errorCode('UNSUPPORTED_VERSION')) {
        // The broker answered in v0 shape with its own ApiVersions range: retry at its highest.
        const mine = keys.find((k) => k.apiKey === ApiVersions.key)
        const next = mine ? Math.min(mine.maxVersion, version - 1) : version - 1
        if (next < 0 || next >= version) throw apiError(code, 'ApiVersions')
        version = next
        continue
      }
      if (code !== errorCode('NONE')) throw apiError(code, 'ApiVersions')
      this.versions = new Map(keys.map((k) => [k.apiKey, { min: k.minVersion, max: k.maxVersion }]))
      this.finalizedFeatures = new Map(res.finalizedFeatures.map((f) => [f.name, f.maxVersionLevel]))
      return
    }
  }

  /** The highest version both sides speak, or null when there is none. */
  versionFor(api: ApiSchema, cap = api.maxVersion): number | null {
    const broker = this.versions.get(api.key)
    if (!broker) return null
    const v = Math.min(cap, api.maxVersion, broker.max)
    return v >= Math.max(api.minVersion, broker.min) ? v : null
  }

  /**
   * Sends a request after negotiation. `expectResponse: false` (acks=0) resolves `response` with an
   * empty message once written.
   */
  request<A extends ApiSchema>(api: A, body: RequestBody<A>, opts: { version?: number; cap?: number; expectResponse?: boolean; timeoutMs?: number } = {}):
  PendingRequest<ResponseBody<A>> {
    const ready = this.connect()
    let resolveWritten!: () => void
    let rejectWritten!: (e: Error) => void
    const written = new Promise<void>((a, b) => { resolveWritten = a; rejectWritten = b })
    written.catch(() => {})
    const response = ready.then(() => {
      const version = opts.version ?? this.versionFor(api, opts.cap)
      if (version === null) {
        throw new KafkaEdgeError(`broker ${this.describe()} does not support ${api.name} in versions ${api.minVersion}-${opts.cap ?? api.maxVersion}; upgrade the broker`)
      }
      const pending = this.rawRequest(api, version, body, opts.expectResponse ?? true, opts.timeoutMs)
      pending.written.then(resolveWritten, rejectWritten)
      return pending.response
    })
    response.catch((e) => rejectWritten(e))
    return { written, response }
  }

  /** `direct` writes at once, past the write chain: only for authentication on a connection nobody else writes to. */
  private rawRequest<A extends ApiSchema>(api: A, version: number, body: RequestBody<A>, expectResponse = true, timeoutMs = this.opts.requestTimeoutMs, direct = false):
  PendingRequest<ResponseBody<A>> {
    if (this.closedError) {
      const e = this.closedError
      return { written: Promise.reject(e), response: Promise.reject(e) }
    }
    const correlationId = this.nextCorrelationId
    this.nextCorrelationId = (this.nextCorrelationId + 1) | 0
    const frame = encodeRequest(api, version, correlationId, this.opts.clientId, body)
    const link = this.link!
    let response: Promise<Message>
    if (expectResponse) {
      response = new Promise<Message>((resolve, reject) => {
        const timer = this.opts.clock.setTimeout(() => {
          // A request that outlives request.timeout.ms poisons the connection: its response may
          // still come, so the only safe move is to close and fail everything pending.
          this.fail(new TimeoutException(`${api.name} to ${this.describe()} got no response within ${timeoutMs} ms`))
        }, timeoutMs)
        this.inFlight.set(correlationId, { api, version, resolve, reject, timer })
      })
    }
    const write = () => {
      if (this.closedError) throw this.closedError
      return link.write(frame)
    }
    const written = direct ? Promise.resolve().then(write) : this.writeChain.then(write)
    if (!direct) this.writeChain = written.catch(() => {})
    written.catch((e) => this.fail(e instanceof Error ? e : new NetworkException(String(e))))
    if (!expectResponse) response = written.then(() => ({}))
    // The one cast between the codec and the typed messages: decodeResponse reads by the same field
    // list that ResponseBody<A> is derived from (an acks=0 Produce resolves an empty body).
    return { written, response: response! as Promise<ResponseBody<A>> }
  }

  private onFrame(frame: Uint8Array): void {
    let id: number
    try { id = responseCorrelationId(frame) } catch (e) { this.fail(e as Error); return }
    const entry = this.inFlight.get(id)
    if (!entry) {
      // The stream is out of step, not the requests: the others fail as a broken connection would
      // (retriable), so a relay that duplicates a frame costs a reconnect, not records.
      const cause = new ProtocolError(`response with unknown correlation id ${id} from ${this.describe()}`)
      this.fail(new NetworkException(`${cause.message}; closing the connection`, { cause }))
      return
    }
    this.inFlight.delete(id)
    this.opts.clock.clearTimeout(entry.timer)
    let msg: Message
    try {
      msg = decodeResponse(entry.api, entry.version === 0 || !isUnsupportedApiVersions(entry.api, frame) ? entry.version : 0, frame)
    } catch (e) {
      // A response we cannot parse leaves the stream position unknown: fail this request and the link.
      entry.reject(e as Error)
      this.fail(new NetworkException(`undecodable ${entry.api.name} response from ${this.describe()}; closing the connection`, { cause: e }))
      return
    }
    entry.resolve(msg)
  }

  /** Fails every pending request and closes the link. Idempotent. */
  fail(error: Error): void {
    if (this.closedError) return
    this.closedError = error
    if (!this.ready) this.ready = Promise.reject(error)
    this.ready.catch(() => {})
    for (const [, entry] of this.inFlight) {
      this.opts.clock.clearTimeout(entry.timer)
      entry.reject(error)
    }
    this.inFlight.clear()
    if (this.reauthTimer !== null) this.opts.clock.clearTimeout(this.reauthTimer)
    this.link?.close()
    this.log.debug('connection', this.negotiated ? 'connection closed' : 'connection failed', { broker: this.describe(), error: error.name, reason: error.message })
    this.onClose?.(error)
  }

  close(): void {
    this.fail(new ClosedError(`connection to ${this.describe()} was closed by the client`))
  }

  describe(): string {
    return `${this.address.host}:${this.address.port}${this.address.nodeId >= 0 ? ` (node ${this.address.nodeId})` : ''}`
  }
}

/**
 * A broker that does not know the ApiVersions version we sent answers UNSUPPORTED_VERSION in the v0
 * shape (so any client can read it); the error code is the first body field in every version.
 */
function isUnsupportedApiVersions(api: ApiSchema, frame: Uint8Array): boolean {
  return api.key === ApiVersions.key && frame.length >= 6 && ((frame[4]! << 8) | frame[5]!) === 35
}
