/**
 * The objects the backend creates, as dstack's Kubernetes backend builds them: the job pod (the
 * job's image running the runner through core's container entrypoint), its image pull Secret,
 * and the per-project jump pod with sshd behind a NodePort Service.
 */
import { createHash } from 'node:crypto';
import { buildContainerEntrypoint, type Requirements, type RunJobParams } from '@dstack/core';
import { DSTACK_RUNNER_SSH_PORT, RUNNER_TOKEN_ENV } from '@dstack/core/agent-protocol';
import type { KubernetesObject } from './kubernetes-api.js';
import { baseLabels } from './kubernetes-labels.js';
import { isHardTaint, TOLERATED_TAINT_KEYS } from './kubernetes-offers.js';
import { podVolumes } from './kubernetes-volumes.js';

/** dstack's jump pod image: sshd on Alpine. */
export const DEFAULT_JUMP_POD_IMAGE =
  'testcontainers/sshd:1.3.0@sha256:c50c0f59554dcdb2d9e5e705112144428ae9d04ac0af6322b365a18e24213a6a';
export const JUMP_POD_SSH_PORT = 22;
export const JUMP_POD_USER = 'root';

/** Names of containers and Services are DNS labels: 63 characters at most (pods' may be longer). */
const DNS_LABEL_MAX = 63;

/**
 * `base` and `suffix` as a DNS label: lowercase alphanumerics and `-`, 63 characters at most.
 * A longer `base` is cut and tagged with a hash of itself, so two long names stay distinct.
 */
export function dnsLabel(base: string, suffix = ''): string {
  const clean = base.toLowerCase().replace(/[^a-z0-9-]/g, '-');
  if (clean.length + suffix.length <= DNS_LABEL_MAX) return `${clean}${suffix}`;
  const hash = createHash('sha256').update(base).digest('hex').slice(0, 8);
  const kept = clean.slice(0, DNS_LABEL_MAX - suffix.length - hash.length - 1).replace(/-+$/, '');
  return `${kept}-${hash}${suffix}`;
}

/**
 * The per-project jump pod's name (dstack's `dstack-<project>-ssh-jump-pod`; project names may
 * have capitals and `_`, which Kubernetes names may not), and its Service's.
 */
export function jumpPodName(project: string): string {
  return dnsLabel(`dstack-${project}`, '-ssh-jump-pod');
}
export function serviceNameOf(podName: string): string {
  return dnsLabel(podName, '-service');
}
export function registryAuthSecretNameOf(podName: string): string {
  return `${podName}-registry-auth`;
}

/** The pod name of dstack's instance `instanceId` (the launch's idempotency key). */
export function jobPodName(instanceId: string): string {
  return `dstack-${instanceId.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`.slice(0, 63).replace(/-+$/, '');
}

/** `{cpu, memory, ephemeral-storage, <gpu resource>}` of dstack's `ResourceRequests`/`ResourceLimits`. */
export function resourceMaps(
  requirements: Requirements,
  gpuResource: string | null,
): { requests: Record<string, string>; limits: Record<string, string> } {
  const resources = requirements.resources;
  const gpuCount = resources.gpu?.count.min ?? 0;
  const map = (
    cpu: number | null | undefined,
    memoryGb: number | null | undefined,
    diskGb: number | null | undefined,
  ) => {
    const result: Record<string, string> = {};
    if (cpu != null) result.cpu = String(cpu);
    if (memoryGb != null) result.memory = `${Math.round(memoryGb * 1024)}Mi`;
    if (diskGb != null) result['ephemeral-storage'] = `${Math.round(diskGb * 1024)}Mi`;
    if (gpuCount > 0 && gpuResource !== null) result[gpuResource] = String(gpuCount);
    return result;
  };
  return {
    requests: map(resources.cpu.count.min ?? 0, resources.memory.min ?? 0, resources.disk?.size.min ?? 0),
    limits: map(resources.cpu.count.max, resources.memory.max, resources.disk?.size.max),
  };
}

export interface JobPodOptions {
  name: string;
  labels: Record<string, string>;
  params: RunJobParams;
  gpuResource: string | null;
  registryAuthSecretName: string | null;
  /** Add `SYS_RESOURCE` (dstack does, to raise hard rlimits). */
  addSysResource: boolean;
}

/** The job pod: the runner as the container's command, the agent token in its environment. */
export function jobPod(options: JobPodOptions): KubernetesObject {
  const { params } = options;
  const jobSpec = params.job.job_spec;
  const resources = params.requirements.resources;
  const { volumes, volumeMounts } = podVolumes(jobSpec.volumes ?? [], params.volumes);
  const shmSize = (resources as { shm_size?: number | null }).shm_size;
  if (shmSize != null) {
    volumes.push({ name: 'dev-shm', emptyDir: { medium: 'Memory', sizeLimit: `${shmSize}Gi` } });
    volumeMounts.push({ name: 'dev-shm', mountPath: '/dev/shm' });
  }
  const env = [{ name: RUNNER_TOKEN_ENV, value: params.agentToken }];
  const tolerations: unknown[] = [];
  if (options.gpuResource !== null) {
    for (const effect of ['NoSchedule', 'NoExecute']) {
      tolerations.push({ key: options.gpuResource, operator: 'Exists', effect });
    }
  } else {
    // Images with NVIDIA_VISIBLE_DEVICES=all baked in would otherwise see the node's GPUs.
    env.push({ name: 'NVIDIA_VISIBLE_DEVICES', value: 'void' });
  }
  const authorizedKeys = [params.run.run_spec.ssh_key_pub, params.projectSshPublicKey].filter(
    (key): key is string => typeof key === 'string' && key.trim() !== '',
  );
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: options.name, labels: options.labels },
    spec: {
      restartPolicy: 'Never',
      containers: [
        {
          name: dnsLabel(options.name, '-container'),
          image: jobSpec.image_name,
          imagePullPolicy: 'IfNotPresent',
          command: ['/bin/sh'],
          args: [
            '-c',
            buildContainerEntrypoint({
              runtimeDownloadUrl: params.runnerDownloadUrl,
              sshAuthorizedKeys: authorizedKeys,
            }),
          ],
          ports: [{ containerPort: DSTACK_RUNNER_SSH_PORT }],
          securityContext: {
            runAsUser: 0,
            runAsGroup: 0,
            privileged: jobSpec.privileged === true,
            ...(options.addSysResource ? { capabilities: { add: ['SYS_RESOURCE'] } } : {}),
          },
          resources: resourceMaps(params.requirements, options.gpuResource),
          env,
          volumeMounts,
        },
      ],
      ...(options.registryAuthSecretName
        ? { imagePullSecrets: [{ name: options.registryAuthSecretName }] }
        : {}),
      tolerations,
      volumes,
    },
  };
}

/** `kubernetes.io/dockerconfigjson` for the image's registry (Docker Hub when it names none). */
export function registryAuthSecret(
  name: string,
  labels: Record<string, string>,
  image: string,
  username: string,
  password: string,
): KubernetesObject {
  const first = image.split('/')[0] ?? '';
  const registry =
    image.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost')
      ? first
      : 'https://index.docker.io/v1/';
  const auth = Buffer.from(`${username}:${password}`).toString('base64');
  const config = JSON.stringify({ auths: { [registry]: { username, password, auth } } });
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, labels },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': Buffer.from(config).toString('base64') },
  };
}

/**
 * The jump pod's script (dstack's): authorize the project key, new host keys, sshd in the
 * foreground. sshd replaces the shell as the container's first process: a shell there ignores
 * the SIGTERM of a pod deletion, which then waits out the 30 s grace period.
 */
function jumpPodScript(authorizedKeys: readonly string[]): string {
  const keys = authorizedKeys.join('\n').trim().replace(/'/g, `'\\''`);
  return [
    'mkdir -p ~/.ssh',
    'chmod 700 ~/.ssh',
    `echo '${keys}' > ~/.ssh/authorized_keys`,
    'chmod 600 ~/.ssh/authorized_keys',
    'rm -rf /etc/ssh/ssh_host_*',
    'ssh-keygen -A > /dev/null',
    'mkdir -p /run/sshd',
    `exec /usr/sbin/sshd -D -e -p ${JUMP_POD_SSH_PORT} -o LogLevel=ERROR -o PasswordAuthentication=no -o AllowTcpForwarding=local`,
  ].join(' && ');
}

/**
 * Tolerations the jump pod needs: none when some node has no hard taint, else the GPU taints
 * dstack tolerates (as `_create_jump_pod_service_if_not_exists`).
 */
export function jumpPodTolerations(nodes: readonly KubernetesObject[]): unknown[] {
  const tolerated = new Map<string, { key: string; operator: 'Exists'; effect: string }>();
  for (const node of nodes) {
    const taints: Array<{ key?: string; effect?: string }> = node.spec?.taints ?? [];
    const hard = taints.filter((taint) => isHardTaint(taint));
    if (hard.length === 0) return [];
    for (const taint of hard) {
      if (TOLERATED_TAINT_KEYS.includes(taint.key ?? '')) {
        tolerated.set(`${taint.key}/${taint.effect}`, {
          key: taint.key ?? '',
          operator: 'Exists',
          effect: taint.effect ?? '',
        });
      }
    }
  }
  return [...tolerated.values()];
}

export function jumpPod(
  name: string,
  project: string,
  image: string,
  projectSshPublicKey: string,
  tolerations: unknown[],
): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: baseLabels('ssh-proxy', name, project) },
    spec: {
      containers: [
        {
          name: dnsLabel(name, '-container'),
          image,
          imagePullPolicy: 'IfNotPresent',
          command: ['/bin/sh'],
          args: ['-c', jumpPodScript([projectSshPublicKey])],
          ports: [{ containerPort: JUMP_POD_SSH_PORT }],
        },
      ],
      tolerations,
    },
  };
}

/** The jump pod's NodePort Service (`port` the configured `proxy_jump.port`, else the cluster's choice). */
export function jumpPodService(
  podName: string,
  project: string,
  nodePort: number | null | undefined,
): KubernetesObject {
  const labels = baseLabels('ssh-proxy', podName, project);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: serviceNameOf(podName), labels },
    spec: {
      type: 'NodePort',
      selector: labels,
      ports: [
        {
          port: JUMP_POD_SSH_PORT,
          targetPort: JUMP_POD_SSH_PORT,
          ...(nodePort != null ? { nodePort } : {}),
        },
      ],
    },
  };
}
