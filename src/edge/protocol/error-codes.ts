import {
  ApiException, AuthenticationException, AuthorizationException, CLASSES, InvalidMetadataException, RetriableException, nameClass,
} from '../errors.js'

/**
 * Where a Java exception sits: what the client may do about it, whatever the request.
 * - `retriable`: extends RetriableException; `metadata`: extends InvalidMetadataException (retriable
 *   after a metadata refresh); `authentication` / `authorization`: refused identity or grant;
 *   `api`: any other ApiException. How the producer reacts to a code in context (retry, bump the
 *   epoch, abort the transaction, end the producer) is producer/error-policy.ts's business.
 */
export type ErrorCategory = 'none' | 'api' | 'retriable' | 'metadata' | 'authentication' | 'authorization'

// Kafka 4.4's Errors enum, packed (test/unit/errors.test.ts compares it with the jar's): the bundle
// carries one string of names rather than 138 rows of [code, name, class, category].

/** The protocol names of codes -1 (UNKNOWN_SERVER_ERROR), 0 (NONE), 1, 2, ... 136, in order. */
const NAMES = (
  'UNKNOWN_SERVER_ERROR NONE OFFSET_OUT_OF_RANGE CORRUPT_MESSAGE UNKNOWN_TOPIC_OR_PARTITION ' +
  'INVALID_FETCH_SIZE LEADER_NOT_AVAILABLE NOT_LEADER_OR_FOLLOWER REQUEST_TIMED_OUT BROKER_NOT_AVAILABLE ' +
  'REPLICA_NOT_AVAILABLE MESSAGE_TOO_LARGE STALE_CONTROLLER_EPOCH OFFSET_METADATA_TOO_LARGE ' +
  'NETWORK_EXCEPTION COORDINATOR_LOAD_IN_PROGRESS COORDINATOR_NOT_AVAILABLE NOT_COORDINATOR ' +
  'INVALID_TOPIC_EXCEPTION RECORD_LIST_TOO_LARGE NOT_ENOUGH_REPLICAS NOT_ENOUGH_REPLICAS_AFTER_APPEND ' +
  'INVALID_REQUIRED_ACKS ILLEGAL_GENERATION INCONSISTENT_GROUP_PROTOCOL INVALID_GROUP_ID UNKNOWN_MEMBER_ID ' +
  'INVALID_SESSION_TIMEOUT REBALANCE_IN_PROGRESS INVALID_COMMIT_OFFSET_SIZE TOPIC_AUTHORIZATION_FAILED ' +
  'GROUP_AUTHORIZATION_FAILED CLUSTER_AUTHORIZATION_FAILED INVALID_TIMESTAMP UNSUPPORTED_SASL_MECHANISM ' +
  'ILLEGAL_SASL_STATE UNSUPPORTED_VERSION TOPIC_ALREADY_EXISTS INVALID_PARTITIONS ' +
  'INVALID_REPLICATION_FACTOR INVALID_REPLICA_ASSIGNMENT INVALID_CONFIG NOT_CONTROLLER INVALID_REQUEST ' +
  'UNSUPPORTED_FOR_MESSAGE_FORMAT POLICY_VIOLATION OUT_OF_ORDER_SEQUENCE_NUMBER DUPLICATE_SEQUENCE_NUMBER ' +
  'INVALID_PRODUCER_EPOCH INVALID_TXN_STATE INVALID_PRODUCER_ID_MAPPING INVALID_TRANSACTION_TIMEOUT ' +
  'CONCURRENT_TRANSACTIONS TRANSACTION_COORDINATOR_FENCED TRANSACTIONAL_ID_AUTHORIZATION_FAILED ' +
  'SECURITY_DISABLED OPERATION_NOT_ATTEMPTED KAFKA_STORAGE_ERROR LOG_DIR_NOT_FOUND ' +
  'SASL_AUTHENTICATION_FAILED UNKNOWN_PRODUCER_ID REASSIGNMENT_IN_PROGRESS DELEGATION_TOKEN_AUTH_DISABLED ' +
  'DELEGATION_TOKEN_NOT_FOUND DELEGATION_TOKEN_OWNER_MISMATCH DELEGATION_TOKEN_REQUEST_NOT_ALLOWED ' +
  'DELEGATION_TOKEN_AUTHORIZATION_FAILED DELEGATION_TOKEN_EXPIRED INVALID_PRINCIPAL_TYPE NON_EMPTY_GROUP ' +
  'GROUP_ID_NOT_FOUND FETCH_SESSION_ID_NOT_FOUND INVALID_FETCH_SESSION_EPOCH LISTENER_NOT_FOUND ' +
  'TOPIC_DELETION_DISABLED FENCED_LEADER_EPOCH UNKNOWN_LEADER_EPOCH UNSUPPORTED_COMPRESSION_TYPE ' +
  'STALE_BROKER_EPOCH OFFSET_NOT_AVAILABLE MEMBER_ID_REQUIRED PREFERRED_LEADER_NOT_AVAILABLE ' +
  'GROUP_MAX_SIZE_REACHED FENCED_INSTANCE_ID ELIGIBLE_LEADERS_NOT_AVAILABLE ELECTION_NOT_NEEDED ' +
  'NO_REASSIGNMENT_IN_PROGRESS GROUP_SUBSCRIBED_TO_TOPIC INVALID_RECORD UNSTABLE_OFFSET_COMMIT ' +
  'THROTTLING_QUOTA_EXCEEDED PRODUCER_FENCED RESOURCE_NOT_FOUND DUPLICATE_RESOURCE UNACCEPTABLE_CREDENTIAL ' +
  'INCONSISTENT_VOTER_SET INVALID_UPDATE_VERSION FEATURE_UPDATE_FAILED PRINCIPAL_DESERIALIZATION_FAILURE ' +
  'SNAPSHOT_NOT_FOUND POSITION_OUT_OF_RANGE UNKNOWN_TOPIC_ID DUPLICATE_BROKER_REGISTRATION ' +
  'BROKER_ID_NOT_REGISTERED INCONSISTENT_TOPIC_ID INCONSISTENT_CLUSTER_ID TRANSACTIONAL_ID_NOT_FOUND ' +
  'FETCH_SESSION_TOPIC_ID_ERROR INELIGIBLE_REPLICA NEW_LEADER_ELECTED OFFSET_MOVED_TO_TIERED_STORAGE ' +
  'FENCED_MEMBER_EPOCH UNRELEASED_INSTANCE_ID UNSUPPORTED_ASSIGNOR STALE_MEMBER_EPOCH ' +
  'MISMATCHED_ENDPOINT_TYPE UNSUPPORTED_ENDPOINT_TYPE UNKNOWN_CONTROLLER_ID UNKNOWN_SUBSCRIPTION_ID ' +
  'TELEMETRY_TOO_LARGE INVALID_REGISTRATION TRANSACTION_ABORTABLE INVALID_RECORD_STATE ' +
  'SHARE_SESSION_NOT_FOUND INVALID_SHARE_SESSION_EPOCH FENCED_STATE_EPOCH INVALID_VOTER_KEY DUPLICATE_VOTER ' +
  'VOTER_NOT_FOUND INVALID_REGULAR_EXPRESSION REBOOTSTRAP_REQUIRED STREAMS_INVALID_TOPOLOGY ' +
  'STREAMS_INVALID_TOPOLOGY_EPOCH STREAMS_TOPOLOGY_FENCED SHARE_SESSION_LIMIT_REACHED GROUP_DELETION_FAILED ' +
  'STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED CONTROLLER_ID_NOT_REGISTERED'
).split(' ')

/** One letter per code, in the same order: a api, r retriable, m metadata, n authentication, z authorization, - none. */
const CATEGORIES = 'a-armammramaaamrrraarraaaaaaaazzzannaaaaaaraaaaaaaaarazaamanaaaaaazaaaarrmamraaramaammaaarraaaaaaaaaamaamaaraaaaaaaaaaaaaaarraaaaaaaaaraaa'
const CATEGORY: Record<string, ErrorCategory> = { a: 'api', r: 'retriable', m: 'metadata', n: 'authentication', z: 'authorization', '-': 'none' }

/**
 * Java class names that do not follow from the protocol name. The rule: drop a trailing _ERROR or
 * _EXCEPTION, and _FAILED / _FAILURE after an -ATION word (TOPIC_AUTHORIZATION_FAILED), then
 * PascalCase plus 'Exception'.
 */
const EXCEPTIONS: Readonly<Record<number, string>> = {
  0: 'None', 2: 'CorruptRecordException', 7: 'TimeoutException', 10: 'RecordTooLargeException',
  11: 'ControllerMovedException', 12: 'OffsetMetadataTooLarge', 18: 'RecordBatchTooLargeException',
  36: 'TopicExistsException', 40: 'InvalidConfigurationException', 45: 'OutOfOrderSequenceException',
  46: 'DuplicateSequenceException', 49: 'InvalidPidMappingException', 50: 'InvalidTxnTimeoutException',
  61: 'DelegationTokenDisabledException', 64: 'UnsupportedByAuthenticationException',
  68: 'GroupNotEmptyException', 128: 'InvalidRegularExpression',
}

const javaName = (name: string): string =>
  name.replace(/_(ERROR|EXCEPTION)$|(?<=ATION)_FAIL(ED|URE)$/, '').toLowerCase().replace(/(?:^|_)([a-z])/g, (_, c: string) => c.toUpperCase()) + 'Exception'

export interface ErrorInfo {
  readonly code: number
  readonly name: string
  readonly exception: string
  readonly category: ErrorCategory
  readonly retriable: boolean
}

const BY_CODE = new Map<number, ErrorInfo>(NAMES.map((name, i) => {
  const code = i - 1
  const category = CATEGORY[CATEGORIES[i]!]!
  return [code, { code, name, exception: EXCEPTIONS[code] ?? javaName(name), category, retriable: category === 'retriable' || category === 'metadata' }]
}))
const BY_NAME = new Map<string, ErrorInfo>([...BY_CODE.values()].map((e) => [e.name, e]))

export function errorInfo(code: number): ErrorInfo {
  return BY_CODE.get(code) ?? { code, name: `UNKNOWN_ERROR_CODE_${code}`, exception: 'UnknownServerException', category: 'api', retriable: false }
}

/** The numeric code for a name, e.g. errorCode('NOT_LEADER_OR_FOLLOWER') === 6. Throws on unknown names. */
export function errorCode(name: string): number {
  const e = BY_NAME.get(name)
  if (!e) throw new Error(`unknown Kafka error name ${name}`)
  return e.code
}

export const allErrors = (): readonly ErrorInfo[] => [...BY_CODE.values()]

type ApiExceptionClass = new (message: string, opts?: { code?: number; errorName?: string; cause?: unknown }) => ApiException

const BASES: Record<ErrorCategory, ApiExceptionClass> = {
  none: ApiException, api: ApiException, retriable: RetriableException, metadata: InvalidMetadataException,
  authentication: AuthenticationException, authorization: AuthorizationException,
}
const DECLARED = CLASSES as unknown as Record<string, ApiExceptionClass | undefined>
const classes = new Map<string, ApiExceptionClass>()

/**
 * The class for a Java exception name: the one errors.ts declares, or one made here once, with that
 * name and the table's category as its parent, so every broker error can be caught by its Java name.
 */
export function exceptionClass(info: ErrorInfo): ApiExceptionClass {
  let cls = classes.get(info.exception) ?? DECLARED[info.exception]
  if (!cls) {
    cls = class extends BASES[info.category] {}
    nameClass(cls, info.exception)
  }
  classes.set(info.exception, cls)
  return cls
}

/** The broker's error `code` as an instance of its Java-named class, with the context in the message. */
export function apiError(code: number, context: string, brokerMessage?: string | null): ApiException {
  const e = errorInfo(code)
  const detail = brokerMessage ? `: ${brokerMessage}` : ''
  return new (exceptionClass(e))(`${context} failed with ${e.name} (${code})${detail}`, { code, errorName: e.name })
}
