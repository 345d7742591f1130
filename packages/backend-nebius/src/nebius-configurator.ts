import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import {
  type BackendRecord,
  type Configurator,
  InvalidCredentialsError,
  refuseCustomEndpoint,
  refuseServerFileFromApi,
  ServerClientError,
  type StoredBackendRecord,
  type ValidateConfigOptions,
} from '@dstack/core';
import * as grpc from '@grpc/grpc-js';
import type { z } from 'zod';
import { NEBIUS_DEFAULT_ENDPOINT_URL, NebiusApi, NebiusApiFailure, typedNebiusError } from './nebius-api.js';
import { NEBIUS_INFINIBAND_FABRICS } from './nebius-catalog-provider.js';
import { createNebiusBackend, type NebiusCompute, validNebiusLabels } from './nebius-compute.js';
import {
  NEBIUS_BACKEND_TYPE,
  type NebiusBackendConfig,
  type NebiusBackendConfigWithCreds,
  type NebiusCreds,
  nebiusConfigModels,
} from './nebius-config.js';
import { regionToProjectId } from './nebius-projects.js';

/**
 * The schema's first complaint as a `ServerClientError` naming the field
 * (`fields: [['creds', 'api_key']]`), for callers that skipped the schema.
 */
function schemaError(error: z.ZodError): ServerClientError {
  const issue = error.issues[0];
  const path = (issue?.path ?? []).map(String);
  const field = path.length > 0 ? path : ['config'];
  return new ServerClientError(
    `Invalid nebius backend config: ${field.join('.')}: ${issue?.message ?? 'is invalid'}`,
    { fields: [field] },
  );
}

/**
 * The config checked against the schema; throws `ServerClientError` naming the
 * first bad field. The server parses configs with the plugin's schemas before
 * `validateConfig`, but other callers may not.
 */
export function parseNebiusBackendConfig(config: unknown): NebiusBackendConfigWithCreds {
  const result = nebiusConfigModels.backendConfigWithCreds.safeParse(config);
  if (!result.success) throw schemaError(result.error);
  refuseUnsupportedFields(result.data);
  return result.data;
}

/** dstack's `TAGS_MAX_NUM`. */
const MAX_TAGS = 25;

/**
 * The config's own checks, before any call: tags Nebius would refuse (dstack's label rules, at
 * most 25), fabrics that are not InfiniBand fabrics of the catalog, and a private key that is
 * given neither as content nor as a file.
 */
function refuseUnsupportedFields(config: NebiusBackendConfigWithCreds): void {
  const tags = Object.entries(config.tags ?? {});
  if (tags.length > MAX_TAGS) {
    throw new ServerClientError(`Maximum number of tags exceeded. Up to ${MAX_TAGS} tags is allowed.`, {
      fields: [['tags']],
    });
  }
  for (const [key, value] of tags) {
    if (Object.keys(validNebiusLabels({ [key]: value })).length === 0) {
      throw new ServerClientError(`Invalid resource labels: tags.${key}`, { fields: [['tags', key]] });
    }
  }
  const known = new Set(NEBIUS_INFINIBAND_FABRICS.map((fabric) => fabric.name));
  const unknown = (config.fabrics ?? []).filter((fabric) => !known.has(fabric));
  if (unknown.length > 0) {
    throw new InvalidCredentialsError([['fabrics']], {
      message: `These InfiniBand fabrics do not exist or are not known to dstack: ${unknown.sort().join(', ')}. Omit \`fabrics\` to allow all fabrics or select some of the valid options: ${[...known].sort().join(', ')}`,
    });
  }
  if (config.creds.filename != null) return;
  for (const field of ['service_account_id', 'public_key_id'] as const) {
    if (config.creds[field] == null) {
      throw new ServerClientError(
        `Invalid nebius backend config: creds.${field}: required unless creds.filename names a credentials file`,
        { fields: [['creds', field]] },
      );
    }
  }
  if (config.creds.private_key_content == null && config.creds.private_key_file == null) {
    throw new ServerClientError(
      'Invalid nebius backend config: creds.private_key_content: give the private key as private_key_content, private_key_file or filename',
      { fields: [['creds', 'private_key_content']] },
    );
  }
}

/** `creds.<field>`'s file could not be used: a `ServerClientError` naming it. */
function unreadable(
  field: 'filename' | 'private_key_file',
  problem: string,
  cause?: unknown,
): ServerClientError {
  return new ServerClientError(`Invalid nebius backend config: creds.${field}: ${problem}`, {
    fields: [['creds', field]],
    cause,
  });
}

const expandHome = (path: string) => path.replace(/^~(?=$|\/)/, homedir());

/**
 * The creds with what their files give filled in, as dstack's file config does: `filename` (a
 * Nebius credentials file: `subject-credentials` with `sub`, `kid`, `private-key`, `alg` RS256 and
 * `iss` = `sub`) sets the account, key ID and key; else `private_key_file` sets the key content.
 */
export async function resolveNebiusCreds(creds: NebiusCreds): Promise<NebiusCreds> {
  if (creds.filename != null) {
    const path = expandHome(creds.filename);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      throw unreadable('filename', `No such file ${path}`, error);
    }
    let subject: Record<string, unknown>;
    try {
      subject = (JSON.parse(text) as { 'subject-credentials': Record<string, unknown> })[
        'subject-credentials'
      ];
    } catch (error) {
      throw unreadable('filename', `Failed to parse credentials file ${path}: not JSON`, error);
    }
    const field = (name: string) => {
      const value = subject?.[name];
      if (typeof value !== 'string' || value === '') {
        throw unreadable(
          'filename',
          `Failed to parse credentials file ${path}: no subject-credentials.${name}`,
        );
      }
      return value;
    };
    if (field('alg') !== 'RS256')
      throw unreadable('filename', `${path}: only the RS256 algorithm is supported`);
    if (field('iss') !== field('sub'))
      throw unreadable('filename', `${path}: the issuer must be the subject`);
    return {
      ...creds,
      service_account_id: field('sub'),
      public_key_id: field('kid'),
      private_key_content: field('private-key'),
    };
  }
  if (creds.private_key_content != null || creds.private_key_file == null) return creds;
  const path = expandHome(creds.private_key_file);
  try {
    return { ...creds, private_key_content: await readFile(path, 'utf8') };
  } catch (error) {
    throw unreadable('private_key_file', `cannot read ${path}`, error);
  }
}

/**
 * The error for a service account Nebius refused (the token exchange or a call with its token):
 * dstack names `creds`; the message says what Nebius answered.
 */
export function invalidCredentials(_creds: NebiusCreds, cause?: unknown): InvalidCredentialsError {
  return new InvalidCredentialsError([['creds']], {
    cause,
    ...(cause instanceof Error ? { message: `Invalid credentials: creds: ${cause.message}` } : {}),
  });
}

/**
 * Turns `backends: [{type: nebius, ...}]` into a stored record and a
 * `NebiusCompute` (dstack's Configurator).
 */
export class NebiusConfigurator implements Configurator<NebiusBackendConfigWithCreds, NebiusBackendConfig> {
  readonly type = NEBIUS_BACKEND_TYPE;

  /**
   * dstack's check: the service account gets a token, the tenancy has one tenant, and the region →
   * project map can be built with the configured `regions` and `projects` (errors name those
   * fields). A refused token exchange or call (UNAUTHENTICATED, PERMISSION_DENIED, a key that
   * cannot sign) is `InvalidCredentialsError` naming `creds`; other failures propagate. From the
   * API, `creds.filename` and `creds.private_key_file` are refused (send the content) and so is a custom `endpoint_url`
   * unless allowed. The calls stop at `options.signal`.
   */
  async validateConfig(config: NebiusBackendConfigWithCreds, options: ValidateConfigOptions): Promise<void> {
    const parsed = parseNebiusBackendConfig(config);
    if (parsed.creds.filename != null) {
      refuseServerFileFromApi(
        options,
        ['creds', 'filename'],
        'creds.service_account_id, public_key_id and private_key_content',
      );
    }
    if (parsed.creds.private_key_file != null) {
      refuseServerFileFromApi(options, ['creds', 'private_key_file'], 'creds.private_key_content');
    }
    refuseCustomEndpoint(options, ['endpoint_url'], parsed.endpoint_url, {
      defaults: [NEBIUS_DEFAULT_ENDPOINT_URL],
    });
    const creds = await resolveNebiusCreds(parsed.creds);
    const api = new NebiusApi({
      serviceAccountId: creds.service_account_id ?? '',
      publicKeyId: creds.public_key_id ?? '',
      privateKey: creds.private_key_content ?? '',
      endpointUrl: parsed.endpoint_url ?? undefined,
      signal: options.signal,
    });
    try {
      await regionToProjectId(api, parsed);
    } catch (error) {
      if (
        error instanceof NebiusApiFailure &&
        (error.code === grpc.status.UNAUTHENTICATED || error.code === grpc.status.PERMISSION_DENIED)
      ) {
        throw invalidCredentials(creds, error);
      }
      throw typedNebiusError(error);
    } finally {
      api.close();
    }
  }

  /**
   * The record to store. Fill defaults here so the stored config is complete
   * (e.g. ask the provider for its regions when `regions` is absent); any cloud
   * resource created here must be created idempotently.
   */
  async createBackend(_projectName: string, config: NebiusBackendConfigWithCreds): Promise<BackendRecord> {
    const parsed = parseNebiusBackendConfig(config);
    const { config: stored } = nebiusConfigModels.splitCreds(parsed);
    return nebiusConfigModels.toRecord(stored, await resolveNebiusCreds(parsed.creds));
  }

  getBackendConfigWithCreds(record: StoredBackendRecord): NebiusBackendConfigWithCreds {
    return nebiusConfigModels.configWithCredsFromRecord(record);
  }

  getBackendConfigWithoutCreds(record: StoredBackendRecord): NebiusBackendConfig {
    return nebiusConfigModels.configWithoutCredsFromRecord(record);
  }

  /** Builds the Compute without calling the provider: clients are created on first use. */
  async getCompute(record: StoredBackendRecord): Promise<NebiusCompute> {
    return createNebiusBackend({ config: nebiusConfigModels.configFromRecord(record) });
  }
}
