import { defineBackendConfigModels } from '@dstack/core';
import { z } from 'zod';

/** The backend type: `type: verda` in the server's config.yml and the key of the discovery map. */
export const VERDA_BACKEND_TYPE = 'verda';

/**
 * dstack's chain of config models for this backend:
 * `VerdaBackendConfig` (the user's fields) → `VerdaBackendConfigWithCreds`
 * (plus `creds`; what config.yml and the API carry) → `VerdaStoredConfig`
 * (what the database keeps; creds are stored apart, encrypted) → `VerdaConfig`
 * (stored config plus creds; what the Compute is built from).
 *
 * Add the provider's settings to `configFields` and its kinds of credentials to
 * `credsSchemas`, then document each in README.md. User-facing schemas are
 * strict: a misspelt field is an error naming it, as in dstack.
 */
export const verdaConfigModels = defineBackendConfigModels({
  type: VERDA_BACKEND_TYPE,
  configFields: {
    /** Verda's locations (`FIN-01`…). Default (absent or null): every location the catalog has. */
    regions: z
      .array(z.string().min(1))
      .min(1)
      .nullish()
      .describe('The list of Verda regions. Omit to use all regions.'),
    /** Not dstack's: where Verda's API is (an emulator). Default `https://api.verda.com/v1`. */
    endpoint_url: z
      .string()
      .url()
      .nullish()
      .describe(
        "The root of Verda's API (an emulator), which /oauth2/token, /instances… are appended to. Default https://api.verda.com/v1. In API requests only when the server allows custom endpoints.",
      ),
  },
  credsSchemas: {
    /** A Verda API client's OAuth2 client credentials (dstack's `api_key` creds). */
    api_key: {
      client_id: z.string().min(1).describe('The client ID.'),
      client_secret: z.string().min(1).describe('The client secret.'),
    },
  },
});

/** `backends: [{type: verda, ...}]` in the server's config.yml, without creds. */
export type VerdaBackendConfig = z.output<typeof verdaConfigModels.backendConfig>;
/** The config with creds: what users send and `validateConfig` receives. */
export type VerdaBackendConfigWithCreds = z.output<typeof verdaConfigModels.backendConfigWithCreds>;
/** One of the backend's kinds of credentials, discriminated by `type`. */
export type VerdaCreds = z.output<typeof verdaConfigModels.creds>;
/** What the database keeps (without creds). */
export type VerdaStoredConfig = z.output<typeof verdaConfigModels.storedConfig>;
/** The stored config plus creds: what the Compute is built from. */
export type VerdaConfig = z.output<typeof verdaConfigModels.config>;
