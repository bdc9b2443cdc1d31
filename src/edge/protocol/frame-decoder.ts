import { ProtocolError, SslAuthenticationException } from '../errors.js'

export const DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024

/**
 * Splits a byte stream into Kafka frames (int32 big-endian size + body). Bytes are copied once into a
 * growable buffer only when a frame straddles chunks. A negative or oversized size is a ProtocolError:
 * the stream cannot be resynchronised, so the caller must close the link.
 */
export class FrameDecoder {
  private pending: Uint8Array | null = null
  private pendingLen = 0

  constructor(private readonly maxFrameBytes = DEFAULT_MAX_FRAME_BYTES) {}

  /** Feeds a chunk; returns the complete frame bodies it finished (size prefix removed). */
  push(chunk: Uint8Array): Uint8Array[] {
    let data = chunk
    if (this.pending) {
      this.append(chunk)
      data = this.pending.subarray(0, this.pendingLen)
    }
    const frames: Uint8Array[] = []
    let pos = 0
    while (data.length - pos >= 4) {
      const size = ((data[pos]! << 24) | (data[pos + 1]! << 16) | (data[pos + 2]! << 8) | data[pos + 3]!)
      if (size < 0 || size > this.maxFrameBytes) {
        throw new ProtocolError(`frame size ${size} is outside 0..${this.maxFrameBytes}; the stream is corrupt`)
      }
      if (data.length - pos - 4 < size) break
      frames.push(data.slice(pos + 4, pos + 4 + size))
      pos += 4 + size
    }
    const rest = data.length - pos
    if (rest === 0) { this.pending = null; this.pendingLen = 0 }
    else if (data !== chunk || this.pending) {
      this.pending!.copyWithin(0, pos, this.pendingLen)
      this.pendingLen = rest
    } else {
      this.pending = null
      this.pendingLen = 0
      this.append(chunk.subarray(pos))
    }
    return frames
  }

  /** Bytes buffered toward an incomplete frame. */
  get buffered(): number { return this.pendingLen }

  private append(bytes: Uint8Array): void {
    const need = this.pendingLen + bytes.length
    if (!this.pending || this.pending.length < need) {
      const next = new Uint8Array(Math.max(need, (this.pending?.length ?? 0) * 2, 4096))
      if (this.pending) next.set(this.pending.subarray(0, this.pendingLen))
      this.pending = next
    }
    this.pending.set(bytes, this.pendingLen)
    this.pendingLen = need
  }
}

/**
 * Bytes that open a TLS record (handshake or alert, TLS 1.0-1.3) where a Kafka frame size was
 * expected: a plaintext client reached a TLS listener. Worth telling apart from a corrupt stream,
 * because the fix is a setting, not a retry.
 */
export function looksLikeTlsRecord(chunk: Uint8Array): boolean {
  return chunk.length >= 3 && (chunk[0] === 0x15 || chunk[0] === 0x16) && chunk[1] === 0x03 && chunk[2]! <= 0x04
}

export function plaintextToTlsError(host: string, port: number): SslAuthenticationException {
  return new SslAuthenticationException(host, 'broker expects TLS',
    `${host}:${port} answered with TLS: its listener expects TLS, and this producer speaks plaintext. Set security.protocol to SSL (or SASL_SSL) or use the plaintext port`)
}
