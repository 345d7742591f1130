import { constants } from 'node:os';
import { ConfigurationError } from '@dstack/core';
import { cliConfigPath, loadCliConfig, saveCliConfig, upsertProject } from '../config/cli-config.js';
import { importModule } from '../import-module.js';
import type { CliIo } from '../io.js';
import { CommandError } from '../output/command-error.js';

/** What `@dstack/server` exports for the CLI. */
export interface ServerModule {
  startServer(options: { host?: string; port?: number }): Promise<RunningServer>;
}

export interface RunningServer {
  url: string;
  /** The admin's token, given at every start; null when the server does not know it (an admin older than kept tokens). */
  adminToken: string | null;
  /** Whether the server serves the web console at `/` (absent in servers older than the console). */
  webConsole?: boolean;
  /** Where dstack's own clients attach to jobs (the built-in SSH proxy); null or absent when off. */
  sshProxy?: { hostname: string; port: number } | null;
  close(): Promise<void>;
}

export interface ServerOptions {
  /** Interface to listen on. Default: the server's (`127.0.0.1`; env `DSTACK_SERVER_HOST`). */
  host?: string;
  /** Port to listen on. Default: the server's (8000; env `DSTACK_SERVER_PORT`). */
  port?: string;
  /**
   * Point an existing `main` project of the CLI configuration at this server and its admin token.
   * Without it, a `main` project already there is left as it is (one is added when there is none).
   */
  yes?: boolean;
}

export interface ServerDependencies {
  /** Loads `@dstack/server`. Default: a dynamic import, so the CLI works without it. */
  loadServer?: () => Promise<ServerModule>;
  /**
   * Calls `listener` on each stop signal; returns a function that stops listening.
   * Default: the process's SIGINT and SIGTERM.
   */
  onStopSignal?: (listener: (signal: NodeJS.Signals) => void) => () => void;
  /** Ends the process at once with `code`. Default: `process.exit`. */
  exit?: (code: number) => void;
}

/** The server package; a variable keeps TypeScript from resolving the optional peer at build time. */
const SERVER_PACKAGE = '@dstack/server';

/** The `main` project that `dstack server` registers, as dstack does. */
const DEFAULT_PROJECT_NAME = 'main';

async function importServer(): Promise<ServerModule> {
  let module: Partial<ServerModule>;
  try {
    module = (await importModule(SERVER_PACKAGE)) as Partial<ServerModule>;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' && String((error as Error).message).includes(SERVER_PACKAGE)) {
      throw new CommandError(`dstack server needs ${SERVER_PACKAGE}: install @dstack/server`, {
        cause: error,
      });
    }
    throw error;
  }
  if (typeof module.startServer !== 'function') {
    throw new CommandError(
      `${SERVER_PACKAGE} does not export startServer: install a matching @dstack/server`,
    );
  }
  return module as ServerModule;
}

function onProcessStopSignal(listener: (signal: NodeJS.Signals) => void): () => void {
  process.on('SIGINT', listener);
  process.on('SIGTERM', listener);
  return () => {
    process.off('SIGINT', listener);
    process.off('SIGTERM', listener);
  };
}

/** The exit status of a process a signal ended (128 + its number, as a shell reports it). */
function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

/** Any start-up failure is one line for the user (a configuration error keeps its own format). */
function startFailure(error: unknown): unknown {
  if (ConfigurationError.isInstance(error) || CommandError.isInstance(error)) return error;
  return new CommandError(error instanceof Error ? error.message : String(error), { cause: error });
}

function parsePort(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new CommandError(`--port: expected a port number (0-65535), got '${text}'`);
  }
  return port;
}

/** Printed instead of the token by a server whose admin predates kept tokens. */
const ADMIN_TOKEN_UNKNOWN =
  'The admin token is not known to this server (only its hash is stored): set DSTACK_SERVER_ADMIN_TOKEN to choose a new one\n';

/**
 * Adds the `main` project (this server, its admin token) to the CLI configuration when it has
 * none, as dstack does on start; replaces one already there only when `replace` (`-y`), so that a
 * `main` the user pointed elsewhere stays. Returns the line to print, if any.
 */
async function registerMainProject(url: string, token: string, replace: boolean): Promise<string | null> {
  const path = cliConfigPath();
  const config = await loadCliConfig(path);
  const existing = config.projects.find((project) => project.name === DEFAULT_PROJECT_NAME);
  if (existing?.url === url && existing.token === token) return null;
  if (existing && !replace) {
    return `Left project ${DEFAULT_PROJECT_NAME} in ${path} as it is (another URL or token); dstack server -y points it here\n`;
  }
  await saveCliConfig(
    upsertProject(config, {
      name: DEFAULT_PROJECT_NAME,
      url,
      token,
      default: existing?.default ?? !config.projects.some((project) => project.default),
    }),
    path,
  );
  return `${existing ? 'Updated' : 'Added'} project ${DEFAULT_PROJECT_NAME} in ${path}\n`;
}

/**
 * `dstack server`: starts `@dstack/server`, prints the admin token (at every start, as dstack
 * does) and URL, and adds the CLI's `main` project for it when there is none. A stop signal (SIGINT, SIGTERM) closes the server and
 * returns exit code 0. During start-up (which may wait on the database), or a second one while
 * closing, it ends the process at once: Postgres rolls back what was unfinished, SQLite's WAL
 * keeps every commit, and the server's SQLite lock goes with the process.
 */
export async function serverCommand(
  options: ServerOptions,
  io: CliIo,
  dependencies: ServerDependencies = {},
): Promise<number> {
  const port = parsePort(options.port);
  const server = await (dependencies.loadServer ?? importServer)();
  const exit = dependencies.exit ?? ((code: number) => process.exit(code));
  let running: RunningServer | null = null;
  let stopRequested = false;
  let requestStop = () => {};
  const stop = new Promise<void>((resolve) => {
    requestStop = resolve;
  });
  // Listening from before the start: the default action of a signal is replaced for the whole command.
  const stopListening = (dependencies.onStopSignal ?? onProcessStopSignal)((signal) => {
    if (running === null || stopRequested) {
      exit(signalExitCode(signal));
      return;
    }
    stopRequested = true;
    requestStop();
  });
  try {
    try {
      running = await server.startServer({
        ...(options.host === undefined ? {} : { host: options.host }),
        ...(port === undefined ? {} : { port }),
      });
    } catch (error) {
      throw startFailure(error);
    }
    try {
      if (running.adminToken === null) {
        io.stdout(ADMIN_TOKEN_UNKNOWN);
      } else {
        io.stdout(`The admin token is ${running.adminToken}\n`);
        const registered = await registerMainProject(running.url, running.adminToken, options.yes === true);
        if (registered) io.stdout(registered);
      }
      io.stdout(`The server is running at ${running.url}\n`);
      if (running.webConsole) io.stdout(`The web console is at ${running.url}/\n`);
      if (running.sshProxy) {
        io.stdout(
          `The SSH proxy (dstack's clients attach here) is at ${running.sshProxy.hostname}:${running.sshProxy.port}\n`,
        );
      }
      await stop;
    } finally {
      stopRequested = true;
      await running.close();
    }
  } finally {
    stopListening();
  }
  return 0;
}
