import { generateEd25519KeyPair, RequirementsSchema } from '@dstack/core';
import { findSlurmTestCluster, slurmTestBackendConfig, testBackend } from '@dstack/testing';
import { describe, it } from 'vitest';
import plugin from './index.js';
import { cancelJob } from './slurm-commands.js';
import { withLoginSession } from './slurm-login.js';

// The contract suite against the real one-node cluster of `ensure-slurm.sh`: jobs are real Slurm
// batch jobs whose runner starts in the allocation and answers on the node (127.0.0.1 here).
describe('slurm backend on the test cluster', async () => {
  const cluster = await findSlurmTestCluster(plugin);
  if (typeof cluster === 'string') {
    it.skip(cluster, () => {});
    return;
  }
  const login = { ...cluster };
  testBackend({
    plugin,
    packageName: '@dstack/backend-slurm',
    capabilities: [],
    emulator: async () => ({
      close: async () => {},
      // Behind the backend's back: the job cancelled on the cluster, as an admin would.
      removeInstance: (jobId: string) => withLoginSession(login, (session) => cancelJob(session, jobId)),
    }),
    create: () => slurmTestBackendConfig(cluster),
    invalidCredentials: {
      // A valid key the login node does not know.
      create: () => slurmTestBackendConfig(cluster, { content: generateEd25519KeyPair().privateKey }),
      field: ['clusters', '0', 'private_key'],
    },
    requirements: RequirementsSchema.parse({
      resources: { cpu: { count: { min: 1 } }, memory: { min: 0.25 } },
    }),
    skip: { 'no-capacity': 'a real cluster cannot be told to run out of nodes on demand' },
    // The runner starts within seconds of sbatch; polls are 250 ms apart.
    provisioning: { maxAttempts: 240, intervalMs: 250 },
  });
});
