import { addColumns } from './migration-helpers.js';

/**
 * Replica groups (dstack's `desired_replica_counts`): how many replicas the autoscaler wants in
 * each group of a service, by group name, as JSON; null for a run that has not scaled by group yet.
 */
export default addColumns({ runs: [{ name: 'desired_replica_counts', type: 'text' }] });
