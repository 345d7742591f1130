/**
 * The RunPod emulator of @dstack/testing with the configs that point this backend at it. RunPod's
 * offers come from gpuhunt's published catalog, so the process's catalog is pointed at the
 * emulator's gpuhunt bucket while it runs (as a server's `catalog.url` would be).
 */
import { Catalog, setDefaultCatalog, urlSource } from '@dstack/catalog';
import {
  type RunpodEmulator,
  type RunpodEmulatorOptions,
  startRunpodEmulator,
} from '@dstack/testing/emulators';
import type { RunpodBackendConfigWithCreds } from './runpod-config.js';

/** The RunPod catalog of `emulator`'s bucket, as a server reading `catalog.url` has it. */
export function emulatorCatalog(emulator: RunpodEmulator): Catalog {
  return new Catalog({
    source: urlSource(emulator.catalogUrl, { providers: ['runpod'] }),
    providers: ['runpod'],
  });
}

/** Starts the emulator and makes its bucket the process's default catalog until it closes. */
export async function startRunpodTestEmulator(options: RunpodEmulatorOptions = {}): Promise<RunpodEmulator> {
  const emulator = await startRunpodEmulator(options);
  setDefaultCatalog(emulatorCatalog(emulator));
  return {
    ...emulator,
    async close() {
      setDefaultCatalog(undefined);
      await emulator.close();
    },
  };
}

/** A config with the emulator's key, pointed at its GraphQL endpoint. */
export function emulatorConfig(
  emulator: RunpodEmulator,
  extra: Partial<RunpodBackendConfigWithCreds> = {},
): RunpodBackendConfigWithCreds {
  return {
    type: 'runpod',
    endpoint_url: emulator.graphqlUrl,
    creds: { type: 'api_key', api_key: emulator.apiKey },
    ...extra,
  };
}
