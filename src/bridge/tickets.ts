import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * Producer-id tickets. The relay sees every InitProducerId answer, so it knows which principal each
 * producer id was issued to and refuses that id from anyone else (close 4409). That knowledge is in
 * one instance's memory; a ticket carries it to the others and across a page reload:
 *
 *   kpt1.<base64url(JSON {sub, pid, epoch, txn, iat, exp})>.<base64url(HMAC-SHA256(key, "kpt1." + payload))>
 *
 * `pid` is a decimal string (int64). The key is shared by every instance behind one load balancer,
 * so any of them verifies a ticket another issued. A ticket names its principal: it is worth nothing
 * without that principal's token, so a page may keep it in storage next to the producer id it
 * resumes. The relay checks that `sub` equals the token's `sub`, that the token still grants `txn`,
 * and `exp`; then the id is bound as if its InitProducerId had been seen.
 */
export interface Ticket {
  sub: string
  pid: bigint
  epoch: number
  txn: string | null
  iat: number
  exp: number
}

const PREFIX = 'kpt1.'
const MAX_TICKET = 1024

export class TicketKeys {
  private readonly keys: Buffer[]
  constructor(keys: Array<string | Uint8Array>) {
    if (keys.length === 0) throw new Error('producer-id tickets need at least one key')
    this.keys = keys.map((k) => Buffer.from(k))
  }

  issue(t: Ticket): string {
    const payload = Buffer.from(JSON.stringify({ sub: t.sub, pid: t.pid.toString(), epoch: t.epoch, txn: t.txn, iat: t.iat, exp: t.exp })).toString('base64url')
    const signed = `${PREFIX}${payload}`
    return `${signed}.${createHmac('sha256', this.keys[0]!).update(signed).digest('base64url')}`
  }

  /** The ticket's content when it verifies and has not expired; otherwise why not. */
  verify(ticket: string, nowSec: number): { ok: true; ticket: Ticket } | { ok: false; reason: string } {
    if (ticket.length > MAX_TICKET || !ticket.startsWith(PREFIX)) return { ok: false, reason: 'not a producer-id ticket' }
    const dot = ticket.lastIndexOf('.')
    const signed = ticket.slice(0, dot)
    const mac = ticket.slice(dot + 1)
    if (!/^[A-Za-z0-9_-]+$/.test(mac)) return { ok: false, reason: 'producer-id ticket signature is not base64url' }
    const given = Buffer.from(mac, 'base64url')
    const good = this.keys.some((k) => {
      const want = createHmac('sha256', k).update(signed).digest()
      return want.length === given.length && timingSafeEqual(want, given)
    })
    if (!good) return { ok: false, reason: 'producer-id ticket signature does not verify' }
    let c: Record<string, unknown>
    try { c = JSON.parse(Buffer.from(signed.slice(PREFIX.length), 'base64url').toString('utf8')) as Record<string, unknown> } catch {
      return { ok: false, reason: 'producer-id ticket payload is not JSON' }
    }
    if (typeof c.sub !== 'string' || typeof c.pid !== 'string' || !/^\d{1,19}$/.test(c.pid) || typeof c.epoch !== 'number' ||
      (c.txn !== null && typeof c.txn !== 'string') || typeof c.iat !== 'number' || typeof c.exp !== 'number') {
      return { ok: false, reason: 'producer-id ticket payload is malformed' }
    }
    if (c.exp <= nowSec) return { ok: false, reason: 'producer-id ticket expired' }
    return { ok: true, ticket: { sub: c.sub, pid: BigInt(c.pid), epoch: c.epoch, txn: c.txn as string | null, iat: c.iat, exp: c.exp } }
  }
}

/** The ticket key when none is configured: derived from the HS256 secret every instance shares already. */
export function deriveTicketKey(secret: string): Buffer {
  return createHmac('sha256', secret).update('kafka-edge producer-id ticket key v1').digest()
}

/**
 * Which principal holds which producer id, relay-wide (a producer's InitProducerId and its Produce
 * requests travel on different WebSockets). Several principals may hold one id: a transactional
 * id granted to two principals maps to one producer id. Bounded: the oldest binding is forgotten
 * first, and open connections keep their own copy, so forgetting only costs a ticket on reconnect.
 */
export class ProducerIdBindings {
  private readonly byKey = new Map<string, number>()
  constructor(private readonly max: number) {}

  private static key(sub: string, pid: bigint): string { return `${pid}\u0000${sub}` }

  bind(sub: string, pid: bigint, epoch: number): void {
    const k = ProducerIdBindings.key(sub, pid)
    this.byKey.delete(k)
    this.byKey.set(k, epoch)
    if (this.byKey.size > this.max) this.byKey.delete(this.byKey.keys().next().value!)
  }

  holds(sub: string, pid: bigint): boolean { return this.byKey.has(ProducerIdBindings.key(sub, pid)) }

  get size(): number { return this.byKey.size }
}
