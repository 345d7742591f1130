export * from './api/schemas.js';
export { AgentApiError } from './client/agent-api-error.js';
export { type FetchFunction, RunnerClient, type RunnerClientOptions } from './client/runner-client.js';
export { RUNNER_BIN_PATH, RUNNER_BUNDLE_PATH } from './paths.js';
export {
  agentAuthorizationHeader,
  agentTokenRefusal,
  deriveRunnerToken,
  hasAgentToken,
  normalizeAgentToken,
  RUNNER_TOKEN_ENV,
  SHIM_TOKEN_ENV,
} from './server/agent-token.js';
/** The agents' small HTTP toolkit, shared with the shim (which depends on this package). */
export { HttpError, readJsonBody, rejectUpgrade, sendError, sendJson } from './server/http-helpers.js';
export {
  RUNNER_DEFAULT_HTTP_PORT,
  type RunnerOptions,
  type RunnerServer,
  startRunner,
} from './server/runner-server.js';
export { SSH_UPGRADE_PROTOCOL } from './ssh/ssh-endpoint.js';
export { VERSION } from './version.js';
