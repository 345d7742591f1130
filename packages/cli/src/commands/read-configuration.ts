import { open } from 'node:fs/promises';
import {
  type AnyConfiguration,
  assertYamlSize,
  ConfigurationError,
  MAX_YAML_BYTES,
  parseConfiguration,
} from '@dstack/core';
import { CommandError } from '../output/command-error.js';

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
  const text = await readConfigurationText(file);
  return { configuration: parseConfiguration(text, { path: file }), text };
}

/**
 * The file's text, read no further than one byte past core's YAML size limit: a regular file
 * over the limit is refused by its size before it is read, and an endless one (`/dev/zero`, a
 * pipe that never ends) once the limit is passed.
 */
export async function readConfigurationText(file: string): Promise<string> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(file, 'r');
    const stats = await handle.stat();
    if (stats.isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
    if (stats.isFile()) assertYamlSize(stats.size, file);
    const buffer = Buffer.alloc(MAX_YAML_BYTES + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > MAX_YAML_BYTES) {
      // Its size is unknown (a device or a pipe): only that it goes past the limit.
      throw new ConfigurationError(
        `the file is over the ${MAX_YAML_BYTES / (1024 * 1024)} MiB limit for YAML files`,
        { file },
      );
    }
    return buffer.toString('utf8', 0, length);
  } catch (error) {
    if (ConfigurationError.isInstance(error)) throw error;
    throw new CommandError(describeReadError(file, error), { cause: error });
  } finally {
    await handle?.close();
  }
}

/** Reads and parses a configuration file; throws `ConfigurationError` or `CommandError`. */
export async function readConfigurationFile(file: string): Promise<AnyConfiguration> {
  return (await readConfigurationSource(file)).configuration;
}
