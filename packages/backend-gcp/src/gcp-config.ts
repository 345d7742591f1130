import { defineBackendConfigModels, ServerClientError } from '@dstack/core';
import { z } from 'zod';

/** The backend type: `type: gcp` in the server's config.yml and the key of the discovery map. */
export const GCP_BACKEND_TYPE = 'gcp';

/** Compute Engine v1's base URL, the default of `endpoint_url`. */
export const GCP_COMPUTE_URL = 'https://compute.googleapis.com/compute/v1';

/**
 * dstack's chain of config models for this backend:
 * `GcpBackendConfig` (the user's fields) → `GcpBackendConfigWithCreds`
 * (plus `creds`; what config.yml and the API carry) → `GcpStoredConfig`
 * (what the database keeps; creds are stored apart, encrypted) → `GcpConfig`
 * (stored config plus creds; what the Compute is built from).
 *
 * dstack's fields this backend does not honour yet (`vpc_project_id`, `extra_vpcs`,
 * `nat_check: true`) parse, so the error can name them, and are refused by
 * `parseGcpBackendConfig` (see `refuseUnsupportedFields`).
 */
export const gcpConfigModels = defineBackendConfigModels({
  type: GCP_BACKEND_TYPE,
  configFields: {
    /** Required: the project instances are created in. */
    project_id: z.string().min(1).describe('The GCP project id instances are created in.'),
    /** Default (absent or null): every region the catalog has offers in. */
    regions: z
      .array(z.string().min(1))
      .min(1)
      .nullish()
      .describe(
        'GCP regions offers and instances are taken from. Absent or null: every region the catalog has.',
      ),
    /** Default: `default` (the project's default network). */
    vpc_name: z
      .string()
      .min(1)
      .nullish()
      .describe('The VPC network instances are attached to. Default: the network named `default`.'),
    /** Refused for now: a Shared VPC host project. */
    vpc_project_id: z
      .string()
      .min(1)
      .nullish()
      .describe('The Shared VPC host project of vpc_name. Not supported yet: refused when set.'),
    /** Refused for now: extra networks for multi-NIC (A3) instances. */
    extra_vpcs: z
      .array(z.string().min(1))
      .nullish()
      .describe('Extra VPCs for multi-NIC instances (A3). Not supported yet: refused when set.'),
    /** Default true. */
    public_ips: z
      .boolean()
      .nullish()
      .describe('Whether instances get external IPs (the server then reaches them there). Default true.'),
    /** Only `false` is accepted: the check for Cloud NAT is not implemented. */
    nat_check: z
      .boolean()
      .nullish()
      .describe(
        'Whether to check for Cloud NAT when public_ips is false. Not supported yet: set false when public_ips is false.',
      ),
    /** Default: none (Compute Engine's default service account is not attached). */
    vm_service_account: z
      .string()
      .min(1)
      .nullish()
      .describe('The email of the service account attached to instances (scope cloud-platform).'),
    /** Default: none. */
    tags: z
      .record(z.string().min(1), z.string())
      .nullish()
      .describe("Labels put on every instance the backend creates; dstack's own labels win on conflict."),
    /** Default: Compute Engine (`https://compute.googleapis.com/compute/v1`). */
    endpoint_url: z
      .string()
      .url()
      .nullish()
      .describe(
        'The Compute Engine v1 base URL (an emulator). Default: https://compute.googleapis.com/compute/v1. In API requests only when the server allows custom endpoints.',
      ),
  },
  credsSchemas: {
    /**
     * A service-account key: `data` (the key file's JSON text) or `filename` (config.yml only;
     * read when the backend is configured; what is stored is its `data`).
     */
    service_account: {
      filename: z
        .string()
        .min(1)
        .nullish()
        .describe('A path on the server to the key file (JSON). Only in config.yml: API requests send data.'),
      data: z.string().min(1).nullish().describe("The key file's JSON text."),
    },
    /**
     * Application default credentials on the server (GOOGLE_APPLICATION_CREDENTIALS, gcloud's
     * user credentials, the metadata server). Refused when the server runs with
     * `DSTACK_DEFAULT_CREDS_DISABLED`, and in API requests unless `DSTACK_SERVER_ALLOW_DEFAULT_CREDS`.
     */
    default: {},
  },
});

/** The error for a config field the backend cannot take: `Invalid gcp backend config: {field}: {problem}`, naming it. */
export function invalidConfigField(field: string[], problem: string, cause?: unknown): ServerClientError {
  return new ServerClientError(`Invalid gcp backend config: ${field.join('.')}: ${problem}`, {
    fields: [field],
    cause,
  });
}

/** `backends: [{type: gcp, ...}]` in the server's config.yml, without creds. */
export type GcpBackendConfig = z.output<typeof gcpConfigModels.backendConfig>;
/** The config with creds: what users send and `validateConfig` receives. */
export type GcpBackendConfigWithCreds = z.output<typeof gcpConfigModels.backendConfigWithCreds>;
/** One of the backend's kinds of credentials, discriminated by `type`. */
export type GcpCreds = z.output<typeof gcpConfigModels.creds>;
/** What the database keeps (without creds). */
export type GcpStoredConfig = z.output<typeof gcpConfigModels.storedConfig>;
/** The stored config plus creds: what the Compute is built from. */
export type GcpConfig = z.output<typeof gcpConfigModels.config>;
