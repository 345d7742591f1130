import { defineBackendConfigModels } from '@dstack/core';
import { z } from 'zod';

/** The backend type: `type: lambda` in the server's config.yml and the key of the discovery map. */
export const LAMBDA_BACKEND_TYPE = 'lambda';

/**
 * dstack's chain of config models for this backend:
 * `LambdaBackendConfig` (the user's fields) → `LambdaBackendConfigWithCreds`
 * (plus `creds`; what config.yml and the API carry) → `LambdaStoredConfig`
 * (what the database keeps; creds are stored apart, encrypted) → `LambdaConfig`
 * (stored config plus creds; what the Compute is built from).
 *
 * Add the provider's settings to `configFields` and its kinds of credentials to
 * `credsSchemas`, then document each in README.md. User-facing schemas are
 * strict: a misspelt field is an error naming it, as in dstack.
 */
export const lambdaConfigModels = defineBackendConfigModels({
  type: LAMBDA_BACKEND_TYPE,
  configFields: {
    /** Lambda's regions (`us-east-1`…). Default (absent or null): every region the catalog has. */
    regions: z
      .array(z.string().min(1))
      .min(1)
      .nullish()
      .describe('The list of Lambda regions. Omit to use all regions.'),
    /**
     * Not dstack's: where Lambda's API is (an emulator). Default `https://cloud.lambdalabs.com/api/v1`
     * (env `DSTACK_LAMBDA_ENDPOINT_URL` for the catalog collector).
     */
    endpoint_url: z
      .string()
      .url()
      .nullish()
      .describe(
        "The root of Lambda's API (an emulator), which /instance-types… is appended to. Default https://cloud.lambdalabs.com/api/v1. In API requests only when the server allows custom endpoints.",
      ),
  },
  credsSchemas: {
    /** A Lambda Cloud API key (dstack's only kind of Lambda credentials). */
    api_key: { api_key: z.string().min(1).describe('The API key.') },
  },
});

/** `backends: [{type: lambda, ...}]` in the server's config.yml, without creds. */
export type LambdaBackendConfig = z.output<typeof lambdaConfigModels.backendConfig>;
/** The config with creds: what users send and `validateConfig` receives. */
export type LambdaBackendConfigWithCreds = z.output<typeof lambdaConfigModels.backendConfigWithCreds>;
/** One of the backend's kinds of credentials, discriminated by `type`. */
export type LambdaCreds = z.output<typeof lambdaConfigModels.creds>;
/** What the database keeps (without creds). */
export type LambdaStoredConfig = z.output<typeof lambdaConfigModels.storedConfig>;
/** The stored config plus creds: what the Compute is built from. */
export type LambdaConfig = z.output<typeof lambdaConfigModels.config>;
