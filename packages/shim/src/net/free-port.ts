import { createServer, type Server } from 'node:net';

/**
 * Asks the kernel for a TCP port that is free right now on `host` (default `127.0.0.1`).
 * Another process may take it before the caller binds it; callers that can retry should.
 */
export async function findFreePort(host = '127.0.0.1'): Promise<number> {
  const [port] = await findFreePorts(1, host);
  return port as number;
}

/**
 * `count` different ports free right now on `host`: all are held at once while they are drawn,
 * so none repeats (ports drawn one after another can). Another process may still take one before
 * the caller binds it.
 */
export async function findFreePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const held: Server[] = [];
  try {
    const ports: number[] = [];
    for (let index = 0; index < count; index++) {
      const server = createServer();
      server.unref();
      held.push(server);
      ports.push(await listenOnAnyPort(server, host));
    }
    return ports;
  } finally {
    await Promise.all(held.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

function listenOnAnyPort(server: Server, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        reject(new Error(`could not read the port bound on ${host}`));
      } else {
        resolve(address.port);
      }
    });
  });
}
