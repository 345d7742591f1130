/** What this process keeps of the services it proxies: turns, request counts, rate limits, probes. */
import { RateLimiter } from '@dstack/core/agent-protocol';
import type { ProbeState } from './probe-state.js';
import { ServiceRequestStats } from './service-stats.js';

export interface ServiceCaches {
  /** How many requests each service run's replicas were sent, for round-robin. */
  replicaTurns: Map<string, number>;
  /** Requests the service proxy forwarded per run and second, for autoscaling. */
  stats: ServiceRequestStats;
  /** The service proxy's `rate_limits` buckets. */
  rateLimiter: RateLimiter;
  /** Each probed replica's run of successes per probe and when it is probed next, by job id. */
  probeStates: Map<string, ProbeState>;
}

export function createServiceCaches(): ServiceCaches {
  return {
    replicaTurns: new Map(),
    stats: new ServiceRequestStats(),
    rateLimiter: new RateLimiter(),
    probeStates: new Map(),
  };
}
