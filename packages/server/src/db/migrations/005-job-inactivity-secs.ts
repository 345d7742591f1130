import { addColumns } from './migration-helpers.js';

/**
 * A dev environment's seconds without an SSH connection, as its runner last reported them
 * (dstack's `jobs.inactivity_secs`); null for jobs that have no `inactivity_duration`.
 */
export default addColumns({ jobs: [{ name: 'inactivity_secs', type: 'integer' }] });
