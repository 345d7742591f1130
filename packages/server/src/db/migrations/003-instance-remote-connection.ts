import { addColumns } from './migration-helpers.js';

/**
 * SSH fleet hosts: how the server logs in to each host (encrypted, it holds the key) and
 * where the deploy left the shim, so deleting the fleet can stop it.
 */
export default addColumns({ instances: [{ name: 'remote_connection_info', type: 'text' }] });
