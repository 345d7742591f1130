import { RequirementsSchema, type RunJobParams } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import {
  dnsLabel,
  jobPod,
  jobPodName,
  jumpPod,
  jumpPodName,
  jumpPodTolerations,
  registryAuthSecret,
  serviceNameOf,
} from './kubernetes-pods.js';

const requirements = RequirementsSchema.parse({
  resources: {
    cpu: { count: { min: 2, max: 4 } },
    memory: { min: 1, max: null },
    disk: { size: { min: 10 } },
  },
});

const params = {
  instanceId: 'A1B2C3D4-0000-4000-8000-000000000001',
  agentToken: 'agent-token',
  runnerDownloadUrl: 'http://10.233.64.1:8080/runtime.tgz',
  run: {
    project_name: 'main',
    user: 'alice',
    run_spec: { ssh_key_pub: 'ssh-ed25519 USER', configuration: {} },
  },
  job: { job_spec: { job_name: 'hello-0-0', job_num: 0, image_name: 'ubuntu:22.04', requirements } },
  offer: {} as RunJobParams['offer'],
  projectSshPublicKey: 'ssh-ed25519 PROJECT',
  projectSshPrivateKey: '',
  volumes: [],
  placementGroup: null,
  requirements,
} as RunJobParams;

describe('jobPod', () => {
  const pod = jobPod({
    name: jobPodName(params.instanceId),
    labels: {},
    params,
    gpuResource: null,
    registryAuthSecretName: null,
    addSysResource: false,
  });
  const container = pod.spec.containers[0];

  it('runs the runner entrypoint in the job image, its token in the environment, not on the command line', () => {
    expect(pod.metadata?.name).toBe('dstack-a1b2c3d4-0000-4000-8000-000000000001');
    expect(container).toMatchObject({
      image: 'ubuntu:22.04',
      imagePullPolicy: 'IfNotPresent',
      command: ['/bin/sh'],
    });
    expect(container.args[1]).toContain("'http://10.233.64.1:8080/runtime.tgz'");
    expect(container.args[1]).toContain(
      "--ssh-authorized-key 'ssh-ed25519 USER' --ssh-authorized-key 'ssh-ed25519 PROJECT'",
    );
    expect(container.args[1]).not.toContain('agent-token');
    expect(container.env).toEqual([
      { name: 'DSTACK_RUNNER_TOKEN', value: 'agent-token' },
      { name: 'NVIDIA_VISIBLE_DEVICES', value: 'void' },
    ]);
    expect(pod.spec.restartPolicy).toBe('Never');
  });

  it("requests the minimums and limits the maximums of the job's resources, as dstack", () => {
    expect(container.resources).toEqual({
      requests: { cpu: '2', memory: '1024Mi', 'ephemeral-storage': '10240Mi' },
      limits: { cpu: '4' },
    });
  });

  it('adds SYS_RESOURCE only when the backend is told to', () => {
    expect(container.securityContext.capabilities).toBeUndefined();
    const withCapability = jobPod({
      name: 'p',
      labels: {},
      params,
      gpuResource: 'nvidia.com/gpu',
      registryAuthSecretName: 'p-registry-auth',
      addSysResource: true,
    });
    expect(withCapability.spec.containers[0].securityContext.capabilities).toEqual({ add: ['SYS_RESOURCE'] });
    expect(withCapability.spec.imagePullSecrets).toEqual([{ name: 'p-registry-auth' }]);
    expect(withCapability.spec.tolerations).toEqual([
      { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoExecute' },
    ]);
  });
});

describe("jobPod's volumes", () => {
  it("mounts the job's claims and instance paths beside /dev/shm", () => {
    const withVolumes = {
      ...params,
      requirements: { ...requirements, resources: { ...requirements.resources, shm_size: 2 } },
      job: {
        job_spec: {
          ...params.job.job_spec,
          volumes: [
            { name: 'data', path: '/data' },
            { instance_path: '/mnt/cache', path: '/cache', optional: false },
          ],
        },
      },
      volumes: [{ name: 'data', volume_id: 'dstack-main-data-abc', configuration: {} }],
    } as unknown as RunJobParams;

    const pod = jobPod({
      name: 'p',
      labels: {},
      params: withVolumes,
      gpuResource: null,
      registryAuthSecretName: null,
      addSysResource: false,
    });

    expect(pod.spec.volumes).toEqual([
      { name: 'pvc-0', persistentVolumeClaim: { claimName: 'dstack-main-data-abc' } },
      { name: 'host-path-1', hostPath: { path: '/mnt/cache', type: 'DirectoryOrCreate' } },
      { name: 'dev-shm', emptyDir: { medium: 'Memory', sizeLimit: '2Gi' } },
    ]);
    expect(pod.spec.containers[0].volumeMounts).toEqual([
      { name: 'pvc-0', mountPath: '/data' },
      { name: 'host-path-1', mountPath: '/cache' },
      { name: 'dev-shm', mountPath: '/dev/shm' },
    ]);
  });
});

describe('registryAuthSecret', () => {
  it("holds a dockerconfigjson for the image's registry, Docker Hub when it names none", () => {
    const decode = (image: string) =>
      JSON.parse(
        Buffer.from(
          (registryAuthSecret('s', {}, image, 'u', 'p').data as Record<string, string>)['.dockerconfigjson']!,
          'base64',
        ).toString(),
      );

    expect(Object.keys(decode('ghcr.io/org/app:1').auths)).toEqual(['ghcr.io']);
    expect(decode('org/app').auths['https://index.docker.io/v1/']).toEqual({
      username: 'u',
      password: 'p',
      auth: 'dTpw',
    });
  });
});

describe('jumpPodTolerations', () => {
  it('needs none when a node has no hard taint, else tolerates the GPU taints', () => {
    const gpuNode = { spec: { taints: [{ key: 'nvidia.com/gpu', effect: 'NoSchedule' }] } };
    expect(jumpPodTolerations([gpuNode, { spec: {} }])).toEqual([]);
    expect(jumpPodTolerations([gpuNode])).toEqual([
      { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
    ]);
  });
});

describe('names', () => {
  it("keeps dstack's names where they fit and cuts longer ones to a DNS label, distinct by a hash", () => {
    expect(jumpPodName('main')).toBe('dstack-main-ssh-jump-pod');
    expect(serviceNameOf(jumpPodName('main'))).toBe('dstack-main-ssh-jump-pod-service');
    expect(jumpPodName('My_Project')).toBe('dstack-my-project-ssh-jump-pod');

    const long = jobPodName('c587ea22-bf7a-492b-8657-a9968f28aa2b-with-a-long-run-name');
    const container = dnsLabel(long, '-container');
    expect(container).toMatch(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/);
    expect(container.length).toBeLessThanOrEqual(63);
    expect(container.endsWith('-container')).toBe(true);
    expect(dnsLabel(`${long}x`, '-container')).not.toBe(container);
    const project = 'a-project-name-of-fifty-characters-0123456789abcde';
    expect(serviceNameOf(jumpPodName(project)).length).toBeLessThanOrEqual(63);
  });

  it("names the job's and the jump pod's containers within 63 characters", () => {
    const name = jobPodName('dstack-conformance-c587ea22-bf7a-492b-8657-a9968f28aa2b');
    const pod = jobPod({
      name,
      labels: {},
      params,
      gpuResource: null,
      registryAuthSecretName: null,
      addSysResource: false,
    });
    expect(pod.spec.containers[0].name.length).toBeLessThanOrEqual(63);
    const jump = jumpPod(
      jumpPodName('a-project-name-of-fifty-characters-0123456789abcde'),
      'p',
      'img',
      'key',
      [],
    );
    expect(jump.spec.containers[0].name.length).toBeLessThanOrEqual(63);
  });
});
