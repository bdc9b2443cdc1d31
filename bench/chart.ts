// npm run bench -- chart: renders docs/bench.svg from the latest bench/results/*.json. Every bar is
// a ratio between kafka-edge and a peer measured in the same run; the tick marks the target.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { BenchReport } from './lib.js'

const here = dirname(fileURLToPath(import.meta.url))

function load(name: string): BenchReport | null {
  const f = join(here, 'results', `${name}.json`)
  return existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8')) as BenchReport) : null
}

function value(r: BenchReport | null, impl: string, metric: string): number | null {
  const hit = r?.results.find((x) => x.impl === impl && x.metric === metric)
  return hit ? hit.value : null
}

interface Bar { label: string; ratio: number; target: number }

function bars(): Bar[] {
  const out: Bar[] = []
  const add = (label: string, a: number | null, b: number | null, target: number) => {
    if (a !== null && b !== null && b > 0) out.push({ label, ratio: a / b, target })
  }
  const encode = load('encode')
  add('encode: WASM builder / kafkajs (records/s)', value(encode, 'kafka-edge-wasm', 'records/s'), value(encode, 'kafkajs', 'records/s'), 5)
  add('CRC32C 16 KiB: WASM / JS slicing-by-16', value(encode, 'kafka-edge-wasm', 'GB/s at 16KiB'), value(encode, 'kafka-edge-js', 'GB/s at 16KiB'), 1.2)
  const codecs = load('codecs')
  for (const codec of ['gzip', 'snappy', 'lz4', 'zstd']) {
    add(`${codec} json 16 KiB: speed / native`, value(codecs, 'kafka-edge-wasm', `${codec} json 16KiB compress`), value(codecs, 'native', `${codec} json 16KiB compress`), 0.5)
    const peers = { gzip: ['fflate', 'pako'], snappy: ['snappyjs'], lz4: ['lz4js'], zstd: ['zstd-codec'] }[codec]!
    const best = Math.max(...peers.map((p) => value(codecs, p, `${codec} json 16KiB compress`) ?? 0))
    add(`${codec} json 16 KiB: speed / ${codec === 'zstd' ? 'zstd-codec (libzstd in wasm)' : 'best pure-JS peer'}`, value(codecs, 'kafka-edge-wasm', `${codec} json 16KiB compress`), best || null, 2)
    add(`${codec} json 16 KiB: ratio / native`, value(codecs, 'kafka-edge-wasm', `${codec} json 16KiB ratio`), value(codecs, 'native', `${codec} json 16KiB ratio`), 0.9)
  }
  const bridge = load('bridge')
  add('relay / direct TCP (records/s)', value(bridge, 'kafka-edge-relay', 'records/s'), value(bridge, 'kafka-edge-direct', 'records/s'), 0.8)
  const produce = load('produce')
  add('produce: kafka-edge / Java (records/s)', value(produce, 'kafka-edge', 'records/s'), value(produce, 'java', 'records/s'), 1)
  add('produce: Java / kafka-edge (CPU per record)', value(produce, 'java', 'cpu-us/record'), value(produce, 'kafka-edge', 'cpu-us/record'), 1 / 1.5)
  add('produce: kafka-edge / kafkajs (records/s)', value(produce, 'kafka-edge', 'records/s'), value(produce, 'kafkajs', 'records/s'), 5)
  return out
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;')

export function render(list: Bar[]): string {
  const rowH = 26, labelW = 360, plotW = 420, top = 40
  const max = Math.max(2, ...list.map((b) => Math.max(b.ratio, b.target))) * 1.05
  const x = (v: number) => labelW + (Math.log10(1 + v) / Math.log10(1 + max)) * plotW
  const h = top + list.length * rowH + 30
  const rows = list.map((b, i) => {
    const y = top + i * rowH
    const ok = b.ratio >= b.target
    return `<text x="${labelW - 8}" y="${y + 16}" text-anchor="end">${esc(b.label)}</text>` +
      `<rect x="${labelW}" y="${y + 4}" width="${(x(b.ratio) - labelW).toFixed(1)}" height="16" fill="${ok ? '#2e7d32' : '#c62828'}"/>` +
      `<line x1="${x(b.target).toFixed(1)}" x2="${x(b.target).toFixed(1)}" y1="${y + 1}" y2="${y + 23}" stroke="#000" stroke-width="2"/>` +
      `<text x="${(x(b.ratio) + 6).toFixed(1)}" y="${y + 16}">${b.ratio.toFixed(2)}x</text>`
  }).join('\n')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${labelW + plotW + 80}" height="${h}" font-family="sans-serif" font-size="12">
<text x="10" y="20" font-size="14" font-weight="bold">kafka-edge vs peers, same run (green: target met; black tick: target)</text>
<line x1="${x(1).toFixed(1)}" x2="${x(1).toFixed(1)}" y1="${top - 4}" y2="${h - 24}" stroke="#999" stroke-dasharray="3,3"/>
<text x="${x(1).toFixed(1)}" y="${h - 10}" text-anchor="middle" fill="#666">1x</text>
${rows}
</svg>
`
}

export default async function main(): Promise<void> {
  const list = bars()
  const out = join(here, '..', 'docs', 'bench.svg')
  writeFileSync(out, render(list))
  for (const b of list) console.log(`${b.ratio >= b.target ? 'ok  ' : 'MISS'} ${b.label.padEnd(48)} ${b.ratio.toFixed(2)}x (target ${b.target.toFixed(2)}x)`)
  console.log(`wrote ${out}`)
}
