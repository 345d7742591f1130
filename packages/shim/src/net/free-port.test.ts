import { createServer } from 'node:net';
import { expect, it } from 'vitest';
import { findFreePort } from './free-port.js';

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
