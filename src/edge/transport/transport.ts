/**
 * The one seam between the producer and the network. A transport carries whole Kafka frames
 * (int32 size prefix included) both ways; byte-stream transports re-frame with FrameDecoder.
 * The producer never imports a transport: one is injected through the config.
 */
export interface BrokerAddress {
  readonly host: string
  readonly port: number
  /** -1 for a bootstrap server whose id is not yet known. */
  readonly nodeId: number
}

export interface LinkHandlers {
  /** One complete response frame, size prefix removed. */
  onFrame(frame: Uint8Array): void
  /** The link closed; `error` says why when it was not a local close(). */
  onClose(error?: Error): void
}

export interface Link {
  /** Writes one frame; resolves once the transport accepted it (backpressure waits here). */
  write(frame: Uint8Array): Promise<void>
  close(): void
}

export interface Transport {
  readonly name: string
  open(address: BrokerAddress, handlers: LinkHandlers): Promise<Link>
}
