/** The Node entry: everything in the Web entry plus the TCP transport. */
export * from './index.js'
export { tcp, type TcpOptions } from './transport/node-tcp.js'
