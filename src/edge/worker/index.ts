/**
 * The telemetry Worker (wrangler.toml `main`): a hono app in front of one Durable Object that holds a
 * long-lived kafka-edge producer reaching the brokers over cloudflare:sockets.
 */
import { createApp } from './app.js'

export { ProducerObject } from './producer-object.js'
export type { Env } from './env.js'

export default createApp()
