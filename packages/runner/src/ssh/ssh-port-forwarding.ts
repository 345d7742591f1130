import { connect } from 'node:net';
import type { AcceptConnection, RejectConnection, ServerChannel, TcpipRequestInfo } from 'ssh2';

/**
 * Serves a `direct-tcpip` channel: connects from the runner to the requested host and port (the
 * job's ports, VS Code's server) and joins the two. The channel is refused if the connection fails.
 */
export function forwardDirectTcpip(
  accept: AcceptConnection<ServerChannel>,
  reject: RejectConnection,
  info: TcpipRequestInfo,
): void {
  const socket = connect({ host: info.destIP, port: info.destPort });
  socket.once('error', reject);
  socket.once('connect', () => {
    socket.off('error', reject);
    const channel = accept();
    // An error on either side ends both: the client sees the channel close.
    socket.on('error', () => channel.close());
    channel.on('error', () => socket.destroy());
    channel.once('close', () => socket.destroy());
    socket.pipe(channel).pipe(socket);
  });
}
