// A page or a Worker whose relay refuses it must hear why at once, not wait out max.block.ms.
import WebSocket from 'ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Bridge } from '../../src/bridge/index.js'
import { AuthenticationException, AuthorizationException, ConfigException, createProducer, websocket, type Producer } from '../../src/edge/index.js'
import { relayCluster, startRelay, token } from './helpers.js'

let bridge: Bridge
beforeAll(async () => { bridge = await startRelay(await relayCluster()) })
afterAll(async () => { await bridge?.close() })

/** A ws client that sends a chosen Origin, as a browser on another site would. */
const fromOrigin = (origin: string) => class extends WebSocket {
  constructor(url: string, protocols?: string | string[]) { super(url, protocols, { origin }) }
}

async function firstSend(p: Producer): Promise<{ error: Error; ms: number }> {
  const started = Date.now()
  const error = await p.send({ topic: 'anything', value: 'x' }).then(() => { throw new Error('sent') }, (e: Error) => e)
  const ms = Date.now() - started
  await p.close()
  return { error, ms }
}

describe('relay refusals reach send() at once, typed and explained', () => {
  it('an Origin the relay refuses (close 4403 after the upgrade) is an AuthorizationException naming the Origin', async () => {
    const p = createProducer({
      'bootstrap.servers': 'relay:443', 'max.block.ms': 20_000,
      transport: websocket({ url: bridge.url, token: token(), WebSocket: fromOrigin('https://evil.example') as never }),
    })
    const { error, ms } = await firstSend(p)
    expect(error).toBeInstanceOf(AuthorizationException)
    expect(error.message).toMatch(/4403.*Origin https:\/\/evil\.example is not allowed/)
    expect(ms).toBeLessThan(5_000)
  })

  it('a forged token (4401 after the upgrade) is an AuthenticationException', async () => {
    const p = createProducer({
      'bootstrap.servers': 'relay:443', 'max.block.ms': 20_000,
      transport: websocket({ url: bridge.url, token: token({}, 'a-different-secret-0123456789-abcdefgh'), WebSocket: fromOrigin('https://app.example') as never }),
    })
    const { error, ms } = await firstSend(p)
    expect(error).toBeInstanceOf(AuthenticationException)
    expect(error.message).toMatch(/4401/)
    expect(ms).toBeLessThan(5_000)
  })

  it('a wrong relay path (HTTP 404) is a ConfigException that says to check the URL', async () => {
    const p = createProducer({
      'bootstrap.servers': 'relay:443', 'max.block.ms': 20_000,
      transport: websocket({ url: bridge.url.replace(/\/[^/]*$/, '/wrong-path'), token: token(), WebSocket: fromOrigin('https://app.example') as never }),
    })
    const { error, ms } = await firstSend(p)
    expect(error).toBeInstanceOf(ConfigException)
    expect(error.message).toMatch(/HTTP 404.*relay URL/)
    expect(ms).toBeLessThan(5_000)
  })
})
