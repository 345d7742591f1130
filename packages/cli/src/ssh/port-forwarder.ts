/**
 * Local port forwarding (`ssh -L`) done in-process: a TCP listener on localhost per port, each
 * connection carried by a `direct-tcpip` channel of one ssh2 client to the job's 127.0.0.1:PORT.
 * The SSH connection runs over a tunnel the caller opens (the server's `/proxy/ssh`); it is
 * opened on the first connection and again after it drops.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { pipeline } from 'node:stream';
import type { Client } from 'ssh2';

/** Keep-alives keep proxies and NATs on the way from dropping an idle connection. */
const KEEPALIVE_INTERVAL_MS = 15_000;

export interface PortForwarderOptions {
  /** Opens a socket that speaks SSH-2 to the job. */
  openTunnel: () => Promise<Socket>;
  /** The user's private key (PEM) the job authorizes. */
  privateKey: string;
  /** Told about a forwarded connection that failed (the tunnel, login, or the job's port). */
  onError: (error: unknown, forwarded: ForwardedPort) => void;
}

export interface ForwardedPort {
  localPort: number;
  containerPort: number;
}

export class SshPortForwarder {
  readonly #options: PortForwarderOptions;
  readonly #listeners: Server[] = [];
  #connection: Promise<Client> | undefined;
  #closed = false;

  constructor(options: PortForwarderOptions) {
    this.#options = options;
  }

  /**
   * Listens on 127.0.0.1:`localPort` (any free port when null) and forwards what connects there
   * to the job's `containerPort`. Rejects when the local port cannot be listened on.
   */
  async forward(localPort: number | null, containerPort: number): Promise<ForwardedPort> {
    const listener = createServer();
    await new Promise<void>((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(localPort ?? 0, '127.0.0.1', () => {
        listener.off('error', reject);
        resolve();
      });
    });
    this.#listeners.push(listener);
    const address = listener.address();
    const forwarded = {
      localPort: typeof address === 'object' && address ? address.port : (localPort ?? 0),
      containerPort,
    };
    listener.on('connection', (socket) => this.#carry(socket, forwarded));
    return forwarded;
  }

  /** Stops listening and closes the SSH connection (and with it every forwarded connection). */
  close(): void {
    this.#closed = true;
    for (const listener of this.#listeners) listener.close();
    this.#connection?.then(
      (client) => client.end(),
      () => {},
    );
  }

  #carry(socket: Socket, forwarded: ForwardedPort): void {
    socket.on('error', () => socket.destroy());
    const fail = (error: unknown) => {
      socket.destroy();
      if (!this.#closed) this.#options.onError(error, forwarded);
    };
    this.#connect().then((client) => {
      client.forwardOut(
        '127.0.0.1',
        socket.remotePort ?? 0,
        '127.0.0.1',
        forwarded.containerPort,
        (error, channel) => {
          if (error) {
            fail(error);
            return;
          }
          // Either side ending ends the other; errors only close them (the peer went away).
          pipeline(socket, channel, socket, () => {});
        },
      );
    }, fail);
  }

  /** The SSH connection, opened when there is none (the first time, or after it closed). */
  #connect(): Promise<Client> {
    if (this.#closed) return Promise.reject(new Error('port forwarding was stopped'));
    if (!this.#connection) {
      const connecting = this.#open();
      this.#connection = connecting;
      const forget = () => {
        if (this.#connection === connecting) this.#connection = undefined;
      };
      connecting.then((client) => client.once('close', forget), forget);
    }
    return this.#connection;
  }

  async #open(): Promise<Client> {
    // ssh2 (some 60 CommonJS files) loads when a port is first forwarded, not with every command
    // that can forward one (`dstack apply -d` forwards none).
    const { Client: SshClient } = await import('ssh2');
    const sock = await this.#options.openTunnel();
    return new Promise<Client>((resolve, reject) => {
      const client = new SshClient();
      client.once('ready', () => resolve(client));
      // Before 'ready' an error fails the login; after it, 'close' follows and a reconnect is due.
      client.on('error', reject);
      client.once('close', () => reject(new Error('the SSH connection closed before login')));
      client.connect({
        sock,
        username: 'root',
        privateKey: this.#options.privateKey,
        keepaliveInterval: KEEPALIVE_INTERVAL_MS,
      });
    });
  }
}
