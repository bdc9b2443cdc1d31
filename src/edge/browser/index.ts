/**
 * kafka-edge/browser: the analytics SDK. `createAnalytics({ relayUrl, token, topic })` then
 * `await track({ type, data })`. Delivery is exactly once through page reloads, crashes, offline
 * periods and tabs (docs/browser.md).
 */
export {
  Analytics, createAnalytics, OutboxFullError, type AnalyticsEvent, type AnalyticsOptions, type AnalyticsStats, type LockManagerLike,
} from './analytics.js'
export { POSSIBLE_DUPLICATE_HEADER } from '../errors.js'
export { CheckpointConflictError, IndexedDbOutbox, MemoryStorage, WebStorageOutbox, type Outbox, type OutboxEntry, type StorageLike } from './outbox.js'
