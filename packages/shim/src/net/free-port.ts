import { createServer } from 'node:net';

/**
 * Asks the kernel for a TCP port that is free right now on `host` (default `127.0.0.1`).
 * Another process may take it before the caller binds it; callers that can retry should.
 */
export function findFreePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      server.close(() => {
        if (address === null || typeof address === 'string') {
          reject(new Error(`could not read the port bound on ${host}`));
        } else {
          resolve(address.port);
        }
      });
    });
  });
}
