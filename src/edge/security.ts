import type { SaslMechanism } from './auth/mechanism.js'
import { authenticate, reauthenticationDelay } from './auth/sasl.js'
import { saslFromSettings } from './auth/settings.js'
import { ConfigException } from './errors.js'
import { extensions } from './extensions.js'
import { oneOf, str } from './config-def.js'
import type { SecurityConfig, SecurityProtocol, TlsSettings, Transport } from './transport/transport.js'

/**
 * TLS and SASL to brokers: what the ssl.* and sasl.* settings become. Only a transport that carries
 * TLS itself can use them, so tcp() and cloudflareSockets() install this when they are created, and
 * a bundle whose producer only talks through the relay's WebSocket (where TLS and SASL to brokers are
 * the relay's settings) carries none of it: no SASL mechanisms, no SCRAM, no AWS request signing.
 */
export function installBrokerSecurity(): void {
  extensions.security = { settings: parseSecurity, value: (v, key) => VALUES[key]!(v, key) }
  extensions.sasl = { authenticate, reauthenticationDelay }
}

const fn = (v: unknown, key: string): unknown => {
  if (typeof v !== 'function') throw new ConfigException(`${key} must be a function`)
  return v
}
// PEM text, not a path: Workers and browsers have no file system, and a path typo would otherwise
// surface as an unknown-CA failure on the wire.
const pem = (v: unknown, key: string): string => {
  const s = str(v, key)
  if (!/-----BEGIN [A-Z0-9 ]+-----/.test(s)) throw new ConfigException(`${key} must hold PEM text (-----BEGIN ...-----), not a file name; read the file and pass its contents`)
  return s
}
function parseExtensions(v: unknown, key: string): Record<string, string> {
  if (typeof v === 'string') {
    const out: Record<string, string> = {}
    for (const part of v.split(',').map((p) => p.trim()).filter(Boolean)) {
      const eq = part.indexOf('=')
      if (eq <= 0) throw new ConfigException(`${key} entry ${JSON.stringify(part)} is not key=value`)
      out[part.slice(0, eq)] = part.slice(eq + 1)
    }
    return out
  }
  if (v && typeof v === 'object' && Object.values(v).every((x) => typeof x === 'string')) return v as Record<string, string>
  throw new ConfigException(`${key} must be an object of strings or "key=value,key=value"`)
}

/** The settings config.ts hands over as `secured`, parsed at the same point as every other setting. */
const VALUES: Record<string, (v: unknown, key: string) => unknown> = {
  'sasl.mechanism': oneOf(['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER', 'AWS_MSK_IAM']),
  'sasl.oauthbearer.token.provider': fn,
  'sasl.oauthbearer.extensions': parseExtensions,
  'sasl.aws.credentials.provider': fn,
  'ssl.ca.pem': pem,
  'ssl.certificate.pem': pem,
  'ssl.key.pem': pem,
}

const SASL_KEYS = [
  'sasl.mechanism', 'sasl.username', 'sasl.password', 'sasl.jaas.config',
  'sasl.oauthbearer.token.provider', 'sasl.oauthbearer.extensions', 'sasl.aws.credentials.provider', 'sasl.aws.region',
]
const SSL_KEYS = ['ssl.ca.pem', 'ssl.certificate.pem', 'ssl.key.pem', 'ssl.endpoint.identification.algorithm']

/** security.protocol with the ssl.* and sasl.* settings, checked against each other and the transport. */
function parseSecurity(get: <T>(k: string) => T, given: Map<string, unknown>, transport: Transport): SecurityConfig {
  const protocol = get<SecurityProtocol>('security.protocol')
  const usesTls = protocol === 'SSL' || protocol === 'SASL_SSL'
  const usesSasl = protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL'
  const set = (keys: string[]) => keys.filter((k) => given.has(k))

  const strayTls = set(SSL_KEYS)
  if (!usesTls && strayTls.length > 0) {
    throw new ConfigException(`${strayTls.join(', ')} ${strayTls.length > 1 ? 'are' : 'is'} set but security.protocol is ${protocol}: ` +
      `set security.protocol to ${usesSasl ? 'SASL_SSL' : 'SSL'} to use TLS, or remove ${strayTls.length > 1 ? 'them' : 'it'}`)
  }
  const straySasl = set(SASL_KEYS)
  if (!usesSasl && straySasl.length > 0) {
    throw new ConfigException(`${straySasl.join(', ')} ${straySasl.length > 1 ? 'are' : 'is'} set but security.protocol is ${protocol}: ` +
      `set security.protocol to ${usesTls ? 'SASL_SSL' : 'SASL_PLAINTEXT'} to authenticate with SASL, or remove ${straySasl.length > 1 ? 'them' : 'it'}`)
  }

  let tls: TlsSettings | null = null
  if (usesTls) {
    const ca = get<string | null>('ssl.ca.pem')
    const cert = get<string | null>('ssl.certificate.pem')
    const key = get<string | null>('ssl.key.pem')
    const verifyHostname = get<string>('ssl.endpoint.identification.algorithm') === 'https'
    if ((cert === null) !== (key === null)) throw new ConfigException('ssl.certificate.pem and ssl.key.pem go together (mutual TLS): set both or neither')
    if (!transport.tls) {
      throw new ConfigException(`security.protocol ${protocol} needs a transport that speaks TLS to brokers; ${transport.name} does not (through the relay, TLS and SASL to the brokers are the relay's settings, and the page uses a wss:// URL)`)
    }
    if (transport.tls === 'system') {
      const custom = set(['ssl.ca.pem', 'ssl.certificate.pem', 'ssl.key.pem'])
      if (custom.length > 0 || !verifyHostname) {
        const refused = [...custom, ...(verifyHostname ? [] : ['ssl.endpoint.identification.algorithm=""'])]
        throw new ConfigException(`${transport.name} verifies brokers against the runtime's own trust store and cannot take ${refused.join(', ')}; ` +
          `remove ${refused.length > 1 ? 'them' : 'it'} (under wrangler dev, NODE_EXTRA_CA_CERTS makes workerd trust a private CA)`)
      }
    }
    tls = { ...(ca !== null && { ca }), ...(cert !== null && { cert }), ...(key !== null && { key }), verifyHostname }
  }

  let sasl: SaslMechanism | null = null
  if (usesSasl) {
    if (!transport.tls) {
      throw new ConfigException(`security.protocol ${protocol} cannot be used with the ${transport.name} transport: ` +
        'SASL credentials stay on the relay (set them in its config), never in the page')
    }
    sasl = saslFromSettings(get, given)
  }
  return { protocol, tls, sasl }
}
