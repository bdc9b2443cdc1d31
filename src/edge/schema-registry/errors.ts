import { ApiException, KafkaEdgeError, nameClass } from '../errors.js'

/**
 * The schema registry's errors, beside the producer's (errors.ts), named after the Java serializer's:
 *
 *   ApiException
 *   └─ SchemaRegistryException               (Java: RestClientException) status, errorCode, subject
 *      ├─ SchemaRegistryAuthenticationException   401: the credentials were refused
 *      ├─ SchemaRegistryAuthorizationException    403: not allowed for this subject
 *      ├─ SchemaNotFoundException                 404: no such subject, version or id
 *      ├─ IncompatibleSchemaException             409: the subject's compatibility rule refused it
 *      ├─ InvalidSchemaException                  422: the registry cannot parse the schema
 *      ├─ SchemaRegistryUnavailableException      network errors and 5xx, after the retries (retriable)
 *      └─ SchemaRegistryTimeoutException          no answer within max.block.ms (retriable)
 *   KafkaEdgeError
 *   └─ SerializationException                (Java: SerializationException) the value does not fit its schema
 */
export interface SchemaRegistryErrorOptions {
  /** The HTTP status; 0 when no response came. */
  status?: number
  /** The registry's own error code, e.g. 40401 (subject not found) or 42201 (invalid schema). */
  errorCode?: number
  subject?: string
  cause?: unknown
  retriable?: boolean
}

export class SchemaRegistryException extends ApiException {
  readonly status: number
  readonly errorCode: number | undefined
  readonly subject: string | undefined
  constructor(message: string, opts: SchemaRegistryErrorOptions = {}) {
    super(message, { cause: opts.cause, retriable: opts.retriable, code: opts.errorCode })
    this.status = opts.status ?? 0
    this.errorCode = opts.errorCode
    this.subject = opts.subject
  }
}

export class SchemaRegistryAuthenticationException extends SchemaRegistryException {}
export class SchemaRegistryAuthorizationException extends SchemaRegistryException {}
export class SchemaNotFoundException extends SchemaRegistryException {}
export class IncompatibleSchemaException extends SchemaRegistryException {}
export class InvalidSchemaException extends SchemaRegistryException {}
export class SchemaRegistryUnavailableException extends SchemaRegistryException {
  constructor(message: string, opts: SchemaRegistryErrorOptions = {}) { super(message, { ...opts, retriable: true }) }
}
export class SchemaRegistryTimeoutException extends SchemaRegistryException {
  constructor(message: string, opts: SchemaRegistryErrorOptions = {}) { super(message, { ...opts, retriable: true }) }
}

/** A value that does not fit its schema (a missing field, a wrong type, an out-of-range number); `path` points at it. */
export class SerializationException extends KafkaEdgeError {
  readonly subject: string | undefined
  readonly path: string
  constructor(message: string, opts: { subject?: string; path?: string; cause?: unknown } = {}) {
    super(message, { cause: opts.cause })
    this.subject = opts.subject
    this.path = opts.path ?? ''
  }
}

const CLASSES = {
  SchemaRegistryException, SchemaRegistryAuthenticationException, SchemaRegistryAuthorizationException, SchemaNotFoundException,
  IncompatibleSchemaException, InvalidSchemaException, SchemaRegistryUnavailableException, SchemaRegistryTimeoutException, SerializationException,
}
for (const [name, cls] of Object.entries(CLASSES)) nameClass(cls, name)

const BY_STATUS: Record<number, typeof SchemaRegistryException> = {
  401: SchemaRegistryAuthenticationException, 403: SchemaRegistryAuthorizationException, 404: SchemaNotFoundException,
  409: IncompatibleSchemaException, 422: InvalidSchemaException,
}

const ADVICE: Record<number, string> = {
  401: 'check basic.auth.user.info or bearer.auth.token',
  403: 'grant these credentials access to the subject, or use other credentials',
  404: 'register the schema first, or set auto.register.schemas=true',
  409: 'make the change compatible (e.g. give new fields defaults) or change the subject\'s compatibility level',
  422: 'fix the schema text',
}

/** The error for a registry answer that is not 2xx; `what` says what was asked ("register a schema under subject x"). */
export function registryError(status: number, body: { error_code?: unknown; message?: unknown } | null, what: string, subject: string | undefined): SchemaRegistryException {
  const errorCode = typeof body?.error_code === 'number' ? body.error_code : undefined
  const said = typeof body?.message === 'string' ? body.message : `HTTP ${status}`
  const cls = BY_STATUS[status] ?? (status >= 500 ? SchemaRegistryUnavailableException : SchemaRegistryException)
  const advice = ADVICE[status]
  return new cls(`schema registry could not ${what}: ${status}${errorCode ? ` (${errorCode})` : ''} ${said}${advice ? `; ${advice}` : ''}`, { status, errorCode, subject })
}
