/**
 * What the producer tells a logger: connections, metadata, retries and producer-id/epoch changes.
 * Silent unless the `debug` setting names a context (librdkafka's setting: 'connection,metadata',
 * or 'all') or a `logger` is given, which then also receives warnings. Messages are short and
 * structured fields carry the details, so a log pipeline can index them.
 */
export interface Logger {
  debug(message: string, fields: Record<string, unknown>): void
  warn(message: string, fields: Record<string, unknown>): void
}

export type LogContext = 'connection' | 'metadata' | 'retry' | 'epoch' | 'checkpoint'
export const LOG_CONTEXTS: readonly LogContext[] = ['connection', 'metadata', 'retry', 'epoch', 'checkpoint']

/** console with a kafka-edge prefix: works in Node, browsers, workerd, Deno and Bun alike. */
export const consoleLogger: Logger = {
  debug: (message, fields) => console.debug(`[kafka-edge] ${message}`, fields),
  warn: (message, fields) => console.warn(`[kafka-edge] ${message}`, fields),
}

export class Log {
  private readonly contexts: ReadonlySet<LogContext>

  constructor(private readonly logger: Logger | null, contexts: readonly LogContext[]) {
    this.contexts = new Set(contexts)
  }

  /** Checked before building fields, so a disabled context costs one set lookup. */
  on(context: LogContext): boolean { return this.logger !== null && this.contexts.has(context) }

  debug(context: LogContext, message: string, fields: Record<string, unknown> = {}): void {
    if (this.on(context)) this.logger!.debug(message, { context, ...fields })
  }

  warn(context: LogContext, message: string, fields: Record<string, unknown> = {}): void {
    this.logger?.warn(message, { context, ...fields })
  }
}

export const silentLog = new Log(null, [])
