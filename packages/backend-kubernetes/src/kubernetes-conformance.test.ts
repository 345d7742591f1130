import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type JobProvisioningData, ProvisioningError, RequirementsSchema } from '@dstack/core';
import {
  anyCpuOfferRequirements,
  type BackendEmulator,
  conformanceRunJobParams,
  generateProjectSshKeys,
  holdKubernetesTestCluster,
  kubernetesTestCluster,
  testBackend,
} from '@dstack/testing';
import { emulatedHostImage, ensureEmulatedHostImage } from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import plugin from './index.js';
import { clustersOf } from './kubeconfig.js';
import { KubernetesApi } from './kubernetes-api.js';
import { createKubernetesBackend, type KubernetesCompute } from './kubernetes-compute.js';
import { kubernetesConfigModels } from './kubernetes-config.js';
import { parseKubernetesBackendConfig } from './kubernetes-configurator.js';
import { jumpPodName, serviceNameOf } from './kubernetes-pods.js';

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
    capabilities: ['multinode', 'volumes', 'instance-volumes'],
    emulator: async (): Promise<BackendEmulator> => {
      await ensureEmulatedHostImage('plain');
      const release = await holdKubernetesTestCluster();
      return {
        // The pods the suite launched (and their jump pod) go with their namespace, removed from
        // the API at once (grace period 0): the next file finds the node's CPUs free without
        // waiting for the kubelet to stop them.
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

  // What the real scheduler and kubelet say of pods that will never run ends provisioning in
  // their words. A namespace of its own: the suite's goes with the suite.
  describe('pods the cluster will not run', () => {
    const failuresNamespace = `${namespace}-f`;
    const keys = generateProjectSshKeys();
    // Its own client: the conformance suite closes the file's `api` when it ends, which may be first.
    const failuresApi = new KubernetesApi({ access: access!.access });
    let compute: KubernetesCompute;
    let release: (() => Promise<void>) | undefined;
    let launches = 0;

    beforeAll(async () => {
      release = await holdKubernetesTestCluster();
      const parsed = parseKubernetesBackendConfig({ ...config, namespace: failuresNamespace });
      // One second unschedulable is enough here: the scheduler has answered by then.
      compute = createKubernetesBackend({
        config: kubernetesConfigModels.config.parse(parsed),
        schedulingTimeoutMs: 1000,
      });
    }, 60_000);

    afterAll(async () => {
      try {
        const pods = await failuresApi.list(failuresNamespace, 'pods');
        await Promise.all(
          pods.map((pod) =>
            failuresApi.delete(failuresNamespace, 'pods', pod.metadata?.name ?? '', {
              gracePeriodSeconds: 0,
            }),
          ),
        );
        await failuresApi.deleteNamespace(failuresNamespace);
        await compute?.close();
      } finally {
        await failuresApi.close();
        await release?.();
      }
    }, 60_000);

    /** Launches on the node's offer and polls until provisioning fails; its message. */
    async function provisioningFailure(requirements = anyCpuOfferRequirements(), imageName = image) {
      const [offer] = await compute.getOffers(anyCpuOfferRequirements());
      if (!offer) throw new Error('the test cluster offers nothing');
      launches += 1;
      let data: JobProvisioningData = await compute.runJob(
        conformanceRunJobParams({
          instanceId: `failure-${launches}-${randomBytes(4).toString('hex')}`,
          agentToken: 'failure-token',
          runName: `failure-${launches}`,
          projectName: 'test-project',
          offer,
          requirements,
          keys,
          imageName,
        }),
      );
      try {
        for (let attempt = 0; attempt < 600; attempt += 1) {
          try {
            data = await compute.updateProvisioningData(data, keys);
          } catch (error) {
            if (ProvisioningError.isInstance(error)) return (error as Error).message;
            throw error;
          }
          if (data.hostname) throw new Error(`the pod ${data.instance_id} runs: ${JSON.stringify(data)}`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        throw new Error(`provisioning of ${data.instance_id} did not fail within 600 polls`);
      } finally {
        await compute.terminateInstance(data.instance_id, data.region, data.backend_data);
      }
    }

    it("makes the jump pod again when the project's previous job took it, giving an address only while it runs", async () => {
      const [offer] = await compute.getOffers(anyCpuOfferRequirements());
      if (!offer) throw new Error('the test cluster offers nothing');
      const launch = conformanceRunJobParams({
        instanceId: `jump-${randomBytes(4).toString('hex')}`,
        agentToken: 'jump-token',
        runName: 'jump',
        projectName: 'jump-project',
        offer,
        requirements: anyCpuOfferRequirements(),
        keys,
        imageName: image,
      });
      /** Polls until the job pod has an address (its command waits for a runner nothing serves). */
      async function untilReachable(data: JobProvisioningData): Promise<JobProvisioningData> {
        for (let attempt = 0; attempt < 600; attempt += 1) {
          data = await compute.updateProvisioningData(data, keys);
          if (data.hostname) return data;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        throw new Error(`${data.instance_id} got no address within 600 polls`);
      }
      let data = await compute.runJob(launch);
      try {
        data = await untilReachable(data);
        // What the project's previous job does when it ends and sees no other job pod.
        const jumpName = jumpPodName('jump-project');
        await failuresApi.delete(failuresNamespace, 'services', serviceNameOf(jumpName));
        await failuresApi.delete(failuresNamespace, 'pods', jumpName);

        const again = await untilReachable(data);

        const jump = await failuresApi.read(failuresNamespace, 'pods', jumpName);
        const service = await failuresApi.read(failuresNamespace, 'services', serviceNameOf(jumpName));
        expect(jump?.metadata?.deletionTimestamp).toBeUndefined();
        expect(jump?.status?.phase).toBe('Running');
        expect(again.ssh_proxy?.port).toBe(service?.spec?.ports?.[0]?.nodePort);
      } finally {
        await compute.terminateInstance(data.instance_id, data.region, data.backend_data);
      }
    }, 120_000);

    it("fails a pod no node can take with the scheduler's reason", async () => {
      const tooBig = RequirementsSchema.parse({
        resources: { cpu: { count: { min: 512 } }, memory: { min: null } },
      });

      const message = await provisioningFailure(tooBig);

      expect(message).toMatch(
        /was not scheduled: Unschedulable: 0\/1 nodes are available: 1 Insufficient cpu/,
      );
    }, 120_000);

    it("fails a pod whose image the kubelet cannot get with the kubelet's reason", async () => {
      const message = await provisioningFailure(undefined, 'dstack-test/no-such-image:1');

      expect(message).toMatch(/: (ErrImagePull|ImagePullBackOff) \(image dstack-test\/no-such-image:1\)/);
    }, 120_000);
  });
}

function kubeconfigWithoutClientCertificate(file: string): string {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => !/client-(certificate|key)-data:/.test(line))
    .join('\n');
}
