// A page bundled by Vite (`vite build`). It reaches Kafka through the relay (`kafka-edge bridge`).
// #region recipe
import { createProducer, websocket } from 'kafka-edge'

// This demo page takes the relay's URL, a token it issued and the topic from its own URL.
const q = new URLSearchParams(location.search)
// Vite copies kafka-edge's core.wasm into the build and the producer fetches it from there.
const producer = createProducer({
  'bootstrap.servers': 'relay:443', // a placeholder: the relay knows the brokers
  transport: websocket({ url: q.get('relay'), token: q.get('token') }),
  'compression.type': 'lz4',
})
const md = await producer.send({ topic: q.get('topic'), key: 'user-1', value: JSON.stringify({ type: 'page_view', path: location.pathname }) })
document.title = `sent: ${md.topic}-${md.partition} at offset ${md.offset}`
await producer.close()
// #endregion recipe

import { runPage } from './run-page.js'

await runPage({ createProducer, websocket })
