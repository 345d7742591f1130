/**
 * SSH into a running job through this server (dstack's `ssh RUN`, VS Code Remote-SSH, port
 * forwarding): `GET /proxy/ssh/{project}/{run}?job_num=N&replica_num=N` with
 * `Connection: Upgrade` and `Upgrade: ssh`, as `dstack ssh-proxy` sends it for OpenSSH's
 * ProxyCommand. The upgrade goes on to the job's runner (`GET /api/ssh`), reached like every
 * other runner call (loopback or SSH tunnel), and after its 101 the two connections are joined:
 * the client speaks SSH to the runner's SSH server, which checks the user's key.
 *
 * Answers of its own: 400 for another `Upgrade` or a bad query, 426 without an upgrade,
 * 403 without a valid token or membership, 404 for an unknown run or job, 409 for a run
 * that has finished (or is stopping without its job running), 503 with `Retry-After` while the
 * job is not running yet, 502 when the runner cannot be reached. The runner's own answers other
 * than 101 (409 before the job was submitted to it) are relayed as they are.
 */
// The protocol a client asks for, and the runner is asked for, in `Upgrade`.
import { agentAuthorizationHeader, SSH_UPGRADE_PROTOCOL } from '@dstack/core/agent-protocol';
import { getProjectForUser } from '../accounts/projects.js';
import { authenticate } from '../accounts/request-authentication.js';
import { instancePortUrl } from '../agents/agent-clients.js';
import { runnerAgentToken } from '../agents/agent-tokens.js';
import { AgentUnreachableError } from '../agents/agent-unreachable-error.js';
import type { AppContext } from '../context.js';
import { jobProvisioningDataOf } from '../db/json-columns.js';
import type { JobsTable, ProjectsTable, RunsTable } from '../db/schema.js';
import { HttpError } from '../http/error-mapping.js';
import { defineRawRoute, type RawRouteDefinition, type RawUpgradeContext } from '../http/raw-route.js';
import { forwardUpgrade, requestUpstream } from '../http/upgrade-tunnel.js';
import { runnerPortOf } from '../runs/job-runner-port.js';
import { ACTIVE_RUN_STATUSES, findRunRow } from '../runs/run-reads.js';

export const SSH_PROXY_PREFIX = '/proxy/ssh';

/** The runner's endpoint that switches a connection to its SSH server. */
const RUNNER_SSH_PATH = '/api/ssh';

/** Seconds a client is told to wait (`Retry-After`) while the job is not running yet. */
const RETRY_AFTER_SECONDS = 5;

/** What `/proxy/ssh/{project}/{run}?job_num=&replica_num=` names. */
interface SshTarget {
  projectName: string;
  runName: string;
  jobNum: number;
  replicaNum: number;
}

/** A query parameter that is a non-negative integer, 0 when absent; a bad value is a 400 naming it. */
function indexParameter(query: URLSearchParams, name: string): number {
  const value = query.get(name);
  if (value === null) return 0;
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new HttpError(400, `${name} must be a non-negative integer, got "${value}"`, 'invalid_request');
  }
  return Number(value);
}

function parseTarget(requestUrl: string): SshTarget {
  const url = new URL(requestUrl, 'http://localhost');
  const match = new RegExp(`^${SSH_PROXY_PREFIX}/([^/]+)/([^/]+)/?$`).exec(url.pathname);
  let names: [string, string] | null = null;
  try {
    if (match) names = [decodeURIComponent(match[1] as string), decodeURIComponent(match[2] as string)];
  } catch {
    // A malformed escape names nothing.
  }
  if (!names) {
    throw new HttpError(
      404,
      `Not found: ${url.pathname}; use ${SSH_PROXY_PREFIX}/{project}/{run}`,
      'not_found',
    );
  }
  return {
    projectName: names[0],
    runName: names[1],
    jobNum: indexParameter(url.searchParams, 'job_num'),
    replicaNum: indexParameter(url.searchParams, 'replica_num'),
  };
}

/** The latest submission of the target's job, or null when the run has no such job. */
async function latestSubmission(
  app: AppContext,
  run: RunsTable,
  target: SshTarget,
): Promise<JobsTable | null> {
  const job = await app.db
    .selectFrom('jobs')
    .selectAll()
    .where('run_id', '=', run.id)
    .where('job_num', '=', target.jobNum)
    .where('replica_num', '=', target.replicaNum)
    .orderBy('submission_num', 'desc')
    .limit(1)
    .executeTakeFirst();
  return job ?? null;
}

/** The job to connect to, after the proxy's checks; throws the proxy's own answers (401 to 503). */
async function runningJob(
  context: RawUpgradeContext,
  target: SshTarget,
): Promise<{ project: ProjectsTable; job: JobsTable }> {
  const { app, request } = context;
  const user = await authenticate(app, request);
  const { project } = await getProjectForUser(app, user, target.projectName);
  const run = await findRunRow(app, project.id, target.runName);
  if (!run) {
    throw new HttpError(404, `Run ${target.runName} not found in project ${target.projectName}`, 'not_found');
  }
  const job = await latestSubmission(app, run, target);
  if (!job) {
    throw new HttpError(
      404,
      `Run ${target.runName} has no job ${target.jobNum} in replica ${target.replicaNum}`,
      'not_found',
    );
  }
  if (job.status === 'running') return { project, job };
  // A stopping run's job that is not running will not run again; nor will a finished run's.
  if (!ACTIVE_RUN_STATUSES.includes(run.status) || run.status === 'terminating') {
    throw new HttpError(
      409,
      `Run ${target.runName} is ${run.status}: there is nothing to connect to`,
      'conflict',
    );
  }
  context.setErrorHeader('retry-after', String(RETRY_AFTER_SECONDS));
  throw new HttpError(
    503,
    `Job ${job.job_name} is not running yet (it is ${job.status}); retry later`,
    'service_unavailable',
  );
}

/** The 502 for a runner that cannot be reached or did not answer. */
function runnerUnreachable(job: JobsTable, error: unknown): HttpError {
  const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  return new HttpError(502, `The runner of job ${job.job_name} cannot be reached: ${reason}`, 'bad_gateway');
}

async function handleSshUpgrade(context: RawUpgradeContext): Promise<void> {
  const { app, request, socket, head, signal } = context;
  const target = parseTarget(request.url ?? '/');
  if (request.headers.upgrade?.toLowerCase() !== SSH_UPGRADE_PROTOCOL) {
    throw new HttpError(
      400,
      `The SSH proxy switches to "Upgrade: ${SSH_UPGRADE_PROTOCOL}" only, not "${request.headers.upgrade}"`,
      'invalid_request',
    );
  }
  const { project, job } = await runningJob(context, target);
  const provisioningData = jobProvisioningDataOf(job);
  if (!provisioningData) throw new Error(`Job ${job.job_name} is running without provisioning data`);
  let runnerUrl: string;
  try {
    runnerUrl = await instancePortUrl(app, project, provisioningData, runnerPortOf(job));
  } catch (error) {
    if (!AgentUnreachableError.isInstance(error)) throw error;
    throw runnerUnreachable(job, error);
  }
  const token = await runnerAgentToken(app, job, provisioningData);
  const upstream = requestUpstream(new URL(runnerUrl), {
    path: RUNNER_SSH_PATH,
    method: 'GET',
    headers: {
      connection: 'Upgrade',
      upgrade: SSH_UPGRADE_PROTOCOL,
      ...(token === null ? {} : agentAuthorizationHeader(token)),
    },
    signal,
  });
  await forwardUpgrade(upstream, { socket, head, signal }, (error) => runnerUnreachable(job, error));
}

/** The raw route of the SSH proxy, mounted by proxies/proxy-routes.ts next to the service proxy. */
export const sshProxyRoute: RawRouteDefinition = defineRawRoute({
  pathPrefix: SSH_PROXY_PREFIX,
  summary:
    'SSH to a running job: an upgrade to "ssh" (query job_num, replica_num) joined to the job runner\'s SSH server',
  async handle({ response }) {
    response.setHeader('upgrade', SSH_UPGRADE_PROTOCOL);
    throw new HttpError(
      426,
      `Connect with "Connection: Upgrade" and "Upgrade: ${SSH_UPGRADE_PROTOCOL}" (dstack ssh-proxy does)`,
      'upgrade_required',
    );
  },
  upgrade: handleSshUpgrade,
});
