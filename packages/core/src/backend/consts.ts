/** Port of the dstack-shim HTTP API on a VM host. */
export const DSTACK_SHIM_HTTP_PORT = 10998;
/** Port of the dstack-runner HTTP API inside the job container. */
export const DSTACK_RUNNER_HTTP_PORT = 10999;
/** Port of the runner's own sshd inside the job container. */
export const DSTACK_RUNNER_SSH_PORT = 10022;
/** Port of the DCGM exporter on NVIDIA hosts. */
export const DSTACK_DCGM_EXPORTER_PORT = 10997;

/** Default provisioning timeout (10 minutes); plugins may override it. */
export const DEFAULT_PROVISIONING_TIMEOUT_SECONDS = 600;
