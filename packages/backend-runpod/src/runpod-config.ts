import { defineBackendConfigModels } from '@dstack/core';
import { z } from 'zod';

/** The backend type: `type: runpod` in the server's config.yml and the key of the discovery map. */
export const RUNPOD_BACKEND_TYPE = 'runpod';

/**
 * dstack's chain of config models for this backend:
 * `RunpodBackendConfig` (the user's fields) → `RunpodBackendConfigWithCreds`
 * (plus `creds`; what config.yml and the API carry) → `RunpodStoredConfig`
 * (what the database keeps; creds are stored apart, encrypted) → `RunpodConfig`
 * (stored config plus creds; what the Compute is built from).
 *
 * Add the provider's settings to `configFields` and its kinds of credentials to
 * `credsSchemas`, then document each in README.md. User-facing schemas are
 * strict: a misspelt field is an error naming it, as in dstack.
 */
export const runpodConfigModels = defineBackendConfigModels({
  type: RUNPOD_BACKEND_TYPE,
  configFields: {
    /** The regions to use. Default (absent or null): every region the catalog has offers in. */
    regions: z
      .array(z.string().min(1))
      .min(1)
      .nullish()
      .describe(
        'The regions offers and instances are taken from. Absent or null: every region the catalog has.',
      ),
  },
  credsSchemas: {
    /** An API key of the provider account. */
    api_key: { api_key: z.string().min(1).describe('An API key of the provider account.') },
    /**
     * The server's own environment (an instance role, a credentials file).
     * Refused when the server runs with `DSTACK_DEFAULT_CREDS_DISABLED`.
     */
    default: {},
  },
});

/** `backends: [{type: runpod, ...}]` in the server's config.yml, without creds. */
export type RunpodBackendConfig = z.output<typeof runpodConfigModels.backendConfig>;
/** The config with creds: what users send and `validateConfig` receives. */
export type RunpodBackendConfigWithCreds = z.output<typeof runpodConfigModels.backendConfigWithCreds>;
/** One of the backend's kinds of credentials, discriminated by `type`. */
export type RunpodCreds = z.output<typeof runpodConfigModels.creds>;
/** What the database keeps (without creds). */
export type RunpodStoredConfig = z.output<typeof runpodConfigModels.storedConfig>;
/** The stored config plus creds: what the Compute is built from. */
export type RunpodConfig = z.output<typeof runpodConfigModels.config>;
