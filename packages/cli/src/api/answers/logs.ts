/** The answer of `logs/poll`, loaded by `DstackApiClient` when it comes. */
export { PollLogsResponseSchema } from '@dstack/core';
