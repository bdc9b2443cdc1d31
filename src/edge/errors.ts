/**
 * Typed errors, named as the Java client names them, each saying what the caller can do about it.
 * `retriable` means the same call may succeed later; `mayHaveBeenWritten` (on send failures) means
 * the broker might have appended the record before the failure became visible.
 */
export class KafkaEdgeError extends Error {
  readonly retriable: boolean
  constructor(message: string, opts: { retriable?: boolean; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause })
    this.name = new.target.name
    this.retriable = opts.retriable ?? false
  }
}

/** Bytes from the network that do not parse: truncated, oversized or inconsistent. */
export class ProtocolError extends KafkaEdgeError {}

/** A setting is missing, of the wrong type or in conflict with another; fix the config. */
export class ConfigException extends KafkaEdgeError {}

/** The operation did not complete in time. Retriable. */
export class TimeoutException extends KafkaEdgeError {
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { retriable: true, ...opts })
  }
}

/** The connection failed or closed before the response arrived. Retriable. */
export class NetworkException extends KafkaEdgeError {
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { retriable: true, ...opts })
  }
}

/** The producer or client was closed; create a new one. */
export class ClosedError extends KafkaEdgeError {}

/** A record is larger than max.request.size / buffer.memory, or the broker's message.max.bytes. */
export class RecordTooLargeException extends KafkaEdgeError {}

/** buffer.memory stayed full for max.block.ms. Retriable: slow down or raise buffer.memory. */
export class BufferExhaustedException extends KafkaEdgeError {
  constructor(message: string) {
    super(message, { retriable: true })
  }
}

/**
 * The peer could not be authenticated, or refused our identity: a relay token, SASL credentials, a
 * TLS certificate. Not retried with the same credentials (Java: AuthenticationException).
 */
export class AuthenticationException extends KafkaEdgeError {}

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

/** The caller is authenticated but not allowed this API, topic, transactional id or group. Not retriable. */
export class AuthorizationException extends KafkaEdgeError {}

/** An error code returned by a broker. `name` is the Java exception name for `code`. */
export class KafkaApiError extends KafkaEdgeError {
  readonly code: number
  readonly errorName: string
  constructor(code: number, errorName: string, exceptionName: string, retriable: boolean, message: string) {
    super(message, { retriable })
    this.code = code
    this.errorName = errorName
    this.name = exceptionName
  }
}

/**
 * A send() that failed. `mayHaveBeenWritten` is true when the record was sent at least once and the
 * outcome was never confirmed (e.g. delivery.timeout.ms expired while a request was in flight).
 */
export function markDelivery<E extends Error>(err: E, mayHaveBeenWritten: boolean): E & { mayHaveBeenWritten: boolean } {
  return Object.assign(err, { mayHaveBeenWritten })
}
