/**
 * Whether a request's `Authorization` carries a dstack user's token: such a header never reaches
 * a service's replica, `auth: false` ones included (see service-authorization.ts of
 * `@dstack/core/agent-protocol`, which the gateway agent follows too).
 */
import { authorizationCredential } from '@dstack/core/agent-protocol';
import type { AppContext } from '../context.js';
import { hashToken } from '../security/tokens.js';

/** True when the header's credential is the token of any user, deactivated ones included. */
export async function carriesDstackToken(
  app: AppContext,
  authorization: string | undefined,
): Promise<boolean> {
  const credential = authorizationCredential(authorization);
  if (credential === null) return false;
  const user = await app.db
    .selectFrom('users')
    .select('id')
    .where('token_hash', '=', hashToken(credential))
    .executeTakeFirst();
  return user !== undefined;
}
