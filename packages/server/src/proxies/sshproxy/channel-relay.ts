/**
 * Relaying what an SSH client asks of the proxy to the job's runner, over the proxy's own SSH
 * connection to it: sessions (pty, env, shell, exec, subsystems such as sftp, window changes,
 * signals, exit status) and `direct-tcpip` forwards (`ssh -L`, dstack's attach). What the runner
 * refuses, the client is refused.
 */
import type { Duplex } from 'node:stream';
import type {
  AcceptConnection,
  Client,
  ClientChannel,
  PseudoTtyInfo,
  RejectConnection,
  ServerChannel,
  Session,
  TcpipRequestInfo,
} from 'ssh2';

/** Joins two channels: data and EOF both ways, stderr and the exit status from the runner's. */
function joinChannels(client: ServerChannel, upstream: ClientChannel): void {
  client.pipe(upstream);
  upstream.pipe(client);
  upstream.stderr.pipe(client.stderr);
  upstream.on('exit', (code: number | null, signal?: string) => {
    if (signal) client.exit(signal, false, '');
    else if (typeof code === 'number') client.exit(code);
  });
  upstream.once('close', () => client.close());
  client.once('close', () => upstream.close());
  upstream.on('error', () => client.close());
  client.on('error', () => upstream.close());
}

/** The runner's answer to a channel request, as a promise. */
function requested(
  start: (callback: (error: Error | undefined, channel: ClientChannel) => void) => void,
): Promise<ClientChannel> {
  return new Promise((resolve, reject) =>
    start((error, channel) => (error ? reject(error) : resolve(channel))),
  );
}

/** Serves one session channel of the client with one of the runner. */
export function relaySession(session: Session, upstream: Promise<Client>): void {
  let pty: PseudoTtyInfo | undefined;
  const env: Record<string, string> = {};
  let running: ClientChannel | undefined;
  session.on('pty', (accept, _reject, info) => {
    pty = info;
    accept?.();
  });
  session.on('env', (accept, _reject, info) => {
    env[info.key] = info.val;
    accept?.();
  });
  session.on('window-change', (accept, _reject, info) => {
    running?.setWindow(info.rows, info.cols, info.height, info.width);
    accept?.();
  });
  session.on('signal', (accept, _reject, info) => {
    running?.signal(info.name);
    accept?.();
  });
  // The client's channel is taken at once: a client whose input is already at its end sends EOF
  // right after its request, and a session that ended can no longer be accepted. What it sends
  // waits in the channel until the runner's channel is open.
  const start = (accept: () => ServerChannel, open: (client: Client) => Promise<ClientChannel>) => {
    const channel = accept();
    channel.pause();
    upstream
      .then(open)
      .then((opened) => {
        running = opened;
        joinChannels(channel, opened);
        channel.resume();
      })
      .catch((error: unknown) => {
        channel.stderr.write(
          `dstack: the job refused the session: ${error instanceof Error ? error.message : String(error)}\n`,
        );
        channel.exit(255);
        channel.end();
      });
  };
  const window = () =>
    pty
      ? {
          rows: pty.rows,
          cols: pty.cols,
          height: pty.height,
          width: pty.width,
          term: pty.term,
          modes: pty.modes,
        }
      : false;
  session.on('shell', (accept) =>
    start(accept, (client) => requested((callback) => client.shell(window(), { env }, callback))),
  );
  session.on('exec', (accept, _reject, info) =>
    start(accept, (client) => {
      const terminal = window();
      return requested((callback) =>
        client.exec(info.command, { env, ...(terminal ? { pty: terminal } : {}) }, callback),
      );
    }),
  );
  // No `sftp` listener: ssh2 then hands sftp over as a plain subsystem, relayed as its bytes.
  session.on('subsystem', (accept, _reject, info) =>
    start(accept, (client) => requested((callback) => client.subsys(info.name, callback))),
  );
  // Agent and X11 forwarding would reach the client's machine from the job: not offered.
  session.on('auth-agent', (_accept, reject) => reject?.());
  session.on('x11', (_accept, reject) => reject?.());
}

/** Serves a client's `direct-tcpip` channel with one the runner opens to the same destination. */
export function relayDirectTcpip(
  accept: AcceptConnection<ServerChannel>,
  reject: RejectConnection,
  info: TcpipRequestInfo,
  upstream: Promise<Client>,
): void {
  upstream
    .then((client) =>
      requested((callback) =>
        client.forwardOut(info.srcIP, info.srcPort, info.destIP, info.destPort, callback),
      ),
    )
    .then((channel) => {
      const client: Duplex = accept();
      client.pipe(channel).pipe(client);
      channel.once('close', () => client.destroy());
      client.once('close', () => channel.close());
      channel.on('error', () => client.destroy());
      client.on('error', () => channel.close());
    })
    .catch(() => reject());
}
