import { defineBackendConfigModels } from '@dstack/core';
import { z } from 'zod';

/** The backend type: `type: oci` in the server's config.yml and the key of the discovery map. */
export const OCI_BACKEND_TYPE = 'oci';

/** dstack's default of `creds.file` (type `default`): the OCI CLI's config file. */
export const OCI_DEFAULT_CONFIG_FILE = '~/.oci/config';
/** dstack's default of `creds.profile` (type `default`). */
export const OCI_DEFAULT_PROFILE = 'DEFAULT';

/**
 * dstack's chain of config models for OCI (`OCIBackendConfig` → `…WithCreds` → `OCIStoredConfig`
 * → `OCIConfig`), with dstack's fields and names, plus `endpoint_url`, which points the SDK's
 * clients at another OCI-compatible endpoint (an emulator).
 */
export const ociConfigModels = defineBackendConfigModels({
  type: OCI_BACKEND_TYPE,
  configFields: {
    /** Default (absent or null): the tenancy's subscribed regions where dstack publishes its images. */
    regions: z
      .array(z.string().min(1))
      .min(1)
      .nullish()
      .describe('The list of OCI regions. Omit to use all regions.'),
    /** Default: `dstack-{project}`, created by the backend under the tenancy. */
    compartment_id: z
      .string()
      .min(1)
      .nullish()
      .describe(
        'Compartment where `dstack` will create all resources. Omit to instruct `dstack` to create a new compartment.',
      ),
    /** Default: OCI's own endpoints (`https://<service>.<region>.oraclecloud.com`). */
    endpoint_url: z
      .string()
      .url()
      .nullish()
      .describe(
        "A base URL serving OCI's APIs at `<endpoint_url>/<service>/<region>` (`iaas`, `identity`, `marketplace`): an emulator. Default: OCI's own endpoints. In API requests only when the server allows custom endpoints.",
      ),
  },
  credsSchemas: {
    /** An API signing key of a user. */
    client: {
      user: z.string().min(1).describe('User OCID.'),
      tenancy: z.string().min(1).describe('Tenancy OCID.'),
      key_file: z
        .string()
        .min(1)
        .nullish()
        .describe("Path to the user's private PEM key. Either this or `key_content` should be set."),
      key_content: z
        .string()
        .min(1)
        .nullish()
        .describe("Content of the user's private PEM key. Either this or `key_file` should be set."),
      pass_phrase: z.string().nullish().describe('Passphrase for the private PEM key if it is encrypted.'),
      fingerprint: z.string().min(1).describe("User's public key fingerprint."),
      region: z.string().min(1).describe('Name or key of any region the tenancy is subscribed to.'),
    },
    /**
     * A profile of an OCI CLI config file on the server. Refused when the server runs with
     * `DSTACK_DEFAULT_CREDS_DISABLED`.
     */
    default: {
      file: z
        .string()
        .min(1)
        .default(OCI_DEFAULT_CONFIG_FILE)
        .describe('Path to the OCI CLI-compatible config file.'),
      profile: z
        .string()
        .min(1)
        .default(OCI_DEFAULT_PROFILE)
        .describe('Profile to load from the config file.'),
    },
  },
  storedExtra: {
    /** The subnet dstack made in each region (its VCN with an internet gateway). */
    subnet_ids_per_region: z.record(z.string(), z.string()),
  },
});

/** `backends: [{type: oci, ...}]` in the server's config.yml, without creds. */
export type OciBackendConfig = z.output<typeof ociConfigModels.backendConfig>;
/** The config with creds: what users send and `validateConfig` receives. */
export type OciBackendConfigWithCreds = z.output<typeof ociConfigModels.backendConfigWithCreds>;
/** One of the backend's kinds of credentials, discriminated by `type`. */
export type OciCreds = z.output<typeof ociConfigModels.creds>;
/** What the database keeps (without creds). */
export type OciStoredConfig = z.output<typeof ociConfigModels.storedConfig>;
/** The stored config plus creds: what the Compute is built from. */
export type OciConfig = z.output<typeof ociConfigModels.config>;
