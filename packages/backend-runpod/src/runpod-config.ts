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
/** RunPod's GraphQL endpoint, where every call of the backend and of gpuhunt's collector goes. */
export const RUNPOD_DEFAULT_ENDPOINT_URL = 'https://api.runpod.io/graphql';

/** dstack's default of `community_cloud`: Secure Cloud only. */
export const RUNPOD_COMMUNITY_CLOUD_DEFAULT = false;

export const runpodConfigModels = defineBackendConfigModels({
  type: RUNPOD_BACKEND_TYPE,
  configFields: {
    /**
     * Default (absent or null): every region. Secure Cloud regions are data center ids
     * (`CA-MTL-1`, `EU-RO-1`), Community Cloud ones country codes (`CA`, `RO`), as dstack names them.
     */
    regions: z
      .array(z.string().min(1))
      .min(1)
      .nullish()
      .describe(
        'The list of RunPod regions: data center ids (US-TX-3) for Secure Cloud, country codes (US) for Community Cloud. Omit to use all regions.',
      ),
    /** Default false (dstack's): Secure Cloud only. */
    community_cloud: z
      .boolean()
      .nullish()
      .describe(
        'Whether Community Cloud offers can be suggested in addition to Secure Cloud. Defaults to false.',
      ),
    /** Default `https://api.runpod.io/graphql` (the catalog collector's: env `DSTACK_RUNPOD_ENDPOINT_URL`). */
    endpoint_url: z
      .string()
      .url()
      .nullish()
      .describe(
        "RunPod's GraphQL endpoint (an emulator). Default https://api.runpod.io/graphql. In API requests only when the server allows custom endpoints.",
      ),
  },
  credsSchemas: {
    /** A RunPod API key (console → Settings → API Keys). */
    api_key: { api_key: z.string().min(1).describe('The API key') },
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
