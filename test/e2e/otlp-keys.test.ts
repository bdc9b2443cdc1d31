// The resource-attribute keys (partition_logs/metrics_by_resource_attributes) against pdata's own
// xhash.MapHash: scripts/otelcol/pdata (`pdata keys`), built from the Go module proxy, reads the same
// OTLP/JSON LogsData and prints the key the Collector's kafkaexporter would give each resource.
import { execFileSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { toRecords } from '../../src/edge/otlp/records.js'
import { jsonToProto } from '../../src/edge/otlp/transcode.js'
import { pdataBinary } from './otelcol.js'

const kv = (key: string, value: object) => ({ key, value })
const RESOURCES: object[][] = [
  [],
  [kv('service.name', { stringValue: 'checkout' })],
  [kv('b', { intValue: '-7' }), kv('a', { stringValue: '' }), kv('c', { doubleValue: -0.25 })],
  [kv('z', { boolValue: true }), kv('é', { boolValue: false }), kv('😀', { bytesValue: 'AAEC/w==' }), kv('Z', {})],
  [kv('nested', { kvlistValue: { values: [kv('y', { intValue: '9007199254740993' }), kv('x', { arrayValue: { values: [{ stringValue: 's' }, { doubleValue: 1e300 }, {}] } })] } })],
  [kv('service.name', { stringValue: 'checkout' }), kv('host.name', { stringValue: 'h'.repeat(300) })],
]

describe('resource-attribute keys equal pdata xhash.MapHash', () => {
  const bin = pdataBinary()
  it.skipIf(bin === null && !process.env.CI)(`every value type, key order, nesting${bin === null ? ' (skipped: go is not installed)' : ''}`, () => {
    if (bin === null) throw new Error('CI=1 and go is missing: .ci/run installs it')
    const logs = { resourceLogs: RESOURCES.map((attributes) => ({ resource: { attributes }, scopeLogs: [{ logRecords: [{ severityText: 'x' }] }] })) }
    const want = execFileSync(bin, ['keys'], { input: JSON.stringify(logs), encoding: 'utf8' }).trim().split('\n')
    const { records } = toRecords('logs', jsonToProto(logs, 'LogsData'), { encoding: 'otlp_proto', maxRecordBytes: 1 << 20, partitionLogsByResourceAttributes: true })
    expect(records.map((r) => Buffer.from(r.key!).toString('hex'))).toEqual(want)
    expect(new Set(want).size).toBe(RESOURCES.length)
  }, 1_200_000)
})
