import { array, field, defineApi } from '../schema.js'

// The response header is always v0 (no tagged fields) so that a broker can answer an ApiVersions
// request of a version it does not know; on UNSUPPORTED_VERSION it replies in v0 shape.
export const ApiVersions = defineApi({
  key: 18, name: 'ApiVersions', minVersion: 0, maxVersion: 4, flexibleFrom: 3,
  request: [
    field('clientSoftwareName', 'string', '3+'),
    field('clientSoftwareVersion', 'string', '3+'),
  ],
  response: [
    field('errorCode', 'int16', '0+'),
    array('apiKeys', '0+', [
      field('apiKey', 'int16', '0+'),
      field('minVersion', 'int16', '0+'),
      field('maxVersion', 'int16', '0+'),
    ]),
    field('throttleTimeMs', 'int32', '1+'),
    array('supportedFeatures', '3+', [
      field('name', 'string', '3+'),
      field('minVersion', 'int16', '3+'),
      field('maxVersion', 'int16', '3+'),
    ], { tag: 0 }),
    field('finalizedFeaturesEpoch', 'int64', '3+', { tag: 1, default: -1n }),
    array('finalizedFeatures', '3+', [
      field('name', 'string', '3+'),
      field('maxVersionLevel', 'int16', '3+'),
      field('minVersionLevel', 'int16', '3+'),
    ], { tag: 2 }),
    field('zkMigrationReady', 'bool', '3+', { tag: 3 }),
  ],
})
