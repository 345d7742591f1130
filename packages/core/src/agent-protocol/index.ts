/**
 * The agent protocol, defined once: the ports, the token (its variables, header and per-task
 * derivation) and the wire models of the shim's, the runner's and the gateway's HTTP APIs, and the
 * service traffic rules the server's proxy and the gateway agent share (rate limits, request
 * counts for the autoscaler). The runner, the shim and the server import it as `@dstack/core/agent-protocol`; it needs only zod and node's built-in modules,
 * so the agents' single-file bundles carry nothing else of core.
 */
export * from './agent-token.js';
export * from './call-deadline.js';
export * from './code-limits.js';
export * from './default-image.js';
export * from './environment-variables.js';
export * from './gateway-api.js';
export * from './git-credentials.js';
export * from './normalised-request-path.js';
export * from './ports.js';
export * from './repo-data.js';
export * from './request-target.js';
export * from './runner-api.js';
export * from './runner-job-spec.js';
export * from './service-authorization.js';
export * from './service-rate-limits.js';
export * from './service-request-counts.js';
export * from './shell-command-line.js';
export * from './shim-api.js';
