import { array, field, defineApi } from '../schema.js'

// KIP-664 (Kafka 2.8+). Sent to each partition's leader: it lists the producers whose state the
// leader still holds, with their epoch and last sequence, which is what a resumed producer needs to
// know whether the broker would still recognise its resends as duplicates.
export const DescribeProducers = defineApi({
  key: 61, name: 'DescribeProducers', minVersion: 0, maxVersion: 0, flexibleFrom: 0,
  request: [
    array('topics', '0+', [field('name', 'string', '0+'), array('partitionIndexes', '0+', 'int32')]),
  ],
  response: [
    field('throttleTimeMs', 'int32', '0+'),
    array('topics', '0+', [
      field('name', 'string', '0+'),
      array('partitions', '0+', [
        field('partitionIndex', 'int32', '0+'),
        field('errorCode', 'int16', '0+'),
        field('errorMessage', 'string', '0+', { nullable: '0+', default: null }),
        array('activeProducers', '0+', [
          field('producerId', 'int64', '0+'),
          field('producerEpoch', 'int32', '0+'),
          field('lastSequence', 'int32', '0+', { default: -1 }),
          field('lastTimestamp', 'int64', '0+', { default: -1n }),
          field('coordinatorEpoch', 'int32', '0+'),
          field('currentTxnStartOffset', 'int64', '0+', { default: -1n }),
        ]),
      ]),
    ]),
  ],
})
