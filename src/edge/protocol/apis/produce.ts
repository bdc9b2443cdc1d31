import { array, field, struct, defineApi } from '../schema.js'

// v3 is the floor (4.x brokers reject 0-2, KAFKA-18659); v12 marks transaction v2 support;
// v13 replaces topic names with ids, which this client does not carry, so it stops at 12.
export const Produce = defineApi({
  key: 0, name: 'Produce', minVersion: 3, maxVersion: 12, flexibleFrom: 9,
  request: [
    field('transactionalId', 'string', '3+', { nullable: '3+', default: null }),
    field('acks', 'int16', '0+'),
    field('timeoutMs', 'int32', '0+'),
    array('topicData', '0+', [
      field('name', 'string', '0+'),
      array('partitionData', '0+', [
        field('index', 'int32', '0+'),
        field('records', 'records', '0+', { nullable: '0+' }),
      ]),
    ]),
  ],
  response: [
    array('responses', '0+', [
      field('name', 'string', '0+'),
      array('partitionResponses', '0+', [
        field('index', 'int32', '0+'),
        field('errorCode', 'int16', '0+'),
        field('baseOffset', 'int64', '0+'),
        field('logAppendTimeMs', 'int64', '2+', { default: -1n }),
        field('logStartOffset', 'int64', '5+', { default: -1n }),
        array('recordErrors', '8+', [
          field('batchIndex', 'int32', '8+'),
          field('batchIndexErrorMessage', 'string', '8+', { nullable: '8+', default: null }),
        ]),
        field('errorMessage', 'string', '8+', { nullable: '8+', default: null }),
        struct('currentLeader', '10+', [
          field('leaderId', 'int32', '10+', { default: -1 }),
          field('leaderEpoch', 'int32', '10+', { default: -1 }),
        ], { tag: 0 }),
      ]),
    ]),
    field('throttleTimeMs', 'int32', '1+'),
    array('nodeEndpoints', '10+', [
      field('nodeId', 'int32', '10+'),
      field('host', 'string', '10+'),
      field('port', 'int32', '10+'),
      field('rack', 'string', '10+', { nullable: '10+', default: null }),
    ], { tag: 0 }),
  ],
})
