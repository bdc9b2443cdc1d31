// Minimal typings for the pure-JS codec peers used by the codec tests and bench/codecs.ts.
declare module 'snappyjs' {
  export function compress<T extends Uint8Array | ArrayBuffer>(input: T): T
  export function uncompress<T extends Uint8Array | ArrayBuffer>(input: T, maxLength?: number): T
  const snappyjs: { compress: typeof compress; uncompress: typeof uncompress }
  export default snappyjs
}
declare module 'lz4js' {
  export function compress(src: Uint8Array, maxSize?: number): Uint8Array
  export function decompress(src: Uint8Array, maxSize?: number): Uint8Array
  const lz4js: { compress: typeof compress; decompress: typeof decompress }
  export default lz4js
}
