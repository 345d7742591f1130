/**
 * The agents' ports (dstack's). The shim, the runner and the server take them from here; a port
 * given on an agent's command line or chosen by a backend overrides them.
 */

/** The shim's HTTP API on an instance's host. */
export const DSTACK_SHIM_HTTP_PORT = 10998;
/**
 * The runner's HTTP API inside the job's container (in bridge mode the shim maps it to a free
 * host port; the job's runtime data records where it went).
 */
export const DSTACK_RUNNER_HTTP_PORT = 10999;
/** dstack's runner sshd in the job's container; unused here: SSH goes through `SSH_UPGRADE_PROTOCOL`. */
export const DSTACK_RUNNER_SSH_PORT = 10022;
/** The DCGM exporter on NVIDIA hosts. */
export const DSTACK_DCGM_EXPORTER_PORT = 10997;

/** dstack's reserved ports, its agents' among them: a job's `ports:` in this range are never forwarded to a client. */
export const DSTACK_RESERVED_PORTS = { first: 10000, last: 10999 } as const;
