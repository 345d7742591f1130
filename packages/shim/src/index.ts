/** The protocol the shim speaks (its API's models, port, token) lives in `@dstack/core/agent-protocol`. */

export { ShimClient, type ShimClientOptions } from './client/shim-client.js';
export {
  AcmeClient,
  type AcmeClientOptions,
  AcmeError,
  type ChallengeAnswers,
} from './gateway/acme/acme-client.js';
export { type GatewayOptions, type GatewayServer, startGateway } from './gateway/gateway-server.js';
export { readInstanceInfo } from './instance/instance-info.js';
export { findFreePort, findFreePorts } from './net/free-port.js';
export { GATEWAY_BUNDLE_PATH, SHIM_BIN_PATH, SHIM_BUNDLE_PATH } from './paths.js';
export { createProcessRuntime, type ProcessRuntimeOptions } from './runtime/process/process-runtime.js';
export {
  type StartedTask,
  type TaskAccess,
  type TaskDevices,
  type TaskEvents,
  type TaskRuntime,
  TaskStartError,
} from './runtime/task-runtime.js';
export { type ShimOptions, type ShimServer, startShim } from './server/shim-server.js';
export { VERSION } from './version.js';
