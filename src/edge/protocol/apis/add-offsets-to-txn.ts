import { field, defineApi } from '../schema.js'

export const AddOffsetsToTxn = defineApi({
  key: 25, name: 'AddOffsetsToTxn', minVersion: 0, maxVersion: 4, flexibleFrom: 3,
  request: [
    field('transactionalId', 'string', '0+'),
    field('producerId', 'int64', '0+'),
    field('producerEpoch', 'int16', '0+'),
    field('groupId', 'string', '0+'),
  ],
  response: [
    field('throttleTimeMs', 'int32', '0+'),
    field('errorCode', 'int16', '0+'),
  ],
})
