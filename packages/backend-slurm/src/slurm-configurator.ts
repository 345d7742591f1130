import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import {
  type BackendRecord,
  type Configurator,
  InvalidCredentialsError,
  refuseServerFileFromApi,
  ServerClientError,
  type StoredBackendRecord,
  type ValidateConfigOptions,
} from '@dstack/core';
import type { z } from 'zod';
import { createSlurmBackend, type SlurmCompute } from './slurm-compute.js';
import {
  SLURM_BACKEND_TYPE,
  type SlurmBackendConfig,
  type SlurmBackendConfigWithCreds,
  type SlurmClusterConfigWithCreds,
  type SlurmConfig,
  slurmConfigModels,
} from './slurm-config.js';
import { SlurmLoginError, withLoginSession } from './slurm-login.js';
import { gpuModelsByPartition } from './slurm-offers.js';

/** How long `validateConfig` waits for each login node. */
const VALIDATE_LOGIN_TIMEOUT_MS = 10_000;

function invalidField(
  field: readonly (string | number)[],
  problem: string,
  cause?: unknown,
): ServerClientError {
  const path = field.map(String);
  return new ServerClientError(`Invalid slurm backend config: ${path.join('.')}: ${problem}`, {
    fields: [path],
    cause,
  });
}

function schemaError(error: z.ZodError): ServerClientError {
  const issue = error.issues[0];
  return invalidField(
    issue?.path.length ? (issue.path as (string | number)[]) : ['config'],
    issue?.message ?? 'is invalid',
  );
}

/** The config checked against the schema; throws `ServerClientError` naming the first bad field. */
export function parseSlurmBackendConfig(config: unknown): SlurmBackendConfigWithCreds {
  const result = slurmConfigModels.backendConfigWithCreds.safeParse(config);
  if (!result.success) throw schemaError(result.error);
  return result.data;
}

/** The cluster's key: `content`, else the file `path` names (config.yml only). */
function privateKeyOf(cluster: SlurmClusterConfigWithCreds, index: number): string {
  const key = cluster.private_key;
  if (key.content != null) return key.content;
  if (key.path == null) {
    throw invalidField(['clusters', index, 'private_key'], 'give the private key as content or path');
  }
  try {
    // `~/…` as dstack reads it (expanduser).
    return readFileSync(key.path.replace(/^~(?=$|\/)/, homedir()), 'utf8');
  } catch (error) {
    throw invalidField(
      ['clusters', index, 'private_key', 'path'],
      `cannot read ${key.path}: ${(error as Error).message}`,
      error,
    );
  }
}

/** The config with every key given by content, as the Compute and the database take it. */
function withKeyContents(config: SlurmBackendConfigWithCreds): SlurmConfig {
  return slurmConfigModels.config.parse({
    ...config,
    clusters: config.clusters.map((cluster, index) => ({
      ...cluster,
      private_key: { content: privateKeyOf(cluster, index) },
    })),
  });
}

/**
 * Turns `backends: [{type: slurm, clusters: [...]}]` into a stored record and a `SlurmCompute`
 * (dstack's `SlurmConfigurator`).
 */
export class SlurmConfigurator implements Configurator<SlurmBackendConfigWithCreds, SlurmBackendConfig> {
  readonly type = SLURM_BACKEND_TYPE;

  /**
   * Checks each cluster as dstack does: its GPU models are known, and its login node lets the
   * user in with the key and answers `scontrol ping`. A key the login node refuses is
   * `InvalidCredentialsError` naming `clusters.<i>.private_key`; a login node that cannot be
   * reached names `clusters.<i>.hostname`. From the API, `private_key.path` is refused.
   */
  async validateConfig(config: SlurmBackendConfigWithCreds, options: ValidateConfigOptions): Promise<void> {
    const parsed = parseSlurmBackendConfig(config);
    parsed.clusters.forEach((cluster, index) => {
      if (cluster.private_key.path != null && cluster.private_key.content == null) {
        refuseServerFileFromApi(
          options,
          ['clusters', String(index), 'private_key', 'path'],
          `clusters[${index}].private_key.content`,
        );
      }
      try {
        gpuModelsByPartition(cluster);
      } catch (error) {
        throw invalidField(['clusters', index, 'gpu_partitions'], (error as Error).message, error);
      }
    });
    const withKeys = withKeyContents(parsed);
    await Promise.all(
      withKeys.clusters.map(async (cluster, index) => {
        const login = {
          hostname: cluster.hostname,
          port: cluster.port ?? 22,
          user: cluster.user,
          privateKey: cluster.private_key.content,
        };
        try {
          await withLoginSession(
            login,
            (session) => session.run('scontrol ping', 'scontrol ping'),
            VALIDATE_LOGIN_TIMEOUT_MS,
          );
        } catch (error) {
          if (error instanceof SlurmLoginError && error.reason === 'refused') {
            throw new InvalidCredentialsError([['clusters', String(index), 'private_key']], {
              message: `cluster ${cluster.name}: ${error.message}`,
              cause: error,
            });
          }
          const field = error instanceof SlurmLoginError ? 'hostname' : 'name';
          throw invalidField(
            ['clusters', index, field],
            `cluster ${cluster.name}: ${(error as Error).message}`,
            error,
          );
        }
      }),
    );
  }

  /** The record to store: keys given by `path` are stored as their content. */
  async createBackend(_projectName: string, config: SlurmBackendConfigWithCreds): Promise<BackendRecord> {
    return slurmConfigModels.toRecord(withKeyContents(parseSlurmBackendConfig(config)));
  }

  getBackendConfigWithCreds(record: StoredBackendRecord): SlurmBackendConfigWithCreds {
    return slurmConfigModels.configFromRecord(record) as SlurmBackendConfigWithCreds;
  }

  getBackendConfigWithoutCreds(record: StoredBackendRecord): SlurmBackendConfig {
    const stored = slurmConfigModels.storedConfig.parse(JSON.parse(record.config));
    return slurmConfigModels.backendConfig.parse(stored);
  }

  /** Builds the Compute without calling a cluster: logins happen on first use. */
  async getCompute(record: StoredBackendRecord): Promise<SlurmCompute> {
    return createSlurmBackend({ config: slurmConfigModels.configFromRecord(record) });
  }
}
