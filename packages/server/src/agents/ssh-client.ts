import ssh2, { type ConnectConfig } from 'ssh2';

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
