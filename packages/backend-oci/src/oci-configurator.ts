import {
  type BackendRecord,
  type Configurator,
  InvalidCredentialsError,
  refuseCustomEndpoint,
  refuseDefaultCreds,
  refuseServerFileFromApi,
  ServerClientError,
  type StoredBackendRecord,
  type ValidateConfigOptions,
} from '@dstack/core';
import type { z } from 'zod';
import { identityClient, ociAuthenticationProvider, tenancyOf } from './oci-clients.js';
import { createOciBackend, type OciCompute } from './oci-compute.js';
import {
  OCI_BACKEND_TYPE,
  type OciBackendConfig,
  type OciBackendConfigWithCreds,
  type OciCreds,
  ociConfigModels,
} from './oci-config.js';

function invalidConfigField(field: readonly string[], reason: string): ServerClientError {
  return new ServerClientError(`Invalid oci backend config: ${field.join('.')}: ${reason}`, {
    fields: [[...field]],
  });
}

function schemaError(error: z.ZodError): ServerClientError {
  const issue = error.issues[0];
  const path = (issue?.path ?? []).map(String);
  return invalidConfigField(path.length > 0 ? path : ['config'], issue?.message ?? 'is invalid');
}

/**
 * The config checked against the schema and dstack's rule that a client key is given either as
 * `key_file` or as `key_content`; throws `ServerClientError` naming the first bad field.
 */
export function parseOciBackendConfig(config: unknown): OciBackendConfigWithCreds {
  const result = ociConfigModels.backendConfigWithCreds.safeParse(config);
  if (!result.success) throw schemaError(result.error);
  const { creds } = result.data;
  if (creds.type === 'client' && (creds.key_file == null) === (creds.key_content == null)) {
    throw invalidConfigField(['creds', 'key_content'], 'give exactly one of key_file and key_content');
  }
  return result.data;
}

/** Refuses creds of type `default` when they are not enabled for this config, naming `creds.type`. */
export function refuseDisabledDefaultCreds(
  creds: OciCreds,
  options: Pick<ValidateConfigOptions, 'origin' | 'defaultCredsEnabled'>,
): void {
  refuseDefaultCreds(creds, options, 'client');
}

/** The error for credentials OCI refused: dstack names the whole `creds`. */
export function invalidCredentials(_creds: OciCreds, cause?: unknown): InvalidCredentialsError {
  return new InvalidCredentialsError([['creds']], { cause });
}

/** The names of the regions the tenancy is subscribed to, asked with the creds (Identity). */
export async function subscribedRegions(config: OciBackendConfigWithCreds): Promise<string[]> {
  try {
    const tenancyId = await tenancyOf(config.creds, ociAuthenticationProvider(config.creds));
    const answer = await identityClient(config).listRegionSubscriptions({ tenancyId });
    return answer.items.map((region) => region.regionName);
  } catch (error) {
    const status = (error as { statusCode?: unknown }).statusCode;
    // 401: the signature did not verify; 404: the tenancy is not the key's. Anything else is not the creds.
    if (status === 401 || status === 404) throw invalidCredentials(config.creds, error);
    throw error;
  }
}

/**
 * Turns `backends: [{type: oci, ...}]` into a stored record and an `OciCompute`. Creating the
 * compartment and the regions' networks, as dstack does, is not done yet: `createBackend`
 * stores what the user gave.
 */
export class OciConfigurator implements Configurator<OciBackendConfigWithCreds, OciBackendConfig> {
  readonly type = OCI_BACKEND_TYPE;

  /**
   * Refuses what a config from the API may not make the server do (read a key or config file on
   * the server, call another endpoint), then checks the creds by listing the tenancy's region
   * subscriptions, as dstack does; every region named must be one of them.
   */
  async validateConfig(config: OciBackendConfigWithCreds, options: ValidateConfigOptions): Promise<void> {
    const parsed = parseOciBackendConfig(config);
    refuseDisabledDefaultCreds(parsed.creds, options);
    if (parsed.creds.type === 'default') {
      refuseServerFileFromApi(options, ['creds', 'file'], 'creds of type client');
    } else if (parsed.creds.key_file != null) {
      refuseServerFileFromApi(options, ['creds', 'key_file'], 'creds.key_content');
    }
    refuseCustomEndpoint(options, ['endpoint_url'], parsed.endpoint_url);
    const subscribed = await subscribedRegions(parsed);
    const unknown = (parsed.regions ?? []).filter((region) => !subscribed.includes(region));
    if (unknown.length > 0) {
      throw invalidConfigField(['regions'], `the tenancy is not subscribed to ${unknown.join(', ')}`);
    }
  }

  async createBackend(_projectName: string, config: OciBackendConfigWithCreds): Promise<BackendRecord> {
    const { config: stored, auth } = ociConfigModels.splitCreds(parseOciBackendConfig(config));
    return ociConfigModels.toRecord(stored, auth);
  }

  getBackendConfigWithCreds(record: StoredBackendRecord): OciBackendConfigWithCreds {
    return ociConfigModels.configWithCredsFromRecord(record);
  }

  getBackendConfigWithoutCreds(record: StoredBackendRecord): OciBackendConfig {
    return ociConfigModels.configWithoutCredsFromRecord(record);
  }

  /** Builds the Compute without calling OCI. */
  async getCompute(record: StoredBackendRecord): Promise<OciCompute> {
    return createOciBackend({ config: ociConfigModels.configFromRecord(record) });
  }
}
