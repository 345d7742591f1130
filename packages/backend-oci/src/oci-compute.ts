import {
  type Capability,
  type ComputeWithCreateInstance,
  type ComputeWithInstanceVolumes,
  type ComputeWithPrivileged,
  type JobProvisioningData,
  notImplemented,
  type RunJobParams,
  runJobWithCreateInstance,
} from '@dstack/core';
import { OCI_BACKEND_TYPE, type OciConfig } from './oci-config.js';

/**
 * What this Compute implements, declared on the plugin descriptor too. A VM
 * backend starts the shim on its hosts, so it supports fleets (`createInstance`),
 * privileged runs and instance (host path) volumes. Add `volumes`, `gateways`,
 * `multinode`, … when you implement them (see `CAPABILITIES` in @dstack/core).
 */
export const OCI_CAPABILITIES: readonly Capability[] = ['create-instance', 'privileged', 'instance-volumes'];

/** Settings of `createOciBackend`. */
export interface OciBackendSettings {
  /**
   * The backend's config with creds (`OciConfig`), as the configurator
   * reads it from the stored record. Required; no default.
   *
   * When the client talks HTTP, also accept an undici `dispatcher` here, so
   * tests can point the real client at an emulator (STYLE §9).
   */
  config: OciConfig;
}

/**
 * Runs jobs on oci VMs: `createInstance` launches a VM whose cloud-init
 * starts the shim (core's agent bootstrap builders), and `runJob` is
 * `createInstance` for the job (core's `runJobWithCreateInstance`).
 *
 * Each method below is a stub that throws `NotImplementedError` naming what it
 * must do; the conformance test reports its checks as todo until you replace it.
 */
export class OciCompute
  implements ComputeWithCreateInstance, ComputeWithPrivileged, ComputeWithInstanceVolumes
{
  readonly type = OCI_BACKEND_TYPE;
  readonly capabilities = OCI_CAPABILITIES;
  readonly config: OciConfig;

  constructor(settings: OciBackendSettings) {
    this.config = settings.config;
  }

  /**
   * Offers for the requirements: the catalog's rows for this backend
   * (`requirementsToQueryFilter` → `Catalog.query` → `catalogItemToOffer`), kept
   * to `config.regions`, each with its availability (`withAvailability`).
   */
  getOffers = notImplemented<ComputeWithCreateInstance['getOffers']>(
    'OciCompute.getOffers',
    'must return the catalog offers matching the requirements in the configured regions, each with its availability',
  );

  /**
   * Launches a VM for the offer with the shim started by cloud-init; returns at
   * once with `hostname` null. Throws `NoCapacityError` when the provider has
   * no capacity (after deleting anything half-created).
   *
   * Idempotent on `config.instance_id` (dstack's instance id): a second call with
   * the same `instance_id` must return the VM the first call launched (or fail),
   * never launch another, since the server retries launches it did not see finish.
   * Pass it as the provider's idempotency key (EC2 `ClientToken`), derive the VM
   * name from it (GCP names are unique per zone) or tag the VM with it and look
   * the tag up first. The conformance suite checks this.
   *
   * The shim must require `config.agent_token`: cloud-init writes it to a file
   * only root may read (`write_files` with `permissions: '0600'`) and starts the
   * shim with `--token-file` (or in `DSTACK_SHIM_TOKEN`), never on the shim's
   * command line, nor in tags or labels. The conformance suite checks that the
   * booted shim answers 401 without it.
   */
  createInstance = notImplemented<ComputeWithCreateInstance['createInstance']>(
    'OciCompute.createInstance',
    'must launch a VM for the offer whose cloud-init starts the shim with config.agent_token, and return its JobProvisioningData without waiting for it to boot',
  );

  runJob(params: RunJobParams): Promise<JobProvisioningData> {
    return runJobWithCreateInstance(this, params);
  }

  /** Terminates the instance; succeeds when it is already gone (idempotent). */
  terminateInstance = notImplemented<ComputeWithCreateInstance['terminateInstance']>(
    'OciCompute.terminateInstance',
    'must terminate the instance and succeed when it is already gone',
  );

  /** Looks the instance up once and fills `hostname`, `internal_ip` and `ssh_port` when known. */
  updateProvisioningData = notImplemented<ComputeWithCreateInstance['updateProvisioningData']>(
    'OciCompute.updateProvisioningData',
    'must look the instance up once and fill hostname, internal_ip and ssh_port once known, without waiting',
  );
}

/** The oci backend's Compute, for use without a server (tests, scripts). */
export function createOciBackend(settings: OciBackendSettings): OciCompute {
  return new OciCompute(settings);
}
