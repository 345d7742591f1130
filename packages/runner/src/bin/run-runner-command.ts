import { rename, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { DSTACK_RUNNER_HTTP_PORT, RUNNER_TOKEN_ENV } from '@dstack/core/agent-protocol';
import { normalizeAgentToken } from '../server/agent-token.js';
import { startRunner } from '../server/runner-server.js';
import { VERSION } from '../version.js';

const USAGE = `usage: dstack-runner start --home DIR [--http-port N] [--host H] [--port-file PATH] [--job-user USER]
                            [--ssh-port N [--ssh-port-file PATH] [--ssh-authorized-key KEY]...]
       dstack-runner --version`;

/**
 * `dstack-runner start ...`: serves the runner API until SIGTERM or SIGINT. Prints
 * `listening on <port>` once it listens (and writes the port to --port-file if given), so a
 * parent that passed `--http-port 0` learns the port.
 *
 * The token comes in `DSTACK_RUNNER_TOKEN` (not on the command line, where `ps` shows it to
 * every user); it is removed from the environment the job inherits. Without it the runner
 * answers anyone who reaches its port, and says so.
 */
export async function runRunnerCommand(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(argv);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.version) {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  if (positionals[0] !== 'start' || positionals.length !== 1 || values.home === undefined) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const port = Number(values['http-port'] ?? DSTACK_RUNNER_HTTP_PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`invalid --http-port: ${values['http-port']}\n`);
    return 2;
  }
  let token: string | null;
  try {
    token = normalizeAgentToken(process.env[RUNNER_TOKEN_ENV], RUNNER_TOKEN_ENV);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return 2;
  }
  // Read once: the job's environment is this process's, and the job must not see the token.
  delete process.env[RUNNER_TOKEN_ENV];
  if (token === null) {
    process.stderr.write(
      `dstack-runner: warning: no ${RUNNER_TOKEN_ENV}; the runner API is open to every process that reaches its port\n`,
    );
  }
  const sshPort = values['ssh-port'] === undefined ? undefined : Number(values['ssh-port']);
  if (sshPort !== undefined && (!Number.isInteger(sshPort) || sshPort < 0 || sshPort > 65535)) {
    process.stderr.write(`invalid --ssh-port: ${values['ssh-port']}\n`);
    return 2;
  }
  const runner = await startRunner({
    token,
    sshPort,
    sshAuthorizedKeys: values['ssh-authorized-key'] ?? [],
    host: values.host,
    port,
    homeDir: values.home,
    // The binary runs in the task's container (the shim starts it there): its environment is the
    // image's variables plus what the shim set (the task's env and the runner's own, less the
    // token, removed above), which is what dstack's runner gives its jobs.
    env: process.env,
    // Who jobs without a `user` of their own run as (uid[:gid] or name[:group]); the runner stays root.
    defaultJobUser: values['job-user'],
    // The binary shares the job's container, so its control group is the job's (as dstack's runner).
    metricsSource: 'cgroup',
  });
  await writePortFile(values['port-file'], runner.port);
  // `--ssh-port 0` (a Slurm node shared by several jobs): whoever started it learns the port here.
  await writePortFile(values['ssh-port-file'], runner.sshPort);
  process.stdout.write(`listening on ${runner.port}\n`);
  return new Promise((resolve) => {
    const shutdown = () => {
      runner.close().then(
        () => resolve(0),
        () => resolve(1),
      );
    };
    process.once('SIGTERM', shutdown);
    process.once('SIGINT', shutdown);
  });
}

/** Writes `port` to `path` (by rename, so a reader never sees half of it); nothing without either. */
async function writePortFile(path: string | undefined, port: number | null): Promise<void> {
  if (path === undefined || port === null) return;
  await writeFile(`${path}.tmp`, `${port}\n`);
  await rename(`${path}.tmp`, path);
}

function parseOptions(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'http-port': { type: 'string' },
      home: { type: 'string' },
      host: { type: 'string' },
      'port-file': { type: 'string' },
      'job-user': { type: 'string' },
      version: { type: 'boolean' },
      // SSH on a port of its own (container backends), the keys allowed there from the start.
      'ssh-port': { type: 'string' },
      'ssh-port-file': { type: 'string' },
      'ssh-authorized-key': { type: 'string', multiple: true },
      // dstack's shim passes these to its Go runner; accepted so either shim can start this runner.
      'temp-dir': { type: 'string' },
      'log-level': { type: 'string' },
    },
  });
}
