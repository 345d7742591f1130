/**
 * Gateway agent tokens: the server chooses one per gateway when it creates the gateway's row,
 * keeps it encrypted on the row (`gateways.agent_token`), hands it to the backend with the launch
 * (`GatewayReplicaConfiguration.agent_token`, written by the user data to a file only root reads)
 * so the gateway agent requires it on its management API, and sends it on every management call.
 * The agent's public side forwards only to replicas; the token keeps a process on the gateway, or
 * anything else that reaches its loopback, from deciding what the gateway serves.
 */

import { newAgentToken } from '../agents/agent-tokens.js';
import type { AppContext } from '../context.js';
import type { GatewaysTable } from '../db/schema.js';

/** The token the gateway's agent requires; null for a gateway launched before gateways had tokens. */
export function gatewayAgentToken(
  app: AppContext,
  gateway: Pick<GatewaysTable, 'agent_token'>,
): string | null {
  return gateway.agent_token ? app.encryption.decrypt(gateway.agent_token) : null;
}

/**
 * The token a launch of the gateway hands to the backend. A row written before tokens existed
 * (a gateway created before the upgrade, launched after it) gets one now; of two launches
 * racing, both hand over the token stored first.
 */
export async function launchGatewayAgentToken(app: AppContext, gatewayId: string): Promise<string> {
  await app.db
    .updateTable('gateways')
    .set({ agent_token: app.encryption.encrypt(newAgentToken()) })
    .where('id', '=', gatewayId)
    .where('agent_token', 'is', null)
    .execute();
  const row = await app.db
    .selectFrom('gateways')
    .select('agent_token')
    .where('id', '=', gatewayId)
    .executeTakeFirst();
  const token = row ? gatewayAgentToken(app, row) : null;
  if (token === null) throw new Error(`gateway ${gatewayId} not found`);
  return token;
}
