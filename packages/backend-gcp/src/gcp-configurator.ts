import {
  type BackendRecord,
  type Configurator,
  InvalidCredentialsError,
  refuseCustomEndpoint,
  refuseDefaultCreds,
  refuseServerFileFromApi,
  type ServerClientError,
  type StoredBackendRecord,
  type ValidateConfigOptions,
} from '@dstack/core';
import type { z } from 'zod';
import { GcpComputeApi } from './gcp-api.js';
import { GOOGLE_TOKEN_URL } from './gcp-auth.js';
import { createGcpBackend, type GcpCompute } from './gcp-compute.js';
import {
  GCP_BACKEND_TYPE,
  GCP_COMPUTE_URL,
  type GcpBackendConfig,
  type GcpBackendConfigWithCreds,
  type GcpCreds,
  gcpConfigModels,
  invalidConfigField,
} from './gcp-config.js';
import {
  credsAccessTokenSource,
  keyField,
  serviceAccountKeyOfCreds,
  serviceAccountKeyText,
} from './gcp-credentials.js';
import { GcpApiCallError, GcpTokenError, GcpTokenRefusedByEndpointError } from './gcp-rest.js';

/** GCP label keys and values: lowercase letters, digits, `_` and `-`, at most 63; keys start with a letter. */
const LABEL_KEY = /^[a-z][a-z0-9_-]{0,62}$/;
const LABEL_VALUE = /^[a-z0-9_-]{0,63}$/;

/**
 * The schema's first complaint as a `ServerClientError` naming the field
 * (`fields: [['creds', 'data']]`), for callers that skipped the schema.
 */
function schemaError(error: z.ZodError): ServerClientError {
  const issue = error.issues[0];
  const path = (issue?.path ?? []).map(String);
  return invalidConfigField(path.length > 0 ? path : ['config'], issue?.message ?? 'is invalid');
}

/**
 * dstack's fields this backend cannot honour yet, refused by name rather than ignored: a
 * Shared VPC (`vpc_project_id`), extra VPCs for multi-NIC instances (`extra_vpcs`) and the
 * Cloud NAT check (`nat_check`, dstack's default when `public_ips` is false).
 */
function refuseUnsupportedFields(config: GcpBackendConfigWithCreds): void {
  if (config.vpc_project_id != null) {
    throw invalidConfigField(
      ['vpc_project_id'],
      'Shared VPC is not supported by this backend yet; remove vpc_project_id',
    );
  }
  if (config.extra_vpcs != null && config.extra_vpcs.length > 0) {
    throw invalidConfigField(
      ['extra_vpcs'],
      'extra VPCs (multi-NIC instances) are not supported by this backend yet',
    );
  }
  if (config.nat_check === true) {
    throw invalidConfigField(
      ['nat_check'],
      'the Cloud NAT check is not supported by this backend yet; set nat_check: false',
    );
  }
  if (config.public_ips === false && config.nat_check == null) {
    throw invalidConfigField(
      ['nat_check'],
      'with public_ips: false dstack checks for Cloud NAT, which this backend cannot do yet; set nat_check: false to go without the check',
    );
  }
  for (const [key, value] of Object.entries(config.tags ?? {})) {
    if (!LABEL_KEY.test(key) || !LABEL_VALUE.test(value)) {
      throw invalidConfigField(
        ['tags', key],
        'GCP labels take lowercase letters, digits, _ and - (at most 63), and keys start with a letter',
      );
    }
  }
  if (config.creds.type === 'service_account' && config.creds.data == null && config.creds.filename == null) {
    throw invalidConfigField(
      ['creds', 'data'],
      'give the service-account key as data (its JSON text) or filename',
    );
  }
}

/**
 * The config checked against the schema and the fields this backend refuses; throws
 * `ServerClientError` naming the first bad field. The server parses configs with the plugin's
 * schemas before `validateConfig`, but other callers may not.
 */
export function parseGcpBackendConfig(config: unknown): GcpBackendConfigWithCreds {
  const result = gcpConfigModels.backendConfigWithCreds.safeParse(config);
  if (!result.success) throw schemaError(result.error);
  refuseUnsupportedFields(result.data);
  return result.data;
}

/**
 * Refuses creds of type `default` (the server's own Google identity) when they are not enabled
 * for this config (`DSTACK_DEFAULT_CREDS_DISABLED`, or an API request without
 * `DSTACK_SERVER_ALLOW_DEFAULT_CREDS`), naming `creds.type`.
 */
export function refuseDisabledDefaultCreds(
  creds: GcpCreds,
  options: Pick<ValidateConfigOptions, 'origin' | 'defaultCredsEnabled'>,
): void {
  refuseDefaultCreds(creds, options, 'service_account');
}

/**
 * Refuses what a config from the API may not make the server do, before anything is read or
 * called: read a key file on the server (`creds.filename`), or talk to another Compute endpoint
 * or token endpoint than Google's (`endpoint_url`, the key's `token_uri`) unless allowed.
 */
function refuseUntrustedReach(config: GcpBackendConfigWithCreds, options: ValidateConfigOptions): void {
  refuseDisabledDefaultCreds(config.creds, options);
  if (config.creds.type === 'service_account' && config.creds.filename != null) {
    refuseServerFileFromApi(options, ['creds', 'filename'], 'creds.data');
  }
  refuseCustomEndpoint(options, ['endpoint_url'], config.endpoint_url, { defaults: [GCP_COMPUTE_URL] });
}

/**
 * The error for credentials Google refused, naming the field the user must fix: the key
 * (`creds.data`, or `creds.filename`), or `creds.type` when the server's own environment has
 * no usable credentials.
 */
export function invalidCredentials(creds: GcpCreds, cause?: unknown): InvalidCredentialsError {
  const field = creds.type === 'service_account' ? keyField(creds) : ['creds', 'type'];
  return new InvalidCredentialsError([field], { cause });
}

/**
 * Turns `backends: [{type: gcp, ...}]` into a stored record and a
 * `GcpCompute` (dstack's Configurator).
 */
export class GcpConfigurator implements Configurator<GcpBackendConfigWithCreds, GcpBackendConfig> {
  readonly type = GCP_BACKEND_TYPE;

  /**
   * Checks the config against Google with read-only calls: the key is parsed (an error naming
   * `creds.data`/`creds.filename`), the token exchange must succeed (the token endpoint's OAuth
   * refusal is `InvalidCredentialsError` on the key; no answer propagates), the project must be
   * readable with it (a key of another project, or a missing permission, is an error naming
   * `project_id`), and each configured region must exist there (`regions[i]`). From the API, `creds.filename`, `endpoint_url` and a
   * key's `token_uri` other than Google's are refused first (see `refuseUntrustedReach`). Other
   * failures propagate; Compute calls stop at `options.signal`.
   */
  async validateConfig(config: GcpBackendConfigWithCreds, options: ValidateConfigOptions): Promise<void> {
    const parsed = parseGcpBackendConfig(config);
    refuseUntrustedReach(parsed, options);
    if (parsed.creds.type === 'service_account') {
      const key = serviceAccountKeyOfCreds(parsed.creds);
      refuseCustomEndpoint(options, keyField(parsed.creds), key.token_uri, {
        defaults: [GOOGLE_TOKEN_URL],
        what: `${keyField(parsed.creds).join('.')}: the key's token_uri`,
      });
    }
    const api = new GcpComputeApi({
      baseUrl: parsed.endpoint_url ?? GCP_COMPUTE_URL,
      project: parsed.project_id,
      tokens: credsAccessTokenSource(parsed.creds),
      maxAttempts: 2,
      signal: options.signal,
    });
    try {
      await api.get('');
    } catch (error) {
      // A token endpoint that did not answer as OAuth says nothing about the key: with a custom
      // token_uri it would tell the user what answered there. Default creds keep the old
      // mapping: their failure is the server's environment having none.
      if (
        error instanceof GcpTokenRefusedByEndpointError ||
        (error instanceof GcpTokenError && parsed.creds.type === 'default')
      )
        throw invalidCredentials(parsed.creds, error);
      if (error instanceof GcpApiCallError && error.statusCode === 401)
        throw invalidCredentials(parsed.creds, error);
      if (error instanceof GcpApiCallError && (error.statusCode === 403 || error.statusCode === 404)) {
        throw invalidConfigField(
          ['project_id'],
          // Not Google's words: with a custom endpoint they would be whatever answered there.
          `the credentials cannot use project ${JSON.stringify(parsed.project_id)}; check the project id and that the service account has the Compute Admin role there`,
        );
      }
      throw error;
    }
    if (!parsed.regions) return;
    const known = new Set((await api.list<{ name: string }>('regions')).map((region) => region.name));
    parsed.regions.forEach((region, index) => {
      if (!known.has(region)) {
        throw invalidConfigField(
          ['regions', String(index)],
          `unknown region ${JSON.stringify(region)}; the project has ${[...known].sort().join(', ')}`,
        );
      }
    });
  }

  /**
   * The record to store: a key given by `filename` is stored as its `data`, so the server
   * does not depend on the file afterwards. The file is read only for a config `validateConfig`
   * accepted, which refuses `filename` in API requests.
   */
  async createBackend(_projectName: string, config: GcpBackendConfigWithCreds): Promise<BackendRecord> {
    const parsed = parseGcpBackendConfig(config);
    const { config: stored, auth } = gcpConfigModels.splitCreds(parsed);
    const creds =
      parsed.creds.type === 'service_account'
        ? { ...parsed.creds, data: serviceAccountKeyText(parsed.creds) }
        : (auth as GcpCreds);
    return gcpConfigModels.toRecord(stored, creds);
  }

  getBackendConfigWithCreds(record: StoredBackendRecord): GcpBackendConfigWithCreds {
    return gcpConfigModels.configWithCredsFromRecord(record);
  }

  getBackendConfigWithoutCreds(record: StoredBackendRecord): GcpBackendConfig {
    return gcpConfigModels.configWithoutCredsFromRecord(record);
  }

  /** Builds the Compute without calling Google: tokens are fetched on first use. */
  async getCompute(record: StoredBackendRecord): Promise<GcpCompute> {
    return createGcpBackend({ config: gcpConfigModels.configFromRecord(record) });
  }
}
