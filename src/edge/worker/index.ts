/**
 * kafka-edge/worker: the telemetry Worker as a component. A Worker's main module binds it in a few lines:
 *
 *   import { KafkaProducerObject, telemetryApp } from 'kafka-edge/worker'
 *   export class TelemetryProducer extends KafkaProducerObject {}
 *   export default telemetryApp({ binding: 'PRODUCER', shards: 4 })
 *
 * with a Durable Object binding PRODUCER -> TelemetryProducer (new_sqlite_classes) in wrangler.toml.
 */
import { telemetryApp } from './app.js'
import { KafkaProducerObject } from './producer-object.js'

export { telemetryApp, shardOf, SHARD_PREFIX, type TelemetryAppOptions } from './app.js'
export { KafkaProducerObject, EVENT_ID_HEADER, DEFAULT_MAX_BACKLOG, type ProducedEvent, type FailedEvent } from './producer-object.js'
export type { Env, DurableObjectState } from './env.js'
export type { TelemetryLimits, TelemetryRecord } from './validate.js'
export { POSSIBLE_DUPLICATE_HEADER } from '../errors.js'

/** The class name earlier versions bound (`class_name = "ProducerObject"`). */
export class ProducerObject extends KafkaProducerObject {}

/** The app with every option from env (SHARDS, ACCEPT_MODE, LOCATION_HINT, ...): `export { default } from 'kafka-edge/worker'`. */
export default telemetryApp()
