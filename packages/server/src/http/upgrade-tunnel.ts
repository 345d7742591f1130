/**
 * Passing a protocol upgrade on to an upstream server (a service's replica, a job's runner):
 * the request to the upstream, its answer, and the client's socket joined to the upstream's
 * after a 101, bytes flowing both ways untouched until either side closes. An upstream that
 * answers otherwise has its answer relayed as it is, under the sandbox policy of
 * origin-isolation.ts (the upstream's content is not the server's).
 */
import { type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders, request } from 'node:http';
import type { Socket } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { switchingProtocolsHeaders, withoutHopByHopHeaders } from './hop-by-hop-headers.js';
import { withSandboxPolicy } from './origin-isolation.js';
import { formatResponseHead } from './raw-route.js';

/** How the upstream answered an upgrade request. */
type UpgradeAnswer =
  | { kind: 'switched'; response: IncomingMessage; socket: Socket; head: Buffer }
  | { kind: 'answered'; response: IncomingMessage };

/** A request to `path` on `base` (`http://host:port`, an IPv6 host in brackets), not yet ended. */
export function requestUpstream(
  base: URL,
  options: { path: string; method: string | undefined; headers: OutgoingHttpHeaders; signal: AbortSignal },
): ClientRequest {
  return request({
    protocol: base.protocol,
    hostname: base.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: base.port,
    ...options,
  });
}

/**
 * Sends `upstream`, an upgrade request, and gives its answer to the client (see
 * `passUpgradeAnswer`). An upstream that does not answer throws `didNotAnswer(error)`, the
 * proxy's own error answer, unless the client has gone (`signal` aborted).
 */
export async function forwardUpgrade(
  upstream: ClientRequest,
  client: { socket: Socket; head: Buffer; signal: AbortSignal },
  didNotAnswer: (error: unknown) => Error,
): Promise<void> {
  let answer: UpgradeAnswer;
  try {
    answer = await awaitUpgradeAnswer(upstream);
  } catch (error) {
    if (client.signal.aborted) return;
    throw didNotAnswer(error);
  }
  await passUpgradeAnswer(client.socket, client.head, answer);
}

/**
 * Ends `upstream`, an upgrade request, and resolves with the answer; rejects when the upstream
 * does not answer (refused, reset, unreachable) or the request is aborted.
 */
function awaitUpgradeAnswer(upstream: ClientRequest): Promise<UpgradeAnswer> {
  const answered = new Promise<UpgradeAnswer>((resolve, reject) => {
    upstream.once('upgrade', (response: IncomingMessage, socket: Socket, head: Buffer) => {
      // node:http took its listeners off the socket: a reset must not crash the server ('close' follows).
      socket.on('error', () => {});
      resolve({ kind: 'switched', response, socket, head });
    });
    upstream.once('response', (response: IncomingMessage) => resolve({ kind: 'answered', response }));
    // `on`, not `once`: a later error (the answer cut) rejects a settled promise, harmlessly.
    upstream.on('error', reject);
  });
  // An upgrade request has no body: what the client sends next is for the new protocol (`head`).
  upstream.end();
  return answered;
}

/**
 * Gives the client the upstream's answer on its socket: after a 101, the tunnel between the
 * two (`clientHead`, what the client sent after its request, goes first); any other answer
 * relayed whole, then the client's socket closed. Resolves once the tunnel is open or the
 * answer relayed; never throws (a cut answer destroys the client's socket).
 */
async function passUpgradeAnswer(client: Socket, clientHead: Buffer, answer: UpgradeAnswer): Promise<void> {
  if (answer.kind === 'answered') await relayAnswer(answer.response, client);
  else joinTunnel(client, clientHead, answer);
}

/**
 * The upstream's 101 to the client, then bytes both ways as they come, `head`s first. Either
 * side closing or failing closes the other; an end of input (half-close) is passed on as one.
 */
function joinTunnel(
  client: Socket,
  clientHead: Buffer,
  switched: { response: IncomingMessage; socket: Socket; head: Buffer },
): void {
  const upstream = switched.socket;
  if (client.destroyed || upstream.destroyed) {
    // One side left while the upstream was switching: its 'close' has passed.
    client.destroy();
    upstream.destroy();
    return;
  }
  // Soon, not at once: what one side sent just before it closed still reaches the other.
  client.once('close', () => upstream.destroySoon());
  upstream.once('close', () => client.destroySoon());
  // Interactive protocols (WebSocket, SSH keystrokes) send small frames that must not wait to be batched.
  upstream.setNoDelay(true);
  client.setNoDelay(true);
  client.write(
    formatResponseHead(
      101,
      switched.response.statusMessage,
      withSandboxPolicy(switchingProtocolsHeaders(switched.response.headers)),
    ),
  );
  if (switched.head.length > 0) client.write(switched.head);
  if (clientHead.length > 0) upstream.write(clientHead);
  upstream.pipe(client);
  client.pipe(upstream);
}

/** An upstream's answer other than 101, relayed whole on the client's socket, which is then closed. */
async function relayAnswer(response: IncomingMessage, client: Socket): Promise<void> {
  // Node has decoded the body (no more chunked framing): closing the connection delimits it.
  client.write(
    formatResponseHead(response.statusCode ?? 502, response.statusMessage, {
      ...withSandboxPolicy(withoutHopByHopHeaders(response.headers)),
      connection: 'close',
    }),
  );
  try {
    await pipeline(response, client);
    client.destroySoon();
  } catch {
    // The upstream or the client cut the answer short: the client sees the connection drop.
    client.destroy();
  }
}
