/** The CLI's half of custom providers: a task's `provider` becomes the run spec's `provider_jobs`. */
import { resolve } from 'node:path';
import { type AnyConfiguration, expandProvider, type ProviderJobSpec } from '@dstack/core';
import { loadProvider } from './load-provider.js';

export interface ExpandConfigurationProviderOptions {
  /** The parsed configuration (`parseConfiguration`). */
  configuration: AnyConfiguration;
  /** The configuration file: providers are resolved from its directory; errors name it. */
  configurationPath: string;
  /** The file's text, for the line and column of parameter errors. Default: errors without positions. */
  configurationText?: string;
  /** The run name the provider sees. Default: the configuration's `name`, else undefined (the server generates one). */
  runName?: string | null;
}

/**
 * Loads the task's provider, validates its `parameters` and returns the jobs it creates, or
 * null when the configuration names no provider. Throws `ConfigurationError` (file, line,
 * column, `provider` or `parameters.…`) for the configuration's mistakes and `ProviderError`
 * for the provider's.
 */
export async function expandConfigurationProvider(
  options: ExpandConfigurationProviderOptions,
): Promise<ProviderJobSpec[] | null> {
  const { configuration, configurationPath } = options;
  if (configuration.type !== 'task' || configuration.provider === undefined) return null;
  const source =
    options.configurationText === undefined
      ? undefined
      : { text: options.configurationText, file: configurationPath };
  const provider = await loadProvider(configuration.provider, configurationPath, source);
  return expandProvider(provider, {
    parameters: configuration.parameters,
    context: {
      runName: options.runName ?? configuration.name ?? undefined,
      configurationPath: resolve(configurationPath),
    },
    ...(source === undefined ? {} : { source }),
    specifier: configuration.provider,
  });
}
