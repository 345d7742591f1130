/** The answers of the gateway endpoints, loaded by `DstackApiClient` when one comes. */
export { GatewayPlanSchema, GatewaySchema } from '@dstack/core';
