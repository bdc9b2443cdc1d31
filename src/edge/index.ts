/**
 * kafka-edge: a Kafka producer for browsers, workerd and every Web-standard runtime. This entry uses
 * only Web APIs; the Node TCP transport is exported from 'kafka-edge/node' (and from the Node
 * condition of the package root).
 */
import './producer/install.js'

export { createProducer, Producer, type ProducerRecord, type RecordMetadata, type SendCallback, type ProducerState, type ResumeOutcome } from './producer/producer.js'
export {
  memoryCheckpointStore, type CheckpointStore, type ProducerCheckpoint, type PendingBatch,
} from './producer/checkpoint.js'
export type {
  ProducerSettings, JavaProducerSettings, AnyProducerSettings, SecurityProtocol, ProducerObserver, ProduceRequestEvent, CoordinatorRequestEvent,
} from './producer/config.js'
export type { OAuthBearerToken } from './auth/sasl.js'
export type { AwsCredentials } from './auth/aws-msk-iam.js'
export type { TxnState, GroupMetadata, OffsetsToCommit } from './producer/transactions/state.js'
export * from './errors.js'
export type { Logger, LogContext } from './log.js'
export type { Transport, Link, LinkHandlers, BrokerAddress } from './transport/transport.js'
export { loadCore, type LoadCoreOptions, type CompressionType } from './wasm/core.js'
export { murmur2, partitionForKey } from './producer/partitioner.js'
export { websocket, type WebSocketTransportOptions, type WebSocketTransport, type ProducerIdTicket } from './transport/websocket.js'
export { cloudflareSockets, type CloudflareSocketsOptions, type CloudflareConnect, type CloudflareSocketLike } from './transport/cloudflare-sockets.js'
