// The same page bundled by esbuild, which does not copy `new URL(..., import.meta.url)` assets:
// `--loader:.wasm=file` copies the core next to the bundle and the producer is handed its URL.
// #region recipe
import { createProducer, websocket } from 'kafka-edge'
import coreUrl from 'kafka-edge/core.wasm'

const wasm = fetch(new URL(coreUrl, import.meta.url)) // one fetch, shared by every producer
const q = new URLSearchParams(location.search)
const producer = createProducer({
  'bootstrap.servers': 'relay:443',
  transport: websocket({ url: q.get('relay'), token: q.get('token') }),
  wasm,
})
const md = await producer.send({ topic: q.get('topic'), key: 'user-1', value: 'hello from an esbuild bundle' })
document.title = `sent: ${md.topic}-${md.partition} at offset ${md.offset}`
await producer.close()
// #endregion recipe

import { runPage } from './run-page.js'

await runPage({ createProducer, websocket, wasm })
