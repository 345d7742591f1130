/** The answers of the volume endpoints, loaded by `DstackApiClient` when one comes. */
export { VolumeSchema } from '@dstack/core';
