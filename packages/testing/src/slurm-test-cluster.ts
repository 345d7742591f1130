/**
 * The Slurm cluster the Slurm tests run against: the one `scripts/services/ensure-slurm.sh`
 * started, named by the settings it prints (`SLURM_HOSTNAME`, `SLURM_PORT`, `SLURM_USER`,
 * `SLURM_PRIVATE_KEY`), else read from its state directory (`DSTACK_SLURM_DIR`, default
 * `/var/tmp/dstack-slurm`). Outside CI a cluster that is missing or does not answer skips the
 * tests; under `CI=true` it fails them, as the Postgres tests do: CI must run them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const DEFAULT_STATE_DIRECTORY = '/var/tmp/dstack-slurm';

/** How to reach the cluster's login node. */
export interface SlurmTestCluster {
  hostname: string;
  port: number;
  user: string;
  privateKeyPath: string;
  privateKey: string;
}

function clusterSettings(): SlurmTestCluster | string {
  const stateDirectory = process.env.DSTACK_SLURM_DIR ?? DEFAULT_STATE_DIRECTORY;
  const portFile = join(stateDirectory, 'sshd.port');
  const port = Number(
    process.env.SLURM_PORT ?? (existsSync(portFile) ? readFileSync(portFile, 'utf8').trim() : ''),
  );
  const privateKeyPath = process.env.SLURM_PRIVATE_KEY ?? join(stateDirectory, 'id_ed25519');
  if (!Number.isInteger(port) || port <= 0 || !existsSync(privateKeyPath)) {
    return 'no Slurm test cluster: run scripts/services/ensure-slurm.sh (or set SLURM_HOSTNAME, SLURM_PORT, SLURM_USER, SLURM_PRIVATE_KEY)';
  }
  return {
    hostname: process.env.SLURM_HOSTNAME ?? '127.0.0.1',
    port,
    user: process.env.SLURM_USER ?? 'dstack-slurm',
    privateKeyPath,
    privateKey: readFileSync(privateKeyPath, 'utf8'),
  };
}

/**
 * A `slurm` backend config (dstack's fields) of the one cluster `test-cluster`, logged in to with
 * `privateKey` (`{content}`, or `{path}` as config.yml names a file); default the cluster's key.
 */
export function slurmTestBackendConfig(
  cluster: SlurmTestCluster,
  privateKey: { content: string } | { path: string } = { content: cluster.privateKey },
) {
  return {
    type: 'slurm' as const,
    clusters: [
      {
        name: 'test-cluster',
        hostname: cluster.hostname,
        port: cluster.port,
        user: cluster.user,
        private_key: privateKey,
      },
    ],
  };
}

/** The part of the `slurm` backend plugin the check needs (this package does not depend on it). */
interface SlurmPluginLike {
  createConfigurator(): {
    validateConfig(
      config: never,
      options: { origin: 'server_config'; defaultCredsEnabled: boolean; customEndpointsAllowed: boolean },
    ): Promise<void>;
  };
}

/**
 * The cluster once the backend's own `validateConfig` (a login and `scontrol ping`) accepted its
 * config, or why there is none. Under `CI=true` no cluster rejects.
 */
export async function findSlurmTestCluster(plugin: SlurmPluginLike): Promise<SlurmTestCluster | string> {
  const settings = clusterSettings();
  const answers = (cluster: SlurmTestCluster) =>
    plugin.createConfigurator().validateConfig(slurmTestBackendConfig(cluster) as never, {
      origin: 'server_config',
      defaultCredsEnabled: false,
      customEndpointsAllowed: false,
    });
  const found =
    typeof settings === 'string'
      ? settings
      : await answers(settings).then(
          () => settings,
          (error: unknown) =>
            `the Slurm test cluster at ${settings.user}@${settings.hostname}:${settings.port} does not answer: ${(error as Error).message}`,
        );
  if (typeof found === 'string' && process.env.CI === 'true') {
    throw new Error(`${found} (CI=true: the Slurm tests must run, not be skipped)`);
  }
  return found;
}
