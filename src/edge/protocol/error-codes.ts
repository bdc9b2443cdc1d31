import { KafkaApiError } from '../errors.js'

/**
 * Every broker error code: [code, name, Java exception class, retriable]. Retriable is the Java
 * client's classification (the exception extends RetriableException). How the producer reacts to
 * each code in context (retry, bump the epoch, abort the transaction, fail) lives in
 * producer/error-policy.ts; this table only names and classifies.
 */
const TABLE: ReadonlyArray<readonly [number, string, string, boolean]> = [
  [-1, 'UNKNOWN_SERVER_ERROR', 'UnknownServerException', false],
  [0, 'NONE', 'None', false],
  [1, 'OFFSET_OUT_OF_RANGE', 'OffsetOutOfRangeException', false],
  [2, 'CORRUPT_MESSAGE', 'CorruptRecordException', true],
  [3, 'UNKNOWN_TOPIC_OR_PARTITION', 'UnknownTopicOrPartitionException', true],
  [4, 'INVALID_FETCH_SIZE', 'InvalidFetchSizeException', false],
  [5, 'LEADER_NOT_AVAILABLE', 'LeaderNotAvailableException', true],
  [6, 'NOT_LEADER_OR_FOLLOWER', 'NotLeaderOrFollowerException', true],
  [7, 'REQUEST_TIMED_OUT', 'TimeoutException', true],
  [8, 'BROKER_NOT_AVAILABLE', 'BrokerNotAvailableException', false],
  [9, 'REPLICA_NOT_AVAILABLE', 'ReplicaNotAvailableException', true],
  [10, 'MESSAGE_TOO_LARGE', 'RecordTooLargeException', false],
  [11, 'STALE_CONTROLLER_EPOCH', 'ControllerMovedException', false],
  [12, 'OFFSET_METADATA_TOO_LARGE', 'OffsetMetadataTooLarge', false],
  [13, 'NETWORK_EXCEPTION', 'NetworkException', true],
  [14, 'COORDINATOR_LOAD_IN_PROGRESS', 'CoordinatorLoadInProgressException', true],
  [15, 'COORDINATOR_NOT_AVAILABLE', 'CoordinatorNotAvailableException', true],
  [16, 'NOT_COORDINATOR', 'NotCoordinatorException', true],
  [17, 'INVALID_TOPIC_EXCEPTION', 'InvalidTopicException', false],
  [18, 'RECORD_LIST_TOO_LARGE', 'RecordBatchTooLargeException', false],
  [19, 'NOT_ENOUGH_REPLICAS', 'NotEnoughReplicasException', true],
  [20, 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', 'NotEnoughReplicasAfterAppendException', true],
  [21, 'INVALID_REQUIRED_ACKS', 'InvalidRequiredAcksException', false],
  [22, 'ILLEGAL_GENERATION', 'IllegalGenerationException', false],
  [23, 'INCONSISTENT_GROUP_PROTOCOL', 'InconsistentGroupProtocolException', false],
  [24, 'INVALID_GROUP_ID', 'InvalidGroupIdException', false],
  [25, 'UNKNOWN_MEMBER_ID', 'UnknownMemberIdException', false],
  [26, 'INVALID_SESSION_TIMEOUT', 'InvalidSessionTimeoutException', false],
  [27, 'REBALANCE_IN_PROGRESS', 'RebalanceInProgressException', false],
  [28, 'INVALID_COMMIT_OFFSET_SIZE', 'InvalidCommitOffsetSizeException', false],
  [29, 'TOPIC_AUTHORIZATION_FAILED', 'TopicAuthorizationException', false],
  [30, 'GROUP_AUTHORIZATION_FAILED', 'GroupAuthorizationException', false],
  [31, 'CLUSTER_AUTHORIZATION_FAILED', 'ClusterAuthorizationException', false],
  [32, 'INVALID_TIMESTAMP', 'InvalidTimestampException', false],
  [33, 'UNSUPPORTED_SASL_MECHANISM', 'UnsupportedSaslMechanismException', false],
  [34, 'ILLEGAL_SASL_STATE', 'IllegalSaslStateException', false],
  [35, 'UNSUPPORTED_VERSION', 'UnsupportedVersionException', false],
  [36, 'TOPIC_ALREADY_EXISTS', 'TopicExistsException', false],
  [37, 'INVALID_PARTITIONS', 'InvalidPartitionsException', false],
  [38, 'INVALID_REPLICATION_FACTOR', 'InvalidReplicationFactorException', false],
  [39, 'INVALID_REPLICA_ASSIGNMENT', 'InvalidReplicaAssignmentException', false],
  [40, 'INVALID_CONFIG', 'InvalidConfigurationException', false],
  [41, 'NOT_CONTROLLER', 'NotControllerException', true],
  [42, 'INVALID_REQUEST', 'InvalidRequestException', false],
  [43, 'UNSUPPORTED_FOR_MESSAGE_FORMAT', 'UnsupportedForMessageFormatException', false],
  [44, 'POLICY_VIOLATION', 'PolicyViolationException', false],
  [45, 'OUT_OF_ORDER_SEQUENCE_NUMBER', 'OutOfOrderSequenceException', false],
  [46, 'DUPLICATE_SEQUENCE_NUMBER', 'DuplicateSequenceException', false],
  [47, 'INVALID_PRODUCER_EPOCH', 'InvalidProducerEpochException', false],
  [48, 'INVALID_TXN_STATE', 'InvalidTxnStateException', false],
  [49, 'INVALID_PRODUCER_ID_MAPPING', 'InvalidPidMappingException', false],
  [50, 'INVALID_TRANSACTION_TIMEOUT', 'InvalidTxnTimeoutException', false],
  [51, 'CONCURRENT_TRANSACTIONS', 'ConcurrentTransactionsException', true],
  [52, 'TRANSACTION_COORDINATOR_FENCED', 'TransactionCoordinatorFencedException', false],
  [53, 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED', 'TransactionalIdAuthorizationException', false],
  [54, 'SECURITY_DISABLED', 'SecurityDisabledException', false],
  [55, 'OPERATION_NOT_ATTEMPTED', 'OperationNotAttemptedException', false],
  [56, 'KAFKA_STORAGE_ERROR', 'KafkaStorageException', true],
  [57, 'LOG_DIR_NOT_FOUND', 'LogDirNotFoundException', false],
  [58, 'SASL_AUTHENTICATION_FAILED', 'SaslAuthenticationException', false],
  [59, 'UNKNOWN_PRODUCER_ID', 'UnknownProducerIdException', false],
  [60, 'REASSIGNMENT_IN_PROGRESS', 'ReassignmentInProgressException', false],
  [61, 'DELEGATION_TOKEN_AUTH_DISABLED', 'DelegationTokenDisabledException', false],
  [62, 'DELEGATION_TOKEN_NOT_FOUND', 'DelegationTokenNotFoundException', false],
  [63, 'DELEGATION_TOKEN_OWNER_MISMATCH', 'DelegationTokenOwnerMismatchException', false],
  [64, 'DELEGATION_TOKEN_REQUEST_NOT_ALLOWED', 'UnsupportedByAuthenticationException', false],
  [65, 'DELEGATION_TOKEN_AUTHORIZATION_FAILED', 'DelegationTokenAuthorizationException', false],
  [66, 'DELEGATION_TOKEN_EXPIRED', 'DelegationTokenExpiredException', false],
  [67, 'INVALID_PRINCIPAL_TYPE', 'InvalidPrincipalTypeException', false],
  [68, 'NON_EMPTY_GROUP', 'GroupNotEmptyException', false],
  [69, 'GROUP_ID_NOT_FOUND', 'GroupIdNotFoundException', false],
  [70, 'FETCH_SESSION_ID_NOT_FOUND', 'FetchSessionIdNotFoundException', true],
  [71, 'INVALID_FETCH_SESSION_EPOCH', 'InvalidFetchSessionEpochException', true],
  [72, 'LISTENER_NOT_FOUND', 'ListenerNotFoundException', true],
  [73, 'TOPIC_DELETION_DISABLED', 'TopicDeletionDisabledException', false],
  [74, 'FENCED_LEADER_EPOCH', 'FencedLeaderEpochException', true],
  [75, 'UNKNOWN_LEADER_EPOCH', 'UnknownLeaderEpochException', true],
  [76, 'UNSUPPORTED_COMPRESSION_TYPE', 'UnsupportedCompressionTypeException', false],
  [77, 'STALE_BROKER_EPOCH', 'StaleBrokerEpochException', false],
  [78, 'OFFSET_NOT_AVAILABLE', 'OffsetNotAvailableException', true],
  [79, 'MEMBER_ID_REQUIRED', 'MemberIdRequiredException', false],
  [80, 'PREFERRED_LEADER_NOT_AVAILABLE', 'PreferredLeaderNotAvailableException', true],
  [81, 'GROUP_MAX_SIZE_REACHED', 'GroupMaxSizeReachedException', false],
  [82, 'FENCED_INSTANCE_ID', 'FencedInstanceIdException', false],
  [83, 'ELIGIBLE_LEADERS_NOT_AVAILABLE', 'EligibleLeadersNotAvailableException', true],
  [84, 'ELECTION_NOT_NEEDED', 'ElectionNotNeededException', true],
  [85, 'NO_REASSIGNMENT_IN_PROGRESS', 'NoReassignmentInProgressException', false],
  [86, 'GROUP_SUBSCRIBED_TO_TOPIC', 'GroupSubscribedToTopicException', false],
  [87, 'INVALID_RECORD', 'InvalidRecordException', false],
  [88, 'UNSTABLE_OFFSET_COMMIT', 'UnstableOffsetCommitException', true],
  [89, 'THROTTLING_QUOTA_EXCEEDED', 'ThrottlingQuotaExceededException', true],
  [90, 'PRODUCER_FENCED', 'ProducerFencedException', false],
  [91, 'RESOURCE_NOT_FOUND', 'ResourceNotFoundException', false],
  [92, 'DUPLICATE_RESOURCE', 'DuplicateResourceException', false],
  [93, 'UNACCEPTABLE_CREDENTIAL', 'UnacceptableCredentialException', false],
  [94, 'INCONSISTENT_VOTER_SET', 'InconsistentVoterSetException', false],
  [95, 'INVALID_UPDATE_VERSION', 'InvalidUpdateVersionException', false],
  [96, 'FEATURE_UPDATE_FAILED', 'FeatureUpdateFailedException', false],
  [97, 'PRINCIPAL_DESERIALIZATION_FAILURE', 'PrincipalDeserializationException', false],
  [98, 'SNAPSHOT_NOT_FOUND', 'SnapshotNotFoundException', false],
  [100, 'UNKNOWN_TOPIC_ID', 'UnknownTopicIdException', true],
  [101, 'DUPLICATE_BROKER_REGISTRATION', 'DuplicateBrokerRegistrationException', false],
  [102, 'BROKER_ID_NOT_REGISTERED', 'BrokerIdNotRegisteredException', false],
  [103, 'INCONSISTENT_TOPIC_ID', 'InconsistentTopicIdException', true],
  [104, 'INCONSISTENT_CLUSTER_ID', 'InconsistentClusterIdException', false],
  [105, 'TRANSACTIONAL_ID_NOT_FOUND', 'TransactionalIdNotFoundException', false],
  [106, 'FETCH_SESSION_TOPIC_ID_ERROR', 'FetchSessionTopicIdException', true],
  [107, 'INELIGIBLE_REPLICA', 'IneligibleReplicaException', false],
  [108, 'NEW_LEADER_ELECTED', 'NewLeaderElectedException', false],
  [109, 'OFFSET_MOVED_TO_TIERED_STORAGE', 'OffsetMovedToTieredStorageException', false],
  [110, 'FENCED_MEMBER_EPOCH', 'FencedMemberEpochException', false],
  [111, 'UNRELEASED_INSTANCE_ID', 'UnreleasedInstanceIdException', false],
  [112, 'UNSUPPORTED_ASSIGNOR', 'UnsupportedAssignorException', false],
  [113, 'STALE_MEMBER_EPOCH', 'StaleMemberEpochException', false],
  [114, 'MISMATCHED_ENDPOINT_TYPE', 'MismatchedEndpointTypeException', false],
  [115, 'UNSUPPORTED_ENDPOINT_TYPE', 'UnsupportedEndpointTypeException', false],
  [116, 'UNKNOWN_CONTROLLER_ID', 'UnknownControllerIdException', false],
  [117, 'UNKNOWN_SUBSCRIPTION_ID', 'UnknownSubscriptionIdException', false],
  [118, 'TELEMETRY_TOO_LARGE', 'TelemetryTooLargeException', false],
  [119, 'INVALID_REGISTRATION', 'InvalidRegistrationException', false],
  [120, 'TRANSACTION_ABORTABLE', 'TransactionAbortableException', false],
  [121, 'INVALID_RECORD_STATE', 'InvalidRecordStateException', false],
  [122, 'SHARE_SESSION_NOT_FOUND', 'ShareSessionNotFoundException', true],
  [123, 'INVALID_SHARE_SESSION_EPOCH', 'InvalidShareSessionEpochException', true],
  [124, 'FENCED_STATE_EPOCH', 'FencedStateEpochException', false],
  [125, 'INVALID_VOTER_KEY', 'InvalidVoterKeyException', false],
  [126, 'DUPLICATE_VOTER', 'DuplicateVoterException', false],
  [127, 'VOTER_NOT_FOUND', 'VoterNotFoundException', false],
  [128, 'INVALID_REGULAR_EXPRESSION', 'InvalidRegularExpression', false],
]

export interface ErrorInfo { readonly code: number; readonly name: string; readonly exception: string; readonly retriable: boolean }

const BY_CODE = new Map<number, ErrorInfo>(TABLE.map(([code, name, exception, retriable]) => [code, { code, name, exception, retriable }]))
const BY_NAME = new Map<string, ErrorInfo>([...BY_CODE.values()].map((e) => [e.name, e]))

export function errorInfo(code: number): ErrorInfo {
  return BY_CODE.get(code) ?? { code, name: `UNKNOWN_ERROR_CODE_${code}`, exception: 'UnknownServerException', retriable: false }
}

/** The numeric code for a name, e.g. errorCode('NOT_LEADER_OR_FOLLOWER') === 6. Throws on unknown names. */
export function errorCode(name: string): number {
  const e = BY_NAME.get(name)
  if (!e) throw new Error(`unknown Kafka error name ${name}`)
  return e.code
}

export const allErrors = (): readonly ErrorInfo[] => [...BY_CODE.values()]

export function apiError(code: number, context: string, brokerMessage?: string | null): KafkaApiError {
  const e = errorInfo(code)
  const detail = brokerMessage ? `: ${brokerMessage}` : ''
  return new KafkaApiError(code, e.name, e.exception, e.retriable, `${context} failed with ${e.name} (${code})${detail}`)
}
