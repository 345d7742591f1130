import { addColumns } from './migration-helpers.js';

/** The admin's token kept encrypted (`users.token_encrypted`), to print it at every start. */
export default addColumns({ users: [{ name: 'token_encrypted', type: 'text' }] });
