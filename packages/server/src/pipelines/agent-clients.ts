/** Shim and runner clients for a job's instance, reached directly or through the project's SSH tunnel. */
import type { JobProvisioningData } from '@dstack/core';
import { RunnerClient } from '@dstack/runner';
import { ShimClient } from '@dstack/shim';
import type { AppContext } from '../context.js';
import type { ProjectsTable } from '../db/schema.js';
import { runServicesOf } from '../run-services.js';

/** dstack's runner port inside the container (the shim maps it to a host port). */
export const RUNNER_CONTAINER_PORT = 10999;

function privateKeyOf(app: AppContext, project: ProjectsTable): string {
  return app.encryption.decrypt(project.ssh_private_key);
}

export async function shimClientFor(
  app: AppContext,
  project: ProjectsTable,
  provisioningData: JobProvisioningData,
): Promise<ShimClient> {
  const url = await runServicesOf(app).agents.shimUrl(provisioningData, privateKeyOf(app, project));
  return new ShimClient(url);
}

export async function runnerClientFor(
  app: AppContext,
  project: ProjectsTable,
  provisioningData: JobProvisioningData,
  runnerPort: number,
): Promise<RunnerClient> {
  const url = await runServicesOf(app).agents.runnerUrl(
    provisioningData,
    privateKeyOf(app, project),
    runnerPort,
  );
  return new RunnerClient(url);
}
