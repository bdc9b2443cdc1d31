import { field, defineApi } from '../schema.js'

// v5 is transaction v2: the coordinator bumps the epoch on every EndTxn and returns the new id/epoch.
export const EndTxn = defineApi({
  key: 26, name: 'EndTxn', minVersion: 0, maxVersion: 5, flexibleFrom: 3,
  request: [
    field('transactionalId', 'string', '0+'),
    field('producerId', 'int64', '0+'),
    field('producerEpoch', 'int16', '0+'),
    field('committed', 'bool', '0+'),
  ],
  response: [
    field('throttleTimeMs', 'int32', '0+'),
    field('errorCode', 'int16', '0+'),
    field('producerId', 'int64', '5+', { default: -1n }),
    field('producerEpoch', 'int16', '5+', { default: -1 }),
  ],
})
