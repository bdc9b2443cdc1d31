// Imported for its effect: gives the producer its transactions and SASL (see extensions.ts).
import { authenticate, reauthenticationDelay } from '../auth/sasl.js'
import { saslFromSettings } from '../auth/settings.js'
import { extensions } from '../extensions.js'
import { TransactionCoordinatorClient } from './transactions/coordinator-client.js'

extensions.transactions = (opts) => new TransactionCoordinatorClient(opts)
extensions.sasl = { fromSettings: saslFromSettings, authenticate, reauthenticationDelay }
