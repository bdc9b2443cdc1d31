// `import core from 'kafka-edge/core.wasm'` (and core-lz4.wasm, ...): bundlers for workerd (wrangler's
// CompiledWasm rule) hand over a compiled module, which `createProducer({ wasm: core })` takes.
declare const module: WebAssembly.Module
export default module
