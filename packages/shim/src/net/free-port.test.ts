import { createServer } from 'node:net';
import { expect, it } from 'vitest';
import { findFreePort, findFreePorts } from './free-port.js';

it('finds a port that can then be bound', async () => {
  const port = await findFreePort();
  expect(port).toBeGreaterThan(0);
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

it('finds several different ports, each of which can then be bound', async () => {
  const ports = await findFreePorts(8);
  expect(new Set(ports).size).toBe(8);
  const servers = ports.map(() => createServer());
  await Promise.all(
    servers.map(
      (server, index) =>
        new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(ports[index], '127.0.0.1', () => resolve());
        }),
    ),
  );
  await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
});
