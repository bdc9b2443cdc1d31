import { array, field, defineApi } from '../schema.js'

export const SaslHandshake = defineApi({
  key: 17, name: 'SaslHandshake', minVersion: 1, maxVersion: 1, flexibleFrom: Infinity,
  request: [field('mechanism', 'string', '0+')],
  response: [field('errorCode', 'int16', '0+'), array('mechanisms', '0+', 'string')],
})

export const SaslAuthenticate = defineApi({
  key: 36, name: 'SaslAuthenticate', minVersion: 0, maxVersion: 2, flexibleFrom: 2,
  request: [field('authBytes', 'bytes', '0+')],
  response: [
    field('errorCode', 'int16', '0+'),
    field('errorMessage', 'string', '0+', { nullable: '0+', default: null }),
    field('authBytes', 'bytes', '0+'),
    field('sessionLifetimeMs', 'int64', '1+'),
  ],
})
