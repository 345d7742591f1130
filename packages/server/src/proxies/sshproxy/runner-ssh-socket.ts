/**
 * A connection to a job runner's SSH server: `GET /api/ssh` upgraded, over the same path as every
 * runner call (loopback, or the instance's SSH tunnel), with the runner's token.
 */
import type { Socket } from 'node:net';
import { agentAuthorizationHeader, SSH_UPGRADE_PROTOCOL } from '@dstack/core/agent-protocol';
import { instancePortUrl } from '../../agents/agent-clients.js';
import { runnerAgentToken } from '../../agents/agent-tokens.js';
import type { AppContext } from '../../context.js';
import { jobProvisioningDataOf } from '../../db/json-columns.js';
import type { JobsTable, ProjectsTable } from '../../db/schema.js';
import { requestUpstream } from '../../http/upgrade-tunnel.js';
import { runnerPortOf } from '../../runs/job-runner-port.js';

/** Opens the job's runner SSH stream; rejects when the runner cannot be reached or refuses. */
export async function openRunnerSshSocket(
  app: AppContext,
  project: ProjectsTable,
  job: JobsTable,
  signal: AbortSignal,
): Promise<Socket> {
  const provisioningData = jobProvisioningDataOf(job);
  if (!provisioningData) throw new Error(`job ${job.job_name} has no provisioning data`);
  const runnerUrl = await instancePortUrl(app, project, provisioningData, runnerPortOf(job));
  const token = await runnerAgentToken(app, job, provisioningData);
  const request = requestUpstream(new URL(runnerUrl), {
    path: '/api/ssh',
    method: 'GET',
    headers: {
      connection: 'Upgrade',
      upgrade: SSH_UPGRADE_PROTOCOL,
      ...(token === null ? {} : agentAuthorizationHeader(token)),
    },
    signal,
  });
  return new Promise<Socket>((resolve, reject) => {
    request.once('upgrade', (_response, socket: Socket, head: Buffer) => {
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    request.once('response', (response) => {
      response.resume();
      reject(
        new Error(`the runner of job ${job.job_name} answered ${response.statusCode} to the SSH upgrade`),
      );
    });
    request.on('error', reject);
    request.end();
  });
}
