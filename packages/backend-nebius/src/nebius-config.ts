import { defineBackendConfigModels } from '@dstack/core';
import { z } from 'zod';

/** The backend type: `type: nebius` in the server's config.yml and the key of the discovery map. */
export const NEBIUS_BACKEND_TYPE = 'nebius';

/** dstack's: a project whose name starts with this is a region's default one. */
export const NEBIUS_DEFAULT_PROJECT_NAME_PREFIX = 'default';

/**
 * dstack's chain of config models for the Nebius backend (`NebiusBackendConfig` →
 * `NebiusBackendConfigWithCreds` → `NebiusStoredConfig` → `NebiusConfig`), with dstack's fields:
 * `projects`, `regions`, `fabrics`, `tags`, and `service_account` creds. Not dstack's:
 * `endpoint_url`, where Nebius's API is (an emulator).
 */
export const nebiusConfigModels = defineBackendConfigModels({
  type: NEBIUS_BACKEND_TYPE,
  configFields: {
    /**
     * Nebius project IDs, at most one per region. Default (absent or null): in each region, its
     * only project or the one whose name starts with `default`.
     */
    projects: z
      .array(z.string().min(1))
      .nullish()
      .describe(
        'The list of allowed Nebius project IDs. Omit to use the default project in each region. The project is considered default if it is the only project in the region or if its name starts with `default`.',
      ),
    /** Nebius regions (`eu-north1`…). Default: every region the tenancy has a project in. */
    regions: z
      .array(z.string().min(1))
      .min(1)
      .nullish()
      .describe('The list of allowed Nebius regions. Omit to allow all regions.'),
    /** InfiniBand fabrics for clusters. Default: all. Checked against the catalog's fabrics. */
    fabrics: z
      .array(z.string().min(1))
      .nullish()
      .describe('The list of allowed fabrics for InfiniBand clusters. Omit to allow all fabrics.'),
    /** Labels on the disks and instances dstack creates. Default: none. */
    tags: z
      .record(z.string(), z.string())
      .nullish()
      .describe('The tags (labels) that will be assigned to resources created by dstack.'),
    /** Not dstack's: where Nebius's API is. Default `https://api.nebius.cloud` (each service at `<service>.api.nebius.cloud:443`). */
    endpoint_url: z
      .string()
      .url()
      .nullish()
      .describe(
        "Where Nebius's gRPC API is (an emulator): every service at this address, plaintext for http://, TLS for https://. Default https://api.nebius.cloud (each service at its own <service>.api.nebius.cloud:443). In API requests only when the server allows custom endpoints.",
      ),
  },
  credsSchemas: {
    /**
     * A service account's authorized key: the account's ID, the public key's ID and the private
     * key (PEM), as `private_key_content` or, in config.yml only, `private_key_file`; or, in
     * config.yml only, `filename`, a Nebius credentials file (JSON, `subject-credentials`) that
     * gives all three. Files are read when the backend is configured; what is stored is their content.
     */
    service_account: {
      service_account_id: z
        .string()
        .min(1)
        .nullish()
        .describe('Service account ID. Set from `filename` when that is given.'),
      public_key_id: z
        .string()
        .min(1)
        .nullish()
        .describe('ID of the service account public key. Set from `filename` when that is given.'),
      private_key_file: z
        .string()
        .min(1)
        .nullish()
        .describe(
          'Path to the service account private key. Only in config.yml: API requests send the content.',
        ),
      private_key_content: z
        .string()
        .min(1)
        .nullish()
        .describe(
          "Content of the service account private key (PEM). When configuring via config.yml, it's filled from private_key_file or filename.",
        ),
      filename: z
        .string()
        .min(1)
        .nullish()
        .describe(
          'The path to the service account credentials file (JSON, as `nebius iam auth-public-key generate` writes it). Only in config.yml.',
        ),
    },
  },
});

/** `backends: [{type: nebius, ...}]` in the server's config.yml, without creds. */
export type NebiusBackendConfig = z.output<typeof nebiusConfigModels.backendConfig>;
/** The config with creds: what users send and `validateConfig` receives. */
export type NebiusBackendConfigWithCreds = z.output<typeof nebiusConfigModels.backendConfigWithCreds>;
/** One of the backend's kinds of credentials, discriminated by `type`. */
export type NebiusCreds = z.output<typeof nebiusConfigModels.creds>;
/** What the database keeps (without creds). */
export type NebiusStoredConfig = z.output<typeof nebiusConfigModels.storedConfig>;
/** The stored config plus creds: what the Compute is built from. */
export type NebiusConfig = z.output<typeof nebiusConfigModels.config>;
