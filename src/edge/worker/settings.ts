// The Worker's producer wiring that needs no WebAssembly module: kept apart from producer-object.ts
// (which imports build/core.wasm, loadable only by wrangler) so unit tests can import it.
import type { ProducerSettings } from '../producer/config.js'
import type { Transport } from '../transport/transport.js'
import type { Env } from './env.js'

/**
 * The producer's security settings from the Worker's vars and secrets. An empty value counts as unset
 * (`--var KAFKA_SASL_MECHANISM:` or an empty secret), so a half-cleared config fails in createProducer
 * with its ConfigException rather than sending an empty password. No ssl.* settings: cloudflare:sockets
 * verifies brokers against workerd's own trust store and takes no CA or client certificate.
 */
export function securitySettings(env: Env): ProducerSettings {
  const v = (s: string | undefined) => (s === undefined || s.trim() === '' ? undefined : s.trim())
  const settings: ProducerSettings = {}
  const protocol = v(env.KAFKA_SECURITY_PROTOCOL)?.toUpperCase()
  // Checked by the producer's config like any other value; a typo is a ConfigException naming it.
  if (protocol) settings['security.protocol'] = protocol as ProducerSettings['security.protocol']
  const mechanism = v(env.KAFKA_SASL_MECHANISM)?.toUpperCase()
  if (mechanism) settings['sasl.mechanism'] = mechanism as ProducerSettings['sasl.mechanism']
  const username = v(env.KAFKA_SASL_USERNAME)
  if (username !== undefined) settings['sasl.username'] = username
  // Passwords may legitimately begin or end with spaces: only an all-blank one counts as unset.
  if (v(env.KAFKA_SASL_PASSWORD) !== undefined) settings['sasl.password'] = env.KAFKA_SASL_PASSWORD
  return settings
}

/**
 * `inner`, calling `onOpen` for every connection it opened. It keeps the inner transport's TLS
 * capability and passes the per-connection options through: without them the producer would refuse
 * SSL/SASL_SSL (no TLS capability) or dial brokers in plaintext.
 */
export function countingOpens(inner: Transport, onOpen: () => void): Transport {
  return {
    name: inner.name,
    ...(inner.tls && { tls: inner.tls }),
    open: async (address, handlers, options) => {
      const link = await inner.open(address, handlers, options)
      onOpen()
      return link
    },
  }
}
