import { ConfigurationError, formatConfigurationError, ProviderError } from '@dstack/core';
import {
  InvalidTokenError,
  ServerApiError,
  ServerTimeoutError,
  ServerUnreachableError,
  UnexpectedResponseError,
} from '../api/api-errors.js';
import { CliConfigError } from '../config/cli-config.js';
import type { CliIo } from '../io.js';
import { createColors } from './colors.js';
import { CommandError } from './command-error.js';
import { printable } from './printable.js';

export { CommandError } from './command-error.js';

function fieldPath(fields: ReadonlyArray<string | number>): string {
  return fields
    .map((field, index) => (typeof field === 'number' ? `[${field}]` : `${index ? '.' : ''}${field}`))
    .join('');
}

/**
 * The lines to print for an error the CLI knows, or undefined for a bug. Messages may carry
 * the server's words (and names users chose), so each line goes through `printable`; a
 * configuration error is about the user's own file and keeps its layout.
 */
export function describeError(error: unknown): string[] | undefined {
  if (ConfigurationError.isInstance(error)) return [formatConfigurationError(error)];
  return describeOtherError(error)?.map(printable);
}

function describeOtherError(error: unknown): string[] | undefined {
  if (InvalidTokenError.isInstance(error)) {
    return [
      `error: invalid token for project ${error.projectName} (server ${error.serverUrl}); run dstack project add --name ${error.projectName} --url ${error.serverUrl} --token TOKEN -y`,
    ];
  }
  if (ServerUnreachableError.isInstance(error)) {
    return [`cannot reach the dstack server at ${error.serverUrl}: is \`dstack server\` running?`];
  }
  if (ServerTimeoutError.isInstance(error)) {
    return [`error: ${error.message}; set DSTACK_CLI_TIMEOUT (seconds) to wait longer`];
  }
  if (ServerApiError.isInstance(error)) {
    return error.details.map((detail) => {
      const paths = detail.fields.filter((path) => path.length > 0).map(fieldPath);
      // This server's messages already start with the field; other servers' (dstack's) do not.
      const named = paths.length > 0 && !paths.some((path) => detail.message.startsWith(`${path}: `));
      return `error: ${named ? `${paths.join(', ')}: ` : ''}${detail.message}`;
    });
  }
  if (
    CommandError.isInstance(error) ||
    ProviderError.isInstance(error) ||
    CliConfigError.isInstance(error) ||
    UnexpectedResponseError.isInstance(error)
  ) {
    return [`error: ${error.message}`];
  }
  return undefined;
}

/** Prints a known error to stderr and returns exit code 1; rethrows anything else (a bug). */
export function reportError(error: unknown, io: CliIo): number {
  const lines = describeError(error);
  if (!lines) throw error;
  const colors = createColors(io.stderrColors);
  io.stderr(lines.map((line) => `${colors.red(line)}\n`).join(''));
  return 1;
}
