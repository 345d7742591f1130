/** The answer of `offers/list`, loaded by `DstackApiClient` when it comes. */
export { InstanceOfferWithAvailabilitySchema } from '@dstack/core';
