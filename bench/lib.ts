// Shared benchmark plumbing: timing, the results file ({ name, when, machine, config, results:
// [{ impl, metric, unit, value }] }, every peer measured in the same run) and the printed table.
import { spawnSync } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export interface BenchResult {
  impl: string
  metric: string
  unit: string
  value: number
}

export interface BenchReport {
  name: string
  when: string
  machine: { cpus: number; node: string; cpu?: string }
  config: Record<string, unknown>
  results: BenchResult[]
}

const resultsDir = join(dirname(fileURLToPath(import.meta.url)), 'results')

/**
 * Runs `fn` (which does `units` units of work per call) until `minMs` has passed, `rounds` times
 * after a warm-up round, and returns the best units per second: on a shared 2-core box the best
 * round is the one least disturbed by neighbours.
 */
export async function bestRate(fn: () => unknown, units: number, opts: { rounds?: number; minMs?: number } = {}): Promise<number> {
  const rounds = opts.rounds ?? 5
  const minMs = opts.minMs ?? 300
  let best = 0
  for (let round = -1; round < rounds; round++) {
    let calls = 0
    const t0 = performance.now()
    let elapsed = 0
    do {
      const r = fn()
      if (r instanceof Promise) await r
      calls++
      elapsed = performance.now() - t0
    } while (elapsed < minMs)
    if (round >= 0) best = Math.max(best, (calls * units) / (elapsed / 1000))
  }
  return best
}

export function report(name: string, config: Record<string, unknown>, results: BenchResult[]): BenchReport {
  return {
    name,
    when: new Date().toISOString(),
    machine: { cpus: cpus().length, node: process.version, cpu: cpus()[0]?.model },
    config,
    results,
  }
}

export function writeReport(r: BenchReport): string {
  mkdirSync(resultsDir, { recursive: true })
  const file = join(resultsDir, `${r.name}.json`)
  writeFileSync(file, JSON.stringify(r, null, 2) + '\n')
  return file
}

/** Prints one row per result, with its ratio to `baseline`'s result for the same metric. */
export function printTable(results: BenchResult[], baseline: string): void {
  const rows = results.map((r) => {
    const base = results.find((b) => b.impl === baseline && b.metric === r.metric)
    return [r.metric, r.impl, formatNumber(r.value), r.unit, base ? `${(base.value / r.value).toFixed(2)}x` : '']
  })
  const head = ['metric', 'impl', 'value', 'unit', `${baseline} is`]
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)))
  const line = (cells: string[]) => cells.map((c, i) => (i === 2 || i === 4 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ')
  console.log(line(head))
  console.log(widths.map((w) => '-'.repeat(w)).join('  '))
  for (const row of rows) console.log(line(row))
}

function formatNumber(v: number): string {
  if (v >= 1000) return Math.round(v).toLocaleString('en-US')
  return v.toPrecision(3)
}

/** CPU milliseconds (user + system) of the workerd processes in a wrangler dev process group. */
export function workerdCpuMs(pgid: number): number {
  return workerdCpu(pgid).total
}

/**
 * The same split by where it goes. wrangler dev runs two workerd processes: its dev proxy (the
 * public port and the inspector proxy; no Worker of yours) and the one that runs the Worker and its
 * Durable Objects (started with --inspector-addr). In that one, the main thread runs the isolate and
 * also workerd's own I/O (HTTP, sockets, the storage); the other threads are V8's (GC, compilation).
 */
export function workerdCpu(pgid: number): { total: number; proxy: number; main: number; otherThreads: number } {
  const out = { total: 0, proxy: 0, main: 0, otherThreads: 0 }
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const p = procStat(`/proc/${pid}/stat`)
      if (p.comm !== 'workerd' || p.pgrp !== pgid) continue
      const all = (p.userUs + p.systemUs) / 1000
      out.total += all
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--inspector-addr')) { out.proxy += all; continue }
      const t = procStat(`/proc/${pid}/task/${pid}/stat`)
      const main = (t.userUs + t.systemUs) / 1000
      out.main += main
      out.otherThreads += all - main
    } catch { continue }
  }
  return out
}

let clockTicks = 0
/** Linux's USER_HZ (`getconf CLK_TCK`), the unit of /proc's CPU times: 100 on every Linux build Node runs on. */
export function userHz(): number {
  if (clockTicks === 0) clockTicks = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100
  return clockTicks
}

/**
 * One /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat: the name, the process group and the user and
 * system CPU in µs. Throws if the process or thread is gone. The name may hold spaces and ")", so the
 * fields are read after the last ")": state is index 0, pgrp 2, utime 11, stime 12.
 */
export function procStat(path: string): { comm: string; pgrp: number; userUs: number; systemUs: number } {
  const s = readFileSync(path, 'utf8')
  const close = s.lastIndexOf(')')
  const f = s.slice(close + 2).split(' ')
  const us = 1e6 / userHz()
  return { comm: s.slice(s.indexOf('(') + 1, close), pgrp: Number(f[2]), userUs: Number(f[11]) * us, systemUs: Number(f[12]) * us }
}

/**
 * Random A-Z bytes for payloads, as ProducerPerformance's `--record-size` fills its array (one
 * nextInt(26) per byte). Each 32-bit xorshift draw gives four letters, its base-26 digits: 2^32 is
 * 9,398.4 times 26^4, so every letter's odds stay within 0.011% of 1/26 and the bytes compress as
 * they did. One draw per byte cost 0.28 µs per 100 B record, bound by the xorshift's dependency
 * chain, and that was in every Node peer's figure (docs/benchmarks.md).
 */
export function azFiller(seed: number): (dst: Uint8Array, from: number, to: number) => void {
  let x = seed | 0
  return (dst, from, to) => {
    let j = from
    for (; j + 4 <= to; j += 4) {
      x ^= x << 13; x ^= x >>> 17; x ^= x << 5
      const r = x >>> 0
      const q1 = (r / 26) >>> 0, q2 = (q1 / 26) >>> 0, q3 = (q2 / 26) >>> 0
      dst[j] = 65 + r - 26 * q1
      dst[j + 1] = 65 + q1 - 26 * q2
      dst[j + 2] = 65 + q2 - 26 * q3
      dst[j + 3] = 65 + q3 % 26
    }
    for (; j < to; j++) {
      x ^= x << 13; x ^= x >>> 17; x ^= x << 5
      dst[j] = 65 + (x >>> 0) % 26
    }
  }
}

/**
 * How the kafka-edge loops of the produce, instructions and faults suites send: `callback`
 * (send(record, callback), as Java's ProducerPerformance; the default) or `promise` (BENCH_SEND=promise).
 * Their children read the same environment variable.
 */
export const SEND_FORM: 'callback' | 'promise' = process.env.BENCH_SEND === 'promise' ? 'promise' : 'callback'

/**
 * How the events of a body are named: `round` (the worker suite's h-<round>-<i>, which sort together),
 * `uuid` (a random UUID per event, as clients that name their events send; seeded, so runs repeat) or
 * `none` (no id: the app generates one per event). BENCH_WORKER_EVENT_IDS chooses.
 */
export type EventIds = 'round' | 'uuid' | 'none'
export const WORKER_EVENT_IDS = (process.env.BENCH_WORKER_EVENT_IDS ?? 'round') as EventIds
if (!['round', 'uuid', 'none'].includes(WORKER_EVENT_IDS)) throw new Error(`BENCH_WORKER_EVENT_IDS: round, uuid or none, not '${WORKER_EVENT_IDS}'`)

/**
 * The worker suites' body: `events` events of one round, keys user-0 to user-19, ids `${prefix}-<round>-<i>`
 * (or as `ids` says).
 */
export function eventsBody(round: number, events: number, ids: EventIds = 'round', prefix = 'h'): string {
  // Seeded by prefix and round (never 0, which xorshift keeps): runs repeat, and no two bodies share an id.
  let x = Math.imul(round + 0x10000, 0x9e3779b1) | 1
  for (let k = 0; k < prefix.length; k++) x = Math.imul(x ^ prefix.charCodeAt(k), 0x01000193) | 1
  const hex = (n: number) => {
    let out = ''
    for (let k = 0; k < n; k++) {
      x ^= x << 13; x ^= x >>> 17; x ^= x << 5
      out += ((x >>> 0) & 15).toString(16)
    }
    return out
  }
  const idOf = (i: number) => (ids === 'round' ? `${prefix}-${round}-${i}` : ids === 'uuid' ? `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}` : undefined)
  return JSON.stringify(Array.from({ length: events }, (_, i) => ({ type: 'bench', id: idOf(i), key: `user-${i % 20}`, data: { r: round, i, path: '/some/page' } })))
}
