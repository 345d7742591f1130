/**
 * OCI's Compute API (`iaas.{region}.oraclecloud.com/20160918`) as the backend calls it: shapes an
 * availability domain allows, compute capacity reports, LaunchInstance (with `opc-retry-token`
 * idempotency), GetInstance, TerminateInstance and VNIC attachments. A launched instance is
 * `PROVISIONING` with its boot volume and a VNIC attachment `ATTACHING`; it is `RUNNING` once its
 * emulated host is up (the host runs the cloud-init `user_data` of its metadata), its VNIC then
 * attached with the host's address as private and public IP. A terminated instance is
 * `TERMINATING`, then `TERMINATED` (still readable, as on OCI) with its VNIC and, unless preserved,
 * its boot volume gone.
 */
import { createHash } from 'node:crypto';
import { empty } from '../../emulator/emulator-responses.js';
import type { EmulatedHosts } from '../emulated-hosts.js';
import type { EmulatedHostKind } from '../hosts/emulated-host-image.js';
import { EmulatedInstanceHost } from '../instance-host.js';
import type { OciEmulatorData, OciShape } from './oci-emulator-data.js';
import type { OciEmulatorFaults, OciLaunchTarget } from './oci-emulator-faults.js';
import { requireCompartment } from './oci-identity.js';
import type { OciMarketplaceListing } from './oci-marketplace.js';
import { SUBNET, VNIC } from './oci-network.js';
import {
  answer,
  invalidParameter,
  type Json,
  now,
  OciApiError,
  type OciResource,
  type OciResources,
  object,
  page,
  requiredString,
  string,
} from './oci-resources.js';
import type { OciServiceRoute } from './oci-service-route.js';

export const INSTANCE = 'instance';
export const BOOT_VOLUME = 'bootvolume';
export const VNIC_ATTACHMENT = 'vnicattachment';

/** How long the emulated Compute takes, in ms. */
export interface OciEmulatorTimeline {
  /** Without hosts: from the launch to RUNNING. */
  provisioningMs: number;
  /** From the terminate call to TERMINATED. */
  terminatingMs: number;
}

export const DEFAULT_OCI_EMULATOR_TIMELINE: OciEmulatorTimeline = {
  provisioningMs: 1_000,
  terminatingMs: 500,
};

export interface OciComputeContext {
  readonly tenancyId: string;
  readonly resources: OciResources;
  readonly data: OciEmulatorData;
  readonly faults: OciEmulatorFaults;
  readonly listings: readonly OciMarketplaceListing[];
  readonly hosts: EmulatedHosts | undefined;
  readonly timeline: OciEmulatorTimeline;
  readonly onHostError: (instanceId: string, error: unknown) => void;
  /** Instance ids whose host was launched (failed and terminated ones included). */
  readonly launched: string[];
}

/** OCI keeps a retry token's answer for 24 hours; a different request with it is a conflict. */
interface RetryTokenRecord {
  readonly requestHash: string;
  readonly instanceId: string;
}

/** dstack's images have Docker and dstack's images pre-pulled (dstack's Packer build); other images are plain. */
function hostKindOf(context: OciComputeContext, imageId: string): EmulatedHostKind {
  return context.listings.some((listing) => Object.values(listing.imageIds).includes(imageId))
    ? 'dstack'
    : 'plain';
}

function shapeDocument(shape: OciShape): Json {
  return {
    shape: shape.name,
    ocpus: shape.ocpus,
    memoryInGBs: shape.memoryGb,
    gpus: shape.gpuCount,
    gpuDescription: shape.gpuDescription,
    processorDescription:
      shape.processor === 'amd' ? 'AMD EPYC' : shape.processor === 'arm' ? 'Ampere Altra' : 'Intel Xeon',
    isFlexible: shape.flexible,
    billingType: 'PAID',
    baselineOcpuUtilizations: [],
    quotaNames: [],
  };
}

export interface OciCompute {
  readonly routes: OciServiceRoute[];
  /** Terminates the instance as TerminateInstance does. */
  terminate(instance: OciResource, preserveBootVolume: boolean): void;
  /** Removes the instance and its VNIC attachments as if OCI had reclaimed it long ago; its host stops. */
  remove(instance: OciResource): void;
}

export function ociCompute(context: OciComputeContext): OciCompute {
  const { resources, data, faults, tenancyId } = context;
  const retryTokens = new Map<string, RetryTokenRecord>();
  /** What each launch made besides the instance (its host, with hosts). */
  const parts = new Map<
    string,
    { vnicId: string; attachmentId: string; bootVolumeId: string; host: EmulatedInstanceHost | undefined }
  >();
  const requireDomain = (region: { availabilityDomains: readonly string[] }, name: string | undefined) => {
    if (!name || !region.availabilityDomains.includes(name))
      throw invalidParameter(`availabilityDomain ${name} is not in this region`);
    return name;
  };

  const launch = (
    body: Json,
    regionName: string,
    regionKey: string,
    domains: readonly string[],
  ): OciResource => {
    const compartmentId = requireCompartment(resources, tenancyId, string(body.compartmentId));
    const availabilityDomain = requireDomain(
      { availabilityDomains: domains },
      string(body.availabilityDomain),
    );
    const shapeName = requiredString(body, 'shape');
    const shape = data.shape(shapeName);
    if (!shape) throw invalidParameter(`Shape ${shapeName} is not valid`);
    const vnicDetails = object(body.createVnicDetails);
    const subnet = resources.require(requiredString(vnicDetails, 'subnetId'), SUBNET);
    const source = object(body.sourceDetails);
    if (source.sourceType !== 'image') throw invalidParameter('sourceDetails.sourceType must be image');
    const imageId = requiredString(source, 'imageId');
    if (!context.listings.some((listing) => listing.imageIds[regionName] === imageId))
      throw invalidParameter(`Image ${imageId} not found in ${regionName}`);
    const bootVolumeSize = Number(source.bootVolumeSizeInGBs ?? 50);
    if (!Number.isInteger(bootVolumeSize) || bootVolumeSize < 50 || bootVolumeSize > 32_768) {
      throw invalidParameter('sourceDetails.bootVolumeSizeInGBs must be between 50 and 32768');
    }
    const metadata = object(body.metadata);
    const preemptible = Object.keys(object(body.preemptibleInstanceConfig)).length > 0;
    if (preemptible && !shape.allowPreemptible)
      throw invalidParameter(`Shape ${shape.name} does not support preemptible instances`);
    const target: OciLaunchTarget = { shape: shape.name, region: regionName, preemptible };
    if (faults.fire('LimitExceeded', target)) {
      throw new OciApiError(
        400,
        'LimitExceeded',
        `The following service limits were exceeded: ${shape.name.toLowerCase().replaceAll('.', '-')}-count. Request a service limit increase from the service limits page in the console.`,
      );
    }
    if (faults.fire('QuotaExceeded', target)) {
      throw new OciApiError(
        400,
        'QuotaExceeded',
        `Quota exceeded for compartment ${compartmentId}: ${shape.name} instances.`,
      );
    }
    if (faults.fire('OutOfHostCapacity', target)) {
      throw new OciApiError(500, 'InternalError', 'Out of host capacity.');
    }

    const id = resources.ocid(INSTANCE, regionKey);
    const region = regionName;
    const bootVolume = resources.ocid(BOOT_VOLUME, regionKey);
    resources.put({
      id: bootVolume,
      type: BOOT_VOLUME,
      region,
      document: {
        id: bootVolume,
        compartmentId,
        availabilityDomain,
        sizeInGBs: bootVolumeSize,
        imageId,
        lifecycleState: 'AVAILABLE',
        displayName: `${string(body.displayName)} (Boot Volume)`,
      },
    });
    const vnicId = resources.ocid(VNIC, regionKey);
    const nsgIds = Array.isArray(vnicDetails.nsgIds) ? vnicDetails.nsgIds : [];
    const publicIp = vnicDetails.assignPublicIp !== false && subnet.document.prohibitPublicIpOnVnic !== true;
    resources.put({
      id: vnicId,
      type: VNIC,
      region,
      document: {
        id: vnicId,
        compartmentId,
        availabilityDomain,
        subnetId: subnet.id,
        nsgIds,
        isPrimary: true,
        lifecycleState: 'PROVISIONING',
        privateIp: null,
        publicIp: null,
        timeCreated: now(),
      },
    });
    const attachmentId = resources.ocid(VNIC_ATTACHMENT, regionKey);
    resources.put({
      id: attachmentId,
      type: VNIC_ATTACHMENT,
      region,
      document: {
        id: attachmentId,
        compartmentId,
        availabilityDomain,
        instanceId: id,
        subnetId: subnet.id,
        vnicId: null,
        lifecycleState: 'ATTACHING',
        timeCreated: now(),
      },
    });
    const instance = resources.put({
      id,
      type: INSTANCE,
      region,
      document: {
        id,
        compartmentId,
        availabilityDomain,
        region: regionName,
        displayName: string(body.displayName) ?? id,
        shape: shape.name,
        shapeConfig: {
          ocpus: shape.ocpus,
          memoryInGBs: shape.memoryGb,
          gpus: shape.gpuCount,
          gpuDescription: shape.gpuDescription,
        },
        sourceDetails: { sourceType: 'image', imageId, bootVolumeSizeInGBs: bootVolumeSize },
        imageId,
        metadata: { ...(metadata as Record<string, string>) },
        preemptibleInstanceConfig: preemptible ? body.preemptibleInstanceConfig : null,
        instanceOptions: object(body.instanceOptions),
        freeformTags: object(body.freeformTags),
        definedTags: {},
        lifecycleState: 'PROVISIONING',
        timeCreated: now(),
      },
    });
    const running = (address: string) => {
      if (instance.document.lifecycleState !== 'PROVISIONING') return;
      instance.document.lifecycleState = 'RUNNING';
      const vnic = resources.get(vnicId, VNIC);
      if (vnic)
        Object.assign(vnic.document, {
          lifecycleState: 'AVAILABLE',
          privateIp: address,
          publicIp: publicIp ? address : null,
        });
      const attachment = resources.get(attachmentId, VNIC_ATTACHMENT);
      if (attachment) Object.assign(attachment.document, { lifecycleState: 'ATTACHED', vnicId });
    };
    context.launched.push(id);
    const userData = Buffer.from(String(metadata.user_data ?? ''), 'base64').toString('utf8');
    let host: EmulatedInstanceHost | undefined;
    if (context.hosts) {
      host = new EmulatedInstanceHost(
        context.hosts,
        { instanceId: id, userData, kind: hostKindOf(context, imageId) },
        (error) => {
          context.onHostError(id, error);
          terminate(instance, false);
        },
        running,
      );
    } else {
      const octet = (context.launched.length % 250) + 4;
      setTimeout(() => running(`10.0.0.${octet}`), context.timeline.provisioningMs).unref();
    }
    parts.set(id, { vnicId, attachmentId, bootVolumeId: bootVolume, host });
    return instance;
  };

  /** TERMINATING now; TERMINATED once the host is gone, with the VNIC and (unless preserved) the boot volume. */
  const terminate = (instance: OciResource, preserveBootVolume: boolean) => {
    const state = instance.document.lifecycleState;
    if (state === 'TERMINATING' || state === 'TERMINATED') return;
    instance.document.lifecycleState = 'TERMINATING';
    const hostGone = parts.get(instance.id)?.host?.stop() ?? Promise.resolve();
    const delay = new Promise((resolve) => setTimeout(resolve, context.timeline.terminatingMs).unref());
    void Promise.allSettled([hostGone, delay]).then(() => {
      instance.document.lifecycleState = 'TERMINATED';
      instance.document.timeTerminated = now();
      const made = parts.get(instance.id);
      if (!made) return;
      resources.delete(made.vnicId);
      resources.delete(made.attachmentId);
      if (!preserveBootVolume) resources.delete(made.bootVolumeId);
    });
  };

  const remove = (instance: OciResource) => {
    resources.delete(instance.id);
    const attachments = resources.list(VNIC_ATTACHMENT, (document) => document.instanceId === instance.id);
    for (const attachment of attachments) resources.delete(attachment.id);
    void parts
      .get(instance.id)
      ?.host?.stop()
      .catch((error: unknown) =>
        console.error(`OCI emulator: cannot stop the host of ${instance.id}: ${String(error)}`),
      );
  };

  const routes: OciServiceRoute[] = [
    {
      method: 'GET',
      path: '/shapes',
      handle: (request, { region }) => {
        requireCompartment(resources, tenancyId, request.query.compartmentId);
        if (request.query.availabilityDomain !== undefined)
          requireDomain(region, request.query.availabilityDomain);
        return page(request, data.shapes.filter((shape) => !shape.hidden).map(shapeDocument));
      },
    },
    {
      method: 'POST',
      path: '/computeCapacityReports',
      handle: (request, { region }) => {
        const body = object(request.body);
        const compartmentId = requireCompartment(resources, tenancyId, string(body.compartmentId));
        const availabilityDomain = requireDomain(region, string(body.availabilityDomain));
        const requested = Array.isArray(body.shapeAvailabilities) ? body.shapeAvailabilities.map(object) : [];
        if (requested.length === 0 || requested.length > 10)
          throw invalidParameter('shapeAvailabilities must list 1 to 10 shapes');
        return answer({
          compartmentId,
          availabilityDomain,
          timeCreated: now(),
          shapeAvailabilities: requested.map((each) => {
            const name = string(each.instanceShape) ?? '';
            const known = data.shape(name) !== undefined;
            // A lasting shortage (a fault without `count`) shows in reports; a counted one is met at launch only.
            const full = faults.applies(
              'OutOfHostCapacity',
              { shape: name, region: region.name },
              { lasting: true },
            );
            return {
              instanceShape: name,
              availabilityStatus: !known
                ? 'HARDWARE_NOT_SUPPORTED'
                : full
                  ? 'OUT_OF_HOST_CAPACITY'
                  : 'AVAILABLE',
              availableCount: known && !full ? 8 : 0,
            };
          }),
        });
      },
    },
    {
      method: 'POST',
      path: '/instances',
      handle: (request, { region }) => {
        const body = object(request.body);
        const token = request.headers['opc-retry-token'];
        const requestHash = createHash('sha256').update(request.rawBody).digest('hex');
        if (typeof token === 'string') {
          const previous = retryTokens.get(token);
          if (previous) {
            if (previous.requestHash !== requestHash)
              throw new OciApiError(409, 'Conflict', 'The retry token was used for a different request.');
            return answer(resources.require(previous.instanceId, INSTANCE).document);
          }
        }
        const instance = launch(body, region.name, region.key, region.availabilityDomains);
        if (typeof token === 'string') retryTokens.set(token, { requestHash, instanceId: instance.id });
        return answer(instance.document, 200, {
          'opc-work-request-id': `ocid1.coreservicesworkrequest.oc1.${region.key.toLowerCase()}.${instance.id.slice(-20)}`,
        });
      },
    },
    {
      method: 'GET',
      path: '/instances/:instanceId',
      handle: (request) => answer(resources.require(request.params.instanceId, INSTANCE).document),
    },
    {
      method: 'DELETE',
      path: '/instances/:instanceId',
      handle: (request) => {
        const instance = resources.get(request.params.instanceId, INSTANCE);
        if (!instance || instance.document.lifecycleState === 'TERMINATED')
          throw new OciApiError(
            404,
            'NotAuthorizedOrNotFound',
            `Instance ${request.params.instanceId} not found`,
          );
        terminate(instance, request.query.preserveBootVolume === 'true');
        return empty(204, { 'opc-request-id': request.params.instanceId ?? '' });
      },
    },
    {
      method: 'GET',
      path: '/vnicAttachments',
      handle: (request, { region }) => {
        requireCompartment(resources, tenancyId, request.query.compartmentId);
        const found = resources
          .list(
            VNIC_ATTACHMENT,
            (document, resource) =>
              resource.region === region.name &&
              (request.query.instanceId === undefined || document.instanceId === request.query.instanceId),
          )
          .map((each) => each.document);
        return page(request, found);
      },
    },
  ];
  return { routes, terminate, remove };
}
