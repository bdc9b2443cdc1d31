import { array, field, defineApi } from '../schema.js'

// Clients use v3 and below; v4+ is the broker-to-broker batched form.
const topic = [field('name', 'string', '0+'), array('partitions', '0+', 'int32')]

export const AddPartitionsToTxn = defineApi({
  key: 24, name: 'AddPartitionsToTxn', minVersion: 0, maxVersion: 3, flexibleFrom: 3,
  request: [
    field('transactionalId', 'string', '0-3'),
    field('producerId', 'int64', '0-3'),
    field('producerEpoch', 'int16', '0-3'),
    array('topics', '0-3', topic),
  ],
  response: [
    field('throttleTimeMs', 'int32', '0+'),
    array('results', '0-3', [
      field('name', 'string', '0+'),
      array('partitions', '0+', [
        field('partitionIndex', 'int32', '0+'),
        field('errorCode', 'int16', '0+'),
      ]),
    ]),
  ],
})
