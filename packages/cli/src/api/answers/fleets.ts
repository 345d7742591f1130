/** The answers of the fleet endpoints, loaded by `DstackApiClient` when one comes. */
export { FleetSchema } from '@dstack/core';
