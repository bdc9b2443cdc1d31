/**
 * The package root under workerd (the `workerd` export condition, which wrangler sets). workerd
 * refuses to compile WebAssembly from bytes, so the core arrives as the module wrangler compiles
 * from this import; a Worker then needs no `wasm` setting, and the bundle holds the core once.
 */
import core from '../../build/core.wasm'
import { setDefaultCoreSource } from './wasm/load.js'

setDefaultCoreSource(() => core)

export * from './index.js'
