/** The answer of `events/list`, loaded by `DstackApiClient` when it comes. */
export { EventSchema } from '@dstack/core';
