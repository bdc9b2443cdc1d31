// What a new user sees first: a plain Node script whose broker is down must print a typed error
// that says why, not exit silently while its send is pending.
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

function runScript(source: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

describe('first contact from a plain Node script', () => {
  it('a pending send keeps the process alive until it settles, and the timeout names the refused connection', () => {
    const r = runScript(`
      import { createProducer, tcp } from './src/edge/node.ts'
      const p = createProducer({ 'bootstrap.servers': '127.0.0.1:1', transport: tcp(), 'max.block.ms': 1500 })
      try { await p.send({ topic: 't', value: 'x' }); console.log('SENT') }
      catch (e) { console.log(JSON.stringify({ name: e.name, message: e.message, cause: e.cause?.message ?? null, mayHaveBeenWritten: e.mayHaveBeenWritten })) }
    `)
    expect(r.status, r.stderr).toBe(0)
    const out = JSON.parse(r.stdout.trim().split('\n').pop()!)
    expect(out.name).toBe('TimeoutException')
    expect(out.message).toMatch(/no broker answered.*refused/)
    expect(out.cause).toMatch(/refused/)
    expect(out.mayHaveBeenWritten).toBe(false)
  })

  it('a script that sends nothing, or closes its producer, exits at once', () => {
    const started = Date.now()
    const r = runScript(`
      import { createProducer, tcp } from './src/edge/node.ts'
      const p = createProducer({ 'bootstrap.servers': '127.0.0.1:1', transport: tcp() })
      const pending = p.send({ topic: 't', value: 'x' }).catch((e) => console.log(e.name))
      await p.close()
      await pending
    `)
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toContain('ClosedError')
    expect(Date.now() - started).toBeLessThan(15_000)
  })

  it('a plaintext producer never loads node:tls (a third of the package\'s load time); one with security.protocol SSL loads it when it dials', () => {
    const r = runScript(`
      import { createProducer, tcp } from './src/edge/node.ts'
      const tlsLoaded = () => process.moduleLoadList.includes('NativeModule tls')
      const plain = createProducer({ 'bootstrap.servers': '127.0.0.1:1', transport: tcp(), 'max.block.ms': 600 })
      await plain.send({ topic: 't', value: 'x' }).catch(() => {})
      await plain.close()
      const afterPlain = tlsLoaded()
      const secure = createProducer({ 'bootstrap.servers': '127.0.0.1:1', transport: tcp(), 'security.protocol': 'SSL', 'max.block.ms': 600 })
      await secure.send({ topic: 't', value: 'x' }).catch(() => {})
      await secure.close()
      console.log(JSON.stringify({ afterPlain, afterSecure: tlsLoaded() }))
    `)
    expect(r.status, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toEqual({ afterPlain: false, afterSecure: true })
  })
})

describe('debug and logger settings', () => {
  it("debug: 'connection,metadata' logs each failed connection and metadata attempt with structured fields", async () => {
    const { createProducer, tcp } = await import('../../src/edge/node.js')
    const lines: Array<{ message: string; fields: Record<string, unknown> }> = []
    const logger = { debug: (message: string, fields: Record<string, unknown>) => lines.push({ message, fields }), warn: () => {} }
    const p = createProducer({ 'bootstrap.servers': '127.0.0.1:1', transport: tcp(), 'max.block.ms': 600, debug: 'connection,metadata', logger })
    await p.send({ topic: 't', value: 'x' }).catch(() => {})
    await p.close()
    const failed = lines.find((l) => l.message === 'connection failed')
    expect(failed?.fields).toMatchObject({ context: 'connection', broker: '127.0.0.1:1', error: 'NetworkException' })
    expect(String(failed?.fields.reason)).toMatch(/refused/)
    expect(lines.some((l) => l.message === 'metadata request failed' && l.fields.context === 'metadata')).toBe(true)
    expect(lines.every((l) => l.fields.context === 'connection' || l.fields.context === 'metadata')).toBe(true)
  })

  it('an unknown debug context or a logger without methods is a ConfigException', async () => {
    const { createProducer, tcp, ConfigException } = await import('../../src/edge/node.js')
    expect(() => createProducer({ 'bootstrap.servers': 'b:9092', transport: tcp(), debug: 'brokers' })).toThrow(ConfigException)
    expect(() => createProducer({ 'bootstrap.servers': 'b:9092', transport: tcp(), debug: 'brokers' })).toThrow(/connection, metadata, retry, epoch, checkpoint, all/)
    expect(() => createProducer({ 'bootstrap.servers': 'b:9092', transport: tcp(), logger: console.log as never })).toThrow(/logger must have debug/)
  })
})
