import { KafkaEdgeError } from '../errors.js'

/** The WebAssembly core failed: it could not load, ran out of memory, or was misused (a batch used after finish). */
export class WasmCoreError extends KafkaEdgeError {}

/**
 * The requested compression codec is not compiled into this WebAssembly module. Pick another
 * `compression.type`, or load a core build that includes the codec.
 */
export class UnsupportedCompressionError extends WasmCoreError {
  readonly compression: string
  constructor(compression: string) {
    super(`compression.type '${compression}' is not built into this kafka-edge WebAssembly core; use a build that includes it or choose another codec`)
    this.compression = compression
  }
}
