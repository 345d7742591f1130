/** Default provisioning timeout (10 minutes); plugins may override it. */
export const DEFAULT_PROVISIONING_TIMEOUT_SECONDS = 600;
