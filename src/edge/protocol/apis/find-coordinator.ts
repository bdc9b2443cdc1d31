import { array, field, defineApi } from '../schema.js'

// Key type 0 = consumer group, 1 = transactional id. From v4 keys are batched.
export const FindCoordinator = defineApi({
  key: 10, name: 'FindCoordinator', minVersion: 1, maxVersion: 6, flexibleFrom: 3,
  request: [
    field('key', 'string', '0-3'),
    field('keyType', 'int8', '1+'),
    array('coordinatorKeys', '4+', 'string'),
  ],
  response: [
    field('throttleTimeMs', 'int32', '1+'),
    field('errorCode', 'int16', '0-3'),
    field('errorMessage', 'string', '1-3', { nullable: '1-3', default: null }),
    field('nodeId', 'int32', '0-3'),
    field('host', 'string', '0-3'),
    field('port', 'int32', '0-3'),
    array('coordinators', '4+', [
      field('key', 'string', '4+'),
      field('nodeId', 'int32', '4+'),
      field('host', 'string', '4+'),
      field('port', 'int32', '4+'),
      field('errorCode', 'int16', '4+'),
      field('errorMessage', 'string', '4+', { nullable: '4+', default: null }),
    ]),
  ],
})
