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

/** Every broker error code: [code, protocol name, Java exception class, category], as in Kafka 4.4. */
const TABLE: ReadonlyArray<readonly [number, string, string, ErrorCategory]> = [
  [-1, 'UNKNOWN_SERVER_ERROR', 'UnknownServerException', 'api'],
  [0, 'NONE', 'None', 'none'],
  [1, 'OFFSET_OUT_OF_RANGE', 'OffsetOutOfRangeException', 'api'],
  [2, 'CORRUPT_MESSAGE', 'CorruptRecordException', 'retriable'],
  [3, 'UNKNOWN_TOPIC_OR_PARTITION', 'UnknownTopicOrPartitionException', 'metadata'],
  [4, 'INVALID_FETCH_SIZE', 'InvalidFetchSizeException', 'api'],
  [5, 'LEADER_NOT_AVAILABLE', 'LeaderNotAvailableException', 'metadata'],
  [6, 'NOT_LEADER_OR_FOLLOWER', 'NotLeaderOrFollowerException', 'metadata'],
  [7, 'REQUEST_TIMED_OUT', 'TimeoutException', 'retriable'],
  [8, 'BROKER_NOT_AVAILABLE', 'BrokerNotAvailableException', 'api'],
  [9, 'REPLICA_NOT_AVAILABLE', 'ReplicaNotAvailableException', 'metadata'],
  [10, 'MESSAGE_TOO_LARGE', 'RecordTooLargeException', 'api'],
  [11, 'STALE_CONTROLLER_EPOCH', 'ControllerMovedException', 'api'],
  [12, 'OFFSET_METADATA_TOO_LARGE', 'OffsetMetadataTooLarge', 'api'],
  [13, 'NETWORK_EXCEPTION', 'NetworkException', 'metadata'],
  [14, 'COORDINATOR_LOAD_IN_PROGRESS', 'CoordinatorLoadInProgressException', 'retriable'],
  [15, 'COORDINATOR_NOT_AVAILABLE', 'CoordinatorNotAvailableException', 'retriable'],
  [16, 'NOT_COORDINATOR', 'NotCoordinatorException', 'retriable'],
  [17, 'INVALID_TOPIC_EXCEPTION', 'InvalidTopicException', 'api'],
  [18, 'RECORD_LIST_TOO_LARGE', 'RecordBatchTooLargeException', 'api'],
  [19, 'NOT_ENOUGH_REPLICAS', 'NotEnoughReplicasException', 'retriable'],
  [20, 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', 'NotEnoughReplicasAfterAppendException', 'retriable'],
  [21, 'INVALID_REQUIRED_ACKS', 'InvalidRequiredAcksException', 'api'],
  [22, 'ILLEGAL_GENERATION', 'IllegalGenerationException', 'api'],
  [23, 'INCONSISTENT_GROUP_PROTOCOL', 'InconsistentGroupProtocolException', 'api'],
  [24, 'INVALID_GROUP_ID', 'InvalidGroupIdException', 'api'],
  [25, 'UNKNOWN_MEMBER_ID', 'UnknownMemberIdException', 'api'],
  [26, 'INVALID_SESSION_TIMEOUT', 'InvalidSessionTimeoutException', 'api'],
  [27, 'REBALANCE_IN_PROGRESS', 'RebalanceInProgressException', 'api'],
  [28, 'INVALID_COMMIT_OFFSET_SIZE', 'InvalidCommitOffsetSizeException', 'api'],
  [29, 'TOPIC_AUTHORIZATION_FAILED', 'TopicAuthorizationException', 'authorization'],
  [30, 'GROUP_AUTHORIZATION_FAILED', 'GroupAuthorizationException', 'authorization'],
  [31, 'CLUSTER_AUTHORIZATION_FAILED', 'ClusterAuthorizationException', 'authorization'],
  [32, 'INVALID_TIMESTAMP', 'InvalidTimestampException', 'api'],
  [33, 'UNSUPPORTED_SASL_MECHANISM', 'UnsupportedSaslMechanismException', 'authentication'],
  [34, 'ILLEGAL_SASL_STATE', 'IllegalSaslStateException', 'authentication'],
  [35, 'UNSUPPORTED_VERSION', 'UnsupportedVersionException', 'api'],
  [36, 'TOPIC_ALREADY_EXISTS', 'TopicExistsException', 'api'],
  [37, 'INVALID_PARTITIONS', 'InvalidPartitionsException', 'api'],
  [38, 'INVALID_REPLICATION_FACTOR', 'InvalidReplicationFactorException', 'api'],
  [39, 'INVALID_REPLICA_ASSIGNMENT', 'InvalidReplicaAssignmentException', 'api'],
  [40, 'INVALID_CONFIG', 'InvalidConfigurationException', 'api'],
  [41, 'NOT_CONTROLLER', 'NotControllerException', 'retriable'],
  [42, 'INVALID_REQUEST', 'InvalidRequestException', 'api'],
  [43, 'UNSUPPORTED_FOR_MESSAGE_FORMAT', 'UnsupportedForMessageFormatException', 'api'],
  [44, 'POLICY_VIOLATION', 'PolicyViolationException', 'api'],
  [45, 'OUT_OF_ORDER_SEQUENCE_NUMBER', 'OutOfOrderSequenceException', 'api'],
  [46, 'DUPLICATE_SEQUENCE_NUMBER', 'DuplicateSequenceException', 'api'],
  [47, 'INVALID_PRODUCER_EPOCH', 'InvalidProducerEpochException', 'api'],
  [48, 'INVALID_TXN_STATE', 'InvalidTxnStateException', 'api'],
  [49, 'INVALID_PRODUCER_ID_MAPPING', 'InvalidPidMappingException', 'api'],
  [50, 'INVALID_TRANSACTION_TIMEOUT', 'InvalidTxnTimeoutException', 'api'],
  [51, 'CONCURRENT_TRANSACTIONS', 'ConcurrentTransactionsException', 'retriable'],
  [52, 'TRANSACTION_COORDINATOR_FENCED', 'TransactionCoordinatorFencedException', 'api'],
  [53, 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED', 'TransactionalIdAuthorizationException', 'authorization'],
  [54, 'SECURITY_DISABLED', 'SecurityDisabledException', 'api'],
  [55, 'OPERATION_NOT_ATTEMPTED', 'OperationNotAttemptedException', 'api'],
  [56, 'KAFKA_STORAGE_ERROR', 'KafkaStorageException', 'metadata'],
  [57, 'LOG_DIR_NOT_FOUND', 'LogDirNotFoundException', 'api'],
  [58, 'SASL_AUTHENTICATION_FAILED', 'SaslAuthenticationException', 'authentication'],
  [59, 'UNKNOWN_PRODUCER_ID', 'UnknownProducerIdException', 'api'],
  [60, 'REASSIGNMENT_IN_PROGRESS', 'ReassignmentInProgressException', 'api'],
  [61, 'DELEGATION_TOKEN_AUTH_DISABLED', 'DelegationTokenDisabledException', 'api'],
  [62, 'DELEGATION_TOKEN_NOT_FOUND', 'DelegationTokenNotFoundException', 'api'],
  [63, 'DELEGATION_TOKEN_OWNER_MISMATCH', 'DelegationTokenOwnerMismatchException', 'api'],
  [64, 'DELEGATION_TOKEN_REQUEST_NOT_ALLOWED', 'UnsupportedByAuthenticationException', 'api'],
  [65, 'DELEGATION_TOKEN_AUTHORIZATION_FAILED', 'DelegationTokenAuthorizationException', 'authorization'],
  [66, 'DELEGATION_TOKEN_EXPIRED', 'DelegationTokenExpiredException', 'api'],
  [67, 'INVALID_PRINCIPAL_TYPE', 'InvalidPrincipalTypeException', 'api'],
  [68, 'NON_EMPTY_GROUP', 'GroupNotEmptyException', 'api'],
  [69, 'GROUP_ID_NOT_FOUND', 'GroupIdNotFoundException', 'api'],
  [70, 'FETCH_SESSION_ID_NOT_FOUND', 'FetchSessionIdNotFoundException', 'retriable'],
  [71, 'INVALID_FETCH_SESSION_EPOCH', 'InvalidFetchSessionEpochException', 'retriable'],
  [72, 'LISTENER_NOT_FOUND', 'ListenerNotFoundException', 'metadata'],
  [73, 'TOPIC_DELETION_DISABLED', 'TopicDeletionDisabledException', 'api'],
  [74, 'FENCED_LEADER_EPOCH', 'FencedLeaderEpochException', 'metadata'],
  [75, 'UNKNOWN_LEADER_EPOCH', 'UnknownLeaderEpochException', 'retriable'],
  [76, 'UNSUPPORTED_COMPRESSION_TYPE', 'UnsupportedCompressionTypeException', 'api'],
  [77, 'STALE_BROKER_EPOCH', 'StaleBrokerEpochException', 'api'],
  [78, 'OFFSET_NOT_AVAILABLE', 'OffsetNotAvailableException', 'retriable'],
  [79, 'MEMBER_ID_REQUIRED', 'MemberIdRequiredException', 'api'],
  [80, 'PREFERRED_LEADER_NOT_AVAILABLE', 'PreferredLeaderNotAvailableException', 'metadata'],
  [81, 'GROUP_MAX_SIZE_REACHED', 'GroupMaxSizeReachedException', 'api'],
  [82, 'FENCED_INSTANCE_ID', 'FencedInstanceIdException', 'api'],
  [83, 'ELIGIBLE_LEADERS_NOT_AVAILABLE', 'EligibleLeadersNotAvailableException', 'metadata'],
  [84, 'ELECTION_NOT_NEEDED', 'ElectionNotNeededException', 'metadata'],
  [85, 'NO_REASSIGNMENT_IN_PROGRESS', 'NoReassignmentInProgressException', 'api'],
  [86, 'GROUP_SUBSCRIBED_TO_TOPIC', 'GroupSubscribedToTopicException', 'api'],
  [87, 'INVALID_RECORD', 'InvalidRecordException', 'api'],
  [88, 'UNSTABLE_OFFSET_COMMIT', 'UnstableOffsetCommitException', 'retriable'],
  [89, 'THROTTLING_QUOTA_EXCEEDED', 'ThrottlingQuotaExceededException', 'retriable'],
  [90, 'PRODUCER_FENCED', 'ProducerFencedException', 'api'],
  [91, 'RESOURCE_NOT_FOUND', 'ResourceNotFoundException', 'api'],
  [92, 'DUPLICATE_RESOURCE', 'DuplicateResourceException', 'api'],
  [93, 'UNACCEPTABLE_CREDENTIAL', 'UnacceptableCredentialException', 'api'],
  [94, 'INCONSISTENT_VOTER_SET', 'InconsistentVoterSetException', 'api'],
  [95, 'INVALID_UPDATE_VERSION', 'InvalidUpdateVersionException', 'api'],
  [96, 'FEATURE_UPDATE_FAILED', 'FeatureUpdateFailedException', 'api'],
  [97, 'PRINCIPAL_DESERIALIZATION_FAILURE', 'PrincipalDeserializationException', 'api'],
  [98, 'SNAPSHOT_NOT_FOUND', 'SnapshotNotFoundException', 'api'],
  [100, 'UNKNOWN_TOPIC_ID', 'UnknownTopicIdException', 'metadata'],
  [101, 'DUPLICATE_BROKER_REGISTRATION', 'DuplicateBrokerRegistrationException', 'api'],
  [102, 'BROKER_ID_NOT_REGISTERED', 'BrokerIdNotRegisteredException', 'api'],
  [103, 'INCONSISTENT_TOPIC_ID', 'InconsistentTopicIdException', 'metadata'],
  [104, 'INCONSISTENT_CLUSTER_ID', 'InconsistentClusterIdException', 'api'],
  [105, 'TRANSACTIONAL_ID_NOT_FOUND', 'TransactionalIdNotFoundException', 'api'],
  [106, 'FETCH_SESSION_TOPIC_ID_ERROR', 'FetchSessionTopicIdException', 'retriable'],
  [107, 'INELIGIBLE_REPLICA', 'IneligibleReplicaException', 'api'],
  [108, 'NEW_LEADER_ELECTED', 'NewLeaderElectedException', 'api'],
  [109, 'OFFSET_MOVED_TO_TIERED_STORAGE', 'OffsetMovedToTieredStorageException', 'api'],
  [110, 'FENCED_MEMBER_EPOCH', 'FencedMemberEpochException', 'api'],
  [111, 'UNRELEASED_INSTANCE_ID', 'UnreleasedInstanceIdException', 'api'],
  [112, 'UNSUPPORTED_ASSIGNOR', 'UnsupportedAssignorException', 'api'],
  [113, 'STALE_MEMBER_EPOCH', 'StaleMemberEpochException', 'api'],
  [114, 'MISMATCHED_ENDPOINT_TYPE', 'MismatchedEndpointTypeException', 'api'],
  [115, 'UNSUPPORTED_ENDPOINT_TYPE', 'UnsupportedEndpointTypeException', 'api'],
  [116, 'UNKNOWN_CONTROLLER_ID', 'UnknownControllerIdException', 'api'],
  [117, 'UNKNOWN_SUBSCRIPTION_ID', 'UnknownSubscriptionIdException', 'api'],
  [118, 'TELEMETRY_TOO_LARGE', 'TelemetryTooLargeException', 'api'],
  [119, 'INVALID_REGISTRATION', 'InvalidRegistrationException', 'api'],
  [120, 'TRANSACTION_ABORTABLE', 'TransactionAbortableException', 'api'],
  [121, 'INVALID_RECORD_STATE', 'InvalidRecordStateException', 'api'],
  [122, 'SHARE_SESSION_NOT_FOUND', 'ShareSessionNotFoundException', 'retriable'],
  [123, 'INVALID_SHARE_SESSION_EPOCH', 'InvalidShareSessionEpochException', 'retriable'],
  [124, 'FENCED_STATE_EPOCH', 'FencedStateEpochException', 'api'],
  [125, 'INVALID_VOTER_KEY', 'InvalidVoterKeyException', 'api'],
  [126, 'DUPLICATE_VOTER', 'DuplicateVoterException', 'api'],
  [127, 'VOTER_NOT_FOUND', 'VoterNotFoundException', 'api'],
  [128, 'INVALID_REGULAR_EXPRESSION', 'InvalidRegularExpression', 'api'],
]

export interface ErrorInfo {
  readonly code: number
  readonly name: string
  readonly exception: string
  readonly category: ErrorCategory
  readonly retriable: boolean
}

const BY_CODE = new Map<number, ErrorInfo>(TABLE.map(([code, name, exception, category]) =>
  [code, { code, name, exception, category, retriable: category === 'retriable' || category === 'metadata' }]))
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
