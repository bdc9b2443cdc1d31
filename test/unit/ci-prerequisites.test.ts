// Suites skip (and say why) what a developer's machine may lack: Java, a browser (and Xvfb for
// WebKitGTK), Deno, Bun, the pinned Node builds. Under CI (.ci/run sets CI=1 and installs all of them) a skip would hide a
// broken install step behind a green run, so there each one must be present.
import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { hasChromium, hasFirefox } from '../e2e/browser.js'
import { webkitMissing } from '../e2e/webkit.js'
import { javaAvailable } from '../helpers/codec-harness.js'
import { bunBinary, denoBinary } from '../runtimes/binaries.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

describe('what CI must have installed, so that no suite skips there', () => {
  it.runIf(process.env.CI)('Java, Chromium, Firefox ESR, WebKitGTK (with Xvfb), Deno, Bun and Node 20/22/24 from npm are all present', () => {
    const missing = [
      ...javaAvailable() ? [] : ['java'],
      ...hasChromium ? [] : ['chromium'],
      ...hasFirefox ? [] : ['firefox-esr'],
      ...webkitMissing ? ['webkit2gtk-driver/xvfb'] : [],
      ...'missing' in denoBinary(ROOT) ? ['deno'] : [],
      ...'missing' in bunBinary(ROOT) ? ['bun'] : [],
      ...[20, 22, 24].filter((v) => !existsSync(path.join(ROOT, 'test', 'conformance', 'runtimes', 'node_modules', `node-${v}`, 'bin', 'node'))).map((v) => `node-${v}`),
    ]
    expect(missing).toEqual([])
  })
})
