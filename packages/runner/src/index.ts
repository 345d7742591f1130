/** The protocol the runner speaks (its API's models, port, token) lives in `@dstack/core/agent-protocol`. */
export { AgentApiError } from './client/agent-api-error.js';
export { type FetchFunction, RunnerClient, type RunnerClientOptions } from './client/runner-client.js';
/** What a job running as a host process keeps of the host's environment (the shim's process runtime). */
export { HOST_JOB_VARIABLES, hostJobEnvironment } from './job/host-job-environment.js';
export { RUNNER_BIN_PATH, RUNNER_BUNDLE_PATH } from './paths.js';
/** The runner with its own node, loader and libraries, to start in any image (see portable-runtime-layout.ts). */
export {
  buildPortableRuntime,
  type PortableRuntime,
  type PortableRuntimeManifest,
  type PortableRuntimeSources,
  type PreparePortableRuntimeOptions,
  preparePortableRuntime,
  RUNTIME_ARCHIVE_ROOT,
  RUNTIME_MANIFEST_FILE,
  RUNTIME_RUNNER_FILE,
  readPortableRuntime,
  runtimeNodeCommand,
  runtimeRunnerCommand,
  writePortableRuntimeArchive,
} from './portable-runtime/index.js';
/** How the agents enforce their token, shared with the shim (which depends on this package). */
export { agentTokenRefusal, normalizeAgentToken } from './server/agent-token.js';
/** The agents' small HTTP toolkit, shared with the shim. */
export { HttpError, readJsonBody, rejectUpgrade, sendError, sendJson } from './server/http-helpers.js';
export { type RunnerOptions, type RunnerServer, startRunner } from './server/runner-server.js';
/** Public keys allowed to log in (authorized_keys lines), shared with the server's SSH proxy. */
export {
  type AuthorizedKey,
  AuthorizedKeyError,
  findAuthorizedKey,
  parseAuthorizedKeys,
} from './ssh/authorized-keys.js';
/** The SSH client's handshake and a file copied through `cat`, shared by the server and the Slurm backend. */
export { connectSshClient, uploadThroughCat } from './ssh/ssh-client.js';
export { VERSION } from './version.js';
