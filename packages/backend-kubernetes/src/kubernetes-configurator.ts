import { readFileSync } from 'node:fs';
import {
  BackendApiCallError,
  type BackendRecord,
  type Configurator,
  InvalidCredentialsError,
  refuseServerFileFromApi,
  ServerClientError,
  type StoredBackendRecord,
  type ValidateConfigOptions,
} from '@dstack/core';
import type { z } from 'zod';
import { createKubernetesBackend, type KubernetesCompute } from './kubernetes-compute.js';
import {
  KUBERNETES_BACKEND_TYPE,
  type KubernetesBackendConfig,
  type KubernetesBackendConfigWithCreds,
  type KubernetesCreds,
  kubernetesConfigModels,
} from './kubernetes-config.js';

/** The field path users know: dstack's `kubeconfig`, where the chain has `creds`. */
function userPath(path: readonly PropertyKey[]): string[] {
  const names = path.map(String);
  return names[0] === 'creds' ? ['kubeconfig', ...names.slice(1)] : names;
}

/** The schema's first complaint as a `ServerClientError` naming the field (`kubeconfig.data`). */
function schemaError(error: z.ZodError): ServerClientError {
  const issue = error.issues[0];
  const path = userPath(issue?.path ?? []);
  const field = path.length > 0 ? path : ['config'];
  return new ServerClientError(
    `Invalid kubernetes backend config: ${field.join('.')}: ${issue?.message ?? 'is invalid'}`,
    { fields: [field] },
  );
}

/** The config checked against the schema; throws `ServerClientError` naming the first bad field. */
export function parseKubernetesBackendConfig(config: unknown): KubernetesBackendConfigWithCreds {
  const result = kubernetesConfigModels.backendConfigWithCreds.safeParse(config);
  if (!result.success) throw schemaError(result.error);
  return result.data;
}

/** dstack's `_check_config_contexts`: with `contexts`, no top-level `proxy_jump`/`namespace`, no duplicates. */
function checkContexts(config: KubernetesBackendConfig): void {
  if (config.contexts == null) return;
  if (config.proxy_jump != null) {
    throw new ServerClientError('proxy_jump must not be set if contexts is set', {
      fields: [['proxy_jump']],
    });
  }
  if (config.namespace != null) {
    throw new ServerClientError('namespace must not be set if contexts is set', { fields: [['namespace']] });
  }
  const names = config.contexts.map((context) => (typeof context === 'string' ? context : context.name));
  const duplicates = [...new Set(names.filter((name, index) => names.indexOf(name) !== index))].sort();
  if (duplicates.length > 0) {
    throw new ServerClientError(`duplicate contexts: ${duplicates.join(', ')}`, { fields: [['contexts']] });
  }
}

/** The kubeconfig's text: `data`, or the file `filename` names (config.yml only). */
function kubeconfigText(creds: KubernetesCreds): string {
  if (creds.data) return creds.data;
  if (!creds.filename) {
    throw new ServerClientError('kubeconfig: give the kubeconfig as data (its text) or filename', {
      fields: [['kubeconfig']],
    });
  }
  try {
    return readFileSync(creds.filename.replace(/^~(?=\/)/, process.env.HOME ?? '~'), 'utf8');
  } catch (error) {
    throw new ServerClientError(
      `kubeconfig.filename: cannot read ${creds.filename}: ${(error as Error).message}`,
      {
        fields: [['kubeconfig', 'filename']],
      },
    );
  }
}

/** The config with `kubeconfig.data` filled from `filename`. */
function withKubeconfigData(config: KubernetesBackendConfigWithCreds): KubernetesBackendConfigWithCreds {
  return { ...config, creds: { ...config.creds, data: kubeconfigText(config.creds) } };
}

/**
 * Turns `backends: [{type: kubernetes, kubeconfig, ...}]` into a stored record and a
 * `KubernetesCompute` (dstack's `KubernetesConfigurator`).
 */
export class KubernetesConfigurator
  implements Configurator<KubernetesBackendConfigWithCreds, KubernetesBackendConfig>
{
  readonly type = KUBERNETES_BACKEND_TYPE;

  /**
   * Checks the contexts (dstack's rules), reads the kubeconfig (`filename` only from
   * config.yml) and asks every enabled cluster's API server for a node (the backend's offers
   * need to list them; `/version` answers anonymous clients too): one that refuses the
   * credentials (401/403) or cannot be reached is an `InvalidCredentialsError` naming `kubeconfig`.
   */
  async validateConfig(
    config: KubernetesBackendConfigWithCreds,
    options: ValidateConfigOptions,
  ): Promise<void> {
    const parsed = parseKubernetesBackendConfig(config);
    checkContexts(parsed);
    if (parsed.creds.filename && !parsed.creds.data) {
      refuseServerFileFromApi(options, ['kubeconfig', 'filename'], 'kubeconfig.data');
    }
    const compute = this.#compute(withKubeconfigData(parsed));
    try {
      for (const { cluster, api } of compute.clusters) {
        try {
          await api.listNodes(options.signal, 1);
        } catch (error) {
          const status = BackendApiCallError.isInstance(error) ? error.statusCode : undefined;
          const why = status === 401 || status === 403 ? 'refused the credentials' : 'did not answer';
          throw new InvalidCredentialsError([['kubeconfig']], {
            message: `Invalid credentials: kubeconfig: the API server of context "${cluster.contextName}" ${why}: ${(error as Error).message}`,
            cause: error,
          });
        }
      }
    } finally {
      await compute.close();
    }
  }

  /** The record to store: a kubeconfig given by `filename` is stored as its `data`. */
  async createBackend(
    _projectName: string,
    config: KubernetesBackendConfigWithCreds,
  ): Promise<BackendRecord> {
    const parsed = withKubeconfigData(parseKubernetesBackendConfig(config));
    const { config: stored, auth } = kubernetesConfigModels.splitCreds(parsed);
    return kubernetesConfigModels.toRecord(stored, auth);
  }

  getBackendConfigWithCreds(record: StoredBackendRecord): KubernetesBackendConfigWithCreds {
    return kubernetesConfigModels.configWithCredsFromRecord(record);
  }

  getBackendConfigWithoutCreds(record: StoredBackendRecord): KubernetesBackendConfig {
    return kubernetesConfigModels.configWithoutCredsFromRecord(record);
  }

  /** Builds the Compute without calling the cluster. */
  async getCompute(record: StoredBackendRecord): Promise<KubernetesCompute> {
    return createKubernetesBackend({ config: kubernetesConfigModels.configFromRecord(record) });
  }

  #compute(config: KubernetesBackendConfigWithCreds): KubernetesCompute {
    return createKubernetesBackend({ config: kubernetesConfigModels.config.parse(config) });
  }
}
