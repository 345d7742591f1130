/**
 * What the server's proxy and the gateway agent check in a request's `Authorization` before it
 * may reach a service's replica. It never does when dstack checked it (`auth: true`: the token is
 * a dstack user's, none of the service's business), and for `auth: false` unless it carries a
 * dstack token. An open service must not collect the tokens of whoever calls it with one (a
 * client set up for the project's other services sends it everywhere), while a key of the
 * service's own (vLLM's `--api-key`, an app's bearer token) must still reach it.
 */

/**
 * The credential an `Authorization` value carries: the last word, so `Bearer t`, `Token t`, a
 * bare `t` all give `t` (dstack's clients send `Bearer`; the others are caught all the same).
 */
export function authorizationCredential(authorization: string | undefined): string | null {
  const words = (authorization ?? '').trim().split(/\s+/);
  const credential = words[words.length - 1];
  return credential ? credential : null;
}
