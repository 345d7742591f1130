/** What this process keeps of the jobs it samples. */
export interface MetricsCaches {
  /**
   * When this process last sampled each job, by job id. Several server replicas may each sample a
   * job now and then: that stores a few more points, as dstack accepts, and saves a query per pass.
   */
  lastSampledAt: Map<string, number>;
}

export function createMetricsCaches(): MetricsCaches {
  return { lastSampledAt: new Map() };
}
