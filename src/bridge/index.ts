/** The relay as a library: start one in-process (tests, custom servers) or use `npx kafka-edge bridge`. */
export { startBridge, SUBPROTOCOL, BEARER_PREFIX, type Bridge, type BridgeOptions } from './server.js'
export { resolveConfig, loadConfigFile, parseHostPort, BridgeConfigError, type BridgeConfig, type HostPort } from './config.js'
export { CloseCode } from './codes.js'
export { signToken, verifyToken, type TokenClaims } from './token.js'
export { Logger, Metrics } from './metrics.js'
export { main } from './cli.js'
