// The relay's floor for `npm run bench -- bridge`: a WebSocket-to-TCP pipe on the relay's own stack
// (Node, ws with bufferutil, node:net) that does only what no relay can skip: take each binary
// message and write it to the broker, split the broker's stream into frames and send each as one
// message. No token, no inspection, no limits, no SASL (the broker's PLAINTEXT listener), no
// backpressure, every connection to the one broker named on the command line. Not a relay anyone
// should run: the CPU it spends per record is what moving the bytes costs on this machine, so the
// real relay's figure minus this one is what the relay's own work costs.
//   node bench/relay-pipe.mjs <broker host:port>   prints {"event":"listening","url":...} once bound, as the relay logs it
// Plain JavaScript, so that it runs as the relay does, without a TypeScript loader in the process.
import net from 'node:net'
import { WebSocketServer } from 'ws'

const [host, port] = process.argv[2].split(':')
const wss = new WebSocketServer({
  host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: 64 << 20,
  // The client offers its subprotocol first, then its token; the pipe takes the first and reads no token.
  handleProtocols: (offered) => offered.values().next().value ?? false,
})

wss.on('connection', (ws) => {
  const broker = net.connect({ host, port: Number(port), noDelay: true })
  let pending = null
  ws.on('message', (data) => { broker.write(data) })
  broker.on('data', (chunk) => {
    let buf = pending === null ? chunk : Buffer.concat([pending, chunk])
    while (buf.length >= 4) {
      const end = 4 + buf.readInt32BE(0)
      if (buf.length < end) break
      ws.send(buf.subarray(0, end), { binary: true })
      buf = buf.subarray(end)
    }
    pending = buf.length > 0 ? buf : null
  })
  const closeBoth = () => { broker.destroy(); ws.terminate() }
  ws.on('close', closeBoth)
  ws.on('error', closeBoth)
  broker.on('close', closeBoth)
  broker.on('error', closeBoth)
})

wss.on('listening', () => {
  const { port: bound } = wss.address()
  process.stdout.write(JSON.stringify({ event: 'listening', url: `ws://127.0.0.1:${bound}/kafka` }) + '\n')
})
process.on('SIGTERM', () => process.exit(0))
