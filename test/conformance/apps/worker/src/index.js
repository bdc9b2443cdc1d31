// POST /conformance runs the scenarios inside one request; anything else is the recipe's handler.
import { createProducer, cloudflareSockets } from 'kafka-edge'
import recipe from './recipe.js'
import { runScenarios } from './scenarios.mjs'

export default {
  async fetch(request, env, ctx) {
    const path = new URL(request.url).pathname
    if (path === '/healthz') return new Response('ok')
    if (path !== '/conformance') return recipe.fetch(request, env, ctx)
    const cfg = await request.json()
    const out = await runScenarios({
      ...cfg, createProducer, connection: { 'bootstrap.servers': cfg.bootstrap, transport: cloudflareSockets() },
      registry: cfg.registry && { 'schema.registry.url': cfg.registry },
      runtime: { name: 'workerd', version: navigator.userAgent },
    })
    return Response.json(out)
  },
}
