/**
 * What only the sending tab needs: the producer, the WebSocket transport, the WASM loader and the
 * beacon's request encoder. analytics.ts loads this module with import() when its tab wins the
 * sender election, so bundlers that split dynamic imports (Vite, esbuild with splitting, webpack)
 * ship it as a separate chunk: tracking, the outbox and the election load with the page, and
 * follower tabs never fetch the producer at all.
 */
export { createProducer } from '../producer/producer.js'
export { pendingOrder } from '../producer/checkpoint.js'
export { Produce, encodeRequest } from '../protocol/index.js'
export { websocket } from '../transport/websocket.js'
export { bundledLz4Core, loadCore, readBatchRecords } from '../wasm/core.js'
