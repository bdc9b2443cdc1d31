import { describe, expect, it } from 'vitest'
import { ProtocolError } from '../../src/edge/errors.js'
import { FrameSplitter } from '../../src/bridge/frames.js'

describe('FrameSplitter (the relay forwards broker frames whole)', () => {
  const frame = (body: number[]) => [0, 0, 0, body.length, ...body]
  const frames = [frame([1, 2, 3]), frame([]), frame([9, 8, 7, 6, 5]), frame([4])]
  const stream = Buffer.from(frames.flat())

  it('re-frames a stream cut at any two positions, size prefixes kept', () => {
    for (let a = 0; a <= stream.length; a++) {
      for (let b = a; b <= stream.length; b++) {
        const s = new FrameSplitter(1000)
        const got = [...s.push(stream.subarray(0, a)), ...s.push(stream.subarray(a, b)), ...s.push(stream.subarray(b))].map((f) => Array.from(f))
        expect(got).toEqual(frames)
      }
    }
  })

  it('a stream fed one byte at a time', () => {
    const s = new FrameSplitter(1000)
    const got: number[][] = []
    for (let i = 0; i < stream.length; i++) got.push(...s.push(stream.subarray(i, i + 1)).map((f) => Array.from(f)))
    expect(got).toEqual(frames)
  })

  it('a frame inside one chunk is a view of it; one that straddles chunks is its own copy', () => {
    const s = new FrameSplitter(1000)
    const first = Buffer.from(stream.subarray(0, 10))
    const [whole] = s.push(first)
    first[4] = 42
    expect(whole![4]).toBe(42)
    const rest = Buffer.from(stream.subarray(10))
    const [straddling, inside] = s.push(rest)
    rest.fill(0xee)
    expect(Array.from(straddling!)).toEqual(frames[1])
    expect(inside![0]).toBe(0xee)
  })

  it('rejects negative and oversized sizes with a ProtocolError, also when the prefix straddles chunks', () => {
    expect(() => new FrameSplitter(1000).push(Buffer.from([0xff, 0xff, 0xff, 0xff]))).toThrow(ProtocolError)
    expect(() => new FrameSplitter(1000).push(Buffer.from([0, 0, 0x10, 0]))).toThrow(/outside/)
    const s = new FrameSplitter(1000)
    expect(s.push(Buffer.from([0, 0]))).toEqual([])
    expect(() => s.push(Buffer.from([0x10, 0, 1]))).toThrow(/outside/)
  })
})
