import { unzipSync } from 'fflate';
import { type Dispatcher, request } from 'undici';
import { CatalogError } from '../errors.js';
import type { CatalogSource, CatalogSourceFile, CatalogSourceLoadOptions } from './catalog-source.js';

/** gpuhunt's v3 bucket: `{base}/{provider}/version` and `{base}/{provider}/{version}/catalog.zip`. */
export const GPUHUNT_CATALOG_URL = 'https://dstack-gpu-pricing.s3.eu-west-1.amazonaws.com/v3';

/** The providers gpuhunt publishes offline catalogs for (its `OFFLINE_PROVIDERS`). */
export const GPUHUNT_OFFLINE_PROVIDERS: readonly string[] = [
  'aws',
  'azure',
  'verda',
  'gcp',
  'lambdalabs',
  'nebius',
  'oci',
  'runpod',
  'cloudrift',
];

export interface UrlSourceOptions {
  /** undici dispatcher for every request (an Agent, a ProxyAgent, a MockAgent). Default: undici's global dispatcher. */
  dispatcher?: Dispatcher;
  /**
   * Pin one published version instead of following `{provider}/version`. A pinned load
   * fails as a whole when any provider fails. Default: the latest.
   */
  version?: string;
  /** Providers to read. Default: {@link GPUHUNT_OFFLINE_PROVIDERS}. */
  providers?: readonly string[];
  /** Time limit of each request, in milliseconds. Default: 60 000. */
  timeoutMs?: number;
}

/**
 * Catalogs published in gpuhunt's v3 layout under `baseUrl` (for gpuhunt's own bucket,
 * {@link GPUHUNT_CATALOG_URL}): GET `{base}/{p}/version` (text, trimmed), then, when it differs
 * from the version in memory, GET `{base}/{p}/{version}/catalog.zip` and read `{p}.csv` from it.
 */
export function urlSource(baseUrl: string, options: UrlSourceOptions = {}): CatalogSource {
  const base = baseUrl.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 60_000;
  const providers = [...(options.providers ?? GPUHUNT_OFFLINE_PROVIDERS)];

  async function get(url: string): Promise<Dispatcher.ResponseData> {
    let response: Dispatcher.ResponseData;
    try {
      response = await request(url, {
        method: 'GET',
        signal: AbortSignal.timeout(timeoutMs),
        ...(options.dispatcher && { dispatcher: options.dispatcher }),
      });
    } catch (error) {
      throw new CatalogError(`GET ${url} failed: ${(error as Error).message}`, { cause: error });
    }
    if (response.statusCode < 200 || response.statusCode >= 300) {
      await response.body.dump();
      throw new CatalogError(`GET ${url} failed: HTTP ${response.statusCode}`);
    }
    return response;
  }

  return {
    description: options.version ? `${base} (version ${options.version})` : base,
    pinned: options.version !== undefined,
    listProviders: async () => providers,
    async load(
      provider: string,
      loadOptions: CatalogSourceLoadOptions = {},
    ): Promise<CatalogSourceFile | undefined> {
      let version = options.version;
      if (version === undefined) {
        const versionUrl = `${base}/${provider}/version`;
        version = (await (await get(versionUrl)).body.text()).trim();
        if (version === '') throw new CatalogError(`GET ${versionUrl}: the version file is empty`);
      }
      if (version === loadOptions.knownVersion) return undefined;
      const zipUrl = `${base}/${provider}/${version}/catalog.zip`;
      const archive = new Uint8Array(await (await get(zipUrl)).body.arrayBuffer());
      const member = `${provider}.csv`;
      let files: Record<string, Uint8Array>;
      try {
        files = unzipSync(archive, { filter: (file) => file.name === member });
      } catch (error) {
        throw new CatalogError(`${zipUrl} is not a valid zip archive: ${(error as Error).message}`, {
          cause: error,
        });
      }
      const bytes = files[member];
      if (!bytes) throw new CatalogError(`${zipUrl} has no member ${member}`);
      return { version, text: new TextDecoder('utf-8').decode(bytes), location: `${zipUrl}#${member}` };
    },
  };
}
