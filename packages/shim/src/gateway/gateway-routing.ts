/**
 * Which service a request to the gateway is for, and whether its caller may call it: the `Host`
 * names the service (`{run}.{domain}`); an `auth: true` service needs a dstack token of one of its
 * project's members (`Authorization: Bearer`), checked against the hashes the server sent, so
 * the gateway decides with no server. The replica never sees a dstack token the gateway knows
 * (`passesAuthorization`). Replicas are taken in turn.
 */
import { createHash } from 'node:crypto';
import { authorizationCredential, type GatewayService, type GatewayState } from '@dstack/core/agent-protocol';

/** The host name of a `Host` header: lowercase, without the port or a trailing dot. */
export function hostnameOf(host: string | undefined): string | null {
  if (!host) return null;
  const withoutPort = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0];
  const name = withoutPort?.toLowerCase().replace(/\.$/, '');
  return name ? name : null;
}

export function bearerTokenOf(authorization: string | undefined): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return match?.[1] ?? null;
}

export type Refusal = { status: number; message: string };

export class GatewayRouting {
  #services = new Map<string, GatewayService>();
  #tokenHashes = new Map<string, ReadonlySet<string>>();
  readonly #turns = new Map<string, number>();

  update(state: GatewayState): void {
    this.#services = new Map(state.services.map((service) => [service.hostname.toLowerCase(), service]));
    this.#tokenHashes = new Map(
      Object.entries(state.token_hashes).map(([project, hashes]) => [project, new Set(hashes)]),
    );
  }

  get serviceCount(): number {
    return this.#services.size;
  }

  serviceFor(host: string | undefined): GatewayService | null {
    const hostname = hostnameOf(host);
    return hostname === null ? null : (this.#services.get(hostname) ?? null);
  }

  /** Why the caller may not call `service` (403 as dstack's proxy), or null. */
  refusal(service: GatewayService, authorization: string | undefined): Refusal | null {
    if (!service.auth) return null;
    const token = bearerTokenOf(authorization);
    if (token === null) {
      return { status: 403, message: 'Not authenticated: send "Authorization: Bearer <dstack token>"' };
    }
    const hash = createHash('sha256').update(token).digest('hex');
    if (!this.#tokenHashes.get(service.project)?.has(hash)) {
      return { status: 403, message: `The token is not of a member of project ${service.project}` };
    }
    return null;
  }

  /**
   * Whether the replica may see the caller's `Authorization`: not for an `auth: true` service (it
   * held the dstack token just checked), nor for an `auth: false` one when it carries a token of
   * the service's project (its members' and global admins', the hashes the server sent). The
   * gateway knows no other user: a token of someone outside the project passes, but such a
   * client has no reason to send it to this project's services.
   */
  passesAuthorization(service: GatewayService, authorization: string | undefined): boolean {
    if (service.auth) return false;
    const credential = authorizationCredential(authorization);
    if (credential === null) return true;
    const hash = createHash('sha256').update(credential).digest('hex');
    return !this.#tokenHashes.get(service.project)?.has(hash);
  }

  /** The replicas of `service` in the order to try them, starting with the next in turn. */
  replicaOrder(service: GatewayService): string[] {
    const urls = service.replicas.map((replica) => replica.url);
    if (urls.length === 0) return [];
    const key = `${service.project}/${service.run_name}`;
    const turn = this.#turns.get(key) ?? 0;
    this.#turns.set(key, (turn + 1) % Number.MAX_SAFE_INTEGER);
    const start = turn % urls.length;
    return [...urls.slice(start), ...urls.slice(0, start)];
  }
}
