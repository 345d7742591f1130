/**
 * Instances and zone operations as Compute shows them: an instance's network interfaces (with
 * its addresses once it has them), disks, policies, accelerators and scheduling; an operation's
 * status, times and error.
 */
import type { GcpInstance, GcpOperation } from './gcp-compute-instances.js';
import type { GcpComputeProject } from './gcp-compute-project.js';
import { guestAccelerators } from './gcp-compute-quotas.js';
import { lastSegment, link, rfc3339 } from './gcp-compute-resources.js';
import { regionOfZone } from './gcp-emulator-data.js';

export function instanceResource(project: GcpComputeProject, instance: GcpInstance) {
  const { instances } = project;
  const status = instances.status(instance) ?? 'TERMINATED';
  const zonePath = `projects/${project.project}/zones/${instance.zone}`;
  const body = instance.body as Record<string, unknown> & {
    networkInterfaces?: { accessConfigs?: Record<string, unknown>[] }[];
    metadata?: { items?: unknown[] };
    disks?: Record<string, unknown>[];
  };
  const natIP = instances.natIp(instance);
  const networkIP = instances.internalIp(instance);
  const networkInterfaces = (body.networkInterfaces ?? [{}]).map((each, index) => ({
    kind: 'compute#networkInterface',
    name: `nic${index}`,
    network: link(`projects/${project.project}/global/networks/default`),
    subnetwork: link(
      `projects/${project.project}/regions/${regionOfZone(instance.zone)}/subnetworks/default`,
    ),
    ...each,
    ...(index === 0 && networkIP ? { networkIP } : {}),
    ...(each.accessConfigs
      ? {
          accessConfigs: each.accessConfigs.map((config, configIndex) => ({
            kind: 'compute#accessConfig',
            type: 'ONE_TO_ONE_NAT',
            name: 'External NAT',
            networkTier: 'PREMIUM',
            ...config,
            ...(index === 0 && configIndex === 0 && natIP ? { natIP } : {}),
          })),
        }
      : {}),
  }));
  const scheduling = {
    onHostMaintenance: 'TERMINATE',
    automaticRestart: false,
    preemptible: instance.provisioningModel === 'SPOT',
    provisioningModel: instance.provisioningModel,
    ...(body.scheduling as Record<string, unknown> | undefined),
  };
  return {
    kind: 'compute#instance',
    id: instance.id,
    creationTimestamp: rfc3339(instance.createdAt),
    name: instance.name,
    ...(body.description !== undefined ? { description: body.description } : {}),
    tags: { items: [], fingerprint: 'emulator', ...(body.tags as Record<string, unknown> | undefined) },
    machineType: link(`${zonePath}/machineTypes/${instance.machineType}`),
    status,
    zone: link(zonePath),
    networkInterfaces,
    disks: [
      ...(body.disks ?? []).map((disk, index) => ({
        kind: 'compute#attachedDisk',
        type: 'PERSISTENT',
        mode: 'READ_WRITE',
        deviceName: `persistent-disk-${index}`,
        index,
        boot: index === 0,
        autoDelete: true,
        source: link(`${zonePath}/disks/${instance.name}${index === 0 ? '' : `-${index}`}`),
        diskSizeGb: String((disk.initializeParams as { diskSizeGb?: unknown } | undefined)?.diskSizeGb ?? 10),
        ...disk,
      })),
      ...project.disks.attachedDiskResources(instance),
    ],
    ...(Array.isArray(body.resourcePolicies)
      ? {
          resourcePolicies: (body.resourcePolicies as unknown[]).map((each) =>
            link(
              `projects/${project.project}/regions/${regionOfZone(instance.zone)}/resourcePolicies/${lastSegment(String(each))}`,
            ),
          ),
        }
      : {}),
    metadata: { kind: 'compute#metadata', fingerprint: 'emulator', items: body.metadata?.items ?? [] },
    ...(body.serviceAccounts ? { serviceAccounts: body.serviceAccounts } : {}),
    ...(body.guestAccelerators
      ? {
          guestAccelerators: guestAccelerators(body).map((each) => ({
            acceleratorType: link(`${zonePath}/acceleratorTypes/${each.type}`),
            acceleratorCount: each.count,
          })),
        }
      : {}),
    scheduling,
    labels: (body.labels as Record<string, unknown> | undefined) ?? {},
    labelFingerprint: 'emulator',
    cpuPlatform: 'Intel Cascade Lake',
    selfLink: link(`${zonePath}/instances/${instance.name}`),
  };
}

export function operationResource(project: GcpComputeProject, operation: GcpOperation) {
  const status = project.instances.operationStatus(operation);
  const zonePath = `projects/${project.project}/zones/${operation.zone}`;
  const done = status === 'DONE';
  const error = done ? operation.error : undefined;
  return {
    kind: 'compute#operation',
    id: operation.id,
    name: operation.name,
    zone: link(zonePath),
    operationType: operation.operationType,
    targetLink: link(`${zonePath}/${operation.targetKind ?? 'instances'}/${operation.targetName}`),
    targetId: operation.targetId,
    status,
    ...(operation.statusMessage ? { statusMessage: operation.statusMessage } : {}),
    user: 'dstack@emulator',
    progress: done ? 100 : 0,
    insertTime: rfc3339(operation.insertTime),
    ...(status !== 'PENDING' ? { startTime: rfc3339(operation.runningAt) } : {}),
    ...(done ? { endTime: rfc3339(operation.doneAt()) } : {}),
    ...(error
      ? {
          error: {
            errors: [{ code: error.code, message: error.message, errorDetails: error.errorDetails }],
          },
          httpErrorStatusCode: error.httpStatus,
          httpErrorMessage: error.httpMessage,
        }
      : {}),
    selfLink: link(`${zonePath}/operations/${operation.name}`),
  };
}
