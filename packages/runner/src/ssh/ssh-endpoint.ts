import type { IncomingMessage } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { DSTACK_RUNNER_HTTP_PORT, SSH_UPGRADE_PROTOCOL } from '@dstack/core/agent-protocol';
import ssh2, { type AuthContext, type Connection } from 'ssh2';
import { signalProcessGroup } from '../job/spawn-as.js';
import { HttpError, rejectUpgrade } from '../server/http-helpers.js';
import { type AuthorizedKey, findAuthorizedKey } from './authorized-keys.js';
import { generateHostKey } from './host-key.js';
import { SshConnectionActivity } from './ssh-connection-activity.js';
import { forwardDirectTcpip } from './ssh-port-forwarding.js';
import { type SessionLaunch, serveSession } from './ssh-sessions.js';

export interface SshEndpointOptions {
  /** Who sessions run as, where and with what environment: the job's. */
  launch(): Promise<SessionLaunch>;
  /**
   * Keys that may log in from the start, before and besides the submitted job's (the project key
   * on container backends, where the server reaches the runner's HTTP port through SSH). Default none.
   */
  serverKeys?: readonly AuthorizedKey[];
}

/**
 * The runner's SSH server, reached by upgrading `GET /api/ssh` on its HTTP port: no port of its
 * own, so it works over every path the dstack server already uses to reach the runner. Logins
 * need one of the keys authorized by the submitted job; any user name is accepted, and sessions
 * run as the job's user.
 */
export class SshEndpoint {
  /** Logged-in connections, for the pull's `no_connections_secs`. */
  readonly activity = new SshConnectionActivity();
  private server: Promise<ssh2.Server> | undefined;
  private authorizedKeys: readonly AuthorizedKey[] | undefined;
  private readonly sockets = new Set<Duplex>();
  private readonly processGroups = new Set<number>();
  private readonly listeners: Server[] = [];
  private closed = false;
  private httpPort: number | undefined;
  private serveHttp: ((channel: Duplex) => void) | undefined;

  constructor(private readonly options: SshEndpointOptions) {}

  /** The keys of the submitted job; until it is set, connections are refused with 409. No key: every login is refused. */
  authorize(keys: readonly AuthorizedKey[]): void {
    this.authorizedKeys = keys;
  }

  /**
   * Forwards to the runner's own HTTP port (dstack's 10999, or the port it listens on) are served
   * by `serve`, in-process: the API without its token, since the SSH login proved the key.
   */
  serveHttpOverSsh(serve: (channel: Duplex) => void): void {
    this.serveHttp = serve;
  }

  /** The port the runner's HTTP API listens on, besides dstack's 10999. */
  setHttpPort(port: number): void {
    this.httpPort = port;
  }

  /** Handles the `upgrade` event of `GET /api/ssh`. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.accept(request, socket, head).catch((error: unknown) => {
      rejectUpgrade(socket, new HttpError(500, error instanceof Error ? error.message : String(error)));
    });
  }

  /**
   * Also serves SSH on a TCP port of its own (dstack's runner sshd on 10022), for container
   * backends whose server logs in with the project key (`serverKeys`) and forwards the runner's
   * HTTP port. Resolves with the port once it listens.
   */
  async listen(port: number, host: string): Promise<number> {
    const listener = createServer((socket) => {
      if (this.closed) {
        socket.destroy();
        return;
      }
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
      this.sshServer().then(
        (server) => server.injectSocket(socket),
        () => socket.destroy(),
      );
    });
    this.listeners.push(listener);
    await new Promise<void>((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(port, host, () => {
        listener.off('error', reject);
        resolve();
      });
    });
    const address = listener.address();
    return typeof address === 'object' && address !== null ? address.port : port;
  }

  /** Ends every connection and kills every session's processes. */
  close(): void {
    this.closed = true;
    for (const listener of this.listeners) listener.close();
    for (const socket of this.sockets) socket.destroy();
    for (const groupId of this.processGroups) signalProcessGroup(groupId, 'SIGKILL');
  }

  private async accept(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const protocol = request.headers.upgrade?.toLowerCase();
    if (protocol !== SSH_UPGRADE_PROTOCOL) {
      rejectUpgrade(
        socket,
        new HttpError(
          400,
          `header upgrade: expected "${SSH_UPGRADE_PROTOCOL}", got "${request.headers.upgrade}"`,
        ),
      );
      return;
    }
    if (this.authorizedKeys === undefined) {
      rejectUpgrade(socket, new HttpError(409, 'no job was submitted to this runner'));
      return;
    }
    const server = await this.sshServer();
    if (this.closed || socket.destroyed) {
      socket.destroy();
      return;
    }
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${SSH_UPGRADE_PROTOCOL}\r\n\r\n`,
    );
    // Bytes the client sent right after its request (its SSH version line) belong to SSH.
    if (head.length > 0) socket.unshift(head);
    // The upgrade event hands over the connection's net.Socket, typed as a Duplex.
    server.injectSocket(socket as Socket);
  }

  /**
   * The SSH server, its host key generated on the first connection (a failure surfaces as a 500
   * on it). Not at start: an RSA key takes the thread pool for a while, and a shim that starts
   * hundreds of runners would queue every runner's file work behind their keys.
   */
  private sshServer(): Promise<ssh2.Server> {
    this.server ??= generateHostKey().then(
      (hostKey) => new ssh2.Server({ hostKeys: [hostKey] }, (connection) => this.serveConnection(connection)),
    );
    return this.server;
  }

  private serveConnection(connection: Connection): void {
    // A client that vanishes or speaks garbage ends its own connection, never the runner.
    connection.on('error', () => undefined);
    connection.on('authentication', (context) => this.authenticate(context));
    connection.on('ready', () => {
      connection.once('close', this.activity.opened());
      connection.on('session', (accept) => {
        serveSession(accept(), {
          launch: () => this.options.launch(),
          track: (groupId) => {
            this.processGroups.add(groupId);
            return () => this.processGroups.delete(groupId);
          },
        });
      });
      connection.on('tcpip', (accept, reject, info) => {
        if (this.serveHttp && this.isOwnHttpPort(info.destIP, info.destPort)) this.serveHttp(accept());
        else forwardDirectTcpip(accept, reject, info);
      });
    });
  }

  private isOwnHttpPort(host: string, port: number): boolean {
    const loopback = host === 'localhost' || host === '::1' || host.startsWith('127.');
    return loopback && (port === DSTACK_RUNNER_HTTP_PORT || port === this.httpPort);
  }

  private authenticate(context: AuthContext): void {
    if (context.method !== 'publickey') {
      context.reject(['publickey']);
      return;
    }
    const keys = [...(this.options.serverKeys ?? []), ...(this.authorizedKeys ?? [])];
    const key = findAuthorizedKey(keys, context.key.algo, context.key.data);
    if (key === undefined) {
      context.reject(['publickey']);
      return;
    }
    // Without a signature the client only asks whether the key would do; with one, it proves it holds the private half.
    if (
      context.signature === undefined ||
      context.blob === undefined ||
      key.key.verify(context.blob, context.signature, context.hashAlgo) === true
    ) {
      context.accept();
    } else {
      context.reject(['publickey']);
    }
  }
}
