import { SaslAuthenticationException } from '../errors.js'
import { base64Decode, base64Encode, utf8, type SaslExchange, type SaslMechanism } from './mechanism.js'

export type ScramHash = 'SHA-256' | 'SHA-512'

export interface ScramOptions {
  hash: ScramHash
  username: string
  password: string
  /** Fixed client nonce, for RFC test vectors only. */
  nonce?: string
}

// Kafka stores SCRAM credentials with 4096..16384 iterations (ScramMechanism's bounds). Fewer is a
// downgrade a forged server-first could ask for; many more would let it burn our CPU.
const MIN_ITERATIONS = 4096
const MAX_ITERATIONS = 16384

/** SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, 7677) as Kafka speaks it: no channel binding. */
export function scram(options: ScramOptions): SaslMechanism {
  const name = options.hash === 'SHA-256' ? 'SCRAM-SHA-256' : 'SCRAM-SHA-512'
  return { name, begin: () => new ScramExchange(options) }
}

// PBKDF2 dominates a login (4096+ rounds); the salt is per credential, so one derivation serves every
// connection and re-authentication until the broker's credential changes.
const saltedCache = new Map<string, Promise<Uint8Array<ArrayBuffer>>>()

class ScramExchange implements SaslExchange {
  private step = 0
  private readonly nonce: string
  private clientFirstBare = ''
  private serverSignature: Uint8Array<ArrayBuffer> | null = null

  constructor(private readonly o: ScramOptions) {
    this.nonce = o.nonce ?? base64Encode(crypto.getRandomValues(new Uint8Array(24)))
  }

  async respond(challenge: Uint8Array | null): Promise<Uint8Array | null> {
    switch (this.step++) {
      case 0: return this.clientFirst()
      case 1: return this.clientFinal(challenge ?? new Uint8Array(0))
      case 2: this.verifyServerFinal(challenge ?? new Uint8Array(0)); return null
      default: throw new SaslAuthenticationException('SCRAM exchange already complete')
    }
  }

  private clientFirst(): Uint8Array {
    // Kafka (like RFC 5802 saslname) escapes '=' and ','; it applies no SASLprep, so neither do we:
    // the bytes must be the ones the broker derived its stored credential from.
    const name = this.o.username.replace(/=/g, '=3D').replace(/,/g, '=2C')
    this.clientFirstBare = `n=${name},r=${this.nonce}`
    return utf8.encode(`n,,${this.clientFirstBare}`)
  }

  private async clientFinal(serverFirstBytes: Uint8Array): Promise<Uint8Array> {
    const serverFirst = new TextDecoder().decode(serverFirstBytes)
    const attrs = parseAttributes(serverFirst)
    if (attrs.has('e')) throw new SaslAuthenticationException(`SCRAM server error: ${attrs.get('e')}`)
    const nonce = attrs.get('r')
    const salt = attrs.get('s')
    const iterations = Number(attrs.get('i'))
    if (!nonce || !nonce.startsWith(this.nonce) || nonce.length <= this.nonce.length) {
      throw new SaslAuthenticationException('SCRAM server nonce does not extend the client nonce: not the broker we started the exchange with')
    }
    if (!salt || !Number.isInteger(iterations)) throw new SaslAuthenticationException('SCRAM server-first message is malformed')
    if (iterations < MIN_ITERATIONS || iterations > MAX_ITERATIONS) {
      throw new SaslAuthenticationException(`SCRAM iteration count ${iterations} is outside Kafka's bounds [${MIN_ITERATIONS}, ${MAX_ITERATIONS}]`)
    }
    const saltedPassword = await this.salted(salt, iterations)
    const clientKey = await hmac(this.o.hash, saltedPassword, 'Client Key')
    const storedKey = new Uint8Array(await crypto.subtle.digest(this.o.hash, clientKey))
    const withoutProof = `c=biws,r=${nonce}`
    const authMessage = `${this.clientFirstBare},${serverFirst},${withoutProof}`
    const signature = await hmac(this.o.hash, storedKey, authMessage)
    const proof = clientKey.map((b, i) => b ^ signature[i]!)
    this.serverSignature = await hmac(this.o.hash, await hmac(this.o.hash, saltedPassword, 'Server Key'), authMessage)
    return utf8.encode(`${withoutProof},p=${base64Encode(proof)}`)
  }

  /** A broker that cannot prove it knows the credential is not the broker we meant to talk to. */
  private verifyServerFinal(bytes: Uint8Array): void {
    const attrs = parseAttributes(new TextDecoder().decode(bytes))
    if (attrs.has('e')) throw new SaslAuthenticationException(`SCRAM server error: ${attrs.get('e')}`)
    const v = attrs.get('v')
    if (v === undefined || !this.serverSignature) throw new SaslAuthenticationException('SCRAM server-final message is malformed')
    let got: Uint8Array
    try { got = base64Decode(v) } catch { throw new SaslAuthenticationException('SCRAM server signature is not base64') }
    if (!constantTimeEqual(got, this.serverSignature)) throw new SaslAuthenticationException('SCRAM server signature does not verify: the broker does not know this credential')
  }

  private salted(salt: string, iterations: number): Promise<Uint8Array<ArrayBuffer>> {
    const key = `${this.o.hash}\0${this.o.username}\0${this.o.password}\0${salt}\0${iterations}`
    let p = saltedCache.get(key)
    if (!p) {
      p = (async () => {
        const base = await crypto.subtle.importKey('raw', utf8.encode(this.o.password), 'PBKDF2', false, ['deriveBits'])
        const bits = this.o.hash === 'SHA-256' ? 256 : 512
        return new Uint8Array(await crypto.subtle.deriveBits({ name: 'PBKDF2', hash: this.o.hash, salt: base64Decode(salt), iterations }, base, bits))
      })()
      p.catch(() => saltedCache.delete(key))
      saltedCache.set(key, p)
      if (saltedCache.size > 64) saltedCache.delete(saltedCache.keys().next().value!)
    }
    return p
  }
}

function parseAttributes(message: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const part of message.split(',')) {
    if (part.length < 2 || part[1] !== '=') continue
    if (!out.has(part[0]!)) out.set(part[0]!, part.slice(2))
  }
  return out
}

async function hmac(hash: ScramHash, key: Uint8Array<ArrayBuffer>, data: string | Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  const k = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash }, false, ['sign'])
  return new Uint8Array(await crypto.subtle.sign('HMAC', k, typeof data === 'string' ? utf8.encode(data) : data))
}

function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!
  return diff === 0
}
