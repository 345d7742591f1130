import { addColumns } from './migration-helpers.js';

/** Whether a gateway's service is reached over HTTPS, decided at apply (`https: auto` reads the gateway's certificate). */
export default addColumns({ runs: [{ name: 'service_https', type: 'integer' }] });
