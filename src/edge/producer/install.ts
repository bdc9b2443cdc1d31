// Imported for its effect: gives the producer its transactions (see extensions.ts).
import { extensions } from '../extensions.js'
import { TransactionCoordinatorClient } from './transactions/coordinator-client.js'

extensions.transactions = (opts) => new TransactionCoordinatorClient(opts)
