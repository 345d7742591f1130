import {
  type AnyConfiguration,
  ConfigurationError,
  formatConfigurationError,
  ProviderError,
  parseConfiguration,
} from '@dstack/core';
import { stringify } from 'yaml';
import { type CliIo, red } from '../io.js';
import { CommandError } from '../output/command-error.js';
import { expandConfigurationProvider } from '../providers/expand-configuration-provider.js';
import type { ValidateFormat } from './output-formats.js';
import { readConfigurationText } from './read-configuration.js';

export { VALIDATE_FORMATS, type ValidateFormat } from './output-formats.js';

export interface ValidateOptions {
  file: string;
  format: ValidateFormat;
}

/**
 * `dstack validate -f FILE`: parses a configuration and prints it with defaults
 * applied (YAML, or JSON with `--format json`). Returns the exit code: 0 when
 * valid, 1 when the file cannot be read or the configuration is invalid
 * (`file:line:column: field.path: message` on stderr). A task's provider is loaded and its
 * `parameters` checked with the provider's schema, as `dstack apply` does.
 */
export async function validateCommand(options: ValidateOptions, io: CliIo): Promise<number> {
  let configuration: AnyConfiguration;
  try {
    const text = await readConfigurationText(options.file);
    configuration = parseConfiguration(text, { path: options.file });
    // A provider's schema checks `parameters`, so the provider is loaded and run here too.
    await expandConfigurationProvider({
      configuration,
      configurationPath: options.file,
      configurationText: text,
    });
  } catch (error) {
    if (ConfigurationError.isInstance(error)) {
      io.stderr(`${red(formatConfigurationError(error), io.stderrColors)}\n`);
      return 1;
    }
    if (ProviderError.isInstance(error)) {
      io.stderr(`${red(`error: ${error.message}`, io.stderrColors)}\n`);
      return 1;
    }
    // The file could not be read: its message names the file.
    if (CommandError.isInstance(error)) {
      io.stderr(`${red(error.message, io.stderrColors)}\n`);
      return 1;
    }
    throw error;
  }
  io.stdout(
    options.format === 'json'
      ? `${JSON.stringify(configuration, null, 2)}\n`
      : stringify(configuration, { lineWidth: 0 }),
  );
  return 0;
}
