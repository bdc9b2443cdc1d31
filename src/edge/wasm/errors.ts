import { KafkaEdgeError } from '../errors.js'

/** The WebAssembly core failed: it could not load, ran out of memory, or was misused (a batch used after finish). */
export class WasmCoreError extends KafkaEdgeError {}

/**
 * The requested compression codec is not compiled into this WebAssembly module. Pick another
 * `compression.type`, or load a core build that includes the codec.
 */
export class UnsupportedCompressionError extends WasmCoreError {
  readonly compression: string
  constructor(compression: string, message?: string) {
    super(message ?? `compression.type '${compression}' is not built into this kafka-edge WebAssembly core; use a build that includes it (the default core, or kafka-edge/core-${compression}.wasm) or choose another codec`)
    this.compression = compression
  }
}

/** The codec status codes of assembly/codecs/common.ts. */
export const CODEC_STATUS = {
  DST_TOO_SMALL: -1, NOT_BUILT: -2, TRUNCATED: -3, CORRUPT: -4, CHECKSUM: -5, UNSUPPORTED: -6,
} as const

const REASONS: Record<number, string> = {
  [-1]: 'output buffer too small',
  [-2]: 'codec not built into this module',
  [-3]: 'truncated compressed data',
  [-4]: 'corrupt compressed data',
  [-5]: 'checksum mismatch',
  [-6]: 'unsupported feature in compressed data',
}

/** Base class: a codec call returned a negative status `code` (CODEC_STATUS). */
export class CompressionCodecError extends WasmCoreError {
  readonly codec: string
  readonly code: number
  constructor(codec: string, code: number, message?: string) {
    super(message ?? `${codec}: ${REASONS[code] ?? `error ${code}`}`)
    this.codec = codec
    this.code = code
  }
}

/**
 * Compressed input is truncated (code -3), malformed (-4), fails a checksum (-5) or uses a feature
 * the decoder does not implement (-6): the records cannot be read. Retrying will not help.
 */
export class CorruptCompressedDataError extends CompressionCodecError {
  constructor(codec: string, code: number) {
    super(codec, code, `${codec}: ${REASONS[code] ?? `error ${code}`}; the compressed records cannot be read`)
  }
}

/**
 * Decompressed data would exceed the output limit (Core.decompress's maxBytes). Either the
 * input is hostile or corrupt, or the limit is too low for it: raise maxBytes if the data is trusted.
 */
export class DecompressedSizeLimitError extends CompressionCodecError {
  readonly maxBytes: number
  constructor(codec: string, maxBytes: number) {
    super(codec, CODEC_STATUS.DST_TOO_SMALL, `${codec}: decompressed data exceeds the limit of ${maxBytes} bytes; raise maxBytes if the input is trusted`)
    this.maxBytes = maxBytes
  }
}
