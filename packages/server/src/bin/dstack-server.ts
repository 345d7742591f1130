#!/usr/bin/env node
/**
 * `dstack-server`: the server on its own (`dstack server` in the CLI does the same).
 * Settings come from the environment (DSTACK_SERVER_HOST, DSTACK_SERVER_PORT, DSTACK_SERVER_DIR,
 * DSTACK_DATABASE_URL, DSTACK_SERVER_ADMIN_TOKEN).
 */
import { ConfigurationError, formatConfigurationError } from '@dstack/core';
import { startServer } from '../app.js';

async function main(): Promise<void> {
  const server = await startServer();
  if (server.adminToken) console.log(`The admin token is ${server.adminToken}`);
  console.log(`The server is running at ${server.url}`);
  const stop = () => {
    void server.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(ConfigurationError.isInstance(error) ? formatConfigurationError(error) : error);
  process.exit(1);
});
