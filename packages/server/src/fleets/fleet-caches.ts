/** What this process keeps of the instances it provisions. */
export interface FleetCaches {
  /** When each provisioning instance's bootstrap log was last read over SSH, by instance id. */
  bootstrapLogChecks: Map<string, number>;
}

export function createFleetCaches(): FleetCaches {
  return { bootstrapLogChecks: new Map() };
}
