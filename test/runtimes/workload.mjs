// The records produce-secure.mjs sends, rebuilt from (count, seed) by the test that checks what the
// Java reader got back. Plain JavaScript with no imports, so Node, Deno and Bun load the same file.

/** mulberry32: the same seed gives the same records in every runtime. */
function rng(seed) {
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

/**
 * `count` records: null and unicode keys, null, empty, binary (every byte value) and one 64 KiB value,
 * headers with a null value, explicit and broker-assigned timestamps. Each value starts with `#i#`
 * (except null and empty ones) so a record can be told apart from its neighbours.
 */
export function secureWorkload(count, seed) {
  const r = rng(seed)
  const out = []
  for (let i = 0; i < count; i++) {
    const shape = i % 8
    const key = shape === 0 ? null : enc.encode(shape === 1 ? `ключ-🔑-${i}` : `k-${Math.floor(r() * 64)}`)
    let value
    if (shape === 2) value = null
    else if (shape === 3) value = new Uint8Array(0)
    else {
      const len = i === 5 ? 64 * 1024 : 16 + Math.floor(r() * 600)
      value = new Uint8Array(len)
      for (let j = 0; j < len; j++) value[j] = (j * 131 + i * 7 + seed) & 0xff
      value.set(enc.encode(`#${i}#`))
    }
    const headers = [{ key: 'i', value: enc.encode(String(i)) }]
    if (shape === 4) headers.push({ key: 'nothing', value: null }, { key: 'τ', value: new Uint8Array([0, 255, 1, 254]) })
    out.push({ key, value, headers, timestamp: shape === 6 ? 1_700_000_000_000 + i : undefined })
  }
  return out
}
