/**
 * What a gateway serves, computed from the database and sent whole to its agent (`PUT
 * /api/state` through the SSH tunnel to its loopback management API): the certificate, each
 * active service published on it with its ready replicas (reached directly on the cloud's
 * internal network: the replica's instance's internal address and its service port, the
 * gateway being in the project's instances' security group), and the token hashes of the
 * project's members. Sending the whole state keeps the agent right after anything it missed.
 * The agent's request stats are read back the same way, for the services' autoscaler.
 * A `lets-encrypt` gateway is told the ACME server; its agent obtains each service's certificate.
 * Every management call carries the gateway's agent token (gateway-agent-token.ts).
 */
import {
  agentAuthorizationHeader,
  DSTACK_GATEWAY_API_PORT,
  type GatewayHealth,
  GatewayHealthSchema,
  type GatewayService,
  type GatewayState,
  type GatewayStats,
  GatewayStatsSchema,
} from '@dstack/core/agent-protocol';
import { request } from 'undici';
import { gatewayPortUrl } from '../agents/agent-clients.js';
import type { AppContext } from '../context.js';
import {
  gatewayConfigurationOf,
  gatewayProvisioningDataOf,
  jobProvisioningDataOf,
  runSpecOf,
} from '../db/json-columns.js';
import type { GatewaysTable, ProjectsTable } from '../db/schema.js';
import { ACTIVE_RUN_STATUSES } from '../runs/run-reads.js';
import { instancePortOf } from '../services/replica-address.js';
import { gatewayServesServiceHttps } from '../services/service-https.js';
import { runningReplicas } from '../services/service-proxy-replicas.js';
import {
  replicaRangeOf,
  serviceConfigurationOf,
  serviceHasProbes,
  servicePortOf,
} from '../services/service-spec.js';
import { gatewayAgentToken } from './gateway-agent-token.js';

/** The user gateway images log in as (dstack's gateways: Ubuntu's `ubuntu`). */
const GATEWAY_SSH_USER = 'ubuntu';
/** The whole answer of one management call. */
const GATEWAY_CALL_TIMEOUT_MS = 15_000;

async function servicesOf(app: AppContext, gateway: GatewaysTable): Promise<GatewayService[]> {
  const { certificate } = gatewayConfigurationOf(gateway);
  const runs = await app.db
    .selectFrom('runs')
    .innerJoin('projects', 'projects.id', 'runs.project_id')
    .selectAll('runs')
    .select('projects.name as project_name')
    .where('runs.gateway_id', '=', gateway.id)
    .where('runs.deleted', '=', 0)
    .where('runs.status', 'in', [...ACTIVE_RUN_STATUSES])
    .execute();
  const services: GatewayService[] = [];
  for (const run of runs) {
    const service = serviceConfigurationOf(runSpecOf(run));
    if (!service || !run.service_hostname) continue;
    const port = servicePortOf(service);
    const replicas = (await runningReplicas(app, run.id, serviceHasProbes(service))).flatMap((job) => {
      const provisioning = jobProvisioningDataOf(job);
      const host = provisioning?.internal_ip ?? provisioning?.hostname;
      return host ? [{ id: job.id, url: `http://${host}:${instancePortOf(job, port)}` }] : [];
    });
    services.push({
      project: run.project_name,
      run_name: run.run_name,
      run_id: run.id,
      hostname: run.service_hostname,
      auth: service.auth,
      https: gatewayServesServiceHttps(service.https, certificate),
      replicas,
      scales_from_zero: replicaRangeOf(service).min === 0,
      rate_limits: service.rate_limits,
    });
  }
  return services;
}

/** sha256 hex of the tokens that may call the project's services: its members' and global admins'. */
async function tokenHashesOf(app: AppContext, project: ProjectsTable): Promise<string[]> {
  const rows = await app.db
    .selectFrom('users')
    .leftJoin('members', (join) =>
      join.onRef('members.user_id', '=', 'users.id').on('members.project_id', '=', project.id),
    )
    .select('users.token_hash')
    .where('users.active', '=', 1)
    .where((eb) => eb.or([eb('users.global_role', '=', 'admin'), eb('members.user_id', 'is not', null)]))
    .execute();
  return rows.map((row) => row.token_hash);
}

export async function gatewayStateOf(
  app: AppContext,
  gateway: GatewaysTable,
  project: ProjectsTable,
): Promise<GatewayState> {
  const configuration = gatewayConfigurationOf(gateway);
  const { acme } = app.settings;
  const certificate =
    configuration.certificate?.type === 'custom' && gateway.certificate_private_key
      ? {
          certificate: configuration.certificate.certificate,
          private_key: app.encryption.decrypt(gateway.certificate_private_key),
        }
      : null;
  return {
    certificate,
    // dstack's gateways run certbot against DSTACK_ACME_SERVER for each service with HTTPS.
    acme:
      configuration.certificate?.type === 'lets-encrypt'
        ? {
            directory_url: acme.server,
            ca_certificates: acme.caCertificates,
            external_account: acme.externalAccount
              ? { kid: acme.externalAccount.kid, hmac_key: acme.externalAccount.hmacKey }
              : null,
          }
        : null,
    services: await servicesOf(app, gateway),
    token_hashes: { [project.name]: await tokenHashesOf(app, project) },
  };
}

/** The gateway's management API as the server calls it. */
export interface GatewayApi {
  /** Its base URL, through the SSH tunnel. */
  url: string;
  /** The token it requires; null for a gateway launched before gateways had tokens (its agent requires none). */
  token: string | null;
}

/** The gateway's management API, through the SSH tunnel. Throws when it cannot be reached. */
export async function gatewayApiOf(
  app: AppContext,
  gateway: GatewaysTable,
  project: ProjectsTable,
): Promise<GatewayApi> {
  const provisioning = gatewayProvisioningDataOf(gateway);
  if (!provisioning) throw new Error(`Gateway ${gateway.name} has no instance yet`);
  const url = await gatewayPortUrl(
    app,
    project,
    {
      backend: gatewayConfigurationOf(gateway).backend,
      instanceId: provisioning.instance_id,
      region: provisioning.region,
      ipAddress: provisioning.ip_address,
      username: GATEWAY_SSH_USER,
    },
    DSTACK_GATEWAY_API_PORT,
  );
  return { url, token: gatewayAgentToken(app, gateway) };
}

function tokenHeaders(api: GatewayApi): Record<string, string> {
  return api.token === null ? {} : agentAuthorizationHeader(api.token);
}

export async function gatewayHealth(api: GatewayApi, signal?: AbortSignal): Promise<GatewayHealth> {
  const answer = await request(`${api.url}/api/healthcheck`, {
    headers: tokenHeaders(api),
    signal: signal ?? AbortSignal.timeout(GATEWAY_CALL_TIMEOUT_MS),
    headersTimeout: GATEWAY_CALL_TIMEOUT_MS,
    bodyTimeout: GATEWAY_CALL_TIMEOUT_MS,
  });
  if (answer.statusCode !== 200) {
    const text = await answer.body.text();
    throw new Error(`the gateway's healthcheck answered ${answer.statusCode}: ${text.slice(0, 300)}`);
  }
  return GatewayHealthSchema.parse(await answer.body.json());
}

/** Sends the whole state; throws with the agent's answer when it refuses it. */
export async function sendGatewayState(
  api: GatewayApi,
  state: GatewayState,
  signal?: AbortSignal,
): Promise<void> {
  const answer = await request(`${api.url}/api/state`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...tokenHeaders(api) },
    body: JSON.stringify(state),
    signal: signal ?? AbortSignal.timeout(GATEWAY_CALL_TIMEOUT_MS),
    headersTimeout: GATEWAY_CALL_TIMEOUT_MS,
    bodyTimeout: GATEWAY_CALL_TIMEOUT_MS,
  });
  const text = await answer.body.text();
  if (answer.statusCode !== 200)
    throw new Error(`the gateway refused its state (${answer.statusCode}): ${text}`);
}

/**
 * The requests the gateway forwarded per service (`GET /api/stats/collect`), for the RPS
 * autoscaler. Throws when the agent does not answer them, saying so of an agent too old to count.
 */
export async function collectGatewayStats(api: GatewayApi, signal?: AbortSignal): Promise<GatewayStats> {
  const answer = await request(`${api.url}/api/stats/collect`, {
    headers: tokenHeaders(api),
    signal: signal ?? AbortSignal.timeout(GATEWAY_CALL_TIMEOUT_MS),
    headersTimeout: GATEWAY_CALL_TIMEOUT_MS,
    bodyTimeout: GATEWAY_CALL_TIMEOUT_MS,
  });
  if (answer.statusCode === 404) {
    await answer.body.dump();
    throw new Error(
      "the gateway's agent counts no requests (it predates request stats): its services do not scale on their traffic; recreate the gateway",
    );
  }
  if (answer.statusCode !== 200) {
    const text = await answer.body.text();
    throw new Error(`the gateway's stats answered ${answer.statusCode}: ${text}`);
  }
  return GatewayStatsSchema.parse(await answer.body.json());
}
