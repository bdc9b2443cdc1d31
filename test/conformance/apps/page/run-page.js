// Runs the scenarios in a page and leaves the outcome on window.__conformance for the test driver.
import { runScenarios } from './scenarios.mjs'

function browserVersion() {
  const m = navigator.userAgent.match(/(Firefox|Chrome)\/([\d.]+)/)
  return m ? `${m[1]} ${m[2]}` : navigator.userAgent
}

export async function runPage({ createProducer, websocket, wasm }) {
  const q = new URLSearchParams(location.search)
  try {
    window.__conformance = await runScenarios({
      createProducer,
      connection: { 'bootstrap.servers': 'relay:443', transport: websocket({ url: q.get('relay'), token: q.get('token') }), ...(wasm ? { wasm } : {}) },
      topic: q.get('topic'), txnId: q.get('txnId'), control: location.origin,
      // No registry credentials here: lookups go through the relay, with the same token.
      registry: q.get('registry') === '1' ? { 'schema.registry.relay.url': q.get('relay'), 'schema.registry.relay.token': q.get('token') } : undefined,
      runtime: { name: q.get('runtime'), version: browserVersion() },
    })
  } catch (e) {
    window.__conformance = { error: `${e?.name}: ${e?.message}` }
  }
}
