import { addColumns } from './migration-helpers.js';

/**
 * Each gateway's agent token (encrypted): its agent's management API answers only requests that
 * carry it. Null on rows written before: their agents were started without one.
 */
export default addColumns({ gateways: [{ name: 'agent_token', type: 'text' }] });
