import { type Capability, type Compute, notImplemented } from '@dstack/core';
import { KUBERNETES_BACKEND_TYPE, type KubernetesConfig } from './kubernetes-config.js';

/**
 * What this Compute implements, declared on the plugin descriptor too. A
 * container backend runs one job per container and supports none of the
 * optional capabilities until you add them (see `CAPABILITIES` in @dstack/core).
 */
export const KUBERNETES_CAPABILITIES: readonly Capability[] = [];

/** Settings of `createKubernetesBackend`. */
export interface KubernetesBackendSettings {
  /**
   * The backend's config with creds (`KubernetesConfig`), as the configurator
   * reads it from the stored record. Required; no default.
   *
   * When the client talks HTTP, also accept an undici `dispatcher` here, so
   * tests can point the real client at an emulator (STYLE §9).
   */
  config: KubernetesConfig;
}

/**
 * Runs each job in a container on kubernetes, whose entrypoint starts the runner
 * (core's container entrypoint builder).
 *
 * Each method below is a stub that throws `NotImplementedError` naming what it
 * must do; the conformance test reports its checks as todo until you replace it.
 */
export class KubernetesCompute implements Compute {
  readonly type = KUBERNETES_BACKEND_TYPE;
  readonly capabilities = KUBERNETES_CAPABILITIES;
  readonly config: KubernetesConfig;

  constructor(settings: KubernetesBackendSettings) {
    this.config = settings.config;
  }

  /**
   * Offers for the requirements: the catalog's rows for this backend
   * (`requirementsToQueryFilter` → `Catalog.query` → `catalogItemToOffer`), kept
   * to `config.regions`, each with its availability (`withAvailability`).
   */
  getOffers = notImplemented<Compute['getOffers']>(
    'KubernetesCompute.getOffers',
    'must return the catalog offers matching the requirements in the configured regions, each with its availability',
  );

  /**
   * Starts the job's container (image `job.job_spec.image_name`, entrypoint
   * starting the runner) and returns at once with `hostname` null. Throws
   * `NoCapacityError` when the offer is gone.
   *
   * Idempotent on `params.instanceId` (dstack's instance id): a second call with
   * the same `instanceId` must return the container the first call started (or
   * fail), never start another, since the server retries launches it did not see
   * finish. Label the container with it (a Vast.ai label) and look the label up
   * first, or use the provider's idempotency key. The conformance suite checks this.
   *
   * The runner must require `params.agentToken`: give it to the container in
   * `DSTACK_RUNNER_TOKEN` (never on the runner's command line, nor in labels).
   * The conformance suite checks that the booted runner answers 401 without it.
   */
  runJob = notImplemented<Compute['runJob']>(
    'KubernetesCompute.runJob',
    "must start the job's container with the runner as entrypoint and params.agentToken in DSTACK_RUNNER_TOKEN, and return its JobProvisioningData without waiting",
  );

  /** Terminates the instance; succeeds when it is already gone (idempotent). */
  terminateInstance = notImplemented<Compute['terminateInstance']>(
    'KubernetesCompute.terminateInstance',
    'must terminate the instance and succeed when it is already gone',
  );

  /** Looks the instance up once and fills `hostname`, `internal_ip` and `ssh_port` when known. */
  updateProvisioningData = notImplemented<Compute['updateProvisioningData']>(
    'KubernetesCompute.updateProvisioningData',
    'must look the instance up once and fill hostname, internal_ip and ssh_port once known, without waiting',
  );
}

/** The kubernetes backend's Compute, for use without a server (tests, scripts). */
export function createKubernetesBackend(settings: KubernetesBackendSettings): KubernetesCompute {
  return new KubernetesCompute(settings);
}
