/**
 * The AWS SDK v3 clients of one backend config: its creds (an access key, or the SDK's default
 * chain), one region per client, and `endpoint_url` when set. Without `endpoint_url` the SDK's
 * own endpoint settings apply (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_EC2, shared config), so the
 * real SDK, signing and retries run unchanged against an emulator.
 */
import { EC2Client } from '@aws-sdk/client-ec2';
import { ServiceQuotasClient } from '@aws-sdk/client-service-quotas';
import { BackendAuthenticationError, BackendRateLimitError } from '@dstack/core';
import type { AwsCreds } from './aws-config.js';

export interface AwsClientSettings {
  creds: AwsCreds;
  endpointUrl?: string | null;
  /** SDK attempts per call (first try + retries). Default the SDK's (3). */
  maxAttempts?: number;
}

function clientConfig(settings: AwsClientSettings, region: string) {
  return {
    region,
    ...(settings.creds.type === 'access_key'
      ? {
          credentials: { accessKeyId: settings.creds.access_key, secretAccessKey: settings.creds.secret_key },
        }
      : {}),
    ...(settings.endpointUrl ? { endpoint: settings.endpointUrl } : {}),
    ...(settings.maxAttempts !== undefined ? { maxAttempts: settings.maxAttempts } : {}),
  };
}

/** One EC2 and one Service Quotas client per region, made on first use. */
export class AwsClients {
  readonly #settings: AwsClientSettings;
  readonly #ec2 = new Map<string, EC2Client>();
  readonly #quotas = new Map<string, ServiceQuotasClient>();
  readonly #launch = new Map<string, EC2Client>();

  constructor(settings: AwsClientSettings) {
    this.#settings = settings;
  }

  ec2(region: string): EC2Client {
    let client = this.#ec2.get(region);
    if (!client) {
      client = new EC2Client(clientConfig(this.#settings, region));
      this.#ec2.set(region, client);
    }
    return client;
  }

  /**
   * An EC2 client that does not retry, for RunInstances: a capacity error (a 500 the SDK would
   * repeat twice) must move on to the next zone at once; the launch retries throttling itself.
   */
  ec2WithoutRetries(region: string): EC2Client {
    let client = this.#launch.get(region);
    if (!client) {
      client = new EC2Client({ ...clientConfig(this.#settings, region), maxAttempts: 1 });
      this.#launch.set(region, client);
    }
    return client;
  }

  serviceQuotas(region: string): ServiceQuotasClient {
    let client = this.#quotas.get(region);
    if (!client) {
      client = new ServiceQuotasClient(clientConfig(this.#settings, region));
      this.#quotas.set(region, client);
    }
    return client;
  }

  destroy(): void {
    for (const client of [...this.#ec2.values(), ...this.#launch.values(), ...this.#quotas.values()]) {
      client.destroy();
    }
    this.#ec2.clear();
    this.#launch.clear();
    this.#quotas.clear();
  }
}

/** The error code the SDK parsed from the provider's answer (`InsufficientInstanceCapacity`, …). */
export function awsErrorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const record = error as { name?: unknown; Code?: unknown; code?: unknown };
  for (const value of [record.Code, record.code, record.name]) {
    if (typeof value === 'string' && value !== 'Error') return value;
  }
  return undefined;
}

/** Codes that mean "the keys are wrong", from EC2 (AuthFailure…) and the JSON services. */
export const AWS_AUTH_ERROR_CODES: ReadonlySet<string> = new Set([
  'AuthFailure',
  'SignatureDoesNotMatch',
  'InvalidClientTokenId',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'MissingAuthenticationToken',
  'IncompleteSignature',
  'CredentialsProviderError',
]);

/** Codes of a call the keys may make but the account's IAM policy denies. */
const AWS_DENIED_ERROR_CODES: ReadonlySet<string> = new Set([
  'UnauthorizedOperation',
  'AccessDenied',
  'AccessDeniedException',
]);

/** Codes of throttling, from EC2 and the JSON services. */
export const AWS_THROTTLING_ERROR_CODES: ReadonlySet<string> = new Set([
  'RequestLimitExceeded',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
]);

/**
 * `error` as core's typed error when its code says the keys were refused or the call denied
 * (`BackendAuthenticationError`) or the call throttled (`BackendRateLimitError`), so the server
 * can tell these from a capacity shortage; any other error as it is.
 */
export function typedAwsError(error: unknown): unknown {
  const code = awsErrorCode(error);
  if (code === undefined) return error;
  const message = `${code}: ${error instanceof Error ? error.message : String(error)}`;
  if (AWS_AUTH_ERROR_CODES.has(code) || AWS_DENIED_ERROR_CODES.has(code)) {
    return new BackendAuthenticationError(message, { cause: error });
  }
  if (AWS_THROTTLING_ERROR_CODES.has(code)) return new BackendRateLimitError(message, { cause: error });
  return error;
}
