import { DescribeRegionsCommand } from '@aws-sdk/client-ec2';
import {
  type BackendRecord,
  type Configurator,
  InvalidCredentialsError,
  refuseCustomEndpoint,
  refuseDefaultCreds,
  ServerClientError,
  type StoredBackendRecord,
  type ValidateConfigOptions,
} from '@dstack/core';
import type { z } from 'zod';
import { AWS_AUTH_ERROR_CODES, AwsClients, awsErrorCode } from './aws-clients.js';
import { type AwsCompute, createAwsBackend } from './aws-compute.js';
import {
  AWS_BACKEND_TYPE,
  type AwsBackendConfig,
  type AwsBackendConfigWithCreds,
  type AwsCreds,
  awsConfigModels,
} from './aws-config.js';

/** Where validation asks when the config names no region (every account has it). */
const DEFAULT_VALIDATION_REGION = 'us-east-1';

/**
 * The schema's first complaint as a `ServerClientError` naming the field
 * (`fields: [['creds', 'api_key']]`), for callers that skipped the schema.
 */
function schemaError(error: z.ZodError): ServerClientError {
  const issue = error.issues[0];
  const path = (issue?.path ?? []).map(String);
  const field = path.length > 0 ? path : ['config'];
  return new ServerClientError(
    `Invalid aws backend config: ${field.join('.')}: ${issue?.message ?? 'is invalid'}`,
    { fields: [field] },
  );
}

/**
 * The config checked against the schema; throws `ServerClientError` naming the
 * first bad field. The server parses configs with the plugin's schemas before
 * `validateConfig`, but other callers may not.
 */
export function parseAwsBackendConfig(config: unknown): AwsBackendConfigWithCreds {
  const result = awsConfigModels.backendConfigWithCreds.safeParse(config);
  if (!result.success) throw schemaError(result.error);
  if (result.data.vpc_name != null && result.data.vpc_ids != null) {
    throw new ServerClientError('Invalid aws backend config: vpc_ids: give vpc_name or vpc_ids, not both', {
      fields: [['vpc_ids']],
    });
  }
  return result.data;
}

/**
 * Refuses creds of type `default` (the server's own AWS identity) when they are not enabled for
 * this config (`DSTACK_DEFAULT_CREDS_DISABLED`, or an API request without
 * `DSTACK_SERVER_ALLOW_DEFAULT_CREDS`), naming `creds.type`.
 */
export function refuseDisabledDefaultCreds(
  creds: AwsCreds,
  options: Pick<ValidateConfigOptions, 'origin' | 'defaultCredsEnabled'>,
): void {
  refuseDefaultCreds(creds, options, 'access_key');
}

/**
 * The error for credentials the provider refused, naming the field the user
 * must fix: `creds.access_key` for an access key, `creds.type` when the server's
 * own environment has no usable credentials.
 */
export function invalidCredentials(creds: AwsCreds, cause?: unknown): InvalidCredentialsError {
  const field = creds.type === 'access_key' ? ['creds', 'access_key'] : ['creds', 'type'];
  return new InvalidCredentialsError([field], { cause });
}

/**
 * Turns `backends: [{type: aws, ...}]` into a stored record and a
 * `AwsCompute` (dstack's Configurator).
 */
export class AwsConfigurator implements Configurator<AwsBackendConfigWithCreds, AwsBackendConfig> {
  readonly type = AWS_BACKEND_TYPE;

  /**
   * Checks the config against AWS with one read-only call, EC2 DescribeRegions in the first
   * configured region (us-east-1 when none): keys AWS refuses are `InvalidCredentialsError`
   * naming `creds.access_key` (`creds.type` for the default chain), and a configured region
   * the account does not have is an error naming `regions[i]`. An `endpoint_url` is refused
   * unless `options.customEndpointsAllowed`, before any call. Other failures (the endpoint does
   * not answer, answers something else than AWS) propagate; the call stops at `options.signal`.
   */
  async validateConfig(config: AwsBackendConfigWithCreds, options: ValidateConfigOptions): Promise<void> {
    const parsed = parseAwsBackendConfig(config);
    refuseDisabledDefaultCreds(parsed.creds, options);
    refuseCustomEndpoint(options, ['endpoint_url'], parsed.endpoint_url);
    const clients = new AwsClients({ creds: parsed.creds, endpointUrl: parsed.endpoint_url, maxAttempts: 2 });
    let known: Set<string>;
    try {
      const answer = await clients
        .ec2(parsed.regions?.[0] ?? DEFAULT_VALIDATION_REGION)
        .send(new DescribeRegionsCommand({ AllRegions: true }), { abortSignal: options.signal });
      known = new Set(
        (answer.Regions ?? []).flatMap((region) => (region.RegionName ? [region.RegionName] : [])),
      );
    } catch (error) {
      const code = awsErrorCode(error);
      if (code !== undefined && AWS_AUTH_ERROR_CODES.has(code)) throw invalidCredentials(parsed.creds, error);
      throw error;
    } finally {
      clients.destroy();
    }
    parsed.regions?.forEach((region, index) => {
      if (!known.has(region)) {
        throw new ServerClientError(
          `Invalid aws backend config: regions[${index}]: unknown region ${JSON.stringify(region)}; the account has ${[...known].sort().join(', ')}`,
          { fields: [['regions', String(index)]] },
        );
      }
    });
  }

  /**
   * The record to store. Fill defaults here so the stored config is complete
   * (e.g. ask the provider for its regions when `regions` is absent); any cloud
   * resource created here must be created idempotently.
   */
  async createBackend(_projectName: string, config: AwsBackendConfigWithCreds): Promise<BackendRecord> {
    const { config: stored, auth } = awsConfigModels.splitCreds(parseAwsBackendConfig(config));
    return awsConfigModels.toRecord(stored, auth);
  }

  getBackendConfigWithCreds(record: StoredBackendRecord): AwsBackendConfigWithCreds {
    return awsConfigModels.configWithCredsFromRecord(record);
  }

  getBackendConfigWithoutCreds(record: StoredBackendRecord): AwsBackendConfig {
    return awsConfigModels.configWithoutCredsFromRecord(record);
  }

  /** Builds the Compute without calling the provider: clients are created on first use. */
  async getCompute(record: StoredBackendRecord): Promise<AwsCompute> {
    return createAwsBackend({ config: awsConfigModels.configFromRecord(record) });
  }
}
