import { addColumns } from './migration-helpers.js';

/**
 * Service replicas (dstack's `deployment_num`, `desired_replica_count`): the run's deployment
 * (bumped when a changed service is applied again) and how many replicas the autoscaler wants,
 * with when it last changed its mind; each job's deployment and whether its probes pass.
 */
export default addColumns({
  runs: [
    { name: 'deployment_num', type: 'integer', notNullDefault: 0 },
    { name: 'desired_replica_count', type: 'integer', notNullDefault: 1 },
    { name: 'last_scaled_at', type: 'time' },
  ],
  jobs: [
    { name: 'deployment_num', type: 'integer', notNullDefault: 0 },
    { name: 'probes_ready', type: 'integer', notNullDefault: 0 },
  ],
});
