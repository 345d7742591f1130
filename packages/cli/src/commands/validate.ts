import { readFile } from 'node:fs/promises';
import { ConfigurationError, formatConfigurationError, parseConfiguration } from '@dstack/core';
import { stringify } from 'yaml';
import { type CliIo, red } from '../io.js';
import { describeReadError } from './read-configuration.js';

export const VALIDATE_FORMATS = ['yaml', 'json'] as const;
export type ValidateFormat = (typeof VALIDATE_FORMATS)[number];

export interface ValidateOptions {
  file: string;
  format: ValidateFormat;
}

/**
 * `dstack validate -f FILE`: parses a configuration and prints it with defaults
 * applied (YAML, or JSON with `--format json`). Returns the exit code: 0 when
 * valid, 1 when the file cannot be read or the configuration is invalid
 * (`file:line:column: field.path: message` on stderr).
 */
export async function validateCommand(options: ValidateOptions, io: CliIo): Promise<number> {
  let text: string;
  try {
    text = await readFile(options.file, 'utf8');
  } catch (error) {
    io.stderr(`${red(describeReadError(options.file, error), io.stderrColors)}\n`);
    return 1;
  }
  let configuration: unknown;
  try {
    configuration = parseConfiguration(text, { path: options.file });
  } catch (error) {
    if (!ConfigurationError.isInstance(error)) throw error;
    io.stderr(`${red(formatConfigurationError(error), io.stderrColors)}\n`);
    return 1;
  }
  io.stdout(
    options.format === 'json'
      ? `${JSON.stringify(configuration, null, 2)}\n`
      : stringify(configuration, { lineWidth: 0 }),
  );
  return 0;
}
