import { pathToFileURL } from 'node:url'
import { BridgeConfigError, loadConfigFile, resolveConfig } from './config.js'
import { startBridge } from './server.js'
import { signToken } from './token.js'

const USAGE = `usage:
  kafka-edge bridge --listen HOST:PORT --brokers HOST:PORT[,...] [--config FILE.json]
                    [--sasl-mechanism PLAIN|SCRAM-SHA-256|SCRAM-SHA-512 --sasl-username USER]
                    [--origins https://a.example,...] [--audience AUD] [--log-level info]
                    [--tls-cert cert.pem --tls-key key.pem] (wss:// on the relay's own listener)
                    [--jwks-url https://idp.example/.well-known/jwks.json | --jwks-file jwks.json] (RS256/ES256/EdDSA tokens)
      secrets come from the environment: KAFKA_EDGE_BRIDGE_SECRET (token HMAC key, >= 32 chars),
      KAFKA_EDGE_BRIDGE_SASL_PASSWORD (broker password), KAFKA_EDGE_BRIDGE_TICKET_SECRET (producer-id ticket key,
      shared by every instance; defaults to one derived from the token secret), or from the config file
      TLS to the brokers ("tls"), OAUTHBEARER and AWS_MSK_IAM are set in the config file (src/bridge/README.md)
  kafka-edge token --sub NAME [--topics a,b*] [--transactional-ids x*] [--groups g] [--ttl SECONDS] [--audience AUD]
      prints an HS256 token signed with KAFKA_EDGE_BRIDGE_SECRET`

function flags(argv: string[]): Map<string, string> {
  const out = new Map<string, string>()
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (!a.startsWith('--')) throw new BridgeConfigError(`unexpected argument ${a}`)
    const eq = a.indexOf('=')
    if (eq > 0) out.set(a.slice(2, eq), a.slice(eq + 1))
    else {
      const v = argv[i + 1]
      if (v === undefined || v.startsWith('--')) throw new BridgeConfigError(`${a} needs a value`)
      out.set(a.slice(2), v)
      i++
    }
  }
  return out
}

const HELP = new Set(['--help', '-h', 'help'])

export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const [command, ...rest] = argv
  // Checked before the flags are parsed: the parser reads `--help` as a flag that lacks its value.
  if (command === undefined || HELP.has(command) || rest.some((a) => a === '--help' || a === '-h')) {
    process.stdout.write(`${USAGE}\n`)
    return 0
  }
  try {
    if (command === 'bridge') return await bridge(flags(rest), env)
    if (command === 'token') return token(flags(rest), env)
  } catch (e) {
    if (e instanceof BridgeConfigError) { process.stderr.write(`kafka-edge: ${e.message}\n`); return 2 }
    throw e
  }
  process.stderr.write(`${USAGE}\n`)
  return 2
}

async function bridge(f: Map<string, string>, env: NodeJS.ProcessEnv): Promise<number> {
  const known = new Set(['config', 'listen', 'brokers', 'sasl-mechanism', 'sasl-username', 'origins', 'audience', 'log-level', 'path', 'tls-cert', 'tls-key', 'jwks-url', 'jwks-file'])
  for (const k of f.keys()) if (!known.has(k)) throw new BridgeConfigError(`unknown flag --${k}`)
  const input: Record<string, unknown> = f.has('config') ? loadConfigFile(f.get('config')!) : {}
  if (f.has('listen')) input.listen = f.get('listen')
  if (f.has('brokers')) input.brokers = f.get('brokers')
  if (f.has('path')) input.path = f.get('path')
  if (f.has('origins')) input.origins = f.get('origins')
  if (f.has('sasl-username')) {
    input.sasl = { mechanism: f.get('sasl-mechanism') ?? 'SCRAM-SHA-512', username: f.get('sasl-username'), passwordEnv: 'KAFKA_EDGE_BRIDGE_SASL_PASSWORD' }
  }
  if (f.has('tls-cert') || f.has('tls-key')) {
    if (!f.has('tls-cert') || !f.has('tls-key')) throw new BridgeConfigError('--tls-cert and --tls-key go together')
    input.listenTls = { certFile: f.get('tls-cert'), keyFile: f.get('tls-key') }
  }
  const auth = { ...(input.auth as Record<string, unknown> | undefined) }
  if (f.has('jwks-url')) auth.jwksUrl = f.get('jwks-url')
  if (f.has('jwks-file')) auth.jwksFile = f.get('jwks-file')
  const jwks = auth.jwksUrl !== undefined || auth.jwksFile !== undefined
  // With a JWKS, HS256 is on only when its secret is in the environment.
  if (auth.secret === undefined && auth.secretEnv === undefined && auth.secrets === undefined && (!jwks || env.KAFKA_EDGE_BRIDGE_SECRET !== undefined)) auth.secretEnv = 'KAFKA_EDGE_BRIDGE_SECRET'
  if (auth.ticketSecret === undefined && auth.ticketSecretEnv === undefined && auth.ticketSecrets === undefined && env.KAFKA_EDGE_BRIDGE_TICKET_SECRET !== undefined) auth.ticketSecretEnv = 'KAFKA_EDGE_BRIDGE_TICKET_SECRET'
  if (f.has('audience')) auth.audience = f.get('audience')
  input.auth = auth
  if (f.has('log-level')) input.log = { ...(input.log as object | undefined), level: f.get('log-level') }
  const cfg = resolveConfig(input, env)
  const relay = await startBridge(cfg, { env })
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      process.stderr.write(`kafka-edge bridge: ${signal}, draining\n`)
      relay.close().then(resolve, resolve)
    }
    process.once('SIGTERM', () => stop('SIGTERM'))
    process.once('SIGINT', () => stop('SIGINT'))
  })
  return 0
}

function token(f: Map<string, string>, env: NodeJS.ProcessEnv): number {
  const secret = env.KAFKA_EDGE_BRIDGE_SECRET
  if (!secret) throw new BridgeConfigError('KAFKA_EDGE_BRIDGE_SECRET is not set')
  const sub = f.get('sub')
  if (!sub) throw new BridgeConfigError('--sub is required')
  const list = (k: string) => (f.has(k) ? f.get(k)!.split(',').map((s) => s.trim()).filter(Boolean) : undefined)
  const now = Math.floor(Date.now() / 1000)
  const claims = {
    sub, aud: f.get('audience') ?? 'kafka-edge', iat: now, exp: now + Number(f.get('ttl') ?? 3600),
    topics: list('topics'), transactional_ids: list('transactional-ids'), groups: list('groups'),
  }
  process.stdout.write(`${signToken(claims, secret)}\n`)
  return 0
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(process.argv.slice(2)).then((code) => { process.exitCode = code }, (e: unknown) => { process.stderr.write(`${String((e as Error)?.stack ?? e)}\n`); process.exitCode = 1 })
}
