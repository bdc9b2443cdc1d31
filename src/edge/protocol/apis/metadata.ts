import { array, field, defineApi } from '../schema.js'

// v4 is the floor because AllowAutoTopicCreation must be sent as false: a producer at the edge must
// never create topics by naming them.
export const Metadata = defineApi({
  key: 3, name: 'Metadata', minVersion: 4, maxVersion: 12, flexibleFrom: 9,
  request: [
    array('topics', '0+', [
      field('topicId', 'uuid', '10+'),
      field('name', 'string', '0+', { nullable: '10+' }),
    ], { nullable: '1+' }),
    field('allowAutoTopicCreation', 'bool', '4+', { default: false }),
    field('includeClusterAuthorizedOperations', 'bool', '8-10'),
    field('includeTopicAuthorizedOperations', 'bool', '8+'),
  ],
  response: [
    field('throttleTimeMs', 'int32', '3+'),
    array('brokers', '0+', [
      field('nodeId', 'int32', '0+'),
      field('host', 'string', '0+'),
      field('port', 'int32', '0+'),
      field('rack', 'string', '1+', { nullable: '1+', default: null }),
    ]),
    field('clusterId', 'string', '2+', { nullable: '2+', default: null }),
    field('controllerId', 'int32', '1+', { default: -1 }),
    array('topics', '0+', [
      field('errorCode', 'int16', '0+'),
      field('name', 'string', '0+', { nullable: '12+' }),
      field('topicId', 'uuid', '10+'),
      field('isInternal', 'bool', '1+'),
      array('partitions', '0+', [
        field('errorCode', 'int16', '0+'),
        field('partitionIndex', 'int32', '0+'),
        field('leaderId', 'int32', '0+'),
        field('leaderEpoch', 'int32', '7+', { default: -1 }),
        array('replicaNodes', '0+', 'int32'),
        array('isrNodes', '0+', 'int32'),
        array('offlineReplicas', '5+', 'int32'),
      ]),
      field('topicAuthorizedOperations', 'int32', '8+', { default: -2147483648 }),
    ]),
    field('clusterAuthorizedOperations', 'int32', '8-10', { default: -2147483648 }),
  ],
})
