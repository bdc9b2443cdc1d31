/**
 * kafka-edge/inline: the Web entry with the WebAssembly core embedded as base64 (about 45 KB more
 * gzipped JS), for a deployment that must be a single file or cannot serve a .wasm next to its
 * bundle. Everything else is the `kafka-edge` entry; importing this module once is enough for the
 * whole app (kafka-edge/browser included) to use the embedded copy.
 */
import { CORE_WASM_BASE64 } from './wasm/core.generated.js'
import { base64Bytes, setDefaultCoreSource } from './wasm/load.js'

setDefaultCoreSource(() => base64Bytes(CORE_WASM_BASE64))

export * from './index.js'
