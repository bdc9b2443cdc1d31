import type { ProducerRecord } from '../../src/edge/index.js'

/** A small seeded PRNG (mulberry32): every generated workload replays from its seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const enc = new TextEncoder()
const UNICODE = ['ключ', '鍵', 'κλειδί', '🔑-key', 'clé', 'مفتاح']

export interface MixedRecord {
  key: Uint8Array | null
  value: Uint8Array | null
  headers: { key: string; value: Uint8Array | null }[]
  timestamp: number | undefined
}

/**
 * Records of mixed shapes: null key, null value, empty value, a 100 KB value, unicode keys, 0-5
 * headers including null header values, explicit and default timestamps. Every value carries its
 * index so order can be checked after a round trip.
 */
export function mixedRecords(n: number, seed = 1): MixedRecord[] {
  const r = rng(seed)
  const out: MixedRecord[] = []
  for (let i = 0; i < n; i++) {
    const shape = i % 10
    const key = shape === 0 ? null : shape === 1 ? enc.encode(`${UNICODE[i % UNICODE.length]}-${i}`) : enc.encode(`key-${Math.floor(r() * 500)}`)
    let value: Uint8Array | null
    if (shape === 2) value = null
    else if (shape === 3) value = new Uint8Array(0)
    else if (i % 2500 === 7) {
      value = new Uint8Array(100 * 1024)
      for (let j = 0; j < value.length; j++) value[j] = (j * 31 + i) & 0xff
      value.set(enc.encode(`#${i}#`))
    } else value = enc.encode(`#${i}# {"event":"click","x":${Math.floor(r() * 1000)},"page":"/p/${i % 37}"}`)
    const headers: MixedRecord['headers'] = []
    const hn = Math.floor(r() * 6)
    for (let h = 0; h < hn; h++) headers.push({ key: h === 0 ? 'trace-id' : `h${h}-${UNICODE[h % UNICODE.length]}`, value: h === 2 ? null : enc.encode(`v${i}.${h}`) })
    const timestamp = shape === 5 ? 1_600_000_000_000 + i : undefined
    out.push({ key, value, headers, timestamp })
  }
  return out
}

export const toProducerRecord = (topic: string, m: MixedRecord): ProducerRecord =>
  ({ topic, key: m.key, value: m.value, headers: m.headers, timestamp: m.timestamp })

export function sameBytes(a: Uint8Array | null, b: Uint8Array | null): boolean {
  if (a === null || b === null) return a === b
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
