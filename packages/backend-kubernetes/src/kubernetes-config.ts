import { defineBackendConfigModels } from '@dstack/core';
import { z } from 'zod';

/** The backend type: `type: kubernetes` in the server's config.yml and the key of the discovery map. */
export const KUBERNETES_BACKEND_TYPE = 'kubernetes';

/**
 * dstack's chain of config models for this backend:
 * `KubernetesBackendConfig` (the user's fields) → `KubernetesBackendConfigWithCreds`
 * (plus `creds`; what config.yml and the API carry) → `KubernetesStoredConfig`
 * (what the database keeps; creds are stored apart, encrypted) → `KubernetesConfig`
 * (stored config plus creds; what the Compute is built from).
 *
 * Add the provider's settings to `configFields` and its kinds of credentials to
 * `credsSchemas`, then document each in README.md. User-facing schemas are
 * strict: a misspelt field is an error naming it, as in dstack.
 */
export const kubernetesConfigModels = defineBackendConfigModels({
  type: KUBERNETES_BACKEND_TYPE,
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

/** `backends: [{type: kubernetes, ...}]` in the server's config.yml, without creds. */
export type KubernetesBackendConfig = z.output<typeof kubernetesConfigModels.backendConfig>;
/** The config with creds: what users send and `validateConfig` receives. */
export type KubernetesBackendConfigWithCreds = z.output<typeof kubernetesConfigModels.backendConfigWithCreds>;
/** One of the backend's kinds of credentials, discriminated by `type`. */
export type KubernetesCreds = z.output<typeof kubernetesConfigModels.creds>;
/** What the database keeps (without creds). */
export type KubernetesStoredConfig = z.output<typeof kubernetesConfigModels.storedConfig>;
/** The stored config plus creds: what the Compute is built from. */
export type KubernetesConfig = z.output<typeof kubernetesConfigModels.config>;
