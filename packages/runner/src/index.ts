export * from './api/schemas.js';
export { AgentApiError } from './client/agent-api-error.js';
export { type FetchFunction, RunnerClient, type RunnerClientOptions } from './client/runner-client.js';
export { RUNNER_BIN_PATH, RUNNER_BUNDLE_PATH } from './paths.js';
export {
  RUNNER_DEFAULT_HTTP_PORT,
  type RunnerOptions,
  type RunnerServer,
  startRunner,
} from './server/runner-server.js';
export { VERSION } from './version.js';
