import { addColumns } from './migration-helpers.js';

/**
 * Each instance's agent token (encrypted): the shim or runner its launch started answers only
 * requests that carry it. Null on rows written before: their agents were started without one.
 */
export default addColumns({ instances: [{ name: 'agent_token', type: 'text' }] });
