import { loadZstd } from '/work/main/test/helpers/zstd-harness.ts'
import { jsonEvents, logLines } from '/work/main/test/helpers/codec-harness.ts'
import { createRequire } from 'node:module'
const require = createRequire(import.meta.url)
const napi = require('zstd-napi')
const z = await loadZstd()
const x = z.exports
const iters = Number(process.env.ITERS ?? 0)
function rate(fn: () => unknown, size: number) {
  let best = 0
  for (let r = 0; r < 3; r++) {
    let n = 0; const t0 = performance.now(); let t = t0
    while (t - t0 < 150) { fn(); n++; t = performance.now() }
    best = Math.max(best, n * size / (t - t0) / 1e3)
  }
  return best
}
for (const [name, gen] of [['json', (n: number) => jsonEvents(n, 101)], ['logs', (n: number) => logLines(n, 102)]] as const) {
  for (const size of [16384, 65536]) {
    const src = gen(size)
    const cap = x.zstdCompressBound(size)
    const base = x.scratch(size + cap + 64)
    const dst = base + ((size + 15) & ~15)
    new Uint8Array(x.memory.buffer, base, size).set(src)
    for (const lvl of [1, 3]) {
      const n = x.zstdCompressInto(lvl, base, size, dst, cap)
      const ours = rate(() => x.zstdCompressInto(lvl, base, size, dst, cap), size)
      const nat = rate(() => napi.compress(src, { compressionLevel: lvl }), size)
      const nlen = napi.compress(src, { compressionLevel: lvl }).length
      console.log(`${name} ${size>>10}K L${lvl}: ours ${ours.toFixed(0)} MB/s ratio ${(size/n).toFixed(3)} | native ${nat.toFixed(0)} MB/s ratio ${(size/nlen).toFixed(3)} | speed x${(ours/nat).toFixed(2)} ratio ${(nlen/n).toFixed(3)}`)
    }
  }
}
if (iters) {
  const src = jsonEvents(65536, 101)
  const cap = x.zstdCompressBound(65536)
  const base = x.scratch(65536 + cap + 64)
  new Uint8Array(x.memory.buffer, base, 65536).set(src)
  const dst = base + 65536
  for (let i = 0; i < iters; i++) x.zstdCompressInto(3, base, 65536, dst, cap)
}
