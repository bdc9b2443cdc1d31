import { readFileSync } from 'node:fs'
import { jsonEvents } from './zstd-harness.ts'
const { instance } = await WebAssembly.instantiate(readFileSync('/tmp/astest/prof.wasm'), { env: { abort: () => { throw new Error('abort') } } })
const x = instance.exports as any
const src = jsonEvents(16384, 101)
const cap = x.zstdCompressBound(src.length); const base = x.scratch(src.length + cap + 64); const dst = base + ((src.length + 15) & ~15)
new Uint8Array(x.memory.buffer, base, src.length).set(src)
const t0 = performance.now(); let n = 0
while (performance.now() - t0 < 3000) { x.zstdCompressInto(3, base, src.length, dst, cap); n++ }
console.log(n, 'iters', (n * 16384 / 3000 / 1000).toFixed(1), 'MB/s')
