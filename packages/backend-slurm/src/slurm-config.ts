import type { BackendRecord } from '@dstack/core';
import { BackendPluginError } from '@dstack/core';
import { z } from 'zod';

/** The backend type: `type: slurm` in the server's config.yml and the key of the discovery map. */
export const SLURM_BACKEND_TYPE = 'slurm';

/**
 * dstack's config models of the `slurm` backend (`slurm/models.py`). Unlike the cloud backends it
 * has no top-level `creds`: each cluster carries its login node's address, user and private key,
 * which are the secrets. So the chain is hand-made here rather than `defineBackendConfigModels`:
 * the database's `config` keeps each cluster's name and partitions, its encrypted `auth` keeps
 * each cluster's `hostname`, `port`, `user` and `private_key.content`, in the clusters' order.
 */
const gpuPartitionFields = {
  gpu: z
    .string()
    .min(1)
    .describe('The GPU model, in the `[vendor:]name[:memory]` format, e.g. `H200`, `A100:40GB`, `MI300X`.'),
  partitions: z.array(z.string().min(1)).min(1).describe('The partitions with that GPU model.'),
};

const clusterFields = {
  name: z.string().min(1).describe('The name of the cluster; the region of its offers.'),
  gpu_partitions: z
    .array(z.strictObject(gpuPartitionFields))
    .nullish()
    .describe('GPU models and their partitions; only these take GPU jobs. Absent: no GPU jobs.'),
  cpu_partitions: z
    .array(z.string().min(1))
    .nullish()
    .describe('Partitions for CPU jobs. Absent: every partition of the cluster but the GPU ones.'),
};

const loginFields = {
  hostname: z.string().min(1).describe('The hostname or IP address of the login node.'),
  port: z.number().int().min(1).max(65535).nullish().describe('The SSH port of the login node. Default 22.'),
  user: z.string().min(1).describe('The user to log in to the login node as; jobs run as this user.'),
};

/** `private_key` of a cluster: a file of the server (config.yml only) or its content. */
const privateKeyFileSchema = z.strictObject({
  path: z.string().min(1).nullish().describe('A path on the server to the key file (config.yml only).'),
  content: z.string().min(1).nullish().describe("The key file's content."),
});

const storedPrivateKeySchema = z.object({ content: z.string().min(1) });

const clusterSchema = z.strictObject(clusterFields);
const clusterWithCredsSchema = z.strictObject({
  ...clusterFields,
  ...loginFields,
  private_key: privateKeyFileSchema,
});

/** What the stored `auth` holds for one cluster. */
const clusterCredsSchema = z.object({ ...loginFields, private_key: storedPrivateKeySchema });
const storedAuthSchema = z.object({ clusters: z.array(clusterCredsSchema) });

/** Cluster names are regions: two clusters of one name would be one region. */
function uniqueClusterNames(clusters: readonly { name: string }[], context: z.RefinementCtx): void {
  const seen = new Set<string>();
  clusters.forEach((cluster, index) => {
    if (seen.has(cluster.name)) {
      context.addIssue({
        code: 'custom',
        path: ['clusters', index, 'name'],
        message: `another cluster is named "${cluster.name}"`,
      });
    }
    seen.add(cluster.name);
  });
}

const backendConfig = z.strictObject({
  type: z.literal(SLURM_BACKEND_TYPE),
  clusters: z.array(clusterSchema).min(1).describe('The clusters, each reached over SSH at its login node.'),
});
const backendConfigWithCreds = z
  .strictObject({
    type: z.literal(SLURM_BACKEND_TYPE),
    clusters: z.array(clusterWithCredsSchema).min(1),
  })
  .superRefine((config, context) => uniqueClusterNames(config.clusters, context));
const storedConfig = z.object({
  type: z.literal(SLURM_BACKEND_TYPE),
  clusters: z.array(z.object(clusterFields)),
});
const config = z.object({
  type: z.literal(SLURM_BACKEND_TYPE),
  clusters: z.array(z.object({ ...clusterFields, ...loginFields, private_key: storedPrivateKeySchema })),
});

/** `backends: [{type: slurm, clusters: [...]}]` without the login nodes' secrets. */
export type SlurmBackendConfig = z.output<typeof backendConfig>;
/** What config.yml and the API carry, and `validateConfig` receives. */
export type SlurmBackendConfigWithCreds = z.output<typeof backendConfigWithCreds>;
/** One cluster of a `SlurmBackendConfigWithCreds`. */
export type SlurmClusterConfigWithCreds = SlurmBackendConfigWithCreds['clusters'][number];
/** What the database keeps in `config`. */
export type SlurmStoredConfig = z.output<typeof storedConfig>;
/** The stored config with each cluster's login and key: what the Compute is built from. */
export type SlurmConfig = z.output<typeof config>;
/** One cluster of a `SlurmConfig`. */
export type SlurmClusterConfig = SlurmConfig['clusters'][number];

function parseJsonObject(text: string, what: string): unknown {
  const value: unknown = JSON.parse(text);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new BackendPluginError(`The stored slurm backend ${what} is not a JSON object`);
  }
  return value;
}

/** The schemas the plugin descriptor carries, and the moves between them and a stored record. */
export const slurmConfigModels = {
  type: SLURM_BACKEND_TYPE,
  backendConfig,
  backendConfigWithCreds,
  storedConfig,
  config,
  /** The record for a config whose keys are all given by content (`withKeyContents`). */
  toRecord(withCreds: SlurmConfig): BackendRecord {
    return {
      config: JSON.stringify(storedConfig.parse(withCreds)),
      auth: JSON.stringify(
        storedAuthSchema.parse({
          clusters: withCreds.clusters.map(({ hostname, port, user, private_key }) => ({
            hostname,
            port,
            user,
            private_key: { content: private_key.content },
          })),
        }),
      ),
    };
  },
  /** `SlurmConfig` from a record: each stored cluster joined with its login, in order. */
  configFromRecord(record: BackendRecord): SlurmConfig {
    const stored = storedConfig.parse(parseJsonObject(record.config, 'config'));
    const auth = storedAuthSchema.parse(parseJsonObject(record.auth, 'auth'));
    if (auth.clusters.length !== stored.clusters.length) {
      throw new BackendPluginError(
        `The stored slurm backend has ${stored.clusters.length} clusters and logins for ${auth.clusters.length}`,
      );
    }
    return config.parse({
      ...stored,
      clusters: stored.clusters.map((cluster, index) => ({ ...cluster, ...auth.clusters[index] })),
    });
  },
};
