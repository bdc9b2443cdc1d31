// Types for the parts of scripts/registry/registry.mjs that test/helpers/registry.ts imports.
export interface RegistryJson { name: string; pid: number; port: number; managementPort: number; base: string; url: string }
export const APP: string
export function ready(): boolean
export function fetchApp(): void
export function java21(): string | null
export function up(opts?: { name?: string; port?: number }): Promise<RegistryJson>
export function down(opts: { name: string }): Promise<void>
export const SERDE: string
export function serdeReady(): boolean
export function serdeClasspath(): string
export function buildSerde(): void
