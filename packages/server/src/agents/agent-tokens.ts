/**
 * Instance agent tokens: the server chooses one per instance when it makes the instance's row,
 * keeps it encrypted on the row (`instances.agent_token`), hands it to the backend with the
 * launch (`RunJobParams.agentToken`, `InstanceConfiguration.agent_token`) so the agent the
 * instance starts requires it, and sends it on every call to that agent. A shim's runners
 * require a token derived from it and their task id (the job id).
 */
import { randomBytes } from 'node:crypto';
import type { JobProvisioningData } from '@dstack/core';
import { deriveRunnerToken } from '@dstack/core/agent-protocol';
import type { AppContext } from '../context.js';
import type { InstancesTable, JobsTable } from '../db/schema.js';

/** A fresh agent token: 256 random bits, base64url (no character a header or a shell minds). */
export function newAgentToken(): string {
  return randomBytes(32).toString('base64url');
}

/** A fresh token, encrypted for `instances.agent_token`. */
export function newEncryptedAgentToken(app: AppContext): string {
  return app.encryption.encrypt(newAgentToken());
}

/**
 * The token a launch of the instance hands to the backend. A row written before tokens existed
 * (a launch retried across the upgrade) gets one now; of two launches racing, both hand over
 * the token stored first.
 */
export async function launchAgentToken(app: AppContext, instanceId: string): Promise<string> {
  const stored = await storedTokenOf(app, instanceId);
  if (stored !== null) return stored;
  await app.db
    .updateTable('instances')
    .set({ agent_token: newEncryptedAgentToken(app) })
    .where('id', '=', instanceId)
    .where('agent_token', 'is', null)
    .execute();
  const created = await storedTokenOf(app, instanceId);
  if (created === null) throw new Error(`instance ${instanceId} not found`);
  return created;
}

/** How many decrypted tokens `app.caches.agents.tokens` keeps. */
const TOKEN_CACHE_LIMIT = 10_000;

/**
 * The token the agents of the instance (its row id) require; null for an instance whose agents
 * were started without one (launched before agents had tokens).
 */
export async function instanceAgentToken(app: AppContext, instanceId: string): Promise<string | null> {
  const cache = app.caches.agents.tokens;
  const cached = cache.get(instanceId);
  if (cached !== undefined) return cached;
  const token = await storedTokenOf(app, instanceId);
  if (token !== null) {
    if (cache.size >= TOKEN_CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
    cache.set(instanceId, token);
  }
  return token;
}

/**
 * The token of the job's runner: on an instance with a shim (`dockerized`), the one the shim
 * derived for the job's task; on a container backend, where the backend started the runner
 * itself, the instance's own. Null when the instance's agents have no token.
 */
export async function runnerAgentToken(
  app: AppContext,
  job: Pick<JobsTable, 'id' | 'instance_id'>,
  provisioningData: Pick<JobProvisioningData, 'dockerized'>,
): Promise<string | null> {
  if (job.instance_id === null) return null;
  const token = await instanceAgentToken(app, job.instance_id);
  if (token === null) return null;
  return provisioningData.dockerized ? deriveRunnerToken(token, job.id) : token;
}

async function storedTokenOf(app: AppContext, instanceId: string): Promise<string | null> {
  const row: Pick<InstancesTable, 'agent_token'> | undefined = await app.db
    .selectFrom('instances')
    .select('agent_token')
    .where('id', '=', instanceId)
    .executeTakeFirst();
  return row?.agent_token ? app.encryption.decrypt(row.agent_token) : null;
}
