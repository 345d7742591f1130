export {
  AgentConnector,
  type AgentConnectorOptions,
  DEFAULT_AGENT_TUNNEL_IDLE_TIMEOUT_MS,
  DEFAULT_SSH_CONNECT_TIMEOUT_MS,
} from './agent-connector.js';
export { isDirectlyReachable, isLoopbackHost, shimPortOf } from './agent-endpoints.js';
export { AgentUnreachableError } from './agent-unreachable-error.js';
export { generateProjectSshKeyPair, type ProjectSshKeyPair } from './ssh-keys.js';
