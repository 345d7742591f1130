/** The answers of the secret endpoints, loaded by `DstackApiClient` when one comes. */
export { SecretSchema } from '@dstack/core';
