import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DSTACK_SHIM_HTTP_PORT, SHIM_TOKEN_ENV } from '@dstack/core/agent-protocol';
import { chooseRuntime, isRuntimeChoice, RUNTIME_CHOICES } from '../runtime/choose-runtime.js';
import { startShim } from '../server/shim-server.js';
import { VERSION } from '../version.js';
import { readAgentToken } from './read-agent-token.js';

const USAGE = `usage: dstack-shim --home DIR [--http-port N] [--runtime process|docker|auto] [--host H] [--docker-socket PATH] [--docker-start-timeout SECONDS] [--runtime-cache DIR] [--runner-bundle PATH] [--runner-runtime DIR] [--gpu-ids=ID,...] [--token-file PATH]
       dstack-shim --version
The token (\`Authorization: Bearer\` on every request) comes from --token-file (mode 0600) or ${SHIM_TOKEN_ENV}.`;

/** A usage error: printed with the usage, exit status 2. */
class UsageError extends Error {}

/**
 * `dstack-shim ...`: serves the shim API until SIGTERM, SIGINT or `POST /api/shutdown`, then
 * stops the tasks and exits 0. Once listening it writes `<home>/shim.json`
 * (`{pid, http_port, version, runtime}`), so a parent that passed `--http-port 0` learns the port.
 *
 * The token comes from `--token-file` (readable by its owner only) or `DSTACK_SHIM_TOKEN`, never
 * from the command line, where `ps` shows it to every user; the variable is removed from the
 * environment the tasks inherit. Without a token the shim answers anyone who reaches its port,
 * and says so.
 */
export async function runShimCommand(argv: string[]): Promise<number> {
  let options: ReturnType<typeof parseOptions>;
  try {
    options = parseOptions(argv);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (options === 'version') {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  let token: string | null;
  try {
    token = await readAgentToken(options.tokenFile, SHIM_TOKEN_ENV);
  } catch (error) {
    process.stderr.write(`dstack-shim: ${(error as Error).message}\n`);
    return 2;
  }
  if (token === null) {
    process.stderr.write(
      `dstack-shim: warning: no --token-file or ${SHIM_TOKEN_ENV}; the shim API and its tasks' runners are open to every process that reaches their ports\n`,
    );
  }
  let runtime: Awaited<ReturnType<typeof chooseRuntime>>;
  try {
    runtime = await chooseRuntime(options.runtime, {
      dockerSocket: options.dockerSocket,
      dockerStartTimeoutMs: options.dockerStartTimeoutSeconds * 1000,
      runtimeCacheDirectory: options.runtimeCache,
      runnerBundlePath: options.runnerBundle,
      portableRuntimeDirectory: options.runnerRuntime,
      log: (line) => process.stderr.write(`dstack-shim: ${line}\n`),
    });
  } catch (error) {
    process.stderr.write(`dstack-shim: ${(error as Error).message}\n`);
    return 1;
  }
  const shim = await startShim({
    host: options.host,
    port: options.port,
    homeDir: options.home,
    runtime,
    gpuIds: options.gpuIds,
    token,
  });
  const stateFile = join(options.home, 'shim.json');
  const state = { pid: process.pid, http_port: shim.port, version: VERSION, runtime: runtime.name };
  // Write then rename, so a reader never sees a half-written file.
  await writeFile(`${stateFile}.tmp`, `${JSON.stringify(state)}\n`);
  await rename(`${stateFile}.tmp`, stateFile);
  process.stdout.write(`listening on ${shim.port}\n`);
  const stop = () => {
    shim.close().catch((error: unknown) => {
      process.stderr.write(`dstack-shim: stopping tasks failed: ${(error as Error).message}\n`);
    });
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  await shim.closed;
  return 0;
}

function parseOptions(argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'http-port': { type: 'string' },
      home: { type: 'string' },
      host: { type: 'string' },
      runtime: { type: 'string' },
      'docker-socket': { type: 'string' },
      'docker-start-timeout': { type: 'string' },
      'runtime-cache': { type: 'string' },
      'runner-bundle': { type: 'string' },
      'runner-runtime': { type: 'string' },
      'gpu-ids': { type: 'string' },
      'token-file': { type: 'string' },
      version: { type: 'boolean' },
    },
  });
  if (values.version) {
    return 'version' as const;
  }
  if (positionals.length > 0) {
    throw new UsageError(`unexpected argument: ${positionals[0]}`);
  }
  if (values.home === undefined) {
    throw new UsageError('--home is required');
  }
  const port = Number(values['http-port'] ?? DSTACK_SHIM_HTTP_PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`invalid --http-port: ${values['http-port']}`);
  }
  const runtime = values.runtime ?? 'docker';
  if (!isRuntimeChoice(runtime)) {
    throw new UsageError(`invalid --runtime: ${runtime} (expected ${RUNTIME_CHOICES.join(', ')})`);
  }
  const dockerStartTimeoutSeconds = Number(values['docker-start-timeout'] ?? 0);
  if (!Number.isInteger(dockerStartTimeoutSeconds) || dockerStartTimeoutSeconds < 0) {
    throw new UsageError(
      `invalid --docker-start-timeout: ${values['docker-start-timeout']} (expected seconds)`,
    );
  }
  return {
    home: values.home,
    port,
    host: values.host,
    runtime,
    dockerSocket: values['docker-socket'],
    // `auto` on a VM: how long an installed Docker daemon may take to answer (it starts beside cloud-init).
    dockerStartTimeoutSeconds,
    // Docker runtime: where the runner's portable runtime is built; shims of one user share it.
    runtimeCache: values['runtime-cache'],
    runnerBundle: values['runner-bundle'],
    // Docker runtime: a complete portable runtime (the agent runtime this shim runs from), mounted as is.
    runnerRuntime: values['runner-runtime'],
    gpuIds: parseGpuIds(values['gpu-ids']),
    tokenFile: values['token-file'],
  };
}

/**
 * `--gpu-ids=0,2`: the host's GPUs (NVIDIA indices) this shim hands out to tasks, when it has a
 * share of the host (a local instance); `--gpu-ids=` is none. Absent: every GPU nvidia-smi lists.
 */
function parseGpuIds(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const ids = value === '' ? [] : value.split(',').map((id) => id.trim());
  const invalid = ids.find((id) => !/^\d+$/.test(id));
  if (invalid !== undefined)
    throw new UsageError(`invalid --gpu-ids: ${value} (expected GPU indices like 0,1)`);
  return ids;
}
