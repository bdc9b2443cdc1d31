export interface SecureRecord {
  key: Uint8Array | null
  value: Uint8Array | null
  headers: { key: string; value: Uint8Array | null }[]
  timestamp: number | undefined
}
export function secureWorkload(count: number, seed: number): SecureRecord[]
