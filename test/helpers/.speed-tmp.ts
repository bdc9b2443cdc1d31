import { loadZstd, jsonEvents, logLines, randomBytes } from './zstd-harness.ts'
import { createRequire } from 'node:module'
const require = createRequire(import.meta.url)
const zn = require('zstd-napi')
const z = await loadZstd()
const x = z.exports
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000 }
function rate(fn: () => unknown, units: number) { let best = 0; for (let r = 0; r < 4; r++) { let n = 0; const t0 = cpu(); let el = 0; do { fn(); n++; el = cpu() - t0 } while (el < 150); if (r) best = Math.max(best, n * units / el / 1000) } return best }
const levels = (process.env.LEVELS ?? '1,3').split(',').map(Number)
for (const [name, src] of [['json16k', jsonEvents(16384, 101)], ['json64k', jsonEvents(65536, 101)], ['logs16k', logLines(16384, 102)], ['logs64k', logLines(65536, 102)], ['rand64k', randomBytes(65536)], ['json1m', jsonEvents(1 << 20)]] as const) {
  const cap = x.zstdCompressBound(src.length); const base = x.scratch(src.length + cap + 64); const dst = base + ((src.length + 15) & ~15)
  new Uint8Array(x.memory.buffer, base, src.length).set(src)
  const row = [name.padEnd(8)]
  for (const l of levels) { const n = x.zstdCompressInto(l, base, src.length, dst, cap); row.push(`ours${l} ${rate(() => x.zstdCompressInto(l, base, src.length, dst, cap), src.length).toFixed(0).padStart(4)}MB/s ${n}`) }
  if (!process.env.NONAT) for (const l of [1, 3]) { const c = zn.compress(src, { compressionLevel: l }); row.push(`nat${l} ${rate(() => zn.compress(src, { compressionLevel: l }), src.length).toFixed(0).padStart(4)}MB/s ${c.length}`) }
  console.log(row.join(' | '))
}
