/**
 * What a launch hands the backend: `runJob`'s parameters for a job's instance, the
 * `InstanceConfiguration` of a fleet's own instance, and where hosts download the agent from.
 */
import type {
  InstanceConfiguration,
  InstanceOfferWithAvailability,
  RunJobParams,
  Volume,
} from '@dstack/core';
import { agentDownloadDigest } from '../agents/agent-download-digest.js';
import { launchAgentToken } from '../agents/agent-tokens.js';
import type { AppContext } from '../context.js';
import { fleetConfigurationOf, jobSpecOf, runSpecOf } from '../db/json-columns.js';
import type { FleetsTable, InstancesTable, JobsTable, ProjectsTable, RunsTable } from '../db/schema.js';

/**
 * The `runJob` parameters of a job's launch, for any offer (the user's name is read once for
 * every offer tried).
 */
export async function runJobParamsOf(
  app: AppContext,
  target: {
    run: RunsTable;
    job: JobsTable;
    project: ProjectsTable;
    instanceId: string;
    /** The job's network volumes: a VM backend launches in the first one's zone. Default none. */
    volumes?: readonly Volume[];
  },
): Promise<(offer: InstanceOfferWithAvailability) => RunJobParams> {
  const { run, job, project } = target;
  const spec = runSpecOf(run);
  const jobSpec = jobSpecOf(job);
  const user = await app.db
    .selectFrom('users')
    .select('name')
    .where('id', '=', run.user_id)
    .executeTakeFirst();
  const agentToken = await launchAgentToken(app, target.instanceId);
  const agentDownload = await agentDownloadOf(app);
  return (offer) => ({
    instanceId: target.instanceId,
    agentToken,
    agentDownloadUrl: agentDownload.url,
    agentDownloadSha256: agentDownload.sha256,
    agentDownloadSize: agentDownload.size,
    runnerDownloadUrl: app.settings.agents.runnerDownloadUrl,
    run: {
      id: run.id,
      project_name: project.name,
      user: user?.name ?? '',
      run_spec: {
        run_name: run.run_name,
        ssh_key_pub: spec.ssh_key_pub ?? null,
        configuration: spec.configuration,
        merged_profile: null,
      },
    },
    job: { job_spec: jobSpec },
    offer,
    projectSshPublicKey: project.ssh_public_key,
    projectSshPrivateKey: app.encryption.decrypt(project.ssh_private_key),
    volumes: target.volumes ?? [],
    placementGroup: null,
    requirements: jobSpec.requirements,
  });
}

/**
 * Where VMs download the agent runtime (the server's `DSTACK_SHIM_DOWNLOAD_URL`; null: the
 * release's npm tarball) and, for a configured URL, the digest the host checks.
 */
export async function agentDownloadOf(
  app: AppContext,
): Promise<{ url: string | null; sha256: string | null; size: number | null }> {
  const url = app.settings.agents.shimDownloadUrl;
  const digest = url === null ? null : await agentDownloadDigest(url);
  return { url, sha256: digest?.sha256 ?? null, size: digest?.size ?? null };
}

/** The launch of a fleet's own instance, as `createInstance` takes it. */
export async function instanceConfigurationOf(
  app: AppContext,
  project: ProjectsTable,
  instance: Pick<InstancesTable, 'id' | 'name'>,
  fleet: FleetsTable | undefined,
): Promise<InstanceConfiguration> {
  const configuration = fleet ? fleetConfigurationOf(fleet) : undefined;
  const owner = await app.db
    .selectFrom('users')
    .select('name')
    .where('id', '=', project.owner_id)
    .executeTakeFirst();
  const agentDownload = await agentDownloadOf(app);
  return {
    project_name: project.name,
    instance_name: instance.name,
    instance_id: instance.id,
    agent_token: await launchAgentToken(app, instance.id),
    agent_download_url: agentDownload.url,
    agent_download_sha256: agentDownload.sha256,
    agent_download_size: agentDownload.size,
    user: owner?.name ?? '',
    // With its private half, as dstack's: a backend without user data (Lambda) logs in with it.
    ssh_keys: [
      {
        public: project.ssh_public_key.trim(),
        private: app.encryption.decrypt(project.ssh_private_key).trim(),
      },
    ],
    volumes: [],
    reservation: configuration?.reservation ?? null,
    tags: configuration?.tags ?? null,
  };
}
