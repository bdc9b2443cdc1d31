// Module shapes the Worker bundle relies on (wrangler/workerd provide them at runtime).

/** wrangler's CompiledWasm rule: importing a .wasm file yields a compiled WebAssembly.Module. */
declare module '*.wasm' {
  const module: WebAssembly.Module
  export default module
}
