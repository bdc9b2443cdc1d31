import { ProtocolError } from '../edge/errors.js'

/**
 * Splits a broker's byte stream into whole frames, size prefix included, so the relay forwards each
 * answer as the broker wrote it. A frame inside one chunk is a view of that chunk (every socket read
 * is a fresh buffer, so a view stays valid); only a frame that straddles chunks is copied, once, when
 * its last byte arrives. The producer's FrameDecoder returns bodies instead, copied out, because the
 * producer decodes them; the relay only reads their correlation id.
 *
 * A negative or oversized size is a ProtocolError: the stream cannot be resynchronised. Memory held
 * for a partial frame is what arrived of it, never the size it claims.
 */
export class FrameSplitter {
  private pieces: Buffer[] = []
  private have = 0
  /** Length of the partial frame, prefix included; -1 while its prefix is incomplete. */
  private need = -1
  /** The partial frame, once its last byte arrived. */
  private complete: Buffer | null = null

  constructor(private readonly maxFrameBytes: number) {}

  push(chunk: Buffer): Buffer[] {
    const frames: Buffer[] = []
    let pos = 0
    if (this.have > 0) {
      pos = this.continuePartial(chunk)
      if (this.have > 0) return frames
      frames.push(this.complete!)
      this.complete = null
    }
    while (chunk.length - pos >= 4) {
      const whole = 4 + this.size(chunk, pos)
      if (chunk.length - pos < whole) break
      frames.push(chunk.subarray(pos, pos + whole))
      pos += whole
    }
    if (pos < chunk.length) {
      const rest = chunk.subarray(pos)
      this.pieces.push(rest)
      this.have = rest.length
      this.need = rest.length >= 4 ? 4 + this.size(rest, 0) : -1
    }
    return frames
  }

  /** Feeds the start of `chunk` to the partial frame; returns how many bytes it took. */
  private continuePartial(chunk: Buffer): number {
    let pos = 0
    if (this.need < 0) {
      const head = Buffer.concat([...this.pieces, chunk.subarray(0, 4 - this.have)])
      pos = head.length - this.have
      this.pieces = [head]
      this.have = head.length
      if (head.length < 4) return pos
      this.need = 4 + this.size(head, 0)
    }
    const take = Math.min(this.need - this.have, chunk.length - pos)
    this.pieces.push(chunk.subarray(pos, pos + take))
    this.have += take
    pos += take
    if (this.have === this.need) {
      this.complete = Buffer.concat(this.pieces, this.need)
      this.pieces = []
      this.have = 0
      this.need = -1
    }
    return pos
  }

  private size(b: Buffer, at: number): number {
    const size = b.readInt32BE(at)
    if (size < 0 || size > this.maxFrameBytes) throw new ProtocolError(`frame size ${size} is outside 0..${this.maxFrameBytes}; the stream is corrupt`)
    return size
  }
}
