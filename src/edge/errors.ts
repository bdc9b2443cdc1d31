/**
 * Every error class kafka-edge throws, named as the Java client names them and arranged as Java
 * arranges them, so `catch (e) { if (e instanceof RetriableException) ... }` reads as it does in Java:
 *
 *   KafkaEdgeError                      (Java: KafkaException)
 *   ├─ ApiException                     an error with a Java name; `code` when a broker sent it
 *   │  ├─ RetriableException            the same call may succeed later
 *   │  │  ├─ InvalidMetadataException   ...after a metadata refresh (NotLeaderOrFollower, NetworkException, ...)
 *   │  │  └─ TimeoutException           (BufferExhaustedException)
 *   │  ├─ AuthenticationException       SASL, TLS, a relay token
 *   │  ├─ AuthorizationException        ACLs, a relay token's grants
 *   │  └─ RecordTooLargeException, ProducerFencedException, OutOfOrderSequenceException, ...
 *   ├─ ConfigException, ProtocolError, ClosedError, IllegalStateException
 *   ├─ TransactionAbortedException, TransactionAbortableException, FatalTransactionException
 *   └─ WasmCoreError                    the WebAssembly core and its codecs
 *
 * Each broker error code has its class (protocol/error-codes.ts maps them); the ones a producer can
 * meet are declared here, the rest are made from the table with the same names and parents.
 *
 * Names are set on each prototype from the literal keys of CLASSES below, so they survive
 * minification (a bundler renames classes; `new.target.name` would report 'p').
 */
export class KafkaEdgeError extends Error {
  declare readonly name: string
  readonly retriable: boolean
  /**
   * On a failed send(): true when the record was sent at least once and the outcome was never
   * confirmed, so it may be in the log; false when it certainly is not. Absent on other errors.
   */
  mayHaveBeenWritten?: boolean
  constructor(message: string, opts: { retriable?: boolean; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause })
    this.retriable = opts.retriable ?? false
  }
}

export interface ApiExceptionOptions {
  cause?: unknown
  /** The broker's error code, when a broker sent it. */
  code?: number
  /** The protocol's name for the code, e.g. NOT_LEADER_OR_FOLLOWER. */
  errorName?: string
}

/** An error with a Java exception name. `code` and `errorName` are set when a broker returned it. */
export class ApiException extends KafkaEdgeError {
  readonly code: number | undefined
  readonly errorName: string | undefined
  constructor(message: string, opts: ApiExceptionOptions & { retriable?: boolean } = {}) {
    super(message, { retriable: opts.retriable, cause: opts.cause })
    this.code = opts.code
    this.errorName = opts.errorName
  }
}

/** The same call may succeed later (Java: RetriableException). */
export class RetriableException extends ApiException {
  constructor(message: string, opts: ApiExceptionOptions = {}) {
    super(message, { ...opts, retriable: true })
  }
}

/** Retriable once metadata is refreshed: the partition's leader or the connection is in doubt. */
export class InvalidMetadataException extends RetriableException {}

/** The connection failed or closed before the response arrived. */
export class NetworkException extends InvalidMetadataException {}
export class LeaderNotAvailableException extends InvalidMetadataException {}
export class NotLeaderOrFollowerException extends InvalidMetadataException {}
export class UnknownTopicOrPartitionException extends InvalidMetadataException {}
export class UnknownTopicIdException extends InvalidMetadataException {}
export class KafkaStorageException extends InvalidMetadataException {}
export class FencedLeaderEpochException extends InvalidMetadataException {}

/** The operation did not complete in time. */
export class TimeoutException extends RetriableException {}

/** buffer.memory stayed full for max.block.ms: slow down or raise buffer.memory (Java: a TimeoutException). */
export class BufferExhaustedException extends TimeoutException {}

export class NotEnoughReplicasException extends RetriableException {}
/** The broker appended the records but could not replicate them in time: they may be in the log. */
export class NotEnoughReplicasAfterAppendException extends RetriableException {}
export class CorruptRecordException extends RetriableException {}
export class NotCoordinatorException extends RetriableException {}
export class CoordinatorNotAvailableException extends RetriableException {}
export class CoordinatorLoadInProgressException extends RetriableException {}
export class ConcurrentTransactionsException extends RetriableException {}
export class ThrottlingQuotaExceededException extends RetriableException {}

/**
 * The peer could not be authenticated, or refused our identity: a relay token, SASL credentials, a
 * TLS certificate. Not retried with the same credentials.
 */
export class AuthenticationException extends ApiException {}

/** SASL credentials were refused, or the broker failed to prove it knows them (SCRAM). */
export class SaslAuthenticationException extends AuthenticationException {}

/** The broker does not enable the SASL mechanism asked for; the message lists the ones it offers. */
export class UnsupportedSaslMechanismException extends AuthenticationException {}

/** The listener does not expect SASL at this point: usually security.protocol does not match the port. */
export class IllegalSaslStateException extends AuthenticationException {}

/**
 * The TLS handshake failed: an unknown CA, a hostname that is not in the certificate, an expired
 * certificate, or a peer that does not speak TLS. `host` names the broker, `reason` the cause.
 */
export class SslAuthenticationException extends AuthenticationException {
  constructor(readonly host: string, readonly reason: string, message: string, opts: { cause?: unknown } = {}) {
    super(message, opts)
  }
}

/** The caller is authenticated but not allowed this API, topic, transactional id or group. */
export class AuthorizationException extends ApiException {}
export class TopicAuthorizationException extends AuthorizationException {}
export class GroupAuthorizationException extends AuthorizationException {}
export class ClusterAuthorizationException extends AuthorizationException {}
export class TransactionalIdAuthorizationException extends AuthorizationException {}

/** A record is larger than max.request.size or buffer.memory, or than the broker or topic allows. */
export class RecordTooLargeException extends ApiException {}
/** Another producer with the same transactional.id (or a newer epoch) took over: this one is a zombie. Fatal: close it. */
export class ProducerFencedException extends ApiException {}
export class InvalidProducerEpochException extends ApiException {}
export class OutOfOrderSequenceException extends ApiException {}
export class UnknownProducerIdException extends OutOfOrderSequenceException {}
export class DuplicateSequenceException extends ApiException {}
export class InvalidTxnStateException extends ApiException {}
export class InvalidPidMappingException extends ApiException {}
/** The broker asks for the transaction to be aborted (KIP-890); abort, then begin a new one. */
export class TransactionAbortableException extends ApiException {}
export class UnsupportedVersionException extends ApiException {}
export class UnsupportedCompressionTypeException extends ApiException {}
export class InvalidRecordException extends ApiException {}
export class InvalidTopicException extends ApiException {}
export class InvalidRequiredAcksException extends ApiException {}
export class InvalidTimestampException extends ApiException {}
export class PolicyViolationException extends ApiException {}
export class UnknownServerException extends ApiException {}

/** Bytes from the network that do not parse: truncated, oversized or inconsistent. */
export class ProtocolError extends KafkaEdgeError {}

/** A setting is missing, of the wrong type or in conflict with another; fix the config. */
export class ConfigException extends KafkaEdgeError {}

/** The producer or client was closed; create a new one. */
export class ClosedError extends KafkaEdgeError {}

/** A transactional method was called in a state that does not allow it; the state is unchanged. */
export class IllegalStateException extends KafkaEdgeError {}

/** A record of a transaction that was aborted before the record was sent. */
export class TransactionAbortedException extends KafkaEdgeError {}

/**
 * The producer hit an error it cannot recover from (see `cause`): close it and create a new one.
 * A broker's error for it keeps its own class (ProducerFencedException, ...); this one wraps the rest.
 */
export class FatalTransactionException extends KafkaEdgeError {
  readonly fatal = true
}

/** The WebAssembly core failed: it could not load, ran out of memory, or was misused (a batch used after finish). */
export class WasmCoreError extends KafkaEdgeError {}

/**
 * The requested compression codec is not compiled into this WebAssembly module. Pick another
 * `compression.type`, or load a core build that includes the codec.
 */
export class UnsupportedCompressionError extends WasmCoreError {
  readonly compression: string
  constructor(compression: string, message?: string) {
    super(message ?? `compression.type '${compression}' is not built into this kafka-edge WebAssembly core; ` +
      `use a build that includes it (the default core, or kafka-edge/core-${compression}.wasm) or choose another codec`)
    this.compression = compression
  }
}

/** The codec status codes of assembly/codecs/common.ts. */
export const CODEC_STATUS = {
  DST_TOO_SMALL: -1, NOT_BUILT: -2, TRUNCATED: -3, CORRUPT: -4, CHECKSUM: -5, UNSUPPORTED: -6,
} as const

const CODEC_REASONS: Record<number, string> = {
  [-1]: 'output buffer too small',
  [-2]: 'codec not built into this module',
  [-3]: 'truncated compressed data',
  [-4]: 'corrupt compressed data',
  [-5]: 'checksum mismatch',
  [-6]: 'unsupported feature in compressed data',
}

/** Base class: a codec call returned a negative status (CODEC_STATUS) in `status`. */
export class CompressionCodecError extends WasmCoreError {
  readonly codec: string
  readonly status: number
  constructor(codec: string, status: number, message?: string) {
    super(message ?? `${codec}: ${CODEC_REASONS[status] ?? `error ${status}`}`)
    this.codec = codec
    this.status = status
  }
}

/**
 * Compressed input is truncated (-3), malformed (-4), fails a checksum (-5) or uses a feature the
 * decoder does not implement (-6): the records cannot be read. Retrying will not help.
 */
export class CorruptCompressedDataError extends CompressionCodecError {
  constructor(codec: string, status: number) {
    super(codec, status, `${codec}: ${CODEC_REASONS[status] ?? `error ${status}`}; the compressed records cannot be read`)
  }
}

/**
 * Decompressed data would exceed the output limit (Core.decompress's maxBytes). Either the input is
 * hostile or corrupt, or the limit is too low for it: raise maxBytes if the data is trusted.
 */
export class DecompressedSizeLimitError extends CompressionCodecError {
  readonly maxBytes: number
  constructor(codec: string, maxBytes: number) {
    super(codec, CODEC_STATUS.DST_TOO_SMALL, `${codec}: decompressed data exceeds the limit of ${maxBytes} bytes; raise maxBytes if the input is trusted`)
    this.maxBytes = maxBytes
  }
}

/**
 * The producer's CheckpointStore failed (load or save), or a checkpoint it loaded is corrupt. A
 * failed save means the batches it should have held were not sent (mayHaveBeenWritten: false).
 */
export class CheckpointException extends KafkaEdgeError {}

/** Every class above by its Java (or kafka-edge) name: the names survive minification from these keys. */
export const CLASSES = {
  KafkaEdgeError, ApiException, RetriableException, InvalidMetadataException, NetworkException, LeaderNotAvailableException,
  NotLeaderOrFollowerException, UnknownTopicOrPartitionException, UnknownTopicIdException, KafkaStorageException,
  FencedLeaderEpochException, TimeoutException, BufferExhaustedException, NotEnoughReplicasException,
  NotEnoughReplicasAfterAppendException, CorruptRecordException, NotCoordinatorException, CoordinatorNotAvailableException,
  CoordinatorLoadInProgressException, ConcurrentTransactionsException, ThrottlingQuotaExceededException,
  AuthenticationException, SaslAuthenticationException, UnsupportedSaslMechanismException, IllegalSaslStateException,
  SslAuthenticationException, AuthorizationException, TopicAuthorizationException, GroupAuthorizationException,
  ClusterAuthorizationException, TransactionalIdAuthorizationException, RecordTooLargeException, ProducerFencedException,
  InvalidProducerEpochException, OutOfOrderSequenceException, UnknownProducerIdException, DuplicateSequenceException,
  InvalidTxnStateException, InvalidPidMappingException, TransactionAbortableException, UnsupportedVersionException,
  UnsupportedCompressionTypeException, InvalidRecordException, InvalidTopicException, InvalidRequiredAcksException,
  InvalidTimestampException, PolicyViolationException, UnknownServerException, ProtocolError, ConfigException, ClosedError,
  IllegalStateException, TransactionAbortedException, FatalTransactionException, WasmCoreError, UnsupportedCompressionError,
  CompressionCodecError, CorruptCompressedDataError, DecompressedSizeLimitError, CheckpointException,
} as const

for (const [name, cls] of Object.entries(CLASSES)) nameClass(cls, name)

/** @internal Gives a class (and its instances, through the prototype) a name that no minifier can change. */
export function nameClass(cls: abstract new (...args: never[]) => unknown, name: string): void {
  Object.defineProperty(cls, 'name', { value: name, configurable: true })
  Object.defineProperty(cls.prototype, 'name', { value: name, writable: true, configurable: true, enumerable: false })
}

/**
 * Header on records a producer re-sent under a new producer id because the broker may hold them
 * already: the labelled side of honest delivery, as `mayHaveBeenWritten` is the failed side. It lives
 * here, with no dependencies, so the browser SDK's page-load chunk can export it without the producer.
 */
export const POSSIBLE_DUPLICATE_HEADER = 'kafka-edge.possible-duplicate'

/**
 * @internal
 * A send() that failed. `mayHaveBeenWritten` is true when the record was sent at least once and the
 * outcome was never confirmed (e.g. delivery.timeout.ms expired while a request was in flight).
 */
export function markDelivery<E extends Error>(err: E, mayHaveBeenWritten: boolean): E & { mayHaveBeenWritten: boolean } {
  return Object.assign(err, { mayHaveBeenWritten })
}
