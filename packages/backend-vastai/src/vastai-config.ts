import { defineBackendConfigModels } from '@dstack/core';
import { z } from 'zod';

/** The backend type: `type: vastai` in the server's config.yml and the key of the discovery map. */
export const VAST_AI_BACKEND_TYPE = 'vastai';

/**
 * dstack's chain of config models for this backend:
 * `VastAiBackendConfig` (the user's fields) → `VastAiBackendConfigWithCreds`
 * (plus `creds`; what config.yml and the API carry) → `VastAiStoredConfig`
 * (what the database keeps; creds are stored apart, encrypted) → `VastAiConfig`
 * (stored config plus creds; what the Compute is built from).
 *
 * Add the provider's settings to `configFields` and its kinds of credentials to
 * `credsSchemas`, then document each in README.md. User-facing schemas are
 * strict: a misspelt field is an error naming it, as in dstack.
 */
/** Vast.ai's console, the root of its REST API (the client appends `/api/v0/…`). */
export const VAST_AI_DEFAULT_ENDPOINT_URL = 'https://console.vast.ai';

export const vastAiConfigModels = defineBackendConfigModels({
  type: VAST_AI_BACKEND_TYPE,
  configFields: {
    /**
     * Default (absent or null): every location. An entry matches an offer's location (gpuhunt's
     * `<country>-<city>`, e.g. `us-california`) exactly or by its country code (`us`).
     */
    regions: z
      .array(z.string().min(1))
      .min(1)
      .nullish()
      .describe(
        'Locations offers are taken from: a whole location (us-california) or a country code (us). Absent or null: all.',
      ),
    /** Default true (dstack's): hosts of individuals as well as datacenters. */
    community_cloud: z
      .boolean()
      .nullish()
      .describe('Whether offers of community hosts (not only datacenters) are used. Default true.'),
    /** Default `https://console.vast.ai` (the catalog provider's: env `DSTACK_VASTAI_ENDPOINT_URL`). */
    endpoint_url: z
      .string()
      .url()
      .nullish()
      .describe(
        'The root of the Vast.ai API, which /api/v0/… is appended to (an emulator). Default https://console.vast.ai. In API requests only when the server allows custom endpoints.',
      ),
  },
  credsSchemas: {
    /** A Vast.ai API key (console → Account → API keys). */
    api_key: { api_key: z.string().min(1).describe('A Vast.ai API key.') },
  },
});

/** `backends: [{type: vastai, ...}]` in the server's config.yml, without creds. */
export type VastAiBackendConfig = z.output<typeof vastAiConfigModels.backendConfig>;
/** The config with creds: what users send and `validateConfig` receives. */
export type VastAiBackendConfigWithCreds = z.output<typeof vastAiConfigModels.backendConfigWithCreds>;
/** One of the backend's kinds of credentials, discriminated by `type`. */
export type VastAiCreds = z.output<typeof vastAiConfigModels.creds>;
/** What the database keeps (without creds). */
export type VastAiStoredConfig = z.output<typeof vastAiConfigModels.storedConfig>;
/** The stored config plus creds: what the Compute is built from. */
export type VastAiConfig = z.output<typeof vastAiConfigModels.config>;
