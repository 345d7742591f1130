/** The answers of the run endpoints (`runs/*`), loaded by `DstackApiClient` when one comes. */
export { RunPlanSchema, RunSchema } from '@dstack/core';
