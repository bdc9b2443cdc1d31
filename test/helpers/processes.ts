// The processes a browser started (renderers, content processes), found through `ps`.
import { execFileSync } from 'node:child_process'

/** Every descendant of `pid` (not `pid` itself), with its command line. */
export function childPids(pid: number): Array<{ pid: number; args: string }> {
  const out = execFileSync('ps', ['-e', '-o', 'pid=,ppid=,args='], { encoding: 'utf8' })
  const rows = out.trim().split('\n').map((l) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l)!).filter(Boolean).map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), args: m[3]! }))
  const mine = new Set([pid])
  for (let grew = true; grew;) {
    grew = false
    for (const r of rows) if (!mine.has(r.pid) && mine.has(r.ppid)) { mine.add(r.pid); grew = true }
  }
  return rows.filter((r) => r.pid !== pid && mine.has(r.pid))
}
