/**
 * Fleets: the instance pools runs are placed in. A project with the local
 * backend gets a `local` fleet out of the box (when it may use that backend),
 * so the quickstart needs no fleet file; a project without any fleet gets one made for each run.
 */
import { randomUUID } from 'node:crypto';
import {
  ConfigurationError,
  DEFAULT_RUN_IDLE_DURATION,
  type Fleet,
  type FleetConfiguration,
  fleetConfigurationSchema,
  type Instance,
  type InstanceOfferWithAvailability,
  ResourceNotFoundError,
  ServerClientError,
  validateConfigurationOfType,
} from '@dstack/core';
import type { AppContext } from '../context.js';
import { fleetConfigurationOf, fleetSpecColumn } from '../db/json-columns.js';
import { requireEachFound, requireFound } from '../db/named-resources.js';
import type { FleetsTable, ProjectsTable, UsersTable } from '../db/schema.js';
import { type EventActor, eventTargets, recordEvent, SYSTEM_ACTOR } from '../events/event-recorder.js';
import { recordStatusChange } from '../events/status-events.js';
import { dropUnsetNulls, mergeProfileUnder } from '../http/explicit-nulls.js';
import { overrideClaimedRows } from '../pipelines/pipeline.js';
import { refuseFleetWithoutBackends } from './fleet-backends.js';
import { fleetOf, instanceOf } from './fleet-models.js';
import { fleetOffers, topUpFleetInstances } from './fleet-provisioning.js';
import { fleetNodesOf, liveFleetInstances, terminateSpareInstances } from './fleet-rows.js';
import { applySshFleet, withoutKeyContents } from './ssh-fleets.js';
import { refuseUnsupportedFleetFields } from './unsupported-fields.js';

/** Stores a new fleet with its "Fleet created" event. */
async function insertFleet(app: AppContext, fleet: FleetsTable, actor: EventActor): Promise<void> {
  await app.db.transaction().execute(async (transaction) => {
    await transaction.insertInto('fleets').values(fleet).execute();
    await recordEvent(transaction, app.settings.events, {
      message: `Fleet created. Status: ${fleet.status.toUpperCase()}`,
      actor,
      targets: [eventTargets.fleet(fleet)],
    });
  });
}

function newFleetRow(
  projectId: string,
  name: string,
  configuration: FleetConfiguration,
  autoCreated: boolean,
): FleetsTable {
  const now = Date.now();
  return {
    id: randomUUID(),
    project_id: projectId,
    name,
    status: 'active',
    status_message: null,
    spec: fleetSpecColumn.encode({ configuration }),
    created_at: now,
    last_processed_at: now,
    auto_created: autoCreated ? 1 : 0,
    deleted: 0,
    lock_expires_at: null,
    lock_token: null,
    lock_owner: null,
  };
}

/**
 * Creates a default fleet, named after the backend (`local`), in every project with a
 * backend on the server's host that it may use (see host-backends.ts) and no fleet of that name.
 */
export async function ensureDefaultLocalFleets(app: AppContext): Promise<void> {
  const registry = app.backends;
  const configured = await app.db.selectFrom('backends').select('type').distinct().execute();
  const hostTypes: string[] = [];
  for (const { type } of configured) {
    // A type whose package is missing is reported when its projects load; it gets no fleet.
    const plugin = await registry.getPlugin(type).catch(() => undefined);
    if (plugin?.runsOnServerHost) hostTypes.push(type);
  }
  if (hostTypes.length === 0) return;
  const rows = await app.db
    .selectFrom('backends')
    .innerJoin('projects', 'projects.id', 'backends.project_id')
    .select(['projects.id as id', 'backends.type as type'])
    .where('backends.type', 'in', hostTypes)
    .where('projects.deleted', '=', 0)
    .execute();
  for (const { id, type } of rows) {
    // Only a backend the registry builds: a plain user's project is refused the server's host.
    const usable = await registry.getProjectBackends(id);
    if (!usable.some((backend) => backend.type === type)) continue;
    const existing = await app.db
      .selectFrom('fleets')
      .select('id')
      .where('project_id', '=', id)
      .where('name', '=', type)
      .where('deleted', '=', 0)
      .executeTakeFirst();
    if (existing) continue;
    const configuration = fleetConfigurationSchema.parse({
      type: 'fleet',
      name: type,
      nodes: { min: 0, target: 0, max: null },
      backends: [type],
      idle_duration: DEFAULT_RUN_IDLE_DURATION,
    });
    await insertFleet(app, newFleetRow(id, type, configuration, false), SYSTEM_ACTOR);
  }
}

/**
 * A fleet made for one run in a project without fleets (without cluster fleets, for a multi-node
 * run: then `cluster` makes it one, as dstack did); deleted by the fleet pipeline once empty.
 */
export async function createRunFleet(
  app: AppContext,
  projectId: string,
  runName: string,
  cluster = false,
): Promise<FleetsTable> {
  const configuration = fleetConfigurationSchema.parse({
    type: 'fleet',
    name: runName,
    nodes: { min: 0, target: 0, max: null },
    ...(cluster ? { placement: 'cluster' } : {}),
  });
  const row = newFleetRow(projectId, runName, configuration, true);
  await insertFleet(app, row, SYSTEM_ACTOR);
  return row;
}

export async function activeFleets(app: AppContext, projectId: string): Promise<FleetsTable[]> {
  return app.db
    .selectFrom('fleets')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('deleted', '=', 0)
    .where('status', '=', 'active')
    .orderBy('auto_created')
    .orderBy('created_at')
    .execute();
}

/**
 * The configuration a fleet request carries, validated; errors are positioned at `path`. Explicit
 * nulls (dstack's client sends every unset field so) are unset fields, and a spec's `profile`
 * fills what the configuration leaves unset, as for runs.
 */
function validatedFleetConfiguration(
  input: unknown,
  path: readonly string[],
  profile?: unknown,
): FleetConfiguration {
  const configuration = dropUnsetNulls(input);
  return validateConfigurationOfType(
    isRecord(configuration) && isRecord(profile) ? mergeProfileUnder(configuration, profile) : configuration,
    'fleet',
    path,
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** dstack's `FleetPlan`. */
export type FleetPlan = {
  project_name: string;
  user: string;
  spec: Record<string, unknown>;
  effective_spec: Record<string, unknown> | null;
  current_resource: Fleet | null;
  offers: InstanceOfferWithAvailability[];
  total_offers: number;
  max_offer_price: number | null;
  action: 'create' | 'update';
};

/** Offers a plan lists at most (dstack's CLI shows the first few). */
const FLEET_PLAN_MAX_OFFERS = 50;

/**
 * dstack's `fleets/get_plan`: what applying the spec would do. The spec is echoed as sent (the
 * client applies it and compares it with the current fleet's); offers are those one instance of
 * a cloud fleet would take (none for an SSH fleet, whose hosts are given).
 */
export async function getFleetPlan(
  app: AppContext,
  project: ProjectsTable,
  user: UsersTable,
  spec: { configuration: unknown } & Record<string, unknown>,
): Promise<FleetPlan> {
  const configuration = validatedFleetConfiguration(
    spec.configuration,
    ['spec', 'configuration'],
    spec.profile,
  );
  const backends = await app.backends.getProjectBackends(project.id);
  refuseUnsupportedFleetFields(configuration, backends);
  const existing =
    configuration.name === undefined || configuration.name === null
      ? null
      : await getFleet(app, project, configuration.name).catch((error: unknown) => {
          if (ResourceNotFoundError.isInstance(error)) return null;
          throw error;
        });
  if (configuration.ssh_config === undefined) refuseFleetWithoutBackends(configuration, backends);
  const offers =
    configuration.ssh_config === undefined
      ? (await fleetOffers(app, project.id, configuration)).map((entry) => entry.offer)
      : [];
  return {
    project_name: project.name,
    user: user.name,
    spec,
    effective_spec: null,
    current_resource: existing,
    offers: offers.slice(0, FLEET_PLAN_MAX_OFFERS),
    total_offers: offers.length,
    max_offer_price: offers.reduce<number | null>((max, offer) => Math.max(max ?? 0, offer.price), null),
    action: existing ? 'update' : 'create',
  };
}

/**
 * dstack's `fleets/delete_instances` (`dstack fleet delete NAME -i N`): terminates the fleet's
 * instances numbered `instanceNums`. A number the fleet does not have, or an instance running a
 * job, refuses the whole request.
 */
export async function deleteFleetInstances(
  app: AppContext,
  project: ProjectsTable,
  name: string,
  instanceNums: readonly number[],
): Promise<void> {
  const fleet = requireFound(
    'Fleet',
    name,
    await app.db
      .selectFrom('fleets')
      .select(['id', 'name'])
      .where('project_id', '=', project.id)
      .where('name', '=', name)
      .where('deleted', '=', 0)
      .executeTakeFirst(),
  );
  const instances = await app.db
    .selectFrom('instances')
    .select(['id', 'instance_num', 'status', 'busy_blocks'])
    .where('fleet_id', '=', fleet.id)
    .where('deleted', '=', 0)
    .where('instance_num', 'in', [...instanceNums])
    .execute();
  const missing = instanceNums.filter((num) => !instances.some((instance) => instance.instance_num === num));
  if (missing.length > 0) {
    throw new ResourceNotFoundError(`Fleet ${name} has no instance ${missing.join(', ')}`);
  }
  const busy = instances.filter((instance) => instance.status === 'busy' || instance.busy_blocks > 0);
  if (busy.length > 0) {
    throw new ServerClientError(
      `Fleet ${name} instance ${busy.map((instance) => instance.instance_num).join(', ')} is running a job; stop its run first`,
      { fields: [['instance_nums']] },
    );
  }
  const ending = instances.filter(
    (instance) => instance.status !== 'terminating' && instance.status !== 'terminated',
  );
  await overrideClaimedRows(
    app.db,
    'instances',
    ending.map((instance) => instance.id),
    { status: 'terminating', termination_reason: 'terminated_by_user' },
  );
  app.wakeUps.wake('instances');
}

export async function applyFleet(
  app: AppContext,
  project: ProjectsTable,
  configurationInput: unknown,
  options: {
    /** The spec's `profile`, filling what the configuration leaves unset. */
    profile?: unknown;
    /** Who applies it: the request's user (the tests' services act as the system). */
    actor?: EventActor;
  } = {},
): Promise<Fleet> {
  const { profile, actor = SYSTEM_ACTOR } = options;
  const configuration = validatedFleetConfiguration(
    configurationInput,
    ['plan', 'spec', 'configuration'],
    profile,
  );
  const backends = await app.backends.getProjectBackends(project.id);
  refuseUnsupportedFleetFields(configuration, backends);
  const name = configuration.name ?? `fleet-${randomUUID().slice(0, 8)}`;
  const existing = await app.db
    .selectFrom('fleets')
    .selectAll()
    .where('project_id', '=', project.id)
    .where('name', '=', name)
    .where('deleted', '=', 0)
    .executeTakeFirst();
  if (existing?.status === 'terminating') {
    throw new ServerClientError(`Fleet ${name} is being deleted; apply it again once it is gone`, {
      code: 'resource_exists',
    });
  }
  if (configuration.ssh_config !== undefined || (existing && fleetConfigurationOf(existing).ssh_config)) {
    await applySshFleetConfiguration(app, project, { ...configuration, name }, existing, actor);
    return getFleet(app, project, name);
  }
  refuseFleetWithoutBackends(configuration, backends);
  const spec = fleetSpecColumn.encode({ configuration: { ...configuration, name } });
  let fleet: FleetsTable;
  if (existing) {
    await app.db
      .updateTable('fleets')
      .set({ spec, last_processed_at: 0 })
      .where('id', '=', existing.id)
      .execute();
    fleet = { ...existing, spec };
  } else {
    // Due at once: the fleet pipeline provisions its instances.
    fleet = { ...newFleetRow(project.id, name, { ...configuration, name }, false), last_processed_at: 0 };
    await insertFleet(app, fleet, actor);
  }
  await scaleToTarget(app, fleet);
  app.wakeUps.wake('fleets');
  return getFleet(app, project, name);
}

/** An SSH fleet: deployed to its hosts before it is recorded (see `ssh-fleets.ts`). */
async function applySshFleetConfiguration(
  app: AppContext,
  project: ProjectsTable,
  configuration: FleetConfiguration & { name: string },
  existing: FleetsTable | undefined,
  actor: EventActor,
): Promise<void> {
  const sshConfig = configuration.ssh_config;
  if (sshConfig === undefined) {
    throw new ConfigurationError(
      `Fleet ${configuration.name} is an SSH fleet: it keeps ssh_config (delete it to make a cloud fleet)`,
      { path: ['plan', 'spec', 'configuration', 'ssh_config'] },
    );
  }
  if (existing && fleetConfigurationOf(existing).ssh_config === undefined) {
    throw new ConfigurationError(
      `Fleet ${configuration.name} is a cloud fleet: delete it before applying it with ssh_config`,
      { path: ['plan', 'spec', 'configuration', 'ssh_config'] },
    );
  }
  const stored = { ...configuration, ssh_config: withoutKeyContents(sshConfig) };
  const row = existing
    ? { ...existing, spec: fleetSpecColumn.encode({ configuration: stored }) }
    : newFleetRow(project.id, configuration.name, stored, false);
  await applySshFleet(app, project, row, sshConfig, existing !== undefined, actor);
  app.wakeUps.wake('fleets');
}

/**
 * Applying `nodes` provisions `target` instances (dstack creates them on apply); re-applying
 * with a smaller target terminates instances without jobs down to it. The fleet pipeline
 * then keeps the count within `min..max`.
 */
async function scaleToTarget(app: AppContext, fleet: FleetsTable): Promise<void> {
  const configuration = fleetConfigurationOf(fleet);
  if (configuration.nodes === undefined) return;
  const { target } = fleetNodesOf(configuration);
  const live = (await liveFleetInstances(app, fleet.id)).length;
  if (live < target) await topUpFleetInstances(app, fleet, target);
  else if (live > target) await terminateSpareInstances(app, fleet.id, live - target, 'terminated_by_user');
}

export async function getFleet(
  app: AppContext,
  project: ProjectsTable,
  selector: string | { name?: string | null; id?: string | null },
): Promise<Fleet> {
  const { name, id } = typeof selector === 'string' ? { name: selector, id: null } : selector;
  let query = app.db
    .selectFrom('fleets')
    .selectAll()
    .where('project_id', '=', project.id)
    .where('deleted', '=', 0);
  query = id != null ? query.where('id', '=', id) : query.where('name', '=', name ?? '');
  const fleet = requireFound('Fleet', name ?? id ?? '', await query.executeTakeFirst());
  const instances = await app.db
    .selectFrom('instances')
    .selectAll()
    .where('fleet_id', '=', fleet.id)
    .execute();
  return fleetOf(fleet, project.name, instances);
}

/** dstack's `instances/get`: one of the project's instances (deleted ones too, as dstack keeps them), by id. */
export async function getInstance(app: AppContext, project: ProjectsTable, id: string): Promise<Instance> {
  const instance = await app.db
    .selectFrom('instances')
    .selectAll()
    .where('id', '=', id)
    .where('project_id', '=', project.id)
    .executeTakeFirst();
  if (!instance) throw new ResourceNotFoundError(`Instance ${id} not found`);
  const fleet = instance.fleet_id
    ? await app.db.selectFrom('fleets').select('name').where('id', '=', instance.fleet_id).executeTakeFirst()
    : undefined;
  return instanceOf(instance, project.name, fleet?.name ?? null);
}

export async function listFleets(app: AppContext, project: ProjectsTable): Promise<Fleet[]> {
  const fleets = await app.db
    .selectFrom('fleets')
    .selectAll()
    .where('project_id', '=', project.id)
    .where('deleted', '=', 0)
    .orderBy('created_at')
    .execute();
  if (fleets.length === 0) return [];
  const instances = await app.db
    .selectFrom('instances')
    .selectAll()
    .where(
      'fleet_id',
      'in',
      fleets.map((fleet) => fleet.id),
    )
    .where('deleted', '=', 0)
    .execute();
  return fleets.map((fleet) =>
    fleetOf(
      fleet,
      project.name,
      instances.filter((instance) => instance.fleet_id === fleet.id),
    ),
  );
}

/** Marks fleets terminating; the fleet pipeline terminates their idle instances, then the fleet. */
export async function deleteFleets(
  app: AppContext,
  project: ProjectsTable,
  names: readonly string[],
  actor: EventActor = SYSTEM_ACTOR,
): Promise<void> {
  const fleets = requireEachFound(
    'Fleet',
    names,
    await app.db
      .selectFrom('fleets')
      .selectAll()
      .where('project_id', '=', project.id)
      .where('name', 'in', [...names])
      .where('deleted', '=', 0)
      .execute(),
    (fleet) => fleet.name,
  );
  const busy = await app.db
    .selectFrom('instances')
    .select('fleet_id')
    .where(
      'fleet_id',
      'in',
      fleets.map((fleet) => fleet.id),
    )
    .where('status', '=', 'busy')
    .where('deleted', '=', 0)
    .execute();
  if (busy.length > 0) {
    const busyNames = fleets
      .filter((fleet) => busy.some((row) => row.fleet_id === fleet.id))
      .map((fleet) => fleet.name);
    throw new ServerClientError(`Fleet ${busyNames.join(', ')} has busy instances; stop their runs first`);
  }
  const update = { status: 'terminating' } as const;
  await app.db.transaction().execute(async (transaction) => {
    await overrideClaimedRows(
      transaction,
      'fleets',
      fleets.map((fleet) => fleet.id),
      update,
    );
    for (const fleet of fleets) {
      await recordStatusChange(transaction, app.settings.events, 'fleets', fleet, update, actor);
    }
  });
  app.wakeUps.wake('fleets');
}
