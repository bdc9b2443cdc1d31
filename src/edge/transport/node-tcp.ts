import { connect, type Socket } from 'node:net'
import { NetworkException, ProtocolError } from '../errors.js'
import { FrameDecoder } from './frame-decoder.js'
import type { BrokerAddress, Link, LinkHandlers, Transport } from './transport.js'

export interface TcpOptions {
  connectTimeoutMs?: number
  maxFrameBytes?: number
  /** Rewrites a broker address before connecting (test proxies, NAT). */
  resolve?: (address: BrokerAddress) => { host: string; port: number }
}

/** Plain TCP to the brokers, for Node (and Bun/Deno through their node:net). */
export function tcp(options: TcpOptions = {}): Transport {
  return {
    name: 'tcp',
    open: (address, handlers) => openTcp(address, handlers, options),
  }
}

function openTcp(address: BrokerAddress, handlers: LinkHandlers, options: TcpOptions): Promise<Link> {
  const target = options.resolve ? options.resolve(address) : address
  const decoder = new FrameDecoder(options.maxFrameBytes)
  return new Promise<Link>((resolve, reject) => {
    const socket: Socket = connect({ host: target.host, port: target.port, noDelay: true })
    let open = false
    let closed = false
    const timer = setTimeout(() => socket.destroy(new NetworkException(`connect to ${target.host}:${target.port} timed out`)), options.connectTimeoutMs ?? 10_000)
    const finish = (error?: Error) => {
      if (closed) return
      closed = true
      clearTimeout(timer)
      if (!open) reject(error ?? new NetworkException(`connection to ${target.host}:${target.port} closed while connecting`))
      else handlers.onClose(error)
    }
    socket.on('connect', () => {
      open = true
      clearTimeout(timer)
      resolve({
        write: (frame) => new Promise<void>((ok, fail) => {
          if (closed) return fail(new NetworkException(`connection to ${target.host}:${target.port} is closed`))
          socket.write(frame, (err) => (err ? fail(new NetworkException(err.message, { cause: err })) : ok()))
        }),
        close: () => { if (!closed) { closed = true; clearTimeout(timer); socket.destroy() } },
      })
    })
    socket.on('data', (chunk: Buffer) => {
      let frames: Uint8Array[]
      try {
        frames = decoder.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
      } catch (e) {
        socket.destroy()
        finish(e instanceof ProtocolError ? e : new ProtocolError(String(e)))
        return
      }
      for (const f of frames) handlers.onFrame(f)
    })
    socket.on('error', (err) => finish(err instanceof NetworkException ? err : new NetworkException(`${target.host}:${target.port}: ${err.message}`, { cause: err })))
    socket.on('close', () => finish(new NetworkException(`connection to ${target.host}:${target.port} closed by peer`)))
  })
}
