import { DEFAULT_REQUEST_TIMEOUT_MS, DstackApiClient, type DstackApiClientOptions } from '../api/client.js';
import { resolveProjectConnection } from '../config/project-connection.js';
import type { CliIo } from '../io.js';
import { CommandError } from '../output/command-error.js';
import { createWaitNotice } from '../output/wait-notice.js';

export interface ProjectOption {
  /** The project to use (`--project`, env `DSTACK_PROJECT`). Default: the default project. */
  project?: string;
}

/** The environment variable that sets how long the CLI waits for an answer, in seconds. */
export const CLI_TIMEOUT_VARIABLE = 'DSTACK_CLI_TIMEOUT';

/** Milliseconds to wait for the server's answers: `DSTACK_CLI_TIMEOUT` seconds, default 30. */
export function requestTimeoutMs(environment: NodeJS.ProcessEnv = process.env): number {
  const text = environment[CLI_TIMEOUT_VARIABLE]?.trim();
  if (text === undefined || text === '') return DEFAULT_REQUEST_TIMEOUT_MS;
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new CommandError(
      `${CLI_TIMEOUT_VARIABLE}: expected a number of seconds greater than 0, got '${text}'`,
    );
  }
  return seconds * 1000;
}

/** What every client of the CLI shares: the timeout, and the wait notice on a terminal. */
export function clientSettings(
  serverUrl: string,
  io?: CliIo,
): Pick<DstackApiClientOptions, 'timeoutMs' | 'waitNotice'> {
  const waitNotice = io ? createWaitNotice(io, serverUrl) : undefined;
  return { timeoutMs: requestTimeoutMs(), ...(waitNotice ? { waitNotice } : {}) };
}

/**
 * A client for the chosen project (`DSTACK_SERVER_URL`/`DSTACK_TOKEN`, or `~/.dstack/config.yml`);
 * with `io`, slow answers show a notice.
 */
export async function connect(options: ProjectOption, io?: CliIo): Promise<DstackApiClient> {
  const project = await resolveProjectConnection(options.project);
  return new DstackApiClient({
    url: project.url,
    token: project.token,
    projectName: project.projectName,
    ...clientSettings(project.url, io),
  });
}
