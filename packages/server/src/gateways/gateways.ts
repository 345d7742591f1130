/**
 * Gateways (`type: gateway`, dstack's gateways service): created `submitted` and launched by the
 * gateway pipeline; one per name in a project; at most one the project's default, which services
 * without `gateway:` are published on. A custom certificate's key is stored encrypted and never
 * shown. Deleting marks the gateway `to_be_deleted`; its pipeline terminates the instance.
 */
import { randomUUID } from 'node:crypto';
import {
  type Gateway,
  type GatewayConfiguration,
  type GatewayPlan,
  type GatewaySpec,
  REDACTED_PRIVATE_KEY,
  ServerClientError,
  validateConfigurationOfType,
} from '@dstack/core';
import { serializeProjectWrites } from '../accounts/projects.js';
import { newAgentToken } from '../agents/agent-tokens.js';
import type { AppContext } from '../context.js';
import {
  gatewayConfigurationColumn,
  gatewayConfigurationOf,
  gatewayProvisioningDataOf,
} from '../db/json-columns.js';
import { nameTakenError, requireEachFound, requireFound } from '../db/named-resources.js';
import type { GatewaysTable, ProjectsTable, UsersTable } from '../db/schema.js';
import {
  type EventActor,
  eventTargets,
  recordEvent,
  recordEvents,
  SYSTEM_ACTOR,
  userActor,
} from '../events/event-recorder.js';
import { dropUnsetNulls } from '../http/explicit-nulls.js';
import { isoTime } from '../http/iso-time.js';
import { overrideClaimedRows } from '../pipelines/pipeline.js';
import { gatewayComputeOf } from './gateway-backends.js';
import { checkCustomCertificate } from './gateway-certificates.js';
import { refuseUnsupportedGatewayFields } from './unsupported-fields.js';

function validatedGatewayConfiguration(input: unknown): GatewayConfiguration {
  return validateConfigurationOfType(input, 'gateway', ['configuration']);
}

/** The project's gateways that exist for users: neither deleted nor being deleted. */
export function liveGateways(app: AppContext, projectId: string) {
  return app.db
    .selectFrom('gateways')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('deleted', '=', 0)
    .where('to_be_deleted', '=', 0);
}

/** The project's live gateway `name`, or the not-found error naming it. */
async function liveGatewayNamed(app: AppContext, projectId: string, name: string): Promise<GatewaysTable> {
  return requireFound(
    'Gateway',
    name,
    await liveGateways(app, projectId).where('name', '=', name).executeTakeFirst(),
  );
}

function gatewayOf(row: GatewaysTable, projectName: string): Gateway {
  const configuration = gatewayConfigurationOf(row);
  const provisioning = gatewayProvisioningDataOf(row);
  const replicaStatus = row.status === 'failed' ? 'terminated' : row.status;
  return {
    id: row.id,
    name: row.name,
    project_name: projectName,
    configuration: {
      ...configuration,
      default: row.is_default === 1,
      domain: row.wildcard_domain ?? undefined,
    },
    created_at: isoTime(row.created_at) as string,
    status: row.status,
    status_message: row.status_message,
    hostname: null,
    wildcard_domain: row.wildcard_domain,
    default: row.is_default === 1,
    replicas: [
      {
        hostname: provisioning?.ip_address ?? null,
        replica_num: 0,
        backend: configuration.backend,
        region: configuration.region,
        created_at: isoTime(row.created_at) as string,
        status: replicaStatus,
        status_message: row.status_message,
      },
    ],
    backend: null,
    region: null,
    ip_address: provisioning?.ip_address ?? null,
    instance_id: provisioning?.instance_id ?? null,
  };
}

async function projectNameOf(app: AppContext, projectId: string): Promise<string> {
  const project = await app.db
    .selectFrom('projects')
    .select('name')
    .where('id', '=', projectId)
    .executeTakeFirst();
  return project?.name ?? '';
}

function customCertificateNeedsDomain(): ServerClientError {
  return new ServerClientError('domain: required with a custom certificate (the domain it covers)', {
    fields: [['configuration', 'domain']],
  });
}

/** `gateways/create`: records the gateway `submitted`; its pipeline launches it. */
export async function createGateway(
  app: AppContext,
  project: ProjectsTable,
  user: UsersTable,
  configurationInput: unknown,
): Promise<Gateway> {
  const configuration = validatedGatewayConfiguration(configurationInput);
  refuseUnsupportedGatewayFields(configuration);
  const certificate = configuration.certificate;
  if (certificate?.type === 'custom') {
    if (!configuration.domain) throw customCertificateNeedsDomain();
    checkCustomCertificate(certificate.certificate, certificate.private_key, configuration.domain);
  }
  const backend = await gatewayComputeOf(app, project.id, configuration.backend);
  if ('refusal' in backend) {
    throw new ServerClientError(backend.refusal, { fields: [['configuration', 'backend']] });
  }
  const name = configuration.name ?? `gateway-${randomUUID().slice(0, 8)}`;
  const stored = withRedactedKey({ ...configuration, name });
  const row: GatewaysTable = {
    id: randomUUID(),
    project_id: project.id,
    user_id: user.id,
    name,
    status: 'submitted',
    status_message: null,
    configuration: gatewayConfigurationColumn.encode(stored),
    certificate_private_key:
      certificate?.type === 'custom' ? app.encryption.encrypt(certificate.private_key) : null,
    agent_token: app.encryption.encrypt(newAgentToken()),
    wildcard_domain: configuration.domain ?? null,
    is_default: 0,
    provisioning_data: null,
    created_at: Date.now(),
    last_processed_at: 0,
    to_be_deleted: 0,
    deleted: 0,
    deleted_at: null,
    lock_expires_at: null,
    lock_token: null,
    lock_owner: null,
  };
  const inserted = await app.db.transaction().execute(async (transaction) => {
    // One check-and-insert at a time per project: names and the default stay unique.
    await serializeProjectWrites(transaction, app.dialect, project.id);
    const existing = await transaction
      .selectFrom('gateways')
      .select(['id', 'name', 'is_default'])
      .where('project_id', '=', project.id)
      .where('deleted', '=', 0)
      .where('to_be_deleted', '=', 0)
      .execute();
    if (existing.some((gateway) => gateway.name === name)) return false;
    const hasDefault = existing.some((gateway) => gateway.is_default === 1);
    const makeDefault = configuration.default ?? !hasDefault;
    if (makeDefault && hasDefault) {
      await transaction
        .updateTable('gateways')
        .set({ is_default: 0 })
        .where('project_id', '=', project.id)
        .execute();
    }
    row.is_default = makeDefault ? 1 : 0;
    await transaction.insertInto('gateways').values(row).execute();
    await recordEvent(transaction, app.settings.events, {
      message: 'Gateway created. Status: SUBMITTED',
      actor: userActor(user),
      targets: [eventTargets.gateway(row)],
    });
    return true;
  });
  if (!inserted) throw nameTakenError('Gateway', name);
  app.wakeUps.wake('gateways');
  return gatewayOf(row, project.name);
}

export async function getGateway(app: AppContext, project: ProjectsTable, name: string): Promise<Gateway> {
  const row = await liveGatewayNamed(app, project.id, name);
  return gatewayOf(row, project.name);
}

export async function listProjectGateways(app: AppContext, project: ProjectsTable): Promise<Gateway[]> {
  const rows = await liveGateways(app, project.id).orderBy('created_at').execute();
  return rows.map((row) => gatewayOf(row, project.name));
}

/**
 * A gateway configuration as dstack's client sends it, its unset fields (`null`) dropped, except
 * `certificate`, where `null` means plain HTTP.
 */
function withoutUnsetNulls(configuration: Record<string, unknown>): Record<string, unknown> {
  const { certificate, ...rest } = configuration;
  return 'certificate' in configuration ? { ...dropUnsetNulls(rest), certificate } : dropUnsetNulls(rest);
}

/** A live gateway of the project named as the configuration names it; none for an unnamed one. */
async function currentGateway(app: AppContext, projectId: string, name: string | undefined) {
  if (name === undefined) return undefined;
  return liveGateways(app, projectId).where('name', '=', name).executeTakeFirst();
}

/**
 * dstack's fields of a gateway that change in place (its `_CONF_UPDATABLE_FIELDS`); a change of
 * any other field needs the gateway re-created. `replicas` can only be 1 here.
 */
const UPDATABLE_IN_PLACE: ReadonlySet<string> = new Set(['domain', 'default', 'replicas']);

/** A value as JSON with its objects' keys sorted, so that two equal values compare equal. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner && typeof inner === 'object' && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => a.localeCompare(b)))
      : inner,
  );
}

/** The configuration as stored: a custom certificate's key is kept encrypted apart, never in it. */
function withRedactedKey(configuration: GatewayConfiguration): GatewayConfiguration {
  const certificate = configuration.certificate;
  return certificate?.type === 'custom'
    ? { ...configuration, certificate: { ...certificate, private_key: REDACTED_PRIVATE_KEY } }
    : configuration;
}

/**
 * The top-level fields in which `next` differs from the gateway as it is now (dstack's
 * `diff_gateway_configurations`), its current domain and default included. An unset `default`
 * leaves the default as it is, so it is no change.
 */
function changedGatewayFields(current: Gateway, next: GatewayConfiguration): string[] {
  const before = current.configuration as Record<string, unknown>;
  const after = withRedactedKey(next) as Record<string, unknown>;
  const fields = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...fields].filter(
    (field) =>
      field !== 'name' &&
      !(field === 'default' && after.default === undefined) &&
      canonicalJson(before[field] ?? null) !== canonicalJson(after[field] ?? null),
  );
}

/**
 * dstack's `gateways/get_plan`: the spec checked, and the gateway of that name it would update in
 * place (`action: update`: no change, or only `domain`/`default`) or none or one to re-create
 * (`create`: dstack's CLI deletes the current one first).
 */
export async function getGatewayPlan(
  app: AppContext,
  project: ProjectsTable,
  user: UsersTable,
  spec: GatewaySpec,
): Promise<GatewayPlan> {
  const configuration = validatedGatewayConfiguration(withoutUnsetNulls(spec.configuration));
  refuseUnsupportedGatewayFields(configuration);
  const row = await currentGateway(app, project.id, configuration.name);
  if (row?.status === 'failed') throw failedGatewayRefusal(row.name);
  const current = row ? gatewayOf(row, project.name) : null;
  const inPlace =
    current !== null &&
    changedGatewayFields(current, configuration).every((field) => UPDATABLE_IN_PLACE.has(field));
  return {
    project_name: project.name,
    user: user.name,
    spec,
    effective_spec: spec,
    current_resource: current,
    action: inPlace ? 'update' : 'create',
  };
}

function failedGatewayRefusal(name: string): ServerClientError {
  return new ServerClientError(
    `Gateway ${name} failed and cannot be updated in place; delete it and apply again`,
  );
}

/**
 * dstack's `gateways/apply`: creates the gateway, or updates the one of that name in place when
 * only its `domain` or `default` changed (a change of any other field is refused: delete it and
 * apply again, as dstack's CLI does for a `create` plan). Without `force`, the plan must have
 * seen the gateway that is there now.
 */
export async function applyGatewayPlan(
  app: AppContext,
  project: ProjectsTable,
  user: UsersTable,
  plan: { spec: GatewaySpec; current_resource?: { id: string } | null },
  force: boolean,
): Promise<Gateway> {
  const input = withoutUnsetNulls(plan.spec.configuration);
  const configuration = validatedGatewayConfiguration(input);
  const row = await currentGateway(app, project.id, configuration.name);
  if (!row) return createGateway(app, project, user, input);
  const name = row.name;
  if (row.status === 'failed') throw failedGatewayRefusal(name);
  if (!force && plan.current_resource?.id !== row.id) {
    throw new ServerClientError(
      'Failed to apply plan. Resource has been changed. Try again or use force apply.',
    );
  }
  refuseUnsupportedGatewayFields(configuration);
  const changed = changedGatewayFields(gatewayOf(row, project.name), configuration);
  const fixed = changed.filter((field) => !UPDATABLE_IN_PLACE.has(field));
  if (fixed.length > 0) {
    throw new ServerClientError(
      `Gateway ${name} cannot be updated in place (changed: ${fixed.join(', ')}); delete it (dstack gateway delete ${name}) and apply again`,
    );
  }
  if (changed.length === 0) return gatewayOf(row, project.name);
  if (changed.includes('domain'))
    await setGatewayWildcardDomain(app, project, name, configuration.domain ?? null);
  if (configuration.default === true) await setDefaultGateway(app, project, name);
  if (configuration.default === false) await unsetDefaultGateway(app, row);
  const updated = {
    ...row,
    configuration: gatewayConfigurationColumn.encode(withRedactedKey(configuration)),
  };
  await app.db
    .updateTable('gateways')
    .set({ configuration: updated.configuration })
    .where('id', '=', row.id)
    .execute();
  await recordEvent(app.db, app.settings.events, {
    message: `Gateway updated. Changed fields: ${changed.join(', ')}`,
    actor: userActor(user),
    targets: [eventTargets.gateway(row)],
  });
  const reread = await currentGateway(app, project.id, name);
  return gatewayOf(reread ?? updated, project.name);
}

/** `gateways/delete`: each is marked `to_be_deleted` (hidden at once); the pipeline terminates its instance. */
export async function deleteGateways(
  app: AppContext,
  project: ProjectsTable,
  names: readonly string[],
  actor: EventActor = SYSTEM_ACTOR,
): Promise<void> {
  const rows = requireEachFound(
    'Gateway',
    names,
    await liveGateways(app, project.id)
      .where('name', 'in', [...names])
      .execute(),
    (row) => row.name,
  );
  await overrideClaimedRows(
    app.db,
    'gateways',
    rows.map((row) => row.id),
    { to_be_deleted: 1, is_default: 0 },
  );
  await recordEvents(
    app.db,
    app.settings.events,
    rows.map((row) => ({
      message: 'Gateway marked for deletion',
      actor,
      targets: [eventTargets.gateway(row)],
    })),
  );
  app.wakeUps.wake('gateways');
}

/** `gateways/set_default`. */
export async function setDefaultGateway(
  app: AppContext,
  project: ProjectsTable,
  name: string,
): Promise<void> {
  const row = await liveGatewayNamed(app, project.id, name);
  await app.db.transaction().execute(async (transaction) => {
    await transaction
      .updateTable('gateways')
      .set({ is_default: 0 })
      .where('project_id', '=', project.id)
      .execute();
    await transaction.updateTable('gateways').set({ is_default: 1 }).where('id', '=', row.id).execute();
  });
}

/** Makes `row` no longer the project's default gateway (services then need `gateway:` to use it). */
async function unsetDefaultGateway(app: AppContext, row: GatewaysTable): Promise<void> {
  await app.db.updateTable('gateways').set({ is_default: 0 }).where('id', '=', row.id).execute();
}

/**
 * `gateways/set_wildcard_domain` (null: none): services applied from now on get the new domain.
 * A custom certificate must cover it.
 */
export async function setGatewayWildcardDomain(
  app: AppContext,
  project: ProjectsTable,
  name: string,
  domain: string | null,
): Promise<Gateway> {
  const row = await liveGatewayNamed(app, project.id, name);
  const configuration = gatewayConfigurationOf(row);
  if (configuration.certificate?.type === 'custom' && row.certificate_private_key) {
    if (domain === null) throw customCertificateNeedsDomain();
    checkCustomCertificate(
      configuration.certificate.certificate,
      app.encryption.decrypt(row.certificate_private_key),
      domain,
    );
  }
  await app.db.updateTable('gateways').set({ wildcard_domain: domain }).where('id', '=', row.id).execute();
  return gatewayOf({ ...row, wildcard_domain: domain }, await projectNameOf(app, project.id));
}
