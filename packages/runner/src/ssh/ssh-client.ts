/**
 * The SSH client side shared by the server (SSH fleet hosts, tunnels to agents) and backends that
 * log in to hosts themselves (the Slurm backend's login nodes): ssh2's handshake as one promise,
 * and a file streamed to a host through `cat`.
 */
import { createReadStream } from 'node:fs';
import type { ConnectConfig } from 'ssh2';
import ssh2 from 'ssh2';

/**
 * Connects an ssh2 client and resolves once it is authenticated. Every way the
 * handshake can fail — an `error` event, the peer closing first, ssh2 throwing
 * synchronously (an unparsable private key) — rejects once, with the error
 * `describeFailure` makes of the cause; the client is ended then.
 */
export function connectSshClient(
  config: ConnectConfig,
  describeFailure: (cause: unknown) => Error,
): Promise<ssh2.Client> {
  return new Promise((resolve, reject) => {
    const client = new ssh2.Client();
    let settled = false;
    const fail = (cause: unknown) => {
      if (settled) return;
      settled = true;
      client.end();
      reject(describeFailure(cause));
    };
    client.once('ready', () => {
      settled = true;
      resolve(client);
    });
    // After `ready`, errors surface as `close` (the owner handles it); the
    // listener stays so an `error` event never goes unhandled.
    client.on('error', fail);
    client.once('close', () => fail(new Error('the connection closed during the handshake')));
    try {
      client.connect(config);
    } catch (error) {
      fail(error);
    }
  });
}

/**
 * Streams the local file into `cat` on the host (hosts whose sshd has no SFTP subsystem have
 * `cat`), made executable when asked. Rejects with `cat`'s exit status and error output.
 */
export function uploadThroughCat(
  client: ssh2.Client,
  localPath: string,
  remotePath: string,
  options: { executable?: boolean } = {},
): Promise<void> {
  const quoted = `'${remotePath.replace(/'/g, `'\\''`)}'`;
  const command = options.executable ? `cat > ${quoted} && chmod 755 ${quoted}` : `cat > ${quoted}`;
  return new Promise((resolve, reject) => {
    client.exec(command, (error, stream) => {
      if (error) {
        reject(error);
        return;
      }
      let stderr = '';
      stream.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      // The channel closes only once its output is read too (there is none).
      stream.resume();
      stream.on('close', (code: number | null) => {
        if (code === 0) resolve();
        else reject(new Error(`exit status ${code}: ${stderr.trim()}`));
      });
      const source = createReadStream(localPath);
      source.once('error', (readError) => {
        stream.close();
        reject(readError);
      });
      source.pipe(stream);
    });
  });
}
