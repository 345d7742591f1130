/**
 * Which gateway publishes a service (dstack's `_get_gateway_for_service`): `gateway: false` is the
 * server's own proxy; a name is that gateway of the project; `true` is the project's default
 * gateway, which must exist; no `gateway` is the default gateway when the project has one, else
 * the server's proxy. The gateway must be running and have a wildcard domain; the service's host
 * name there, `{run}.{domain}`, and whether its URL is `https://` are fixed at apply.
 */
import { ServerClientError, type ServiceConfiguration } from '@dstack/core';
import type { AppContext } from '../context.js';
import { gatewayConfigurationOf } from '../db/json-columns.js';
import type { GatewaysTable, ProjectsTable } from '../db/schema.js';
import { serviceUrlIsHttps } from './service-https.js';

export interface ServiceGateway {
  gateway_id: string;
  service_hostname: string;
  /** The service's URL is `https://` (dstack's `_should_show_service_https`). */
  service_https: boolean;
}

const FIELD: string[] = ['run_spec', 'configuration', 'gateway'];

function refuse(message: string): never {
  throw new ServerClientError(message, { fields: [FIELD] });
}

/** `{run}.{domain}`, with dstack's `${{ run.project_name }}` in the domain filled in. */
export function serviceHostname(runName: string, projectName: string, wildcardDomain: string): string {
  const domain = wildcardDomain.replace(/\$\{\{\s*run\.project_name\s*\}\}/g, projectName);
  return `${runName}.${domain.replace(/^\*\./, '')}`.toLowerCase();
}

async function findGateway(
  app: AppContext,
  projectId: string,
  where: { name: string } | { isDefault: true },
): Promise<GatewaysTable | undefined> {
  let query = app.db
    .selectFrom('gateways')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('deleted', '=', 0)
    .where('to_be_deleted', '=', 0);
  query = 'name' in where ? query.where('name', '=', where.name) : query.where('is_default', '=', 1);
  return query.executeTakeFirst();
}

/** The gateway that publishes the service `runName`, or null for the server's proxy. Throws a refusal naming `gateway`. */
export async function serviceGatewayOf(
  app: AppContext,
  project: ProjectsTable,
  runName: string,
  service: ServiceConfiguration,
): Promise<ServiceGateway | null> {
  const choice = service.gateway;
  if (choice === false) return null;
  let gateway: GatewaysTable | undefined;
  if (typeof choice === 'string') {
    const [owner, name] = choice.includes('/') ? choice.split('/') : [project.name, choice];
    if (owner !== project.name) refuse(`gateway ${choice}: gateways of other projects are not supported yet`);
    gateway = await findGateway(app, project.id, { name: name as string });
    if (!gateway) refuse(`Gateway ${name} does not exist in project ${project.name}`);
  } else {
    gateway = await findGateway(app, project.id, { isDefault: true });
    if (!gateway) {
      if (choice === true) refuse(`gateway: true, but project ${project.name} has no default gateway`);
      return null;
    }
  }
  if (gateway.status !== 'running') {
    refuse(`Gateway ${gateway.name} is ${gateway.status}, not running; wait for it or choose another`);
  }
  if (!gateway.wildcard_domain) {
    refuse(
      `Gateway ${gateway.name} has no domain; set one (dstack gateway update ${gateway.name} --domain …)`,
    );
  }
  const { certificate } = gatewayConfigurationOf(gateway);
  const https = serviceUrlIsHttps(service.https, certificate);
  if (https && certificate === null) {
    throw new ServerClientError(
      `https: gateway ${gateway.name} has no certificate (certificate: null), so it cannot serve HTTPS; set https: false or https: auto`,
      { fields: [['run_spec', 'configuration', 'https']] },
    );
  }
  return {
    gateway_id: gateway.id,
    service_hostname: serviceHostname(runName, project.name, gateway.wildcard_domain),
    service_https: https,
  };
}

/**
 * Makes the gateway that publishes `run` (if any) due now, so its agent learns of a replica that
 * started, became ready or is stopping within milliseconds instead of at its next pass. A run's
 * gateway is chosen at its apply and never changes: a caller holding the run's row passes it.
 */
export async function markServiceGatewayDue(
  app: AppContext,
  run: string | { gateway_id?: string | null },
): Promise<void> {
  const gatewayId =
    typeof run === 'string'
      ? (await app.db.selectFrom('runs').select('gateway_id').where('id', '=', run).executeTakeFirst())
          ?.gateway_id
      : run.gateway_id;
  if (!gatewayId) return;
  await app.db.updateTable('gateways').set({ last_processed_at: 0 }).where('id', '=', gatewayId).execute();
  app.wakeUps.wake('gateways');
}
