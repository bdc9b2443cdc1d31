import { errorCode, errorInfo } from '../protocol/index.js'

/**
 * How the producer reacts to a broker error code, decided in one place from the classification in
 * protocol/error-codes.ts. The per-request handlers of the transaction coordinator client keep their
 * own case lists, as Java's TransactionManager handlers do: there the same code means different
 * things for different requests (INVALID_PRODUCER_EPOCH is fencing from the coordinator, abortable
 * from a partition leader).
 */

const code = errorCode

/**
 * The partition's leader is in doubt after this answer: forget it and refresh metadata before the
 * retry. Java: the exception is an InvalidMetadataException (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_ID,
 * a network error, ...).
 */
export function invalidatesMetadata(errorCode: number): boolean {
  return errorInfo(errorCode).category === 'metadata'
}

/**
 * The records may be in the log although the request failed: no answer at all (a network error, a
 * timeout), or NOT_ENOUGH_REPLICAS_AFTER_APPEND. A later definite error cannot take that back.
 */
const AMBIGUOUS = new Set([code('REQUEST_TIMED_OUT'), code('NETWORK_EXCEPTION'), code('NOT_ENOUGH_REPLICAS_AFTER_APPEND')])
export function isAmbiguous(errorCode: number): boolean {
  return AMBIGUOUS.has(errorCode)
}

/**
 * Refusals that judge the producer's epoch or transaction state at this attempt, not the batch. An
 * earlier attempt may have been appended before that state moved on (a copy a relay delivered twice,
 * answered after the copy the client read), so after a retry they cannot say "not written".
 */
const STATE_REFUSALS = new Set([
  code('INVALID_PRODUCER_EPOCH'), code('INVALID_TXN_STATE'), code('INVALID_PRODUCER_ID_MAPPING'), code('PRODUCER_FENCED'), code('TRANSACTION_ABORTABLE'),
])
export function refusesProducerState(errorCode: number): boolean {
  return STATE_REFUSALS.has(errorCode)
}

/**
 * A resumed batch (sent again from a checkpoint under its old producer id) met a broker that no
 * longer holds that producer's state as the checkpoint had it: the batch may be in the log, and its
 * records go out again under a new id, labelled as possible duplicates.
 */
const RESUME_REFUSALS = new Set([
  code('OUT_OF_ORDER_SEQUENCE_NUMBER'), code('UNKNOWN_PRODUCER_ID'), code('INVALID_PRODUCER_EPOCH'), code('PRODUCER_FENCED'), code('INVALID_PRODUCER_ID_MAPPING'),
])
export function refusesResumedState(errorCode: number): boolean {
  return RESUME_REFUSALS.has(errorCode)
}

/**
 * Errors after which the producer cannot go on: it must be closed (Java: maybeTransitionToErrorState's
 * fatal classes). INVALID_PRODUCER_ID_MAPPING ends an idempotent producer; a transactional one
 * recovers from it by aborting and re-registering with its coordinator, so for it it is abortable.
 */
const FATAL = new Set([
  code('CLUSTER_AUTHORIZATION_FAILED'), code('UNSUPPORTED_VERSION'), code('TRANSACTIONAL_ID_AUTHORIZATION_FAILED'), code('PRODUCER_FENCED'),
])
export function isFatal(errorCode: number, opts: { transactional: boolean }): boolean {
  return FATAL.has(errorCode) || (!opts.transactional && errorCode === code('INVALID_PRODUCER_ID_MAPPING'))
}
