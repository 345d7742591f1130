import { readFile } from 'node:fs/promises';
import { type AnyConfiguration, parseConfiguration } from '@dstack/core';
import { CommandError } from '../output/report-error.js';

/** `file: no such file` and the like, for a configuration file that cannot be read. */
export function describeReadError(file: string, error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT') return `${file}: no such file`;
  if (code === 'EISDIR') return `${file}: is a directory, expected a configuration file`;
  if (code === 'EACCES') return `${file}: permission denied`;
  return `${file}: cannot read: ${(error as Error)?.message ?? String(error)}`;
}

/** A parsed configuration and the text it came from (for positions in later errors). */
export interface ConfigurationSource {
  configuration: AnyConfiguration;
  text: string;
}

/** Reads and parses a configuration file, keeping its text; throws `ConfigurationError` or `CommandError`. */
export async function readConfigurationSource(file: string): Promise<ConfigurationSource> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new CommandError(describeReadError(file, error), { cause: error });
  }
  return { configuration: parseConfiguration(text, { path: file }), text };
}

/** Reads and parses a configuration file; throws `ConfigurationError` or `CommandError`. */
export async function readConfigurationFile(file: string): Promise<AnyConfiguration> {
  return (await readConfigurationSource(file)).configuration;
}
