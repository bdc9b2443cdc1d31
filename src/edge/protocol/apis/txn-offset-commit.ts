import { array, field, defineApi } from '../schema.js'

// v5 is transaction v2: sent without a prior AddOffsetsToTxn.
export const TxnOffsetCommit = defineApi({
  key: 28, name: 'TxnOffsetCommit', minVersion: 0, maxVersion: 5, flexibleFrom: 3,
  request: [
    field('transactionalId', 'string', '0+'),
    field('groupId', 'string', '0+'),
    field('producerId', 'int64', '0+'),
    field('producerEpoch', 'int16', '0+'),
    field('generationId', 'int32', '3+', { default: -1 }),
    field('memberId', 'string', '3+'),
    field('groupInstanceId', 'string', '3+', { nullable: '3+', default: null }),
    array('topics', '0+', [
      field('name', 'string', '0+'),
      array('partitions', '0+', [
        field('partitionIndex', 'int32', '0+'),
        field('committedOffset', 'int64', '0+'),
        field('committedLeaderEpoch', 'int32', '2+', { default: -1 }),
        field('committedMetadata', 'string', '0+', { nullable: '0+', default: null }),
      ]),
    ]),
  ],
  response: [
    field('throttleTimeMs', 'int32', '0+'),
    array('topics', '0+', [
      field('name', 'string', '0+'),
      array('partitions', '0+', [
        field('partitionIndex', 'int32', '0+'),
        field('errorCode', 'int16', '0+'),
      ]),
    ]),
  ],
})
