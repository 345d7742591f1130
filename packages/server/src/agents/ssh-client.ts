import { connectSshClient } from '@dstack/runner';
import type ssh2 from 'ssh2';
import type { ClientChannel, ConnectConfig } from 'ssh2';

/** One SSH login: where and how (`host`, `port`, `username`, key, timeouts), and how its failure reads. */
export interface SshLogin {
  config: ConnectConfig & { host: string; port: number };
  describeFailure: (cause: unknown) => Error;
}

/**
 * Connects to `target`, through the jump host `proxy` when one is given (`ssh -J`): logs in
 * to the proxy, opens a TCP channel from it to the target's host and port, and runs the
 * target's handshake over that channel. A proxy that cannot be reached or refuses its key
 * fails with the proxy's `describeFailure`; a proxy that cannot open the channel, with the
 * target's (the target cannot be reached). The proxy's session belongs to the returned
 * client: ending either ends both.
 */
export async function connectSshClientThrough(
  target: SshLogin,
  proxy: SshLogin | null,
): Promise<ssh2.Client> {
  if (proxy === null) return connectSshClient(target.config, target.describeFailure);
  const proxyClient = await connectSshClient(proxy.config, proxy.describeFailure);
  try {
    const channel = await forwardOut(proxyClient, target.config.host, target.config.port).catch(
      (cause: unknown) => {
        throw target.describeFailure(
          new Error(
            `the SSH proxy ${proxy.config.username}@${proxy.config.host}:${proxy.config.port} cannot open a connection to it: ${messageOf(cause)}`,
            { cause },
          ),
        );
      },
    );
    const client = await connectSshClient({ ...target.config, sock: channel }, target.describeFailure);
    client.once('close', () => proxyClient.end());
    proxyClient.once('close', () => client.end());
    return client;
  } catch (error) {
    proxyClient.end();
    throw error;
  }
}

/** Opens a TCP channel from the client's host to `host:port` (`ssh -L`'s direct-tcpip). */
export function forwardOut(client: ssh2.Client, host: string, port: number): Promise<ClientChannel> {
  return new Promise((resolve, reject) => {
    client.forwardOut('127.0.0.1', 0, host, port, (error, channel) => {
      if (error) reject(error);
      else resolve(channel);
    });
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
