import type { InstanceConfiguration } from '../models/instance-configuration.js';
import type { InstanceOfferWithAvailability } from '../models/instances.js';
import type { JobProvisioningData } from '../models/runs.js';
import type { Volume } from '../models/volumes.js';
import type { ComputeWithCreateInstance, RunJobParams } from './compute.js';

/**
 * The `runJob` of VM backends (dstack's `ComputeWithCreateInstanceSupport.run_job`):
 * builds the `InstanceConfiguration` for the job (instance name = job name,
 * `instance_id` = `params.instanceId`, the launch's idempotency key, project key,
 * volumes, reservation, profile tags), restricts the offer's zones
 * to the first volume's zone, and calls `createInstance`.
 */
export function runJobWithCreateInstance(
  compute: Pick<ComputeWithCreateInstance, 'createInstance'>,
  params: RunJobParams,
): Promise<JobProvisioningData> {
  const { run, job } = params;
  const config: InstanceConfiguration = {
    project_name: run.project_name,
    instance_name: job.job_spec.job_name,
    instance_id: params.instanceId,
    agent_token: params.agentToken,
    agent_download_url: params.agentDownloadUrl ?? null,
    agent_download_sha256: params.agentDownloadSha256 ?? null,
    agent_download_size: params.agentDownloadSize ?? null,
    user: run.user,
    ssh_keys: [{ public: params.projectSshPublicKey.trim(), private: params.projectSshPrivateKey.trim() }],
    volumes: [...params.volumes],
    // The job's own (a service replica group may name another), as dstack's `run_job`.
    reservation: job.job_spec.requirements.reservation ?? null,
    tags: run.run_spec.merged_profile?.tags ?? null,
  };
  return compute.createInstance(
    restrictOfferToVolumeZone(params.offer, params.volumes),
    config,
    params.placementGroup,
  );
}

/** A copy of `offer` whose zones are limited to the zone of the first volume, when it has one. */
export function restrictOfferToVolumeZone(
  offer: InstanceOfferWithAvailability,
  volumes: readonly Volume[],
): InstanceOfferWithAvailability {
  const zone = volumes[0]?.provisioning_data?.availability_zone;
  if (zone == null) return { ...offer };
  const zones = offer.availability_zones ?? [zone];
  return { ...offer, availability_zones: zones.filter((candidate) => candidate === zone) };
}
