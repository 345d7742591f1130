import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  type BackendEmulator,
  holdKubernetesTestCluster,
  kubernetesTestCluster,
  testBackend,
} from '@dstack/testing';
import { emulatedHostImage, ensureEmulatedHostImage } from '@dstack/testing/emulators';
import { describe, it } from 'vitest';
import plugin from './index.js';
import { clustersOf } from './kubeconfig.js';
import { KubernetesApi } from './kubernetes-api.js';

// The contract suite every backend runs (@dstack/testing), against the real one-node cluster of
// scripts/services/ensure-kubernetes.sh: the real scheduler places the pods, the real kubelet
// runs them. Skipped when no cluster runs, except under CI (see kubernetesTestCluster).
const cluster = await kubernetesTestCluster();

if (typeof cluster === 'string') {
  describe('backend "kubernetes" conformance', () => {
    it.skip(cluster, () => {});
  });
} else {
  // Nothing can be pulled here: the jump pod (sshd) and the job run a local Debian image.
  const image = emulatedHostImage('plain');
  process.env.DSTACK_KUBERNETES_JUMP_POD_IMAGE = image;
  const namespace = `dstack-conformance-${randomBytes(3).toString('hex')}`;
  const [access] = clustersOf({ type: 'kubernetes' }, readFileSync(cluster.kubeconfigFile, 'utf8'));
  const api = new KubernetesApi({ access: access!.access });
  // The kubeconfig's text, as a client of the API gives it (`filename` is for config.yml only).
  const config = {
    type: 'kubernetes',
    kubeconfig: { data: readFileSync(cluster.kubeconfigFile, 'utf8') },
    proxy_jump: { hostname: cluster.proxyJumpHostname },
    namespace,
  };

  testBackend({
    plugin,
    packageName: '@dstack/backend-kubernetes',
    capabilities: ['multinode'],
    emulator: async (): Promise<BackendEmulator> => {
      await ensureEmulatedHostImage('plain');
      const release = await holdKubernetesTestCluster();
      return {
        // The pods the suite launched (and their jump pod) go with their namespace. The job pods
        // never got a runner (nothing answers at the suite's download URL): their shell ignores
        // SIGTERM, so they are removed at once rather than after their grace period, freeing the
        // node's CPUs for the next file.
        close: async () => {
          try {
            const pods = await api.list(namespace, 'pods');
            await Promise.all(
              pods.map((pod) =>
                api.delete(namespace, 'pods', pod.metadata?.name ?? '', { gracePeriodSeconds: 0 }),
              ),
            );
            await api.deleteNamespace(namespace);
            await api.close();
          } finally {
            await release();
          }
        },
        removeInstance: async (instanceId) => {
          await api.delete(namespace, 'pods', instanceId);
        },
      };
    },
    jobImage: image,
    // The real scheduler and kubelet start two pods (the jump pod's sshd makes its host keys
    // first): seconds on an idle machine, much longer on a busy one.
    provisioning: { maxAttempts: 600, intervalMs: 250 },
    provisioningTestTimeoutMs: 240_000,
    create: () => config,
    invalidCredentials: {
      // The kubeconfig's certificates without the client's: the API server refuses the request.
      create: () => ({
        ...config,
        kubeconfig: { data: kubeconfigWithoutClientCertificate(cluster.kubeconfigFile) },
      }),
      field: ['kubeconfig'],
    },
    skip: {
      'no-capacity': 'a cluster has no capacity error to inject: a pod that fits nowhere stays Pending',
    },
  });
}

function kubeconfigWithoutClientCertificate(file: string): string {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => !/client-(certificate|key)-data:/.test(line))
    .join('\n');
}
