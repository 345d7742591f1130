import { defineBackendConfigModels } from '@dstack/core';
import { z } from 'zod';

/** The backend type: `type: aws` in the server's config.yml and the key of the discovery map. */
export const AWS_BACKEND_TYPE = 'aws';

/**
 * dstack's chain of config models for this backend:
 * `AwsBackendConfig` (the user's fields) → `AwsBackendConfigWithCreds`
 * (plus `creds`; what config.yml and the API carry) → `AwsStoredConfig`
 * (what the database keeps; creds are stored apart, encrypted) → `AwsConfig`
 * (stored config plus creds; what the Compute is built from).
 *
 * Add the provider's settings to `configFields` and its kinds of credentials to
 * `credsSchemas`, then document each in README.md. User-facing schemas are
 * strict: a misspelt field is an error naming it, as in dstack.
 */
/** A custom AMI: its name (newest `available` image with it), owner and SSH user. */
const awsOsImageSchema = z
  .object({
    name: z.string().min(1).describe('The AMI name (an exact name or a DescribeImages glob).'),
    owner: z.string().min(1).nullish().describe('The owning account id or alias. Default: self.'),
    user: z.string().min(1).describe('The SSH user of the image (its cloud-init default user).'),
  })
  .strict();

export const awsConfigModels = defineBackendConfigModels({
  type: AWS_BACKEND_TYPE,
  configFields: {
    /** Default (absent or null): every region of the catalog's AWS rows. */
    regions: z
      .array(z.string().min(1))
      .min(1)
      .nullish()
      .describe(
        'AWS regions offers and instances are taken from. Absent or null: every region the catalog has.',
      ),
    /** Default: none (the default VPC of each region, when `default_vpcs` allows it). */
    vpc_name: z
      .string()
      .min(1)
      .nullish()
      .describe('The `Name` tag of the VPC to launch in, in every region. Mutually exclusive with vpc_ids.'),
    /** Default: none. */
    vpc_ids: z
      .record(z.string().min(1), z.string().min(1))
      .nullish()
      .describe('The VPC to launch in, per region (`region: vpc-id`). Mutually exclusive with vpc_name.'),
    /** Default: true when neither vpc_name nor vpc_ids is set. */
    default_vpcs: z
      .boolean()
      .nullish()
      .describe(
        'Whether to use the default VPC in regions vpc_ids does not list. Default: true when no VPC is named.',
      ),
    /** Default true. */
    public_ips: z
      .boolean()
      .nullish()
      .describe('Whether instances get public IPs (the server then reaches them there). Default true.'),
    /** Default: none. */
    iam_instance_profile: z
      .string()
      .min(1)
      .nullish()
      .describe('The IAM instance profile given to instances.'),
    /** Default: none. */
    tags: z
      .record(z.string().min(1), z.string())
      .nullish()
      .describe("Tags put on every resource the backend creates; dstack's own tags win on conflict."),
    /** Default: dstack's (the Deep Learning Base AMI for GPU instances, dstack's `dstack-{version}` otherwise). */
    os_images: z
      .object({
        cpu: awsOsImageSchema.nullish(),
        nvidia: awsOsImageSchema.nullish(),
      })
      .strict()
      .nullish()
      .describe(
        'Custom AMIs, found by name in every region: `cpu` for CPU instances, `nvidia` for GPU ones.',
      ),
    /** Default: none (the SDK's endpoints, including AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_EC2). */
    endpoint_url: z
      .string()
      .url()
      .nullish()
      .describe(
        'One endpoint for EC2, STS and Service Quotas (an emulator). Default: AWS, or AWS_ENDPOINT_URL*. In API requests only when the server allows custom endpoints.',
      ),
  },
  credsSchemas: {
    /** An IAM user's access key. */
    access_key: {
      access_key: z.string().min(1).describe('The access key id.'),
      secret_key: z.string().min(1).describe('The secret access key.'),
    },
    /**
     * The SDK's default chain on the server (environment, shared config, instance role).
     * Refused when the server runs with `DSTACK_DEFAULT_CREDS_DISABLED`, and in API requests
     * unless `DSTACK_SERVER_ALLOW_DEFAULT_CREDS`.
     */
    default: {},
  },
});

/** `backends: [{type: aws, ...}]` in the server's config.yml, without creds. */
export type AwsBackendConfig = z.output<typeof awsConfigModels.backendConfig>;
/** The config with creds: what users send and `validateConfig` receives. */
export type AwsBackendConfigWithCreds = z.output<typeof awsConfigModels.backendConfigWithCreds>;
/** One of the backend's kinds of credentials, discriminated by `type`. */
export type AwsCreds = z.output<typeof awsConfigModels.creds>;
/** What the database keeps (without creds). */
export type AwsStoredConfig = z.output<typeof awsConfigModels.storedConfig>;
/** The stored config plus creds: what the Compute is built from. */
export type AwsConfig = z.output<typeof awsConfigModels.config>;
