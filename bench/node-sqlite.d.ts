// node:sqlite as bench/worker-inprocess.ts uses it (Node 22.5+; the repository's @types/node is Node 20's).
declare module 'node:sqlite' {
  export class StatementSync {
    all(...params: unknown[]): unknown[]
  }
  export class DatabaseSync {
    constructor(path: string)
    exec(sql: string): void
    prepare(sql: string): StatementSync
    close(): void
  }
}
