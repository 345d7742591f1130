#!/usr/bin/env node
/**
 * `dstack-server`: the server on its own (`dstack server` in the CLI does the same).
 * Settings come from the environment (DSTACK_SERVER_HOST, DSTACK_SERVER_PORT, DSTACK_SERVER_DIR,
 * DSTACK_DATABASE_URL, DSTACK_SERVER_ADMIN_TOKEN).
 *
 * A stop signal (SIGINT, SIGTERM) closes the server and exits 0. During start-up (which may wait
 * on the database), or a second one while closing, it ends the process at once: Postgres rolls
 * back what was unfinished, SQLite's WAL keeps every commit, and the SQLite lock goes with the
 * process. A failed start is one line on stderr and exit status 1.
 */
import { constants } from 'node:os';
import { ConfigurationError, formatConfigurationError } from '@dstack/core';
import { type RunningServer, startServer } from '../app.js';

/** Printed instead of the token by a server whose admin predates kept tokens. */
const ADMIN_TOKEN_UNKNOWN =
  'The admin token is not known to this server (only its hash is stored): set DSTACK_SERVER_ADMIN_TOKEN to choose a new one';

function startFailureLine(error: unknown): string {
  if (ConfigurationError.isInstance(error)) return formatConfigurationError(error);
  return `error: ${error instanceof Error ? error.message : String(error)}`;
}

let server: RunningServer | null = null;
let closing = false;

function onStopSignal(signal: NodeJS.Signals): void {
  if (server === null || closing) {
    process.exit(128 + (constants.signals[signal] ?? 0));
  }
  closing = true;
  server.close().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(`error: closing the server failed: ${error instanceof Error ? error.message : error}`);
      process.exit(1);
    },
  );
}

process.on('SIGINT', onStopSignal);
process.on('SIGTERM', onStopSignal);

try {
  server = await startServer();
} catch (error) {
  console.error(startFailureLine(error));
  process.exit(1);
}
console.log(server.adminToken ? `The admin token is ${server.adminToken}` : ADMIN_TOKEN_UNKNOWN);
console.log(`The server is running at ${server.url}`);
if (server.webConsole) console.log(`The web console is at ${server.url}/`);
