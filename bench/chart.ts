// npm run bench -- chart: renders the SVGs in docs/ from the latest bench/results/*.json.
//   docs/bench.svg             every target as a ratio between kafka-edge and a peer measured in the same run
//   docs/bench-throughput.svg  records/s per peer, for each value size x compression of the produce run
//   docs/bench-cpu.svg         CPU microseconds per record (send loop), same layout
//   docs/bench-faults.svg      the fault table: per peer and scenario, what the read-back found
// Each chart carries the machine, versions and load average of the run it draws.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { BenchReport } from './lib.js'

const here = dirname(fileURLToPath(import.meta.url))
const docs = join(here, '..', 'docs')
/** Issue 26: the relay carries at least 0.85x of direct TCP's records/s at full speed. */
const RELAY_TARGET = 0.85

function load(name: string): BenchReport | null {
  const f = join(here, 'results', `${name}.json`)
  return existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8')) as BenchReport) : null
}

function value(r: BenchReport | null, impl: string, metric: string): number | null {
  const hit = r?.results.find((x) => x.impl === impl && x.metric === metric)
  return hit ? hit.value : null
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
const fmt = (v: number) => (v >= 1000 ? Math.round(v).toLocaleString('en-US') : v >= 10 ? v.toFixed(1) : v.toFixed(2))

/** "2 x AMD EPYC, Node v22.x; load average 1.2 -> 2.3; 2026-12-01" */
function footer(r: BenchReport): string {
  const cfg = r.config as { loadAverage?: { before: number[] | number; after: number[] | number }; versions?: Record<string, string | null>; node?: string; relayNode?: string }
  const la = cfg.loadAverage
  const one = (x: number[] | number | undefined) => (Array.isArray(x) ? x[0] : x)
  // The bridge suite's producers and relay run under Nodes of their own, not the bench's.
  const versions = cfg.versions ? Object.entries(cfg.versions).filter(([, v]) => v).map(([k, v]) => `${k} ${v}`).join(', ')
    : cfg.relayNode ? `producers on node ${cfg.node ?? r.machine.node}, relay on node ${cfg.relayNode}` : `node ${r.machine.node}`
  return `${r.machine.cpus} x ${r.machine.cpu ?? 'cpu'} (shared); ${versions}; load average (1 min) ${la ? `${one(la.before)?.toFixed(2)} -> ${one(la.after)?.toFixed(2)}` : 'n/a'}; ${r.when.slice(0, 16).replace('T', ' ')} UTC`
}

function footerLines(text: string, width: number): string[] {
  const perLine = Math.floor(width / 6)
  const out: string[] = []
  let line = ''
  for (const word of text.split(' ')) {
    if ((line + ' ' + word).length > perLine) { out.push(line); line = word } else line = line ? `${line} ${word}` : word
  }
  if (line) out.push(line)
  return out
}

// ---- the targets chart -------------------------------------------------------------------------

interface Bar { label: string; ratio: number; target: number }

/** One row of produce.json's `config.targets`. */
interface Target {
  config: string; recordsPerSecVsJava: number; cpuPerRecordVsJava: number; bestJsPeer: string | null; recordsPerSecVsBestJs: number | null; node20VsNode22: number
}

function targetBars(): Bar[] {
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
  add('relay / direct TCP at full speed (records/s)', value(bridge, 'kafka-edge-relay', 'records/s'), value(bridge, 'kafka-edge-direct', 'records/s'), RELAY_TARGET)
  const produce = load('produce')
  const targets = (produce?.config as { targets?: Target[] } | undefined)?.targets ?? []
  for (const t of targets) {
    out.push({ label: `produce ${t.config}: kafka-edge / Java (records/s)`, ratio: t.recordsPerSecVsJava, target: 1.5 })
    out.push({ label: `produce ${t.config}: Java / kafka-edge (CPU per record)`, ratio: 1 / t.cpuPerRecordVsJava, target: 1 / 0.6 })
    if (t.recordsPerSecVsBestJs !== null) out.push({ label: `produce ${t.config}: kafka-edge / ${t.bestJsPeer} (records/s)`, ratio: t.recordsPerSecVsBestJs, target: 2 })
  }
  return out.filter((b) => Number.isFinite(b.ratio))
}

export function renderTargets(list: Bar[], note: string): string {
  const rowH = 26, labelW = 420, plotW = 420, top = 40
  const max = Math.max(2, ...list.map((b) => Math.max(b.ratio, b.target))) * 1.05
  const x = (v: number) => labelW + (Math.log10(1 + v) / Math.log10(1 + max)) * plotW
  const notes = footerLines(note, labelW + plotW + 80)
  const h = top + list.length * rowH + 30 + notes.length * 14
  const rows = list.map((b, i) => {
    const y = top + i * rowH
    const ok = b.ratio >= b.target
    return `<text x="${labelW - 8}" y="${y + 16}" text-anchor="end">${esc(b.label)}</text>` +
      `<rect x="${labelW}" y="${y + 4}" width="${(x(b.ratio) - labelW).toFixed(1)}" height="16" fill="${ok ? '#2e7d32' : '#c62828'}"/>` +
      `<line x1="${x(b.target).toFixed(1)}" x2="${x(b.target).toFixed(1)}" y1="${y + 1}" y2="${y + 23}" stroke="#000" stroke-width="2"/>` +
      `<text x="${(x(b.ratio) + 6).toFixed(1)}" y="${y + 16}">${b.ratio.toFixed(2)}x</text>`
  }).join('\n')
  const base = top + list.length * rowH
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${labelW + plotW + 80}" height="${h}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="#fff"/>
<text x="10" y="20" font-size="14" font-weight="bold">kafka-edge vs peers, same run (green: target met; black tick: target)</text>
<line x1="${x(1).toFixed(1)}" x2="${x(1).toFixed(1)}" y1="${top - 4}" y2="${base + 6}" stroke="#999" stroke-dasharray="3,3"/>
<text x="${x(1).toFixed(1)}" y="${base + 20}" text-anchor="middle" fill="#666">1x</text>
${rows}
${notes.map((l, i) => `<text x="10" y="${base + 40 + i * 14}" fill="#555" font-size="10">${esc(l)}</text>`).join('\n')}
</svg>
`
}

// ---- grouped bars (throughput, CPU) ------------------------------------------------------------

const PEER_COLORS: Record<string, string> = {
  'kafka-edge': '#1b5e20', 'kafka-edge-node20': '#66bb6a', java: '#e65100', confluent: '#6a1b9a',
  'platformatic-idempotent': '#0d47a1', platformatic: '#64b5f6', 'kafkajs-idempotent': '#616161', kafkajs: '#bdbdbd',
  'kafka-edge-sasl-ssl': '#004d40', 'java-sasl-ssl': '#bf360c',
}

interface Group { label: string; bars: { impl: string; value: number }[] }

export function renderGroups(title: string, unit: string, groups: Group[], note: string, lowerIsBetter: boolean): string {
  const labelW = 190, plotW = 520, barH = 13, gap = 12, top = 46
  const max = Math.max(...groups.flatMap((g) => g.bars.map((b) => b.value)), 1) * 1.12
  const width = labelW + plotW + 110
  let y = top
  const parts: string[] = []
  for (const g of groups) {
    parts.push(`<text x="10" y="${y + 12}" font-weight="bold">${esc(g.label)}</text>`)
    y += 18
    for (const b of g.bars) {
      const w = (b.value / max) * plotW
      parts.push(`<text x="${labelW - 8}" y="${y + barH - 2}" text-anchor="end">${esc(b.impl)}</text>` +
        `<rect x="${labelW}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${PEER_COLORS[b.impl] ?? '#888'}"/>` +
        `<text x="${(labelW + w + 5).toFixed(1)}" y="${y + barH - 2}">${fmt(b.value)}</text>`)
      y += barH + 3
    }
    y += gap
  }
  const notes = footerLines(note, width)
  const h = y + 10 + notes.length * 14
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${h}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="#fff"/>
<text x="10" y="20" font-size="14" font-weight="bold">${esc(title)}</text>
<text x="10" y="36" fill="#555">${esc(unit)}${lowerIsBetter ? ' (lower is better)' : ' (higher is better)'}; each peer in its own process, same broker, same run</text>
${parts.join('\n')}
${notes.map((l, i) => `<text x="10" y="${y + 10 + i * 14}" fill="#555" font-size="10">${esc(l)}</text>`).join('\n')}
</svg>
`
}

interface ProduceRow { impl: string; metric: string; value: number; valueBytes?: number; compression?: string }

function produceGroups(r: BenchReport, metric: string): Group[] {
  const rows = r.results as ProduceRow[]
  const configs = (r.config as { configs: string[] }).configs
  const order = Object.keys(PEER_COLORS)
  return configs.map((c) => ({
    label: `${c.replace('B ', ' B values, ')}`,
    bars: rows.filter((x) => x.metric === `${metric} @${c}`).sort((a, b) => order.indexOf(a.impl) - order.indexOf(b.impl)).map((x) => ({ impl: x.impl, value: x.value })),
  })).filter((g) => g.bars.length > 0)
}

// ---- the fault table ---------------------------------------------------------------------------

interface ScenarioResult {
  peer: string; scenario: string; sent: number; acked: number; failed: number; neverSettled: number; duplicates: number
  ackedMissing: number; orderViolations: number; failedClaimedNotWrittenInLog: number; failedInLog: number
}

export function renderFaults(r: BenchReport): string {
  const cfg = r.config as { scenarioResults: ScenarioResult[]; unavailable: Record<string, string> }
  const cols: { key: keyof ScenarioResult; label: string; bad: boolean }[] = [
    { key: 'sent', label: 'sent', bad: false },
    { key: 'acked', label: 'acked', bad: false },
    { key: 'failed', label: 'failed', bad: false },
    { key: 'duplicates', label: 'duplicates', bad: true },
    { key: 'ackedMissing', label: 'acked, missing', bad: true },
    { key: 'orderViolations', label: 'out of order', bad: true },
    { key: 'neverSettled', label: 'never settled', bad: true },
    { key: 'failedClaimedNotWrittenInLog', label: '"not written", in log', bad: true },
    { key: 'failedInLog', label: 'failed, in log', bad: false },
  ]
  const peerW = 170, scW = 80, colW = 106, rowH = 20, top = 56
  const width = peerW + scW + cols.length * colW + 20
  const rows = cfg.scenarioResults
  const parts: string[] = []
  cols.forEach((c, i) => parts.push(`<text x="${peerW + scW + i * colW + colW - 6}" y="${top - 8}" text-anchor="end" font-weight="bold">${esc(c.label)}</text>`))
  let y = top
  let lastPeer = ''
  for (const row of rows) {
    if (row.peer !== lastPeer) { parts.push(`<line x1="10" x2="${width - 10}" y1="${y}" y2="${y}" stroke="#ccc"/>`); lastPeer = row.peer }
    parts.push(`<text x="10" y="${y + 14}" font-weight="bold">${esc(row.peer)}</text><text x="${peerW}" y="${y + 14}">${esc(row.scenario)}</text>`)
    cols.forEach((c, i) => {
      const v = row[c.key] as number
      const red = c.bad && v > 0
      const x = peerW + scW + i * colW
      if (red) parts.push(`<rect x="${x + 4}" y="${y + 2}" width="${colW - 6}" height="${rowH - 4}" fill="#ffcdd2"/>`)
      else if (c.bad) parts.push(`<rect x="${x + 4}" y="${y + 2}" width="${colW - 6}" height="${rowH - 4}" fill="#e8f5e9"/>`)
      parts.push(`<text x="${x + colW - 6}" y="${y + 14}" text-anchor="end"${red ? ' fill="#b71c1c" font-weight="bold"' : ''}>${v.toLocaleString('en-US')}</text>`)
    })
    y += rowH
  }
  for (const [peer, why] of Object.entries(cfg.unavailable ?? {})) {
    parts.push(`<text x="10" y="${y + 14}" font-weight="bold">${esc(peer)}</text><text x="${peerW}" y="${y + 14}" fill="#b71c1c">${esc(why.slice(0, 150))}</text>`)
    y += rowH
  }
  const notes = footerLines(`Scenarios: ambiguous = one Produce answer per second withheld after the broker wrote it (connection closed); kill = kill -9 of the leader of half the partitions, restart; stop = SIGSTOP of a leader for 9 s (past request.timeout.ms), SIGCONT. Read back with the Java consumer. Red: a record lost, duplicated, reordered, left unsettled, or reported "not written" although it is in the log. ${footer(r)}`, width)
  const h = y + 16 + notes.length * 14
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${h}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="#fff"/>
<text x="10" y="20" font-size="14" font-weight="bold">Idempotent producers under faults: 3 brokers, RF 3, min.insync.replicas 2 (records)</text>
${parts.join('\n')}
${notes.map((l, i) => `<text x="10" y="${y + 16 + i * 14}" fill="#555" font-size="10">${esc(l)}</text>`).join('\n')}
</svg>
`
}

// ---- the tables in docs/benchmarks.md ----------------------------------------------------------

const md = (rows: (string | number)[][]) => {
  const [head, ...body] = rows
  return [`| ${head!.join(' | ')} |`, `| ${head!.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`, ...body.map((r) => `| ${r.join(' | ')} |`)].join('\n')
}

function produceTables(r: BenchReport): string {
  const rows = r.results as ProduceRow[]
  const cfg = r.config as { configs: string[]; errors: Record<string, string> }
  const out: string[] = []
  for (const c of cfg.configs) {
    const get = (impl: string, m: string) => rows.find((x) => x.impl === impl && x.metric === `${m} @${c}`)?.value
    const edge = get('kafka-edge', 'records/s')
    const impls = Object.keys(PEER_COLORS).filter((i) => get(i, 'records/s') !== undefined)
    out.push(`**${c.replace('B ', '-byte values, ')}**\n`)
    out.push(md([
      ['peer', 'records/s', 'kafka-edge is', 'CPU µs/record (send loop)', 'CPU µs/record (whole process)', 'broker CPU µs/record'],
      ...impls.map((i) => [i, fmt(get(i, 'records/s')!), edge ? `${(edge / get(i, 'records/s')!).toFixed(2)}x` : '', fmt(get(i, 'cpu-us/record')!), fmt(get(i, 'cpu-us/record (whole process)')!), get(i, 'broker cpu-us/record') === undefined ? '' : fmt(get(i, 'broker cpu-us/record')!)]),
      ...Object.entries(cfg.errors ?? {}).filter(([k]) => k.endsWith(`|${c}`)).map(([k, e]) => [k.split('|')[0]!, 'did not run', '', esc(e).replace(/\|/g, '\\|').slice(0, 200), '', '']),
    ]))
    out.push('')
  }
  return out.join('\n')
}

function targetTable(r: BenchReport, bridge: BenchReport | null): string {
  const t = (r.config as { targets: Target[] }).targets
  const mark = (ok: boolean) => (ok ? 'met' : '**missed**')
  const rows: (string | number)[][] = [['config', 'records/s vs Java (>= 1.5x)', 'CPU/record vs Java (<= 0.6x)', 'records/s vs best JS peer (>= 2x)', 'Node 20 / Node 22']]
  for (const x of t) {
    rows.push([x.config, `${x.recordsPerSecVsJava.toFixed(2)}x ${mark(x.recordsPerSecVsJava >= 1.5)}`, `${x.cpuPerRecordVsJava.toFixed(2)}x ${mark(x.cpuPerRecordVsJava <= 0.6)}`,
      `${x.recordsPerSecVsBestJs?.toFixed(2)}x vs ${x.bestJsPeer} ${mark((x.recordsPerSecVsBestJs ?? 0) >= 2)}`, `${x.node20VsNode22.toFixed(2)}x`])
  }
  const ratio = value(bridge, 'kafka-edge-relay', 'relay/direct throughput')
  const out = [md(rows)]
  if (ratio !== null) out.push('', `Relay at full speed (bridge suite): relay / direct = ${ratio.toFixed(2)}x (target >= ${RELAY_TARGET}x) ${mark(ratio >= RELAY_TARGET)}.`)
  return out.join('\n')
}

function faultTable(r: BenchReport): string {
  const cfg = r.config as { scenarioResults: ScenarioResult[]; unavailable: Record<string, string> }
  const rows: (string | number)[][] = [['peer', 'scenario', 'sent', 'acked', 'failed', 'duplicates', 'acked, missing', 'out of order', 'never settled', '"not written", in log', 'failed, in log']]
  for (const x of cfg.scenarioResults) {
    rows.push([x.peer, x.scenario, x.sent, x.acked, x.failed, x.duplicates, x.ackedMissing, x.orderViolations, x.neverSettled, x.failedClaimedNotWrittenInLog, x.failedInLog]
      .map((v, i) => (typeof v === 'number' ? (i >= 5 && i <= 9 && v > 0 ? `**${v.toLocaleString('en-US')}**` : v.toLocaleString('en-US')) : v)))
  }
  const out = [md(rows)]
  for (const [peer, why] of Object.entries(cfg.unavailable ?? {})) out.push('', `${peer}: ${why}`)
  return out.join('\n')
}

function bridgeTable(r: BenchReport): string {
  const get = (impl: string, m: string) => value(r, impl, m)
  const n = (impl: string, m: string) => fmt(get(impl, m) ?? NaN)
  const pair = (impl: string, a: string, b: string) => `${n(impl, a)} / ${n(impl, b)}`
  // The pipe (bench/relay-pipe.mjs) is the relay's floor: the same WebSocket hop with no relay logic.
  const pipe = 'relay-pipe (floor)'
  const hasPipeLatency = get(pipe, 'p99-ms') !== null
  // Runs before the user/system split have no system figure.
  const cpu = (impl: string) => `${n(impl, 'relay cpu-us/record')}${get(impl, 'relay system cpu-us/record') === null ? '' : ` (${n(impl, 'relay system cpu-us/record')})`}`
  return md([
    ['', 'direct (TCP)', 'through the relay', 'through the pipe (floor)'],
    ['records/s', n('kafka-edge-direct', 'records/s'), n('kafka-edge-relay', 'records/s'), n(pipe, 'records/s')],
    ['producer CPU µs/record', n('kafka-edge-direct', 'producer cpu-us/record'), n('kafka-edge-relay', 'producer cpu-us/record'), ''],
    ['relay CPU µs/record (of which system)', '', cpu('kafka-edge-relay'), cpu(pipe)],
    ['relay CPU ms/MB', '', n('kafka-edge-relay', 'relay cpu-ms/MB'), n(pipe, 'relay cpu-ms/MB')],
    ['p50 / p99 ms per Produce request at full speed (median round)', pair('kafka-edge-direct', 'p50-ms', 'p99-ms'), pair('kafka-edge-relay', 'p50-ms', 'p99-ms'), hasPipeLatency ? pair(pipe, 'p50-ms', 'p99-ms') : ''],
    ['added over direct, p50 / p99 ms', '', pair('kafka-edge-relay', 'added p50-ms', 'added p99-ms'), hasPipeLatency ? `p99 ${n(pipe, 'added p99-ms')}` : ''],
  ])
}

/** Replaces what stands between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->` in docs/benchmarks.md. */
function fillDoc(parts: Record<string, string>): boolean {
  const file = join(docs, 'benchmarks.md')
  if (!existsSync(file)) return false
  let text = readFileSync(file, 'utf8')
  for (const [name, body] of Object.entries(parts)) {
    const re = new RegExp(`(<!-- generated:${name} -->)[\\s\\S]*?(<!-- /generated:${name} -->)`)
    text = text.replace(re, (_m, a: string, b: string) => `${a}\n${body}\n${b}`)
  }
  writeFileSync(file, text)
  return true
}

export default async function main(): Promise<void> {
  const written: string[] = []
  const produce = load('produce')
  const list = targetBars()
  writeFileSync(join(docs, 'bench.svg'), renderTargets(list, produce ? `produce: ${footer(produce)}` : ''))
  written.push('docs/bench.svg')
  for (const b of list) console.log(`${b.ratio >= b.target ? 'ok  ' : 'MISS'} ${b.label.padEnd(60)} ${b.ratio.toFixed(2)}x (target ${b.target.toFixed(2)}x)`)
  if (produce && (produce.config as { configs?: unknown }).configs) {
    writeFileSync(join(docs, 'bench-throughput.svg'), renderGroups('Producer throughput per peer', 'records/s, acks=all', produceGroups(produce, 'records/s'), footer(produce), false))
    writeFileSync(join(docs, 'bench-cpu.svg'), renderGroups('Producer CPU per record', 'CPU microseconds per record in the send loop (user+system, all threads)', produceGroups(produce, 'cpu-us/record'), footer(produce), true))
    written.push('docs/bench-throughput.svg', 'docs/bench-cpu.svg')
  }
  const faults = load('faults')
  if (faults) { writeFileSync(join(docs, 'bench-faults.svg'), renderFaults(faults)); written.push('docs/bench-faults.svg') }
  const bridge = load('bridge')
  const parts: Record<string, string> = {}
  if (produce && (produce.config as { configs?: unknown }).configs) {
    parts.produce = `${produceTables(produce)}\n_${footer(produce)}_`
    parts.targets = targetTable(produce, bridge)
  }
  if (faults) parts.faults = `${faultTable(faults)}\n\n_${footer(faults)}_`
  if (bridge) parts.bridge = `${bridgeTable(bridge)}\n\n_${footer(bridge)}_`
  if (fillDoc(parts)) written.push('docs/benchmarks.md (tables)')
  console.log(`wrote ${written.join(', ')}`)
}
