/** The answer of `metrics/job`, loaded by `DstackApiClient` when it comes. */
export { JobMetricsSchema } from '@dstack/core';
