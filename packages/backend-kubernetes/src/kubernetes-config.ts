import { defineBackendConfigModels } from '@dstack/core';
import { z } from 'zod';

/** The backend type: `type: kubernetes` in the server's config.yml and the key of the discovery map. */
export const KUBERNETES_BACKEND_TYPE = 'kubernetes';

/** dstack's `KubernetesProxyJumpConfig`: where the server reaches the per-project jump pod. */
const proxyJumpSchema = z.strictObject({
  hostname: z
    .string()
    .min(1)
    .nullish()
    .describe('The external IP address or hostname of any node. Absent: the jump pod node’s ExternalIP.'),
  port: z
    .number()
    .int()
    .min(1)
    .max(65535)
    .nullish()
    .describe('The NodePort of the jump pod’s service. Absent: the one the cluster assigns.'),
});

/** One of `contexts`: a context name, or a name with its own `proxy_jump`. */
const contextSchema = z.union([
  z.string().min(1),
  z.strictObject({
    name: z.string().min(1).describe('The name of the context'),
    proxy_jump: proxyJumpSchema.nullish().describe('The SSH proxy jump configuration'),
  }),
]);

/**
 * dstack's chain of config models for Kubernetes. dstack's credentials are the top-level
 * `kubeconfig: {filename | data}`; the chain keeps credentials under `creds`, so users write
 * `kubeconfig` (see `withKubeconfigCreds`) and it travels as `creds: {type: kubeconfig, ...}`.
 */
const models = defineBackendConfigModels({
  type: KUBERNETES_BACKEND_TYPE,
  configFields: {
    contexts: z
      .array(contextSchema)
      .min(1)
      .nullish()
      .describe(
        'Enabled contexts (clusters); each context name becomes a region. If set, top-level proxy_jump and namespace must not be set; namespace is the kubeconfig context’s. Absent: the kubeconfig’s current-context, region "".',
      ),
    proxy_jump: proxyJumpSchema
      .nullish()
      .describe('Only without contexts: the SSH proxy jump configuration.'),
    namespace: z
      .string()
      .min(1)
      .nullish()
      .describe('Only without contexts: the namespace for dstack’s resources. Default "default".'),
  },
  credsSchemas: {
    kubeconfig: {
      filename: z
        .string()
        .optional()
        .describe('The path to the kubeconfig file (config.yml only); read into data when stored.'),
      data: z.string().nullish().describe('The contents of the kubeconfig file.'),
    },
  },
});

/**
 * `kubeconfig: {...}` as written by users (dstack's field) moved to `creds: {type: kubeconfig,
 * ...}`, the chain's place for credentials; a config that already has `creds` is left alone.
 */
function withKubeconfigCreds(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const { kubeconfig, ...rest } = value as Record<string, unknown>;
  if (kubeconfig === undefined || 'creds' in rest) return value;
  if (typeof kubeconfig !== 'object' || kubeconfig === null || Array.isArray(kubeconfig)) {
    return { ...rest, creds: kubeconfig };
  }
  return { ...rest, creds: { ...(kubeconfig as Record<string, unknown>), type: 'kubeconfig' } };
}

/** The Kubernetes backend's config models (dstack's config → with creds → stored → config chain). */
export const kubernetesConfigModels = {
  ...models,
  backendConfigWithCreds: z.preprocess(withKubeconfigCreds, models.backendConfigWithCreds),
  config: z.preprocess(withKubeconfigCreds, models.config),
} as typeof models;

/** `backends: [{type: kubernetes, ...}]` in the server's config.yml, without creds. */
export type KubernetesBackendConfig = z.output<typeof models.backendConfig>;
/** The config with creds (`kubeconfig`): what users send and `validateConfig` receives. */
export type KubernetesBackendConfigWithCreds = z.output<typeof models.backendConfigWithCreds>;
/** The kubeconfig: `filename` (config.yml only) or `data`. */
export type KubernetesCreds = z.output<typeof models.creds>;
/** What the database keeps (without creds). */
export type KubernetesStoredConfig = z.output<typeof models.storedConfig>;
/** The stored config plus creds: what the Compute is built from. */
export type KubernetesConfig = z.output<typeof models.config>;
/** `proxy_jump`, top-level or of a context. */
export type KubernetesProxyJumpConfig = z.output<typeof proxyJumpSchema>;
