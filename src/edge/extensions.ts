import type { authenticate, reauthenticationDelay } from './auth/sasl.js'
import type { TransactionCoordinatorClient } from './producer/transactions/coordinator-client.js'
import type { SecurityConfig, Transport } from './transport/transport.js'

/**
 * Transactions, and TLS and SASL to brokers, which a producer reaches only through this table, so a
 * bundle carries them only when something fills it. `producer/install.ts` installs transactions; every
 * entry but the browser SDK imports it (src/edge/index.ts, the worker). security.ts installs the ssl.*
 * and sasl.* settings and SASL authentication when a transport that carries TLS is created (tcp(),
 * cloudflareSockets()): a producer that talks through the relay's WebSocket never needs them.
 */
export const extensions: {
  transactions?: (opts: ConstructorParameters<typeof TransactionCoordinatorClient>[0]) => TransactionCoordinatorClient
  security?: {
    /** security.protocol with the ssl.* and sasl.* settings, checked against each other and the transport. */
    settings(get: <T>(k: string) => T, given: Map<string, unknown>, transport: Transport): SecurityConfig
    /** One ssl.* or sasl.* value that needs more than a string check (PEM text, a mechanism, a function). */
    value(v: unknown, key: string): unknown
  }
  sasl?: {
    authenticate: typeof authenticate
    reauthenticationDelay: typeof reauthenticationDelay
  }
} = {}
