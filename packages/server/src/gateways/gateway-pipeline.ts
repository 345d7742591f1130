/**
 * Gateways (dstack's gateway pipeline): a `submitted` gateway becomes `provisioning` and its
 * backend launches the instance (`createGatewayReplica`, which returns once it runs with an
 * address); a `provisioning` gateway is `running` once its agent answers through the SSH tunnel
 * and took its state, or `failed` after `PROVISIONING_TIMEOUT_MS` (its instance terminated). A
 * `running` gateway is sent its whole state on every pass (services, replicas, tokens); when it
 * cannot be reached it keeps serving what it has, and the pass says why in `status_message`,
 * where the certificates its agent could not obtain from the ACME server are shown too, and that
 * its agent predates gateway tokens (launched before them: recreate it). A failed gateway waits
 * for its deletion. A gateway marked `to_be_deleted` has its instance
 * terminated, then is `deleted`.
 */
import type { GatewayReplicaConfiguration } from '@dstack/core';
import type { AppContext } from '../context.js';
import {
  gatewayConfigurationOf,
  gatewayProvisioningDataColumn,
  gatewayProvisioningDataOf,
} from '../db/json-columns.js';
import type { GatewaysTable, ProjectsTable } from '../db/schema.js';
import { errorMessage } from '../error-message.js';
import { recordStatusChange } from '../events/status-events.js';
import { agentDownloadOf } from '../fleets/launch-parameters.js';
import type { PipelineDefinition, RowLock } from '../pipelines/pipeline.js';
import { dueIn } from '../pipelines/pipeline.js';
import { launchGatewayAgentToken } from './gateway-agent-token.js';
import { gatewayComputeOf } from './gateway-backends.js';
import {
  collectGatewayStats,
  type GatewayApi,
  gatewayApiOf,
  gatewayHealth,
  gatewayStateOf,
  sendGatewayState,
} from './gateway-sync.js';

/** Running gateways get their state this often (dstack connects to its gateways every 15 s). */
const MIN_INTERVAL_MS = 3_000;
/** How long a launched gateway's agent has to answer. */
const PROVISIONING_TIMEOUT_MS = 10 * 60_000;
const DELETE_RETRY_MS = 30_000;
/** A failed gateway waits for its deletion; looked at again this rarely. */
const FAILED_RECHECK_MS = 60 * 60_000;
/**
 * What a gateway launched before gateways had tokens is told: its agent's management API answers
 * anyone on the gateway, and the agent passes on requests whose target names another host (its
 * own management API included); the server cannot change the agent it runs, a new gateway can.
 */
const AGENT_WITHOUT_TOKEN =
  'its agent predates gateway tokens: its management API is open and it forwards requests that name another host; recreate the gateway (dstack gateway delete, then apply it again)';

async function replicaConfigurationOf(
  app: AppContext,
  gateway: GatewaysTable,
  project: ProjectsTable,
): Promise<GatewayReplicaConfiguration> {
  const configuration = gatewayConfigurationOf(gateway);
  const download = await agentDownloadOf(app);
  return {
    project_name: project.name,
    // The launch's idempotency key (EC2's ClientToken): one instance per gateway row.
    instance_name: `${gateway.name}-${gateway.id.slice(0, 8)}`,
    backend: configuration.backend,
    region: configuration.region,
    instance_type: configuration.instance_type ?? null,
    public_ip: configuration.public_ip,
    ssh_key_pub: project.ssh_public_key,
    // The termination of a gateway from before tokens gets one too: backends read the whole configuration.
    agent_token: await launchGatewayAgentToken(app, gateway.id),
    certificate:
      configuration.certificate?.type === 'acm'
        ? { type: 'acm', arn: configuration.certificate.arn }
        : configuration.certificate
          ? { type: configuration.certificate.type }
          : null,
    tags: configuration.tags ?? null,
    agent_download_url: download.url,
    agent_download_sha256: download.sha256,
    agent_download_size: download.size,
  };
}

async function projectOfGateway(app: AppContext, gateway: GatewaysTable): Promise<ProjectsTable> {
  return app.db
    .selectFrom('projects')
    .selectAll()
    .where('id', '=', gateway.project_id)
    .executeTakeFirstOrThrow();
}

async function launch(app: AppContext, gateway: GatewaysTable, lock: RowLock<'gateways'>): Promise<void> {
  if (gateway.status === 'submitted') {
    const marked = await app.db.transaction().execute(async (transaction) => {
      const result = await transaction
        .updateTable('gateways')
        .set({ status: 'provisioning' })
        .where('id', '=', gateway.id)
        .where('lock_token', '=', lock.token)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) return false;
      await recordStatusChange(transaction, app.settings.events, 'gateways', gateway, {
        status: 'provisioning',
      });
      return true;
    });
    if (!marked) return;
  }
  const configuration = gatewayConfigurationOf(gateway);
  const backend = await gatewayComputeOf(app, gateway.project_id, configuration.backend);
  if ('refusal' in backend) {
    await lock.release({ status: 'failed', status_message: backend.refusal });
    return;
  }
  const project = await projectOfGateway(app, gateway);
  try {
    const provisioning = await backend.compute.createGatewayReplica(
      await replicaConfigurationOf(app, gateway, project),
    );
    await lock.release({
      status: 'provisioning',
      status_message: null,
      provisioning_data: gatewayProvisioningDataColumn.encode(provisioning),
      last_processed_at: 0,
    });
  } catch (error) {
    await lock.release({
      status: 'failed',
      status_message: `launching the gateway failed: ${errorMessage(error)}`,
    });
  }
}

/** What a pass over a gateway found wrong. */
interface SyncOutcome {
  /** Why the state was not sent, or null. */
  unreached: string | null;
  /** Why its request stats were not read, or null. */
  stats: string | null;
  /** What its agent says is wrong with its ACME certificates (a rate limit, DNS not pointing at it), or null. */
  certificates: string | null;
  /** Why its agent must be replaced (it predates gateway tokens), or null. */
  outdated: string | null;
}

/**
 * Sends the gateway its state (its health says how its ACME certificates fare), then reads back
 * its request stats for the services' autoscaler (a request held for a service scaled to zero
 * wakes the run pipeline at once).
 */
async function sync(app: AppContext, gateway: GatewaysTable, signal: AbortSignal): Promise<SyncOutcome> {
  const project = await projectOfGateway(app, gateway);
  let api: GatewayApi;
  let certificates: string | null;
  try {
    api = await gatewayApiOf(app, gateway, project);
    const health = await gatewayHealth(api, signal);
    await sendGatewayState(api, await gatewayStateOf(app, gateway, project), signal);
    const failed = health.certificates.flatMap((entry) =>
      entry.status === 'failed' && entry.message ? [entry.message] : [],
    );
    certificates = failed.length > 0 ? failed.join('; ') : null;
  } catch (error) {
    return { unreached: errorMessage(error), stats: null, certificates: null, outdated: null };
  }
  const outdated = api.token === null ? AGENT_WITHOUT_TOKEN : null;
  try {
    const stats = await collectGatewayStats(api, signal);
    app.caches.services.stats.report(gateway.id, stats);
    if (stats.services.some((service) => service.waiting > 0)) app.wakeUps.wake('runs');
    return { unreached: null, stats: null, certificates, outdated };
  } catch (error) {
    return { unreached: null, stats: errorMessage(error), certificates, outdated };
  }
}

/**
 * Terminates the gateway's instance, if it has one; false when the backend call failed (try again
 * later). A backend that left the project can reach nothing: the instance is forgotten, as dstack does.
 */
async function terminateInstance(app: AppContext, gateway: GatewaysTable): Promise<boolean> {
  const provisioning = gatewayProvisioningDataOf(gateway);
  if (!provisioning) return true;
  const configuration = gatewayConfigurationOf(gateway);
  const backend = await gatewayComputeOf(app, gateway.project_id, configuration.backend);
  if ('refusal' in backend) {
    console.error(`[gateways] ${gateway.name}'s instance is not terminated: ${backend.refusal}`);
    return true;
  }
  try {
    const project = await projectOfGateway(app, gateway);
    await backend.compute.terminateGatewayReplica(
      provisioning.instance_id,
      await replicaConfigurationOf(app, gateway, project),
      provisioning.backend_data,
    );
    return true;
  } catch (error) {
    console.error(`[gateways] terminating ${gateway.name} failed, retried later: ${errorMessage(error)}`);
    return false;
  }
}

async function terminate(app: AppContext, gateway: GatewaysTable, lock: RowLock<'gateways'>): Promise<void> {
  if (await terminateInstance(app, gateway)) {
    app.caches.services.stats.forgetGateway(gateway.id);
    await lock.release({ deleted: 1, deleted_at: Date.now() });
  } else {
    await lock.release({ last_processed_at: dueIn(DELETE_RETRY_MS, MIN_INTERVAL_MS) });
  }
}

export function gatewayPipeline(app: AppContext): PipelineDefinition<'gateways'> {
  return {
    name: 'gateways',
    table: 'gateways',
    statuses: ['submitted', 'provisioning', 'running', 'failed'],
    minIntervalMs: MIN_INTERVAL_MS,
    workers: 10,
    undeletedOnly: true,
    async process(gateway, lock) {
      if (gateway.to_be_deleted === 1) {
        await terminate(app, gateway, lock);
        return;
      }
      if (
        gateway.status === 'submitted' ||
        (gateway.status === 'provisioning' && !gateway.provisioning_data)
      ) {
        await launch(app, gateway, lock);
        return;
      }
      if (gateway.status === 'provisioning') {
        const failure = (await sync(app, gateway, lock.signal)).unreached;
        if (failure === null) {
          await lock.release({ status: 'running', status_message: null });
        } else if (Date.now() - gateway.created_at > PROVISIONING_TIMEOUT_MS) {
          // Its instance is of no use: terminated now rather than left running until the gateway is deleted.
          if (await terminateInstance(app, gateway)) {
            await lock.release({
              status: 'failed',
              status_message: `the gateway's agent did not answer: ${failure}`,
              provisioning_data: null,
            });
          } else {
            await lock.release();
          }
        } else {
          await lock.release();
        }
        return;
      }
      if (gateway.status === 'running') {
        const { unreached, stats, certificates, outdated } = await sync(app, gateway, lock.signal);
        const problems = [outdated, certificates, stats === null ? null : `request stats: ${stats}`].filter(
          (problem) => problem !== null,
        );
        const message = unreached ? `not reached: ${unreached}` : problems.join('; ') || null;
        if ((certificates !== null || outdated !== null) && message !== gateway.status_message) {
          console.error(`[gateways] ${gateway.name}: ${message}`);
        }
        await lock.release({ status_message: message });
        return;
      }
      // Failed: nothing to do until it is deleted (which makes it due at once).
      await lock.release({ last_processed_at: dueIn(FAILED_RECHECK_MS, MIN_INTERVAL_MS) });
    },
  };
}
