// The telemetry Worker's input validation (pure functions; the Worker itself runs in test/e2e).
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { TelemetryInputError, decodeRecords, encodeRecords, parseTelemetry, readBodyLimited } from '../../src/edge/worker/validate.js'

const limits = { maxBodyBytes: 1000, maxEvents: 3, maxEventBytes: 200 }
const NOW = 1_760_000_000_000
const ids = () => { let n = 0; return () => `gen-${n++}` }
const fail = (body: string) => { try { parseTelemetry(body, limits, NOW, ids()) } catch (e) { return e as TelemetryInputError } throw new Error('accepted') }

describe('parseTelemetry', () => {
  it('normalizes one event or an array into records: id kept or generated, key, timestamp, JSON value', () => {
    const [a] = parseTelemetry('{"type":"page_view","data":{"p":"/"}}', limits, NOW, ids())
    expect(a).toEqual({ id: 'gen-0', key: null, timestamp: NOW, type: 'page_view', value: JSON.stringify({ id: 'gen-0', type: 'page_view', timestamp: NOW, data: { p: '/' } }), generated: true })
    const rs = parseTelemetry('[{"type":"a","id":"x","key":"u1","timestamp":"2025-01-02T03:04:05.678Z"},{"type":"b","timestamp":1750000000000}]', limits, NOW, ids())
    expect(rs.map((r) => [r.id, r.key, r.timestamp])).toEqual([['x', 'u1', Date.UTC(2025, 0, 2, 3, 4, 5, 678)], ['gen-0', null, 1750000000000]])
    expect(JSON.parse(rs[0]!.value)).toEqual({ id: 'x', type: 'a', timestamp: Date.UTC(2025, 0, 2, 3, 4, 5, 678), key: 'u1' })
    // Only an id the app made up is marked: the object does not remember it against resends.
    expect(rs.map((r) => r.generated)).toEqual([undefined, true])
  })

  it.each([
    ['not json', 400, /not valid JSON/],
    ['  ', 400, /empty body/],
    ['[]', 400, /empty array/],
    ['null', 400, /must be an object.*got null/],
    ['[[1]]', 400, /event\[0\]: must be an object.*got an array/],
    ['{"type":""}', 400, /"type" is required/],
    ['{"type":"has space"}', 400, /"type" is required/],
    ['{"type":"a","id":5}', 400, /"id" must be a string/],
    ['{"type":"a","key":{}}', 400, /"key" must be a string/],
    ['{"type":"a","timestamp":1.5}', 400, /"timestamp" must be/],
    ['{"type":"a","timestamp":12}', 400, /"timestamp" must be/],
    ['{"type":"a","extra":1}', 400, /unknown field "extra"/],
    ['[{"type":"a","id":"d"},{"type":"a","id":"d"}]', 400, /event\[1\]: id "d" appears twice/],
    ['[{"type":"a"},{"type":"a"},{"type":"a"},{"type":"a"}]', 413, /4 events in one request; at most 3/],
    [JSON.stringify({ type: 'a', data: 'x'.repeat(300) }), 413, /one event may be at most 200 bytes/],
  ])('%s -> %i', (body, status, message) => {
    const e = fail(body)
    expect(e).toBeInstanceOf(TelemetryInputError)
    expect(e.status).toBe(status)
    expect(e.message).toMatch(message)
  })
})

describe('the stored form of a request\'s events (encodeRecords / decodeRecords)', () => {
  // Ids and keys may hold anything a JSON string can (tabs, newlines, quotes, backslashes, lone
  // surrogates); values are what validateEvent makes of any JSON data.
  const text = fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom('\t', '\n', '\\', '"', '\\t', '\ud800', 'a\tb\nc'))
  const record = fc.record({
    id: text.filter((s) => s.length > 0),
    key: fc.option(text, { nil: null }),
    timestamp: fc.integer({ min: 946684800000, max: 253402300799999 }),
    type: fc.stringMatching(/^[A-Za-z0-9_.:/-]{1,100}$/),
    data: fc.jsonValue(),
  }).map((e) => parseTelemetry(JSON.stringify(e), { maxBodyBytes: 1 << 20, maxEvents: 1000, maxEventBytes: 1 << 20 })[0]!)

  it('gives back every record as it was, whatever its ids, keys and values hold', () => {
    fc.assert(fc.property(fc.array(record, { minLength: 1, maxLength: 20 }), (records) => {
      expect(decodeRecords(encodeRecords(records))).toEqual(records)
    }), { numRuns: 500 })
  })

  it('reads the JSON array of records that rows stored by the earlier code hold', () => {
    fc.assert(fc.property(fc.array(record, { minLength: 1, maxLength: 20 }), (records) => {
      expect(decodeRecords(JSON.stringify(records))).toEqual(records)
    }), { numRuns: 200 })
  })

  it('keeps one event per line and the value as its JSON, unescaped', () => {
    const [r] = parseTelemetry('{"type":"click","id":"a\\tb","data":{"q":"say \\"hi\\""}}', limits, NOW)
    const stored = encodeRecords([r!, { ...r!, id: 'second', key: 'k' }])
    expect(stored.split('\n')).toEqual([
      `"a\\tb"\t\t${NOW}\tclick\t${r!.value}`,
      `"second"\t"k"\t${NOW}\tclick\t${r!.value}`,
    ])
    expect(r!.value).toContain('say \\"hi\\"')
  })

  it('refuses a row cut short instead of inventing fields', () => {
    expect(() => decodeRecords('"a"\t\t1\tclick')).toThrow(/corrupt: event 0 has fewer than 5 fields/)
  })
})

describe('readBodyLimited', () => {
  const req = (body: BodyInit, headers: Record<string, string> = {}) => new Request('http://x/events', { method: 'POST', body, headers, duplex: 'half' } as RequestInit)
  it('returns the text of a body within the limit', async () => {
    expect(await readBodyLimited(req('{"type":"é"}'), 100)).toBe('{"type":"é"}')
  })
  it('413 from Content-Length before reading, and from counting a streamed body', async () => {
    await expect(readBodyLimited(req('x', { 'content-length': '5000' }), 100)).rejects.toMatchObject({ status: 413, message: /5000 bytes; at most 100/ })
    const stream = new ReadableStream<Uint8Array>({ start(c) { for (let i = 0; i < 5; i++) c.enqueue(new Uint8Array(40)); c.close() } })
    await expect(readBodyLimited(req(stream), 100)).rejects.toMatchObject({ status: 413, message: /more than 100 bytes/ })
  })
  it('400 on invalid UTF-8', async () => {
    await expect(readBodyLimited(req(new Uint8Array([0x7b, 0xff, 0x7d])), 100)).rejects.toMatchObject({ status: 400, message: /UTF-8/ })
  })
  it('reads a body of declared length whole, holding it to the UTF-8 check and to the limit even when the length understates it', async () => {
    expect(await readBodyLimited(req('{"type":"é"}', { 'content-length': '13' }), 100)).toBe('{"type":"é"}')
    await expect(readBodyLimited(req(new Uint8Array([0x7b, 0xff, 0x7d]), { 'content-length': '3' }), 100)).rejects.toMatchObject({ status: 400, message: /UTF-8/ })
    await expect(readBodyLimited(req('x'.repeat(500), { 'content-length': '50' }), 100)).rejects.toMatchObject({ status: 413, message: /500 bytes; at most 100/ })
  })
})
