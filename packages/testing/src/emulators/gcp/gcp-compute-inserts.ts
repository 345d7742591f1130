/**
 * The inserts with the most rules: firewalls (a global operation, DONE at once) and instances
 * (machine type, accelerators and boot image checked; capacity and quota failures from the
 * faults and the region's quotas; retries of one `requestId` answered with the same operation).
 */
import type { EmulatorRequest } from '../../emulator/emulator-server.js';
import { alreadyExists, GcpApiError, invalidField } from './gcp-api-error.js';
import { operationResource } from './gcp-compute-instance-resources.js';
import type { GcpOperationError } from './gcp-compute-instances.js';
import { type GcpComputeProject, hostKindOf } from './gcp-compute-project.js';
import { guestAccelerators, quotaLimit, quotaNeeds, quotaUsage } from './gcp-compute-quotas.js';
import { bodyOf, findImage, resourceName, zoneOf } from './gcp-compute-requests.js';
import { lastSegment, link, rfc3339 } from './gcp-compute-resources.js';
import { regionOfZone } from './gcp-emulator-data.js';
import type { GcpProvisioningModel, InsertTarget } from './gcp-emulator-faults.js';

export function insertFirewall(project: GcpComputeProject, request: EmulatorRequest) {
  const body = bodyOf(request);
  const name = resourceName(body, 'firewall');
  const resource = `projects/${project.project}/global/firewalls/${name}`;
  if (project.firewalls.has(name)) throw alreadyExists(resource);
  const now = project.clock();
  project.firewalls.set(name, {
    kind: 'compute#firewall',
    id: String(6000 + project.firewalls.size),
    creationTimestamp: rfc3339(now),
    direction: 'INGRESS',
    priority: 1000,
    network: link(`projects/${project.project}/global/networks/default`),
    ...body,
    name,
    selfLink: link(resource),
  });
  // A global operation, DONE at once: firewalls are quick, and dstack does not wait on it.
  const operationName = `operation-${now}-${project.globalOperations.size.toString(16).padStart(13, '0')}-firewall`;
  const operation = {
    kind: 'compute#operation',
    id: String(8_000_000_000 + project.globalOperations.size),
    name: operationName,
    operationType: 'insert',
    targetLink: link(resource),
    targetId: String(6000 + project.firewalls.size - 1),
    status: 'DONE',
    progress: 100,
    insertTime: rfc3339(now),
    startTime: rfc3339(now),
    endTime: rfc3339(now),
    selfLink: link(`projects/${project.project}/global/operations/${operationName}`),
  };
  project.globalOperations.set(operationName, operation);
  return operation;
}

/** The script the instance boots with: `startup-script`, else `user-data` (cloud-init), else none. */
function userDataOf(body: Record<string, unknown>): string {
  const items = (body.metadata as { items?: { key?: unknown; value?: unknown }[] } | undefined)?.items ?? [];
  const value = (key: string) => items.find((each) => each.key === key)?.value;
  const script = value('startup-script') ?? value('user-data');
  return typeof script === 'string' ? script : '';
}

export function insertInstance(project: GcpComputeProject, request: EmulatorRequest) {
  const zone = zoneOf(project, request);
  const requestId = request.query.requestId;
  const repeated = requestId ? project.requestIds.get(requestId) : undefined;
  if (repeated) return operationResource(project, repeated);
  const body = bodyOf(request);
  const name = resourceName(body, 'instance');
  const instancePath = `projects/${project.project}/zones/${zone}/instances/${name}`;
  if (project.instances.find(zone, name)) throw alreadyExists(instancePath);

  const machineType = lastSegment(String(body.machineType ?? ''));
  if (machineType === '')
    throw new GcpApiError(400, 'required', `Required field 'resource.machineType' not specified`);
  if (!project.data.machineOffering(machineType, zone)) {
    throw new GcpApiError(
      404,
      'notFound',
      `Invalid value for field 'resource.machineType': 'zones/${zone}/machineTypes/${machineType}'. Machine type with name '${machineType}' does not exist in zone '${zone}'.`,
    );
  }
  const zoneAccelerators = new Map(
    project.data.acceleratorTypesIn(zone).map((each) => [each.spec.type, each.maximumCardsPerInstance]),
  );
  for (const [index, guest] of guestAccelerators(body).entries()) {
    const maximum = zoneAccelerators.get(guest.type);
    if (maximum === undefined) {
      throw new GcpApiError(
        404,
        'notFound',
        `Invalid value for field 'resource.guestAccelerators[${index}].acceleratorType': 'projects/${project.project}/zones/${zone}/acceleratorTypes/${guest.type}'. Accelerator type '${guest.type}' does not exist in zone '${zone}'.`,
      );
    }
    if (!Number.isInteger(guest.count) || guest.count < 1 || guest.count > maximum) {
      throw invalidField(
        `resource.guestAccelerators[${index}].acceleratorCount`,
        `'${guest.count}'. Accelerator count must be between 1 and ${maximum}.`,
      );
    }
  }
  const disks = Array.isArray(body.disks)
    ? (body.disks as { boot?: boolean; initializeParams?: { sourceImage?: unknown } }[])
    : [];
  const boot = disks.find((each) => each.boot) ?? disks[0];
  const sourceImage = boot?.initializeParams?.sourceImage;
  if (typeof sourceImage !== 'string') {
    throw new GcpApiError(
      400,
      'required',
      `Required field 'resource.disks[0].initializeParams.sourceImage' not specified`,
    );
  }
  const image = findImage(project, sourceImage);

  const scheduling = (body.scheduling ?? {}) as { provisioningModel?: unknown; preemptible?: unknown };
  const provisioningModel: GcpProvisioningModel =
    scheduling.provisioningModel === 'SPOT' || scheduling.preemptible === true ? 'SPOT' : 'STANDARD';
  const [resourcePolicy] = project.resourcePolicies.checkInsert(zone, body);
  const reservation = project.reservations.checkInsert(zone, body, provisioningModel === 'SPOT');
  const target = { machineType, zone, provisioningModel, resourcePolicy };
  const interfaces = Array.isArray(body.networkInterfaces)
    ? (body.networkInterfaces as { accessConfigs?: unknown[] }[])
    : [];
  // Reserved capacity is there whatever the zone has left, and its quota was counted when it was reserved.
  const failure = reservation ? undefined : insertFailure(project, target, body);
  const slowIp = project.faults.has('SLOW_NAT_IP', target);
  const preemption = provisioningModel === 'SPOT' ? project.faults.fire('PREEMPTION', target) : undefined;
  const { operation } = project.instances.insert({
    name,
    zone,
    machineType,
    provisioningModel,
    body,
    userData: userDataOf(body),
    hostKind: hostKindOf(image),
    externalIpWanted: (interfaces[0]?.accessConfigs?.length ?? 0) > 0,
    failure,
    natIpDelayMs: slowIp ? (slowIp.delayMs ?? 5000) : 0,
    preemptAfterRunningMs: preemption ? (preemption.afterRunningMs ?? 5000) : undefined,
  });
  if (requestId) project.requestIds.set(requestId, operation);
  return operationResource(project, operation);
}

/** Whether (and how late) the insert fails: a capacity or quota fault, or a quota the region lacks. */
function insertFailure(
  project: GcpComputeProject,
  target: InsertTarget,
  body: Record<string, unknown>,
): { afterMs: number; error: GcpOperationError } | undefined {
  const region = regionOfZone(target.zone);
  const exhausted = project.faults.fire('ZONE_RESOURCE_POOL_EXHAUSTED', target);
  if (exhausted) {
    return {
      afterMs: exhausted.delayMs ?? 0,
      error: {
        code: 'ZONE_RESOURCE_POOL_EXHAUSTED',
        message: `The zone 'projects/${project.project}/zones/${target.zone}' does not have enough resources available to fulfill the request.  Try a different zone, or try again later.`,
        httpStatus: 503,
        httpMessage: 'SERVICE UNAVAILABLE',
        errorDetails: [
          {
            errorInfo: {
              reason: 'resource_availability',
              domain: 'compute.googleapis.com',
              metadatas: { zone: target.zone, vmType: target.machineType },
            },
          },
        ],
      },
    };
  }
  const needs = quotaNeeds(project, target.machineType, body, target.provisioningModel);
  const quotaFault = project.faults.fire('QUOTA_EXCEEDED', target);
  // The fault names the first GPU metric (CPUS for a CPU-only type) with a limit of 0.
  const faulted = quotaFault ? (needs.find(([metric]) => metric.endsWith('_GPUS')) ?? needs[0]) : undefined;
  const over = faulted
    ? { metric: faulted[0], limit: 0 }
    : needs
        .map(([metric, amount]) => ({ metric, limit: quotaLimit(project, metric), amount }))
        .find(
          ({ metric, limit, amount }) => amount > 0 && quotaUsage(project, region, metric) + amount > limit,
        );
  if (!over) return undefined;
  return {
    afterMs: quotaFault?.delayMs ?? 0,
    error: {
      code: 'QUOTA_EXCEEDED',
      message: `Quota '${over.metric}' exceeded.  Limit: ${over.limit.toFixed(1)} in region ${region}.`,
      httpStatus: 403,
      httpMessage: 'FORBIDDEN',
      errorDetails: [
        {
          quotaInfo: {
            metricName: `compute.googleapis.com/${over.metric.toLowerCase()}`,
            limitName: `${over.metric}-per-project-region`,
            dimensions: { region },
            limit: over.limit,
          },
        },
      ],
    },
  };
}
