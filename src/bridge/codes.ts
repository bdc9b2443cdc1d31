/**
 * WebSocket close codes the relay uses. Browsers cannot read the HTTP status of a failed upgrade
 * (they only see 1006), so every decision about a client is made after the upgrade and reported
 * as a close code the transport can turn into a typed error. Only what must be refused before any
 * work is done (too many connections from one IP, wrong path, shutting down) is an HTTP status; a
 * refused Origin is accepted and closed with 4403, so a page can read why.
 */
export const CloseCode = {
  /** Clean close (client or relay). */
  NORMAL: 1000,
  /** The relay is shutting down; reconnect (to another instance). */
  GOING_AWAY: 1001,
  /** A message larger than limits.maxFrameBytes. */
  TOO_BIG: 1009,
  /** A relay bug or unexpected upstream bytes. */
  INTERNAL: 1011,
  /** Not a Kafka frame: text message, size prefix missing/negative/not matching the message length. */
  BAD_FRAME: 4400,
  /** No token, or a token that is forged, malformed, for another audience, or not yet valid. */
  UNAUTHENTICATED: 4401,
  /** The token expired (at upgrade or while connected): get a fresh one and reconnect. */
  TOKEN_EXPIRED: 4402,
  /** The token does not allow this API, topic, transactional id or group. */
  FORBIDDEN: 4403,
  /** The requested broker is not a configured bootstrap server, a learned broker endpoint or allowlisted. */
  DESTINATION_REFUSED: 4404,
  /** No traffic for limits.idleTimeoutMs. */
  IDLE: 4408,
  /**
   * A producer id that was not issued to this principal (Produce record batches, InitProducerId,
   * AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn), or a producer-id ticket that
   * does not verify or belongs to another principal.
   */
  FOREIGN_PRODUCER_ID: 4409,
  /** A topic name Kafka refuses (over 249 characters, characters outside [a-zA-Z0-9._-], "." or ".."), or a name that is not valid UTF-8. */
  INVALID_NAME: 4422,
  /** Too many connections for this principal, or rate limits exceeded for too long. */
  RATE_LIMITED: 4429,
  /** Too many InitProducerId calls from this principal or address (limits.initProducerIdsPerMinutePer*). */
  PRODUCER_ID_RATE_LIMITED: 4430,
  /** The broker could not be reached or refused the relay's SASL credentials. */
  UPSTREAM_UNAVAILABLE: 4502,
  /** The broker-side session is ending (SASL session lifetime); reconnect. */
  UPSTREAM_SESSION_END: 4503,
} as const

export type CloseCodeName = keyof typeof CloseCode
