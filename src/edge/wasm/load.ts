// Loading the WebAssembly core: a source given to loadCore(), or the default one (build/core.wasm
// beside the package, or what an entry set with setDefaultCoreSource()), compiled once per source.

import { UnsupportedCompressionError, WasmCoreError } from '../errors.js'
import { COMPRESSION_CODEC, Core, type CompressionType, type CoreExports } from './core.js'


/** ArrayBufferView too: TS 5.7+ types a Node Buffer / Uint8Array<ArrayBufferLike> as not a BufferSource. */
export type CoreSource = WebAssembly.Module | BufferSource | ArrayBufferView | Promise<Response> | Response

let defaultCore: Promise<Core> | undefined
const loaded = new WeakMap<object, Promise<Core>>()

/** What loadCore() uses when the producer is given no `wasm`: a function, so nothing loads until a producer connects. */
export type DefaultCoreSource = () => CoreSource | Promise<CoreSource>

/**
 * The literal stays inside `new URL(..., import.meta.url)` because that is the form Vite, webpack
 * and Parcel recognise: they copy the file into the build and rewrite the URL. src/edge/wasm and
 * dist/edge/wasm sit at the same depth, so the path holds in a checkout and in the package.
 */
function bundledCoreUrl(): URL {
  return new URL('../../../build/core.wasm', import.meta.url)
}

/**
 * The separate build/core.wasm: read from disk where the module URL is a file (Node, Deno, Bun;
 * `process.getBuiltinModule` keeps `node:fs` out of what browser bundlers see), fetched otherwise.
 */
async function fetchBundledCore(url = bundledCoreUrl()): Promise<CoreSource> {
  if (url.protocol === 'file:') {
    const getBuiltin = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule
    const fs = getBuiltin?.('fs/promises') as { readFile(u: URL): Promise<Uint8Array> } | undefined
    if (fs) return fs.readFile(url)
  }
  let response: Response
  try {
    response = await fetch(url)
  } catch (err) {
    throw new WasmCoreError(`could not fetch the kafka-edge WebAssembly core from ${url.href}: ${(err as Error)?.message ?? err}${WHERE_THE_CORE_COMES_FROM}`, { cause: err })
  }
  if (!response.ok) throw new WasmCoreError(`fetching the kafka-edge WebAssembly core from ${url.href} failed: HTTP ${response.status}${WHERE_THE_CORE_COMES_FROM}`)
  return response
}

const WHERE_THE_CORE_COMES_FROM = '. A bundler that does not copy `new URL(..., import.meta.url)` assets (esbuild) needs the core'
  + ' passed as the producer\'s `wasm` (e.g. fetch() of kafka-edge/core.wasm emitted with the file loader),'
  + ' or import kafka-edge/inline, which embeds it'

let defaultSource: DefaultCoreSource = () => fetchBundledCore()

let lz4Core: Promise<CoreSource> | undefined
/**
 * The lz4-only core (build/core-lz4.wasm, 5 kB gzip against 21 kB for all four codecs), fetched next
 * to the bundle like the default one: the browser SDK's, which compresses with lz4 and reads back
 * only its own batches. One promise per page, so loadCore() caches one instance for it.
 */
export function bundledLz4Core(): Promise<CoreSource> {
  return lz4Core ??= fetchBundledCore(new URL('../../../build/core-lz4.wasm', import.meta.url))
}

/**
 * @internal Replaces where loadCore() finds the core when it is given none: the `kafka-edge/inline`
 * entry installs its embedded copy, the workerd entry the module wrangler compiled.
 */
export function setDefaultCoreSource(source: DefaultCoreSource): void {
  defaultSource = source
  defaultCore = undefined
}

export interface LoadCoreOptions {
  /**
   * The codec the caller will compress with: loading fails with UnsupportedCompressionError when
   * the module was built without its encoder (e.g. `kafka-edge/core-lz4.wasm` and 'zstd'), so a
   * producer fails at connect() rather than at its first batch.
   */
  compression?: CompressionType
}

/**
 * Instantiates the core. Without a source it loads `kafka-edge/core.wasm` (all four codecs) as a
 * separate file: read from disk in Node, Deno and Bun, fetched next to the bundle in a page (Vite
 * and webpack emit it), imported as a module under workerd. `kafka-edge/inline` embeds it as
 * base64 instead, for one-file deployments. Smaller builds with one codec
 * (`kafka-edge/core-lz4.wasm`, `core-gzip`, `core-snappy`, `core-zstd`), none (`core-none`) or only
 * the encoders (`core-encoders`) are passed as `source` (a WebAssembly.Module, bytes, or a fetch()
 * Response). Results are cached per source.
 */
export async function loadCore(source?: CoreSource, opts: LoadCoreOptions = {}): Promise<Core> {
  const core = await loadCoreCached(source)
  const compression = opts.compression
  if (compression !== undefined && compression !== 'none') {
    if (COMPRESSION_CODEC[compression] === undefined) throw new WasmCoreError(`unknown compression type '${String(compression)}'`)
    if (!core.supportsCompression(compression)) throw new UnsupportedCompressionError(compression)
  }
  return core
}

function loadCoreCached(source?: CoreSource): Promise<Core> {
  if (source === undefined) {
    if (defaultCore === undefined) {
      const p = instantiate(Promise.resolve().then(defaultSource))
      defaultCore = p
      p.catch(() => { if (defaultCore === p) defaultCore = undefined })
    }
    return defaultCore
  }
  let core = loaded.get(source)
  if (core === undefined) {
    core = instantiate(source)
    loaded.set(source, core)
    core.catch(() => loaded.delete(source))
  }
  return core
}

async function instantiate(source: CoreSource | Promise<CoreSource>): Promise<Core> {
  let memory: WebAssembly.Memory | undefined
  const imports = {
    env: {
      abort(message: number, file: number, line: number, column: number): never {
        const text = memory ? `${readAscString(memory, message)} at ${readAscString(memory, file)}:${line}:${column}` : 'abort'
        throw new WasmCoreError(`WebAssembly core aborted: ${text}`)
      },
      seed: () => Date.now(),
      trace: () => {},
    },
  }
  let resolved: CoreSource | undefined
  try {
    resolved = await source
    let instance: WebAssembly.Instance
    if (resolved instanceof WebAssembly.Module) {
      instance = await WebAssembly.instantiate(resolved, imports)
    } else if (isResponse(resolved)) {
      instance = await instantiateResponse(resolved, imports)
    } else {
      instance = (await WebAssembly.instantiate(resolved as BufferSource, imports)).instance
    }
    const exports = instance.exports as unknown as CoreExports
    memory = exports.memory
    return new Core(exports)
  } catch (err) {
    if (err instanceof WasmCoreError) throw err
    // Both refusals look alike (a CompileError about code generation): name both ways out.
    const hint = resolved instanceof WebAssembly.Module
      ? ''
      : ". A page whose Content-Security-Policy has script-src needs 'wasm-unsafe-eval' in it;"
        + " workerd forbids compiling bytes: pass the WebAssembly.Module that `import core from 'kafka-edge/core.wasm'` gives"
    throw new WasmCoreError(`could not load the kafka-edge WebAssembly core: ${(err as Error)?.message ?? err}${hint}`, { cause: err })
  }
}

function isResponse(x: unknown): x is Response {
  return typeof x === 'object' && x !== null && typeof (x as Response).arrayBuffer === 'function' && 'headers' in x
}

async function instantiateResponse(response: Response, imports: WebAssembly.Imports): Promise<WebAssembly.Instance> {
  if (!response.ok) throw new WasmCoreError(`fetching the WebAssembly core failed: HTTP ${response.status}`)
  // Streaming compiles while downloading but requires the application/wasm content type.
  if (typeof WebAssembly.instantiateStreaming === 'function' && response.headers.get('content-type')?.startsWith('application/wasm')) {
    return (await WebAssembly.instantiateStreaming(response, imports)).instance
  }
  return (await WebAssembly.instantiate(await response.arrayBuffer(), imports)).instance
}

/** @internal For kafka-edge/inline. */
export function base64Bytes(b64: string): Uint8Array {
  const bin = atob(b64)
  const out = new Uint8Array(bin.length)
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i)
  return out
}

/** AssemblyScript strings: UTF-16LE, byte length in the u32 before the pointer. */
function readAscString(memory: WebAssembly.Memory, ptr: number): string {
  if (ptr === 0) return ''
  const bytes = new Uint8Array(memory.buffer)
  const at = ptr >>> 0
  const len = new DataView(memory.buffer).getUint32(at - 4, true)
  let s = ''
  for (let i = 0; i + 1 < len; i += 2) s += String.fromCharCode(bytes[at + i]! | (bytes[at + i + 1]! << 8))
  return s
}
