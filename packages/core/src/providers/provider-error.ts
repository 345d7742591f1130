import { DstackError } from '../errors.js';

/**
 * A provider module is broken: it does not export a provider, `createJobs` threw, or it
 * returned jobs that are not valid job specs. The provider's author fixes it, not the
 * configuration's; configuration mistakes (bad `parameters`) are `ConfigurationError`s.
 */
export class ProviderError extends DstackError {
  static override readonly marker: string = '@dstack/core/ProviderError';
  override readonly name = 'ProviderError';
  /** How the configuration named the provider (`./providers/curl.mjs`, `@acme/provider`), when known. */
  readonly specifier: string | undefined;

  constructor(message: string, options: { specifier?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.specifier = options.specifier;
  }
}
