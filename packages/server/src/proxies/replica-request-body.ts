/**
 * A request body on its way to a replica, through the service proxy or the model router.
 *
 * Nothing of it is taken from its source before the connection to the replica is open, so
 * that a replica that refuses the connection (it is going away) leaves it whole for the next.
 *
 * A replica may answer before it has read the whole body (an error, or a server that does
 * not need the rest). Once that answer is relayed, what is left of the body is read and
 * dropped rather than sent: node's client stops taking a body once its answer is complete,
 * and the client, still uploading, would otherwise never finish its request (nginx discards
 * the rest of a request body the same way). The connection to the replica, left mid-body, is
 * closed.
 */
import type { ClientRequest } from 'node:http';
import type { Readable } from 'node:stream';

export interface ReplicaRequestBody {
  /** Whether sending has begun: the body can no longer go to another replica. */
  readonly started: boolean;
  /** Stops sending: the rest of the body is read and dropped. Call once the answer is relayed (or failed). */
  stop(): void;
}

/** Pipes `body` into `upstream` once `upstream` is connected. */
export function sendBodyWhenConnected(upstream: ClientRequest, body: Readable): ReplicaRequestBody {
  let started = false;
  const send = () => {
    started = true;
    // A client that leaves mid-body errors its request (and the model router's body): the
    // replica's request is cut with it.
    body.on('error', () => upstream.destroy());
    body.pipe(upstream);
  };
  upstream.once('socket', (socket) => {
    if (socket.connecting) socket.once('connect', send);
    else send();
  });
  return {
    get started() {
      return started;
    },
    stop() {
      if (!started) return;
      body.unpipe(upstream);
      if (!body.readableEnded) body.resume();
      if (!upstream.writableFinished) upstream.destroy();
    },
  };
}
