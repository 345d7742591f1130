import { addColumns } from './migration-helpers.js';

/**
 * Each run's `priority` (dstack's `runs.priority`, 0–100, default 0), a column so that the jobs
 * waiting for capacity are ordered by it without reading every run's spec.
 */
export default addColumns({ runs: [{ name: 'priority', type: 'integer', notNullDefault: 0 }] });
