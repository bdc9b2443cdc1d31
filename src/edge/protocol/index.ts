import { ProtocolError } from '../errors.js'
import { AddOffsetsToTxn } from './apis/add-offsets-to-txn.js'
import { AddPartitionsToTxn } from './apis/add-partitions-to-txn.js'
import { DescribeProducers } from './apis/describe-producers.js'
import { ApiVersions } from './apis/api-versions.js'
import { EndTxn } from './apis/end-txn.js'
import { FindCoordinator } from './apis/find-coordinator.js'
import { InitProducerId } from './apis/init-producer-id.js'
import { Metadata } from './apis/metadata.js'
import { Produce } from './apis/produce.js'
import { SaslAuthenticate, SaslHandshake } from './apis/sasl.js'
import { TxnOffsetCommit } from './apis/txn-offset-commit.js'
import { Reader, Writer } from './primitives.js'
import { decodeMessage, encodeMessage, type ApiSchema, type Message } from './schema.js'

export { Reader, Writer } from './primitives.js'
export type { ApiSchema, Message, MessageOf, RequestOf, RequestBody, ResponseBody } from './schema.js'
export { errorInfo, errorCode, apiError, allErrors, exceptionClass, type ErrorInfo, type ErrorCategory } from './error-codes.js'
export {
  AddOffsetsToTxn, AddPartitionsToTxn, ApiVersions, DescribeProducers, EndTxn, FindCoordinator, InitProducerId, Metadata, Produce, SaslAuthenticate, SaslHandshake,
  TxnOffsetCommit,
}

export const APIS: readonly ApiSchema[] = [
  Produce, Metadata, FindCoordinator, SaslHandshake, ApiVersions, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit, SaslAuthenticate, DescribeProducers,
]
// Built on first use: a Map made at load would keep every schema (the transaction APIs too) in
// bundles that never look an API up by key, such as the browser SDK.
let byKey: Map<number, ApiSchema> | undefined
export const apiByKey = (key: number): ApiSchema | undefined => (byKey ??= new Map(APIS.map((a) => [a.key, a]))).get(key)

/** Names of API keys this client does not speak, so the relay can name what it refused. */
export const API_NAMES: Readonly<Record<number, string>> = {
  0: 'Produce', 1: 'Fetch', 2: 'ListOffsets', 3: 'Metadata', 8: 'OffsetCommit', 9: 'OffsetFetch', 10: 'FindCoordinator',
  11: 'JoinGroup', 12: 'Heartbeat', 13: 'LeaveGroup', 14: 'SyncGroup', 15: 'DescribeGroups', 16: 'ListGroups',
  17: 'SaslHandshake', 18: 'ApiVersions', 19: 'CreateTopics', 20: 'DeleteTopics', 21: 'DeleteRecords',
  22: 'InitProducerId', 23: 'OffsetForLeaderEpoch', 24: 'AddPartitionsToTxn', 25: 'AddOffsetsToTxn', 26: 'EndTxn',
  27: 'WriteTxnMarkers', 28: 'TxnOffsetCommit', 29: 'DescribeAcls', 30: 'CreateAcls', 31: 'DeleteAcls',
  32: 'DescribeConfigs', 33: 'AlterConfigs', 35: 'DescribeLogDirs', 36: 'SaslAuthenticate', 37: 'CreatePartitions',
  42: 'DeleteGroups', 44: 'IncrementalAlterConfigs', 47: 'OffsetDelete', 60: 'DescribeCluster', 68: 'ConsumerGroupHeartbeat',
}

export const isFlexible = (api: ApiSchema, version: number): boolean => version >= api.flexibleFrom

/** ApiVersions answers in header v0 whatever the request version, so old brokers can reply to new clients. */
export function responseHeaderVersion(api: ApiSchema, version: number): 0 | 1 {
  if (api.key === ApiVersions.key) return 0
  return isFlexible(api, version) ? 1 : 0
}

export interface RequestHeader { apiKey: number; apiVersion: number; correlationId: number; clientId: string | null }

/** A complete frame: int32 size, request header (v1, or v2 when flexible), body. */
export function encodeRequest(api: ApiSchema, version: number, correlationId: number, clientId: string | null, body: Message): Uint8Array {
  if (version < api.minVersion || version > api.maxVersion) {
    throw new ProtocolError(`${api.name} v${version} is outside the supported range ${api.minVersion}-${api.maxVersion}`)
  }
  const flexible = isFlexible(api, version)
  const w = new Writer(256)
  w.int32(0).int16(api.key).int16(version).int32(correlationId).string(clientId, false)
  if (flexible) w.uvarint(0)
  encodeMessage(api.request, version, flexible, body, w)
  w.setInt32At(0, w.pos - 4)
  return w.finish()
}

/** Reads the request header of a frame body (size prefix removed): the relay's view of a request. */
export function decodeRequestHeader(frame: Uint8Array): RequestHeader & { bodyOffset: number } {
  const r = new Reader(frame)
  const apiKey = r.int16()
  const apiVersion = r.int16()
  const correlationId = r.int32()
  const clientId = r.string(false)
  const api = apiByKey(apiKey)
  // Tagged header fields exist only for APIs we know to be flexible at this version.
  if (api && isFlexible(api, apiVersion)) {
    const n = r.uvarint()
    for (let i = 0; i < n; i++) { r.uvarint(); r.raw(r.uvarint(), 'tagged header field') }
  }
  return { apiKey, apiVersion, correlationId, clientId, bodyOffset: r.pos }
}

/** Decodes a request body (used by the relay for Produce topics, and by tests' model broker). */
export function decodeRequestBody(api: ApiSchema, version: number, frame: Uint8Array, bodyOffset: number): Message {
  const r = new Reader(frame, bodyOffset)
  const msg = decodeMessage(api.request, version, isFlexible(api, version), r)
  if (r.remaining !== 0) throw new ProtocolError(`${api.name} v${version} request has ${r.remaining} trailing bytes`)
  return msg
}

/** Peeks the correlation id of a response frame body (size prefix removed). */
export function responseCorrelationId(frame: Uint8Array): number {
  return new Reader(frame).int32()
}

/** Decodes a response frame body (size prefix removed), header included. */
export function decodeResponse(api: ApiSchema, version: number, frame: Uint8Array): Message {
  const r = new Reader(frame)
  r.int32()
  if (responseHeaderVersion(api, version) === 1) {
    const n = r.uvarint()
    for (let i = 0; i < n; i++) { r.uvarint(); r.raw(r.uvarint(), 'tagged header field') }
  }
  const msg = decodeMessage(api.response, version, isFlexible(api, version), r)
  if (r.remaining !== 0) throw new ProtocolError(`${api.name} v${version} response has ${r.remaining} trailing bytes`)
  return msg
}

/** Encodes a response frame (size prefix included): the model broker in simulation tests answers with it. */
export function encodeResponse(api: ApiSchema, version: number, correlationId: number, body: Message): Uint8Array {
  const w = new Writer(128)
  w.int32(0).int32(correlationId)
  if (responseHeaderVersion(api, version) === 1) w.uvarint(0)
  encodeMessage(api.response, version, isFlexible(api, version), body, w)
  w.setInt32At(0, w.pos - 4)
  return w.finish()
}

/** Decodes a request frame (size prefix included) into its header and body: for fakes and the relay. */
export function decodeRequest(frameWithSize: Uint8Array): { header: RequestHeader; api: ApiSchema | undefined; body: Message | undefined } {
  const frame = frameWithSize.subarray(4)
  const h = decodeRequestHeader(frame)
  const api = apiByKey(h.apiKey)
  const body = api ? decodeRequestBody(api, h.apiVersion, frame, h.bodyOffset) : undefined
  const header: RequestHeader = { apiKey: h.apiKey, apiVersion: h.apiVersion, correlationId: h.correlationId, clientId: h.clientId }
  return { header, api, body }
}
