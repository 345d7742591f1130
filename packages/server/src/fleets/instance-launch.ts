/**
 * New capacity, shared by the job path (an instance for one job) and the fleet
 * path (instances a fleet keeps by itself): a `pending` row is written before
 * any cloud call, so every machine we create is tracked; then offers are tried
 * in price order (at most `maxOffersTried`), a failure (capacity or any other
 * error) moving on to the next one. A backend that refused its credentials, or
 * kept throttling after a few tries of the same offer, is not tried again in
 * this launch. The first success makes the row `provisioning`; when every offer
 * failed the row ends `terminated`: `no_offers` when only capacity was missing,
 * `error` (saying which backend failed how) otherwise.
 *
 * The row's id is the launch's idempotency key (`RunJobParams.instanceId`,
 * `InstanceConfiguration.instance_id`): a server that dies after the cloud
 * launched the machine but before the result is stored leaves the row
 * `pending`, and the retry launches it again with the same id, so the backend
 * returns the machine it already has instead of a second one. Each offer is
 * recorded on the row before it is tried, and a retry tries that offer first:
 * the same key on another offer could not find the first machine.
 *
 * A launch nobody will retry (its job stopped, its fleet deleted) is given up
 * (`abandonPendingInstance`): a row with a recorded offer goes `terminating`,
 * and the instance pipeline launches it once more with the same id
 * (`relaunchStrandedInstance`) to learn its machine, then terminates it.
 */

import { setTimeout as sleep } from 'node:timers/promises';
import {
  type BackendFailureKind,
  type Compute,
  classifyBackendFailure,
  describeBackendFailure,
  getProvisioningTimeoutSeconds,
  type InstanceOfferWithAvailability,
  type InstanceTerminationReason,
  type JobProvisioningData,
  NoCapacityError,
  type Requirements,
  requireCapability,
} from '@dstack/core';
import { type Kysely, sql, type UpdateObject } from 'kysely';
import { projectOf } from '../accounts/projects.js';
import { newEncryptedAgentToken } from '../agents/agent-tokens.js';
import type { BackendOffer } from '../backends/offers.js';
import type { AppContext } from '../context.js';
import {
  instanceOfferColumn,
  instanceOfferOf,
  instanceProvisioningDataColumn,
  instanceRequirementsColumn,
} from '../db/json-columns.js';
import type { Database, FleetsTable, InstancesTable, JobsTable } from '../db/schema.js';
import { timeOrderedUuid } from '../db/time-ordered-ids.js';
import { errorMessage } from '../error-message.js';
import { eventTargets, recordEvent, SYSTEM_ACTOR } from '../events/event-recorder.js';
import { recordStatusChange, type StatusUpdate } from '../events/status-events.js';
import { instanceConfigurationOf, runJobParamsOf } from './launch-parameters.js';
import { clusterPlacementOf, launchPlacementGroup } from './placement-groups.js';

export async function nextInstanceNum(db: Kysely<Database>, fleetId: string): Promise<number> {
  const row = await db
    .selectFrom('instances')
    .select(sql<number>`COALESCE(MAX(instance_num), -1)`.as('max'))
    .where('fleet_id', '=', fleetId)
    .executeTakeFirst();
  return Number(row?.max ?? -1) + 1;
}

export interface PendingInstanceOptions {
  projectId: string;
  fleet: Pick<FleetsTable, 'id' | 'name'>;
  requirements: Requirements;
  /** Seconds the instance may stay idle; null = forever. */
  terminationIdleTime: number | null;
  /**
   * 1 when the instance is made for a job (it is busy from the start; the launch sets the
   * blocks the job takes), 0 for a fleet's own instance.
   */
  busyBlocks: number;
  /** The job the instance is made for: its "Instance created for job" event names it too. */
  job?: Pick<JobsTable, 'id' | 'project_id' | 'job_name' | 'run_id'>;
}

/**
 * Inserts a `pending` instance named `{fleet}-{n}` (dstack's naming) and returns it; with
 * `maxLive`, only while the fleet has fewer live instances than that (null otherwise). The
 * fleet row is locked meanwhile (a transaction is exclusive on SQLite), as dstack locks the
 * fleet it provisions in: two jobs or servers growing one fleet at once neither pass its `max`
 * nor take the same instance number.
 */
export function insertPendingInstance(
  app: AppContext,
  options: PendingInstanceOptions,
): Promise<InstancesTable>;
export function insertPendingInstance(
  app: AppContext,
  options: PendingInstanceOptions,
  maxLive: number | null,
): Promise<InstancesTable | null>;
export async function insertPendingInstance(
  app: AppContext,
  options: PendingInstanceOptions,
  maxLive: number | null = null,
): Promise<InstancesTable | null> {
  return app.db.transaction().execute(async (transaction) => {
    let fleetLock = transaction.selectFrom('fleets').select('id').where('id', '=', options.fleet.id);
    if (app.dialect === 'postgres') fleetLock = fleetLock.forUpdate();
    await fleetLock.execute();
    if (maxLive !== null) {
      const live = await transaction
        .selectFrom('instances')
        .select(sql<number>`COUNT(*)`.as('count'))
        .where('fleet_id', '=', options.fleet.id)
        .where('deleted', '=', 0)
        .where('status', 'not in', ['terminating', 'terminated'])
        .executeTakeFirst();
      if (Number(live?.count ?? 0) >= maxLive) return null;
    }
    const now = Date.now();
    const instanceNum = await nextInstanceNum(transaction, options.fleet.id);
    const row: InstancesTable = {
      id: timeOrderedUuid(now),
      project_id: options.projectId,
      fleet_id: options.fleet.id,
      name: `${options.fleet.name}-${instanceNum}`,
      instance_num: instanceNum,
      status: 'pending',
      unreachable: 0,
      termination_reason: null,
      termination_reason_message: null,
      created_at: now,
      last_processed_at: now,
      started_at: null,
      finished_at: null,
      backend: null,
      region: null,
      price: null,
      offer: null,
      job_provisioning_data: null,
      requirements: instanceRequirementsColumn.encode(options.requirements),
      instance_configuration: null,
      termination_idle_time: options.terminationIdleTime,
      termination_deadline: null,
      provisioning_deadline: null,
      first_termination_retry_at: null,
      last_termination_retry_at: null,
      idle_since: null,
      total_blocks: 1,
      busy_blocks: options.busyBlocks,
      deleted: 0,
      // Chosen with the row: every launch of it hands the same token to the backend.
      agent_token: newEncryptedAgentToken(app),
      lock_expires_at: null,
      lock_token: null,
      lock_owner: null,
    };
    await transaction.insertInto('instances').values(row).execute();
    await recordEvent(transaction, app.settings.events, {
      message: options.job
        ? 'Instance created for job. Instance status: PENDING'
        : 'Instance created to meet target fleet node count. Status: PENDING',
      actor: SYSTEM_ACTOR,
      targets: [eventTargets.instance(row), ...(options.job ? [eventTargets.job(options.job)] : [])],
    });
    return row;
  });
}

/**
 * Moves a `pending` instance on (guarded by `status = 'pending'`, and by no recorded offer with
 * `neverLaunched`), with its status event, in one transaction. Returns whether it moved.
 */
async function movePendingInstance(
  app: AppContext,
  instanceId: string,
  update: UpdateObject<Database, 'instances'> & StatusUpdate<'instances'>,
  neverLaunched = false,
): Promise<boolean> {
  return app.db.transaction().execute(async (transaction) => {
    let moved = transaction
      .updateTable('instances')
      .set(update)
      .where('id', '=', instanceId)
      .where('status', '=', 'pending');
    if (neverLaunched) moved = moved.where('offer', 'is', null);
    const row = await moved.returningAll().executeTakeFirst();
    if (!row) return false;
    await recordStatusChange(
      transaction,
      app.settings.events,
      'instances',
      { ...row, status: 'pending' },
      row,
    );
    return true;
  });
}

export type LaunchResult =
  | { launched: true; offer: BackendOffer; provisioningData: JobProvisioningData }
  | {
      launched: false;
      /** Each offer's failed launch, in the order tried. */
      failures: LaunchFailure[];
      /** The row was given up during the launch (its job stopped, its fleet deleted). */
      givenUp: boolean;
      /**
       * When backends said their capacity frees by itself (`NoCapacityError.retryAfterMs`: the
       * local host, held by its own instances): which, and the shortest wait; null otherwise.
       */
      capacityRetry: CapacityRetry | null;
    };

/** One offer's failed launch: where, what kind of failure (`classifyBackendFailure`), the backend's words. */
export interface LaunchFailure {
  readonly backend: string;
  /** `region/instance type` of the offer. */
  readonly offer: string;
  readonly kind: BackendFailureKind;
  readonly message: string;
}

/**
 * Whether only capacity was missing: no offer, or each failed with a capacity (quota, balance)
 * error. Then the job fails `failed_to_start_due_to_no_capacity` and the instance `no_offers`,
 * as in dstack; a refused key, throttling or another error says so instead.
 */
export function failedForCapacityOnly(failures: readonly LaunchFailure[]): boolean {
  return failures.every((failure) => failure.kind === 'no-capacity');
}

/**
 * The failures in one message, those that are not capacity first (`backend aws: authentication
 * failed: AuthFailure: …`), then each offer that had no capacity (`aws/us-east-1/g5.xlarge: …`).
 */
export function describeLaunchFailures(failures: readonly LaunchFailure[]): string {
  const errors = failures
    .filter((failure) => failure.kind !== 'no-capacity')
    .map((failure) => describeBackendFailure(failure.backend, failure.kind, failure.message));
  const capacity = failures
    .filter((failure) => failure.kind === 'no-capacity')
    .map((failure) => `${failure.backend}/${failure.offer}: ${failure.message}`);
  if (errors.length === 0)
    return capacity.length > 0 ? `every offer failed: ${capacity.join('; ')}` : 'no offers';
  return [...errors, ...capacity].join('; ');
}

/**
 * Pauses before each new try of a launch its backend throttled (`BackendRateLimitError`, HTTP
 * 429), on top of the backend's own quick retries: throttling usually passes within seconds.
 * After the last, the launch gives up on the backend.
 */
export const RATE_LIMITED_LAUNCH_RETRY_DELAYS_MS: readonly number[] = [1_000, 2_000, 4_000];

/** The pending row a launch is for: its id is the idempotency key, its `offer` the one last tried. */
export type PendingInstance = Pick<InstancesTable, 'id' | 'backend' | 'offer'>;

/**
 * `offers` with the offer the row records as last tried first (added when it is no longer
 * offered but its backend still is): a launch that may have reached the cloud is retried
 * where it went, with the same key.
 */
export function attemptedOfferFirst(
  instance: PendingInstance,
  offers: readonly BackendOffer[],
): BackendOffer[] {
  const attempted = instanceOfferOf(instance);
  if (attempted === null || instance.backend === null) return [...offers];
  const sameOffer = (entry: BackendOffer) =>
    entry.backend.type === instance.backend &&
    entry.offer.region === attempted.region &&
    entry.offer.instance.name === attempted.instance.name;
  const found = offers.find(sameOffer);
  if (found) return [found, ...offers.filter((entry) => entry !== found)];
  const backend = offers.find((entry) => entry.backend.type === instance.backend)?.backend;
  return backend ? [{ backend, offer: attempted }, ...offers] : [...offers];
}

/**
 * Tries `offers` in order with `launch` until one succeeds, and records the outcome on the
 * pending instance: `provisioning` with the offer and provisioning data (due at once for the
 * instance pipeline), or `terminated`: `no_offers` when only capacity was missing, `error`
 * otherwise. The offer the row records as tried before (a launch retried after a crash) goes
 * first; each offer is recorded before its launch. A throttled launch is tried again after each
 * of `rateLimitRetryDelaysMs`; a backend that refused its credentials or kept throttling is
 * skipped for the rest (its skipped offers are not counted against `maxOffersTried`).
 * The instance is split into the offer's `total_blocks`, of which `busyBlocksFor` are taken
 * (by the job it is launched for; none for a fleet's own instance).
 */
export async function launchOnFirstOffer(
  app: AppContext,
  instance: PendingInstance,
  offers: readonly BackendOffer[],
  launch: (entry: BackendOffer) => Promise<JobProvisioningData>,
  busyBlocksFor: (offer: InstanceOfferWithAvailability) => number = () => 0,
  rateLimitRetryDelaysMs: readonly number[] = RATE_LIMITED_LAUNCH_RETRY_DELAYS_MS,
): Promise<LaunchResult> {
  const instanceId = instance.id;
  const failures: LaunchFailure[] = [];
  // Backends that refused their credentials or kept throttling: their other offers would too.
  const givenUpBackends = new Set<string>();
  let capacityRetry: CapacityRetry | null = null;
  let attempts = 0;
  for (const entry of attemptedOfferFirst(instance, offers)) {
    if (attempts >= app.settings.backends.maxOffersTried) break;
    const { backend, offer } = entry;
    if (givenUpBackends.has(backend.type)) continue;
    attempts++;
    // Written before the cloud call, so that a retry after a crash goes to the same offer.
    const recorded = await app.db
      .updateTable('instances')
      .set({ backend: backend.type, region: offer.region, offer: instanceOfferColumn.encode(offer) })
      .where('id', '=', instanceId)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    // The row was given up meanwhile (its launch looked stranded, see `abandonPendingInstance`):
    // whoever did so terminates the machine of the offer it saw; a launch elsewhere would escape it.
    if (Number(recorded.numUpdatedRows) !== 1) return givenUpResult(failures);
    const attempt = await launchRetryingThrottled(() => launch(entry), rateLimitRetryDelaysMs);
    if (!attempt.launched) {
      const { error } = attempt;
      const kind = classifyBackendFailure(error);
      failures.push({
        backend: backend.type,
        offer: `${offer.region}/${offer.instance.name}`,
        kind,
        message: errorMessage(error),
      });
      if (kind === 'authentication' || kind === 'rate-limit') givenUpBackends.add(backend.type);
      if (NoCapacityError.isInstance(error) && error.retryAfterMs !== null) {
        capacityRetry = withCapacityRetry(capacityRetry, error.retryAfterMs, backend.type);
      }
      continue;
    }
    const { provisioningData } = attempt;
    const timeoutSeconds = getProvisioningTimeoutSeconds(backend.plugin, offer.instance.name);
    const stored = await movePendingInstance(app, instanceId, {
      status: 'provisioning',
      backend: backend.type,
      region: offer.region,
      price: offer.price,
      offer: instanceOfferColumn.encode(offer),
      job_provisioning_data: instanceProvisioningDataColumn.encode(provisioningData),
      // A plugin's offer may leave blocks out: such an instance is one block.
      total_blocks: offer.total_blocks ?? 1,
      busy_blocks: busyBlocksFor(offer),
      started_at: Date.now(),
      provisioning_deadline: Date.now() + timeoutSeconds * 1000,
      last_processed_at: 0,
    });
    // Given up while the call ran: the row is terminating and the instance pipeline ends this
    // very machine (a launch with the same id returns it).
    if (!stored) return givenUpResult(failures);
    return { launched: true, offer: entry, provisioningData };
  }
  await movePendingInstance(app, instanceId, {
    status: 'terminated',
    termination_reason: failedForCapacityOnly(failures) ? 'no_offers' : 'error',
    termination_reason_message: describeLaunchFailures(failures),
    deleted: 1,
    finished_at: Date.now(),
  });
  return { launched: false, failures, givenUp: false, capacityRetry };
}

/** `launch()`, tried again after each of `delaysMs` while its backend throttles it. */
async function launchRetryingThrottled(
  launch: () => Promise<JobProvisioningData>,
  delaysMs: readonly number[],
): Promise<{ launched: true; provisioningData: JobProvisioningData } | { launched: false; error: unknown }> {
  for (let retry = 0; ; retry++) {
    try {
      return { launched: true, provisioningData: await launch() };
    } catch (error) {
      const delay = delaysMs[retry];
      if (classifyBackendFailure(error) !== 'rate-limit' || delay === undefined)
        return { launched: false, error };
      await sleep(delay);
    }
  }
}

type CapacityRetry = { afterMs: number; backends: string[] };

function withCapacityRetry(previous: CapacityRetry | null, afterMs: number, backend: string): CapacityRetry {
  return {
    afterMs: Math.min(previous?.afterMs ?? afterMs, afterMs),
    backends: [...new Set([...(previous?.backends ?? []), backend])],
  };
}

function givenUpResult(failures: readonly LaunchFailure[]): LaunchResult {
  return { launched: false, failures: [...failures], givenUp: true, capacityRetry: null };
}

/** What became of a pending row given up by `abandonPendingInstance`. */
export type AbandonOutcome =
  /** No offer was recorded: no backend was ever called, the row is `terminated`. */
  | 'terminated'
  /** An offer was recorded: the row is `terminating`, the instance pipeline ends its machine. */
  | 'terminating'
  /** The row was no longer pending (launched, or given up by someone else). */
  | 'not-pending';

/**
 * Gives up a `pending` instance whose owner no longer wants it (its job is stopping or gone,
 * its fleet deleted). Each step is guarded by `status = 'pending'`, and `launchOnFirstOffer`
 * records an offer only on a pending row and stops when it cannot: so a launch still running
 * somewhere either recorded its offer before this (and the row goes `terminating`, to be
 * re-launched with the same id and terminated), or calls no backend after it.
 */
export async function abandonPendingInstance(
  app: AppContext,
  instanceId: string,
  reason: InstanceTerminationReason,
  message: string,
): Promise<AbandonOutcome> {
  const now = Date.now();
  const neverLaunched = await movePendingInstance(
    app,
    instanceId,
    {
      status: 'terminated',
      termination_reason: reason,
      termination_reason_message: message,
      deleted: 1,
      finished_at: now,
    },
    true,
  );
  if (neverLaunched) return 'terminated';
  const mayHaveLaunched = await movePendingInstance(app, instanceId, {
    status: 'terminating',
    termination_reason: reason,
    termination_reason_message: message,
    last_processed_at: 0,
  });
  return mayHaveLaunched ? 'terminating' : 'not-pending';
}

/**
 * Learns the machine of a launch whose result was never stored (the row has an offer but no
 * provisioning data) by launching it again with the same id on the recorded offer, the way
 * its owner launched it: `runJob` for a job's instance, `createInstance` for a fleet's. By the
 * backend contract this returns the machine the first launch started; when there was none it
 * starts one, which the caller terminates at once, and the id keeps it to one machine.
 */
export async function relaunchStrandedInstance(
  app: AppContext,
  instance: InstancesTable,
  compute: Compute,
): Promise<JobProvisioningData> {
  const offer = instanceOfferOf(instance);
  if (offer === null) throw new Error(`instance ${instance.name} has no recorded offer`);
  const project = await projectOf(app, instance.project_id);
  const fleet = instance.fleet_id
    ? await app.db.selectFrom('fleets').selectAll().where('id', '=', instance.fleet_id).executeTakeFirst()
    : undefined;
  // The group the first launch went into (a cluster's), so the repeated call is the same request.
  const backend = (await app.backends.getProjectBackends(project.id)).find(
    (each) => each.type === compute.type,
  );
  const placementGroup =
    fleet && backend
      ? await launchPlacementGroup(
          app,
          project,
          fleet,
          await clusterPlacementOf(app, project, fleet, instance),
          {
            backend,
            offer,
          },
        ).catch(() => null)
      : null;
  const job = await app.db
    .selectFrom('jobs')
    .selectAll()
    .where('instance_id', '=', instance.id)
    .orderBy('submitted_at', 'desc')
    .executeTakeFirst();
  if (job) {
    const run = await app.db
      .selectFrom('runs')
      .selectAll()
      .where('id', '=', job.run_id)
      .executeTakeFirstOrThrow();
    const paramsFor = await runJobParamsOf(app, { run, job, project, instanceId: instance.id });
    return compute.runJob({ ...paramsFor(offer), placementGroup });
  }
  const creator = requireCapability(compute, 'create-instance');
  return creator.createInstance(
    offer,
    await instanceConfigurationOf(app, project, instance, fleet),
    placementGroup,
  );
}
