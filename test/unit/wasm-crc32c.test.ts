import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { loadCore, type Core } from '../../src/edge/wasm/core.js'
import { crc32cBitwise } from '../helpers/batch-reader.js'

let core: Core
beforeAll(async () => {
  core = await loadCore()
})

function randomBytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n)
  let x = seed | 1
  for (let i = 0; i < n; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    out[i] = x
  }
  return out
}

/** Runs the WASM kernel directly on bytes placed `misalign` bytes past an aligned address. */
function wasmCrcAt(bytes: Uint8Array, misalign: number, init = 0): number {
  const at = core.staging(bytes.length + 16)
  const p = ((at + 7) & ~7) + misalign
  core.bytes().set(bytes, p)
  return core.exports.crc32c(p, bytes.length, init) >>> 0
}

describe('crc32c', () => {
  it('matches the published check values', () => {
    expect(core.crc32c(new TextEncoder().encode('123456789'))).toBe(0xe3069283)
    // RFC 3720 (iSCSI) appendix B.4
    expect(core.crc32c(new Uint8Array(32))).toBe(0x8a9136aa)
    expect(core.crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43)
    expect(core.crc32c(Uint8Array.from({ length: 32 }, (_, i) => i))).toBe(0x46dd794e)
    expect(core.crc32c(Uint8Array.from({ length: 32 }, (_, i) => 31 - i))).toBe(0x113fdb5c)
    expect(core.crc32c(new Uint8Array(0))).toBe(0)
  })

  it('agrees with the bitwise reference at every length around the kernel block boundaries', () => {
    const data = randomBytes(4 * 1536 + 64, 7)
    const lengths = new Set<number>()
    for (let n = 0; n <= 64; n++) lengths.add(n)
    for (const edge of [384, 768, 1152, 1536, 3072, 4608]) for (let d = -17; d <= 17; d++) lengths.add(edge + d)
    for (const n of lengths) {
      const slice = data.subarray(0, n)
      expect(core.crc32c(slice), `length ${n}`).toBe(crc32cBitwise(slice))
    }
  })

  it('agrees with the bitwise reference for random lengths up to 100k and unaligned starts', () => {
    const data = randomBytes(100_000 + 8, 99)
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 0, max: 7 }), (n, misalign) => {
        const slice = data.subarray(misalign, misalign + n)
        const expected = crc32cBitwise(slice)
        expect(wasmCrcAt(slice, misalign)).toBe(expected)
        expect(core.crc32c(slice)).toBe(expected)
      }),
      { numRuns: 60 },
    )
  })

  it('continues a previous CRC through init, also across the 64 KiB chunking of JS input', () => {
    const data = randomBytes(200_000, 3)
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 200_000 }), (cut) => {
        const whole = crc32cBitwise(data)
        expect(core.crc32c(data.subarray(cut), core.crc32c(data.subarray(0, cut)))).toBe(whole)
        expect(wasmCrcAt(data.subarray(cut), 3, crc32cBitwise(data.subarray(0, cut)))).toBe(whole)
      }),
      { numRuns: 10 },
    )
  })
})
