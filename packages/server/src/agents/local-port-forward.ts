import { createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** Opens the far end for one accepted socket: an SSH channel to the remote port. */
export type OpenRemoteStream = () => Promise<Duplex>;

/**
 * A TCP listener on `127.0.0.1:<free port>` that pipes each accepted socket
 * into a fresh stream from `openRemote` (`ssh -L` in one process). When the
 * remote stream cannot be opened, the socket is reset, which an HTTP client
 * sees as a connection error.
 */
export class LocalPortForward {
  readonly #sockets = new Set<Socket>();
  readonly #server: Server;
  #localPort = 0;

  private constructor(
    private readonly openRemote: OpenRemoteStream,
    private readonly onActivity: () => void,
  ) {
    this.#server = createServer((socket) => this.#accept(socket));
  }

  /**
   * Starts listening.
   * @param onActivity called when a connection opens or closes (keeps the tunnel from idling out)
   */
  static async listen(openRemote: OpenRemoteStream, onActivity: () => void): Promise<LocalPortForward> {
    const forward = new LocalPortForward(openRemote, onActivity);
    await new Promise<void>((resolve, reject) => {
      forward.#server.once('error', reject);
      forward.#server.listen(0, '127.0.0.1', () => {
        forward.#server.off('error', reject);
        resolve();
      });
    });
    const address = forward.#server.address();
    forward.#localPort = typeof address === 'object' && address !== null ? address.port : 0;
    return forward;
  }

  /** The local port HTTP clients connect to. */
  get localPort(): number {
    return this.#localPort;
  }

  /** Connections currently piped through this forward. */
  get activeConnections(): number {
    return this.#sockets.size;
  }

  /** Stops listening and drops every open connection. */
  close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }

  #accept(socket: Socket): void {
    this.#sockets.add(socket);
    this.onActivity();
    socket.once('close', () => {
      this.#sockets.delete(socket);
      this.onActivity();
    });
    socket.on('error', () => socket.destroy());
    // The socket stays paused until piped, so a request sent before the
    // channel opens is buffered, not lost.
    this.openRemote().then(
      (remote) => {
        if (socket.destroyed) {
          remote.destroy();
          return;
        }
        remote.on('error', () => socket.destroy());
        remote.once('close', () => socket.destroy());
        socket.once('close', () => remote.destroy());
        socket.pipe(remote);
        remote.pipe(socket);
      },
      () => socket.resetAndDestroy(),
    );
  }
}
