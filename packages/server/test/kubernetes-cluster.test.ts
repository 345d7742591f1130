/**
 * The Kubernetes backend end to end against a real cluster (scripts/services/ensure-kubernetes.sh:
 * etcd, the API server, the controller manager, the scheduler and a kubelet on this machine's
 * Docker): a server with @dstack/backend-kubernetes configured as a user would (the kubeconfig
 * file the script printed, `proxy_jump.hostname`), the built `dstack` CLI. The real scheduler
 * places the job pod, the real kubelet runs it; its command downloads the runner from the
 * server's `DSTACK_RUNNER_DOWNLOAD_URL` (served on the pod network's gateway), and the server
 * reaches the runner through the project's jump pod (sshd behind a NodePort). A volume is a
 * PersistentVolumeClaim the real controller manager binds (to a hostPath PersistentVolume of a
 * class of the test's own: no provisioner runs here). Skipped when no cluster runs, except under
 * CI. One server, one namespace, on SQLite.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clustersOf, KubernetesApi } from '@dstack/backend-kubernetes';
import type { Fleet, Run, Volume } from '@dstack/core';
import { holdKubernetesTestCluster, kubernetesTestCluster } from '@dstack/testing';
import {
  emulatedHostImage,
  ensureEmulatedHostImage,
  type RunnerRuntimeServer,
  serveRunnerRuntime,
} from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { killRunningDstack, requireBuiltDstack, runDstack } from './dstack-cli.js';
import {
  ADMIN_TOKEN,
  type HarnessServer,
  makeTempDir,
  startHarnessServer,
  waitFor,
} from './server-harness.js';

const cluster = await kubernetesTestCluster();
const RUN_TIMEOUT_MS = 240_000;

/** kubectl (Debian's kubernetes-client) with the cluster's kubeconfig, `input` on its stdin. */
function kubectl(kubeconfig: string, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile('kubectl', ['--kubeconfig', kubeconfig, ...args], (error, stdout, stderr) =>
      error ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr || error.message}`)) : resolve(stdout),
    );
    child.stdin?.end(input ?? '');
  });
}

describe.skipIf(typeof cluster === 'string')('the kubernetes backend on a real cluster', () => {
  if (typeof cluster === 'string') {
    it.skip(cluster, () => {});
    return;
  }
  // Nothing can be pulled here: the job and the jump pod (sshd) run a local Debian image.
  const image = emulatedHostImage('plain');
  const suffix = randomBytes(3).toString('hex');
  const namespace = `dstack-e2e-${suffix}`;
  // The hostPath PersistentVolume the volume's claim binds to (cluster-wide: named for this run).
  const persistentVolume = `dstack-e2e-${suffix}`;
  const temp = makeTempDir('dstack-k8s-e2e-');
  const cliEnvironment = { DSTACK_CLI_CONFIG_DIR: join(temp.dir, 'cli') };
  const [access] = clustersOf({ type: 'kubernetes' }, readFileSync(cluster.kubeconfigFile, 'utf8'));
  const api = new KubernetesApi({ access: access!.access });
  let runtime: RunnerRuntimeServer;
  let harness: HarnessServer;
  let release: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    requireBuiltDstack();
    await ensureEmulatedHostImage('plain');
    // The 2-node task takes the node's CPUs: no other file's pods may hold some meanwhile.
    release = await holdKubernetesTestCluster();
    process.env.DSTACK_KUBERNETES_JUMP_POD_IMAGE = image;
    // The self-hosted archive (made once per machine and runner bundle), not the packed npm
    // package: packing it again costs this file seconds on every run.
    runtime = await serveRunnerRuntime({ host: cluster.podNetworkGateway, format: 'archive' });
    harness = await startHarnessServer({
      dir: join(temp.dir, 'server'),
      config: {
        projects: [
          {
            name: 'main',
            backends: [
              {
                type: 'kubernetes',
                kubeconfig: { filename: cluster.kubeconfigFile },
                proxy_jump: { hostname: cluster.proxyJumpHostname },
                namespace,
              },
            ],
          },
        ],
      },
      env: { DSTACK_RUNNER_DOWNLOAD_URL: runtime.url },
    });
    mkdirSync(cliEnvironment.DSTACK_CLI_CONFIG_DIR, { recursive: true });
    writeFileSync(
      join(cliEnvironment.DSTACK_CLI_CONFIG_DIR, 'config.yml'),
      stringify({ projects: [{ name: 'main', url: harness.server.url, token: ADMIN_TOKEN, default: true }] }),
    );
  }, 300_000);

  afterAll(async () => {
    try {
      killRunningDstack();
      await harness?.terminateFleetsAndClose();
      await runtime?.close();
      await api.deleteNamespace(namespace);
      await api.close();
      await kubectl(cluster.kubeconfigFile, [
        'delete',
        'persistentvolume',
        persistentVolume,
        '--ignore-not-found',
      ]);
      delete process.env.DSTACK_KUBERNETES_JUMP_POD_IMAGE;
      temp.remove();
    } finally {
      await release?.();
    }
  }, 300_000);

  function writeTask(name: string, body: Record<string, unknown>): string {
    const file = join(temp.dir, `${name}.dstack.yml`);
    writeFileSync(file, stringify({ type: 'task', name, image, ...body }));
    return file;
  }

  async function objectsLeft(): Promise<string[]> {
    const kinds = ['pods', 'services', 'persistentvolumeclaims'] as const;
    const lists = await Promise.all(kinds.map((kind) => api.list(namespace, kind)));
    return lists.flatMap((items, index) => items.map((item) => `${kinds[index]}/${item.metadata?.name}`));
  }

  it('lists the node with its allocatable CPU and memory in dstack offer -b kubernetes', async () => {
    const [node] = await api.listNodes();
    const allocatableCpu = Number(node?.status?.allocatable?.cpu);
    // The kubelet reports allocatable memory in Ki.
    const allocatableMemory = /^(\d+)Ki$/.exec(String(node?.status?.allocatable?.memory));
    const allocatableMemoryMib = Number(allocatableMemory?.[1]) / 1024;

    const result = await runDstack(['offer', '-b', 'kubernetes', '--format', 'json'], {
      env: cliEnvironment,
    });

    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const offers = JSON.parse(result.stdout).offers as Array<{
      backend: string;
      instance: { name: string; resources: { cpus: number; memory_mib: number } };
    }>;
    expect(offers.map((offer) => [offer.backend, offer.instance.name])).toEqual([
      ['kubernetes', node?.metadata?.name],
    ]);
    expect(offers[0]?.instance.resources.cpus).toBeGreaterThan(0);
    expect(offers[0]?.instance.resources.cpus).toBeLessThanOrEqual(allocatableCpu);
    expect(offers[0]?.instance.resources.memory_mib).toBeGreaterThan(0);
    expect(offers[0]?.instance.resources.memory_mib).toBeLessThanOrEqual(allocatableMemoryMib);
  });

  it(
    'applies a task through the CLI to done with its output streamed, and deleting the fleet leaves no pod, service or PVC',
    async () => {
      const file = writeTask('k8s-hello', {
        commands: ['echo "hello from pod $(hostname)"'],
        resources: { cpu: 1, memory: '1GB' },
      });

      const result = await runDstack(['apply', '-f', file, '-y'], { env: cliEnvironment });

      expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
      expect(result.stdout).toMatch(/hello from pod dstack-[0-9a-f-]+/);
      const run = await harness.waitForRun('k8s-hello', ['done', 'failed', 'terminated'], RUN_TIMEOUT_MS);
      expect(run.status).toBe('done');
      const provisioning = run.latest_job_submission?.job_provisioning_data;
      expect(provisioning).toMatchObject({
        backend: 'kubernetes',
        ssh_proxy: { hostname: cluster.proxyJumpHostname },
      });
      expect(provisioning?.instance_type.resources).toMatchObject({ cpus: 1, memory_mib: 1024 });
      // The real scheduler placed the pod and the real kubelet ran it: their events say so.
      const events = await api.list(namespace, 'events', {
        fieldSelector: `involvedObject.name=${provisioning?.instance_id}`,
      });
      // The scheduler reports through events.k8s.io (`reportingComponent`), the kubelet as `source`.
      const said = events.map((event) => {
        const { source, reportingComponent, reason } = event as {
          source?: { component?: string };
          reportingComponent?: string;
          reason?: string;
        };
        return `${reportingComponent || source?.component} ${reason}`;
      });
      expect(said).toContain('default-scheduler Scheduled');
      expect(said).toContain('kubelet Started');

      const fleets = (await harness.call<Fleet[]>('/api/project/main/fleets/list')).body;
      if (fleets.length > 0) {
        await harness.call('/api/project/main/fleets/delete', { names: fleets.map((fleet) => fleet.name) });
      }
      await waitFor(
        'no pod, service or PVC of dstack in the namespace',
        async () => ((await objectsLeft()).length === 0 ? true : null),
        RUN_TIMEOUT_MS,
      );
    },
    RUN_TIMEOUT_MS + 60_000,
  );

  it(
    "gives a 2-node task dstack's DSTACK_NODES_IPS and master address: two pods",
    async () => {
      const file = writeTask('k8s-nodes', {
        nodes: 2,
        commands: [
          'echo "node $DSTACK_NODE_RANK of $DSTACK_NODES_NUM master=$DSTACK_MASTER_NODE_IP ips=$(echo $DSTACK_NODES_IPS)"',
        ],
        // Two pods at once: each asks for 1 GB of the node's ephemeral storage, not the default 100 GB.
        resources: { cpu: 1, memory: '0.5GB', disk: '1GB..' },
      });

      const result = await runDstack(['apply', '-f', file, '-y'], { env: cliEnvironment });

      expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
      const run = await harness.waitForRun('k8s-nodes', ['done', 'failed', 'terminated'], RUN_TIMEOUT_MS);
      expect(run.status).toBe('done');
      const podIps = (run as Run).jobs.map(
        (job) => job.job_submissions.at(-1)?.job_provisioning_data?.internal_ip,
      );
      expect(podIps).toHaveLength(2);
      expect(new Set(podIps).size).toBe(2);
      const logs = await harness.logs('k8s-nodes');
      expect(logs).toContain(`node 0 of 2 master=${podIps[0]} ips=${podIps.join(' ')}`);
    },
    RUN_TIMEOUT_MS + 60_000,
  );

  it(
    'mounts a volume (a claim the controller manager binds) and an instance path into the job pod; deleting the volume deletes its claim',
    async () => {
      const storageClass = `dstack-e2e-${suffix}`;
      const volumeDirectory = join(temp.dir, 'persistent-volume');
      const hostDirectory = join(temp.dir, 'instance-path');
      mkdirSync(volumeDirectory);
      await kubectl(
        cluster.kubeconfigFile,
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'PersistentVolume',
          metadata: { name: persistentVolume },
          spec: {
            capacity: { storage: '1Gi' },
            accessModes: ['ReadWriteOnce'],
            storageClassName: storageClass,
            hostPath: { path: volumeDirectory },
          },
        }),
      );
      const volumeFile = join(temp.dir, 'k8s-data.dstack.yml');
      writeFileSync(
        volumeFile,
        stringify({
          type: 'volume',
          name: 'k8s-data',
          backend: 'kubernetes',
          size: '1GB',
          storage_class_name: storageClass,
        }),
      );

      const created = await runDstack(['apply', '-f', volumeFile, '-y'], { env: cliEnvironment });

      expect(created.code, `${created.stdout}\n${created.stderr}`).toBe(0);
      const volume = await waitFor('volume k8s-data to be active', async () => {
        const current = (await harness.call<Volume>('/api/project/main/volumes/get', { name: 'k8s-data' }))
          .body;
        if (current.status === 'failed') throw new Error(`volume k8s-data failed: ${current.status_message}`);
        return current.status === 'active' ? current : null;
      });
      const claimName = volume.volume_id ?? '';
      const file = writeTask('k8s-volumes', {
        commands: [
          'echo kept-on-claim > /data/kept.txt',
          'echo kept-on-node > /cache/kept.txt',
          'cat /data/kept.txt',
        ],
        volumes: ['k8s-data:/data', `${hostDirectory}:/cache`],
        resources: { cpu: 1, memory: '0.5GB', disk: '1GB..' },
      });

      const result = await runDstack(['apply', '-f', file, '-y'], { env: cliEnvironment });

      expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
      expect(result.stdout).toContain('kept-on-claim');
      const run = await harness.waitForRun('k8s-volumes', ['done', 'failed', 'terminated'], RUN_TIMEOUT_MS);
      expect(run.status).toBe('done');
      expect(run.latest_job_submission?.job_runtime_data?.volume_names).toEqual(['k8s-data']);
      // The kubelet of this machine mounted the claim's volume and the node's path into the pod.
      expect(readFileSync(join(volumeDirectory, 'kept.txt'), 'utf8')).toBe('kept-on-claim\n');
      expect(readFileSync(join(hostDirectory, 'kept.txt'), 'utf8')).toBe('kept-on-node\n');
      const claim = await api.read(namespace, 'persistentvolumeclaims', claimName);
      expect(claim?.spec).toMatchObject({ storageClassName: storageClass, volumeName: persistentVolume });
      expect(claim?.status?.phase).toBe('Bound');

      const deleted = await runDstack(['volume', 'delete', 'k8s-data', '-y'], { env: cliEnvironment });

      expect(deleted.code, `${deleted.stdout}\n${deleted.stderr}`).toBe(0);
      await waitFor(
        `claim ${claimName} to be deleted`,
        async () => ((await api.read(namespace, 'persistentvolumeclaims', claimName)) === null ? true : null),
        RUN_TIMEOUT_MS,
      );
    },
    RUN_TIMEOUT_MS * 2,
  );
});
