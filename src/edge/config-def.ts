import { ConfigException } from './errors.js'

/**
 * The value checks settings are parsed with (Java's ConfigDef types and validators): each takes the
 * given value and the setting's name and throws a ConfigException naming it. A leaf: the producer's
 * settings (producer/config.ts) and the TLS/SASL ones (security.ts, installed by the transports)
 * both parse with these, so neither layer reaches into the other.
 */
export const int = (min = -Infinity, max = Infinity) => (v: unknown, key: string): number => {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v
  if (typeof n !== 'number' || !Number.isInteger(n)) throw new ConfigException(`${key} must be an integer, got ${JSON.stringify(v)}`)
  if (n < min || n > max) throw new ConfigException(`${key} must be in [${min}, ${max}], got ${n}`)
  return n
}
export const bool = (v: unknown, key: string): boolean => {
  if (typeof v === 'boolean') return v
  if (v === 'true' || v === 'false') return v === 'true'
  throw new ConfigException(`${key} must be true or false, got ${JSON.stringify(v)}`)
}
export const str = (v: unknown, key: string): string => {
  if (typeof v !== 'string') throw new ConfigException(`${key} must be a string, got ${JSON.stringify(v)}`)
  return v
}
export const oneOf = (values: readonly string[]) => (v: unknown, key: string): string => {
  const s = str(v, key)
  if (!values.includes(s)) throw new ConfigException(`${key} must be one of ${values.map((x) => JSON.stringify(x)).join(', ')}, got ${JSON.stringify(v)}`)
  return s
}
