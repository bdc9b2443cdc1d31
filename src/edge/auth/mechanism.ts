/**
 * The seam between a SASL mechanism and whoever carries its bytes (the producer's Connection, the
 * relay's upstream). A mechanism never sees a socket or a clock: it turns the server's last message
 * into the client's next one, so every mechanism is tested without a broker and both callers share
 * one implementation.
 */
export interface SaslMechanism {
  /** The name sent in SaslHandshake, e.g. 'SCRAM-SHA-512'. */
  readonly name: string
  /** A fresh exchange for one (re-)authentication of one connection. */
  begin(target: SaslTarget): SaslExchange
}

/** The broker being authenticated to, for mechanisms that bind to it (AWS_MSK_IAM signs the host). */
export interface SaslTarget {
  readonly host: string
  readonly port: number
}

export interface SaslExchange {
  /**
   * `challenge` is null for the first call, else the auth bytes of the previous SaslAuthenticate
   * response. Returns the bytes of the next SaslAuthenticate request, or null once the exchange is
   * complete (after the mechanism verified the server's final message, where it has one).
   * Throws SaslAuthenticationException when the server's message is wrong (bad nonce, bad signature).
   */
  respond(challenge: Uint8Array | null): Promise<Uint8Array | null>
}

/** Shared by the mechanisms: text and base64 on Web APIs only (no Buffer in browsers or workerd). */
export const utf8 = new TextEncoder()

export function base64Encode(bytes: Uint8Array): string {
  let bin = ''
  for (let i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]!)
  return btoa(bin)
}

export function base64Decode(text: string): Uint8Array<ArrayBuffer> {
  const bin = atob(text)
  const out = new Uint8Array(bin.length)
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i)
  return out
}
