/** What this process keeps of instances' agents: decrypted values that never change. */
import type { InstanceKeys } from './agent-endpoints.js';

export interface AgentCaches {
  /** Decrypted SSH fleet host keys by instance id; an instance's keys never change. */
  instanceHostKeys: Map<string, InstanceKeys>;
  /** Decrypted agent tokens by instance id; a launched instance's token never changes. Bounded. */
  tokens: Map<string, string>;
}

export function createAgentCaches(): AgentCaches {
  return { instanceHostKeys: new Map(), tokens: new Map() };
}
