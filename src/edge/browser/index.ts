/**
 * kafka-edge/browser: the analytics SDK. `createAnalytics({ relayUrl, token, topic })` then
 * `track({ type, data })`. See analytics.ts for the delivery guarantees (at least once across page
 * loads; dedupe on the event id carried in every value).
 */
export { Analytics, createAnalytics, OutboxFullError, type AnalyticsEvent, type AnalyticsOptions, type AnalyticsStats } from './analytics.js'
export { MemoryOutbox, WebStorageOutbox, type OutboxEntry, type OutboxStore, type StorageLike } from './outbox.js'
