import type { SaslMechanism } from './auth/mechanism.js'
import type { authenticate, reauthenticationDelay } from './auth/sasl.js'
import type { TransactionCoordinatorClient } from './producer/transactions/coordinator-client.js'

/**
 * Transactions and SASL, which a producer reaches only through this table. `producer/install.ts` fills it and
 * every entry but the browser SDK imports that (src/edge/index.ts, the worker), so a bundle of the
 * SDK (idempotent, through the relay, which holds the SASL credentials) carries neither.
 */
export const extensions: {
  transactions?: (opts: ConstructorParameters<typeof TransactionCoordinatorClient>[0]) => TransactionCoordinatorClient
  sasl?: {
    fromSettings(get: <T>(k: string) => T, given: Map<string, unknown>): SaslMechanism
    authenticate: typeof authenticate
    reauthenticationDelay: typeof reauthenticationDelay
  }
} = {}
