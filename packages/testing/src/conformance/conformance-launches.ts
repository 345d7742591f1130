/**
 * The conformance suite's launches: each with its own run name and dstack instance id, on the
 * cheapest provisionable offer (moving past offers that are gone), repeated launches on the offer
 * they were made on, and the instances still live, so the suite's clean-up can terminate them.
 */
import { randomUUID } from 'node:crypto';
import {
  type Compute,
  type ComputeWithCreateInstance,
  type InstanceOfferWithAvailability,
  type JobProvisioningData,
  NoCapacityError,
  type ProjectSshKeys,
  type Requirements,
} from '@dstack/core';
import { checkProvisioningData } from './compute-checks.js';
import { ConformanceViolation } from './conformance-violation.js';
import { conformanceInstanceConfiguration, conformanceRunJobParams } from './job-fixtures.js';
import { provisionableOffersByPrice } from './offer-checks.js';
import { DEFAULT_TEST_PROJECT_NAME, type TestBackendOptions } from './test-backend-options.js';

export type LaunchMethod = 'runJob' | 'createInstance';

/** One launch's names: its run name, its dstack instance id (the idempotency key), its agent token. */
export interface Launch {
  runName: string;
  instanceId: string;
  agentToken: string;
}

export class ConformanceLaunches {
  readonly #options: Pick<TestBackendOptions, 'projectName' | 'runnerDownloadUrl' | 'jobImage'>;
  readonly #keys: ProjectSshKeys;
  readonly #runJobRequirements: Requirements;
  /** Instances created and not yet terminated, by id. */
  readonly #live = new Map<string, JobProvisioningData>();
  #launches = 0;
  /** The offer each launch was made on, by dstack instance id. */
  readonly #launchedOffers = new Map<string, InstanceOfferWithAvailability>();

  constructor(
    options: Pick<TestBackendOptions, 'projectName' | 'runnerDownloadUrl' | 'jobImage'>,
    keys: ProjectSshKeys,
    runJobRequirements: Requirements,
  ) {
    this.#options = options;
    this.#keys = keys;
    this.#runJobRequirements = runJobRequirements;
  }

  /** A fresh launch: its own run name and dstack instance id (the idempotency key). */
  next(): Launch {
    this.#launches += 1;
    return {
      runName: `conformance-${this.#launches}`,
      instanceId: `conformance-${randomUUID()}`,
      agentToken: `conformance-token-${randomUUID()}`,
    };
  }

  /**
   * Launches on the cheapest provisionable offer. An offer that is gone (`NoCapacityError`: a
   * backend may keep a search's offers for a while, as dstack's cached ones do) moves on to the
   * next, as the server does, unless `firstOfferOnly` (the capacity checks want that error).
   */
  async launch(
    compute: Compute,
    method: LaunchMethod,
    launch = this.next(),
    { firstOfferOnly = false } = {},
  ): Promise<JobProvisioningData> {
    // A launch repeated with its instance id goes to the offer it was made on, as the server's
    // retry does (the offer is recorded with the launch): the backend's offers may have changed
    // since, e.g. the local host is now held by that very instance.
    const launchedOn = this.#launchedOffers.get(launch.instanceId);
    if (launchedOn) return this.#launchOn(compute, method, launch, launchedOn);
    const offers = provisionableOffersByPrice(await compute.getOffers(this.#runJobRequirements));
    if (offers.length === 0) {
      throw new ConformanceViolation(
        `${method} can be tried`,
        'getOffers returned no provisionable offer for the runJob requirements; set `runJobRequirements`',
      );
    }
    for (const [index, offer] of offers.entries()) {
      try {
        const started = await this.#launchOn(compute, method, launch, offer);
        this.#launchedOffers.set(launch.instanceId, offer);
        return started;
      } catch (error) {
        const last = firstOfferOnly || index === offers.length - 1;
        if (last || !NoCapacityError.isInstance(error)) throw error;
      }
    }
    throw new Error('unreachable: the last offer rethrows');
  }

  async #launchOn(
    compute: Compute,
    method: LaunchMethod,
    launch: Launch,
    offer: InstanceOfferWithAvailability,
  ): Promise<JobProvisioningData> {
    const projectName = this.#options.projectName ?? DEFAULT_TEST_PROJECT_NAME;
    const { runName, instanceId, agentToken } = launch;
    const started =
      method === 'runJob'
        ? await compute.runJob(
            conformanceRunJobParams({
              instanceId,
              agentToken,
              runName,
              projectName,
              offer,
              requirements: this.#runJobRequirements,
              keys: this.#keys,
              runnerDownloadUrl: this.#options.runnerDownloadUrl,
              imageName: this.#options.jobImage,
            }),
          )
        : await (compute as ComputeWithCreateInstance).createInstance(
            offer,
            conformanceInstanceConfiguration({
              instanceId,
              agentToken,
              instanceName: runName,
              projectName,
              keys: this.#keys,
            }),
            null,
          );
    if (typeof started?.instance_id === 'string') this.#live.set(started.instance_id, started);
    return checkProvisioningData(started, compute.type, method);
  }

  async terminate(compute: Compute, data: JobProvisioningData): Promise<void> {
    await terminate(compute, data);
    this.#live.delete(data.instance_id);
  }

  /** Records an instance as live (the suite's clean-up terminates it unless a test does). */
  track(data: JobProvisioningData): void {
    this.#live.set(data.instance_id, data);
  }

  /** Forgets an instance a test terminated. */
  forget(instanceId: string): void {
    this.#live.delete(instanceId);
  }

  /** Terminates what the tests left running (best effort). */
  async terminateLeft(compute: Compute): Promise<void> {
    try {
      for (const data of this.#live.values()) {
        await terminate(compute, data).catch(() => undefined);
      }
    } finally {
      this.#live.clear();
    }
  }
}

/** Terminates the instance `data` describes. */
export function terminate(compute: Compute, data: JobProvisioningData): Promise<void> {
  return compute.terminateInstance(data.instance_id, data.region, data.backend_data);
}
