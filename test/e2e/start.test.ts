// `npm start`'s page path as `npm start -- --once` runs it (scripts/browser-demo.ts --once): the
// relay as a `kafka-edge bridge` process, the demo page on 127.0.0.1, the Java consumer following the
// topic, and headless Chromium clicking through every fault button. The script checks the panel
// against its own Java read and exits non-zero otherwise; here it runs against the suite's cluster
// (the rest of `npm start`, the build and its own cluster, would double what npm test already does).
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ensureCluster } from '../helpers/kafka.js'
import { hasChromium } from './browser.js'
import { ROOT } from './wrangler.js'

describe.skipIf(!hasChromium)('npm start -- --once: the page path in Chromium (needs the Debian package; CI installs it in .ci/run)', () => {
  it('clicks, goes offline, restarts the relay, reloads: the panel and the Java reader show each event once', async () => {
    const cluster = await ensureCluster()
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kafka-edge-start-'))
    const shot = path.join(dir, 'start.png')
    const clusterFile = path.join(dir, 'cluster.json')
    writeFileSync(clusterFile, JSON.stringify(cluster))
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/browser-demo.ts', '--once',
        '--cluster-file', clusterFile, '--screenshot', shot], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      child.stdout.on('data', (d) => { out += d })
      child.stderr.on('data', (d) => { out += d })
      const code = await new Promise<number | null>((r) => child.once('exit', r))
      expect(code, out).toBe(0)
      expect(out).toMatch(/the Java reader agrees: \d+ records, each tracked event once/)
      expect(out).toMatch(/KAFKA_EDGE_BRIDGE_SECRET=dev-[0-9a-f]{48}/)
      expect(out).toMatch(/Open http:\/\/127\.0\.0\.1:\d+\/ in a browser/)
      expect(existsSync(shot)).toBe(true)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 240_000)
})
