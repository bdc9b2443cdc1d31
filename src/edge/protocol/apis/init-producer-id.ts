import { field, defineApi } from '../schema.js'

// v3 lets an existing producer id/epoch be passed back to bump the epoch (KIP-360).
export const InitProducerId = defineApi({
  key: 22, name: 'InitProducerId', minVersion: 0, maxVersion: 5, flexibleFrom: 2,
  request: [
    field('transactionalId', 'string', '0+', { nullable: '0+', default: null }),
    field('transactionTimeoutMs', 'int32', '0+'),
    field('producerId', 'int64', '3+', { default: -1n }),
    field('producerEpoch', 'int16', '3+', { default: -1 }),
  ],
  response: [
    field('throttleTimeMs', 'int32', '0+'),
    field('errorCode', 'int16', '0+'),
    field('producerId', 'int64', '0+', { default: -1n }),
    field('producerEpoch', 'int16', '0+', { default: -1 }),
  ],
})
