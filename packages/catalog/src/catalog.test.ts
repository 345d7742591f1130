import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { strToU8, zipSync } from 'fflate';
import { Agent } from 'undici';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  BUNDLED_SNAPSHOT_DIRECTORY,
  Catalog,
  type CatalogSource,
  cacheDirectorySource,
  cachingSource,
  directorySource,
  firstAvailableSource,
  mergeByPrice,
  type OnlineCatalogProvider,
  snapshotSource,
  urlSource,
} from './catalog.js';
import { type CatalogItem, createCatalogItem, type QueryFilter } from './catalog-item.js';
import { CATALOG_CSV_COLUMNS, formatCatalogCsv } from './csv/catalog-csv.js';
import { CatalogError } from './errors.js';

// Cases ported from gpuhunt's src/tests/_internal/test_catalog.py.

function catalogItem(overrides: Partial<CatalogItem> = {}): CatalogItem {
  return createCatalogItem({
    provider: 'vultr',
    instanceName: 'instance',
    location: 'location',
    price: 1,
    cpu: 1,
    memory: 1,
    gpuCount: 1,
    gpuName: 'gpu',
    gpuMemory: 1,
    gpuVendor: 'nvidia',
    ...overrides,
  });
}

function onlineProvider(
  name: string,
  items: CatalogItem[] | (() => Promise<CatalogItem[]>),
): OnlineCatalogProvider & { calls: QueryFilter[] } {
  const calls: QueryFilter[] = [];
  return {
    kind: 'online',
    name,
    calls,
    async query(filter) {
      calls.push(filter);
      return typeof items === 'function' ? items() : items;
    },
  };
}

/** A source with no offline providers. */
const emptySource: CatalogSource = {
  description: 'empty',
  listProviders: async () => [],
  load: async () => undefined,
};

function quietCatalog(options: ConstructorParameters<typeof Catalog>[0] = {}) {
  const errors: CatalogError[] = [];
  const catalog = new Catalog({ source: emptySource, onError: (error) => errors.push(error), ...options });
  return { catalog, errors };
}

describe('Catalog.query', () => {
  it('merges providers by price, each keeping its own order (test_query_merge)', async () => {
    const { catalog } = quietCatalog();
    catalog.addProvider(onlineProvider('vultr', [catalogItem({ price: 1 }), catalogItem({ price: 3 })]));
    catalog.addProvider(
      onlineProvider('vastai', [
        catalogItem({ provider: 'vastai', price: 2 }),
        catalogItem({ provider: 'vastai', price: 1 }),
      ]),
    );
    const items = await catalog.query({ provider: ['vultr', 'vastai'] });
    expect(items.map((item) => [item.provider, item.price])).toEqual([
      ['vultr', 1],
      ['vastai', 2],
      ['vastai', 1],
      ['vultr', 3],
    ]);
  });

  it('queries online providers when no offline provider is loaded (test_no_providers_some_not_loaded)', async () => {
    const { catalog } = quietCatalog();
    catalog.addProvider(onlineProvider('vultr', [catalogItem({ price: 1 })]));
    expect(await catalog.query()).toEqual([catalogItem({ price: 1 })]);
  });

  it('selects providers case-insensitively (test_provider_filter)', async () => {
    const { catalog } = quietCatalog();
    catalog.addProvider(onlineProvider('vultr', [catalogItem({ price: 1 })]));
    catalog.addProvider(
      onlineProvider('vastai', [
        catalogItem({ provider: 'vastai', price: 2 }),
        catalogItem({ provider: 'vastai', price: 3 }),
      ]),
    );
    expect(await catalog.query({ provider: 'vultr' })).toHaveLength(1);
    expect(await catalog.query({ provider: 'Vultr' })).toHaveLength(1);
    expect(await catalog.query({ provider: 'vastai' })).toHaveLength(2);
    expect(await catalog.query({ provider: 'VastAI' })).toHaveLength(2);
    expect(await catalog.query({ provider: ['vultr', 'VastAI'] })).toHaveLength(3);
  });

  it('filters GPU names case-insensitively (test_gpu_name_filter)', async () => {
    const { catalog } = quietCatalog();
    catalog.addProvider(
      onlineProvider('vultr', [
        catalogItem({ gpuName: 'A10' }),
        catalogItem({ gpuName: 'A100' }),
        catalogItem({ gpuName: 'a100' }),
      ]),
    );
    expect(await catalog.query({ gpuName: 'V100' })).toHaveLength(0);
    expect(await catalog.query({ gpuName: 'A10' })).toHaveLength(1);
    expect(await catalog.query({ gpuName: 'a10' })).toHaveLength(1);
    expect(await catalog.query({ gpuName: 'A100' })).toHaveLength(2);
    expect(await catalog.query({ gpuName: 'a100' })).toHaveLength(2);
    expect(await catalog.query({ gpuName: ['a10', 'A100'] })).toHaveLength(3);
  });

  it('passes the normalized filter to online providers and re-applies matches()', async () => {
    const { catalog } = quietCatalog();
    const vultr = onlineProvider('vultr', [catalogItem({ price: 1 }), catalogItem({ price: 5 })]);
    catalog.addProvider(vultr);
    expect(
      await catalog.query({ maxPrice: 2, gpuVendor: 'NVIDIA', minComputeCapability: '8.0', minGpuCount: 0 }),
    ).toEqual([]);
    expect(vultr.calls[0]).toEqual({
      maxPrice: 2,
      gpuVendor: 'nvidia',
      minComputeCapability: [8, 0],
      minGpuCount: 0,
    });
    expect(await catalog.query({ maxPrice: 2 })).toEqual([catalogItem({ price: 1 })]);
  });

  it('names online offers after their provider', async () => {
    const { catalog } = quietCatalog();
    catalog.addProvider(onlineProvider('vultr', [catalogItem({ provider: 'VULTR' })]));
    expect((await catalog.query({ provider: 'vultr' }))[0]?.provider).toBe('vultr');
  });

  it('rejects an unknown provider, listing the known ones', async () => {
    const { catalog } = quietCatalog();
    catalog.addProvider(onlineProvider('vultr', []));
    await expect(catalog.query({ provider: 'nope' })).rejects.toThrow(
      "Unknown provider 'nope'; known: vultr",
    );
  });

  it('rejects an invalid filter', async () => {
    const { catalog } = quietCatalog();
    await expect(catalog.query({ gpuVendor: 'acme' })).rejects.toThrow(/gpuVendor/);
  });

  it('skips a failing online provider and reports it', async () => {
    const { catalog, errors } = quietCatalog();
    catalog.addProvider(onlineProvider('vultr', [catalogItem()]));
    catalog.addProvider(
      onlineProvider('vastai', async () => {
        throw new Error('HTTP 503');
      }),
    );
    expect(await catalog.query()).toEqual([catalogItem()]);
    expect(errors.map((error) => error.message)).toEqual(["Online provider 'vastai' failed; skipping it"]);
    expect(errors[0]?.cause).toEqual(new Error('HTTP 503'));
  });

  it('refuses duplicate provider names', () => {
    const { catalog } = quietCatalog({ providers: ['aws'] });
    catalog.addProvider(onlineProvider('vultr', []));
    expect(() => catalog.addProvider(onlineProvider('Vultr', []))).toThrow(/already/);
    expect(() => catalog.addProvider(onlineProvider('aws', []))).toThrow(/already/);
  });
});

describe('mergeByPrice', () => {
  const prices = (lists: number[][]) =>
    mergeByPrice(
      lists.map((list, index) => list.map((price) => catalogItem({ price, instanceName: `${index}` }))),
    ).map((item) => `${item.instanceName}:${item.price}`);

  it('takes the cheapest head, ties to the earlier list', () => {
    expect(
      prices([
        [1, 3],
        [2, 1],
      ]),
    ).toEqual(['0:1', '1:2', '1:1', '0:3']);
    expect(prices([[1, 2], [1, 2], []])).toEqual(['0:1', '1:1', '0:2', '1:2']);
    expect(prices([[5], [1, 2, 3], [0, 4]])).toEqual(['2:0', '1:1', '1:2', '1:3', '2:4', '0:5']);
    expect(prices([])).toEqual([]);
    expect(prices([[], [2, 1]])).toEqual(['1:2', '1:1']);
  });
});

/**
 * gpuhunt's FakeBucket, as a real HTTP server on the loopback interface: serves the v3
 * catalogs of aws and gcp; the offer price in a catalog equals its version.
 */
class FakeBucket {
  versions: Record<string, string> = { aws: '1', gcp: '1' };
  failingProviders = new Set<string>();
  downloads: [string, string][] = [];
  versionRequests = 0;
  zipContent: 'catalog' | 'no-member' | 'garbage' = 'catalog';
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      const match = /^\/v3\/([^/]+)\/(.+)$/.exec(request.url ?? '');
      if (!match) return void response.writeHead(404).end();
      const [, provider, path] = match as unknown as [string, string, string];
      if (this.failingProviders.has(provider))
        return void response.writeHead(503).end(`${provider} is unavailable`);
      if (path === 'version') {
        this.versionRequests++;
        const version = this.versions[provider];
        if (version === undefined) return void response.writeHead(404).end();
        return void response.writeHead(200, { 'content-type': 'text/plain' }).end(`${version}\n`);
      }
      const version = path.replace(/\/catalog\.zip$/, '');
      this.downloads.push([provider, version]);
      const body =
        this.zipContent === 'catalog'
          ? catalogZip(provider, Number(version))
          : this.zipContent === 'no-member'
            ? zipSync({ 'other.csv': strToU8('x') })
            : strToU8('not a zip');
      response.writeHead(200, { 'content-type': 'application/zip' }).end(body);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/v3`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve, reject) =>
      this.server?.close((error) => (error ? reject(error) : resolve())),
    );
  }

  reset(): void {
    this.versions = { aws: '1', gcp: '1' };
    this.failingProviders.clear();
    this.downloads = [];
    this.versionRequests = 0;
    this.zipContent = 'catalog';
  }
}

function catalogZip(provider: string, price: number): Uint8Array {
  const row: Record<string, string> = Object.fromEntries(CATALOG_CSV_COLUMNS.map((column) => [column, '']));
  Object.assign(row, {
    instance_name: 'instance',
    location: 'location',
    price: String(price),
    cpu: '1',
    memory: '1',
    gpu_count: '0',
    spot: 'False',
    cpu_arch: 'x86',
    provider_data: '{}',
  });
  const csv = `${CATALOG_CSV_COLUMNS.join(',')}\n${CATALOG_CSV_COLUMNS.map((column) => row[column]).join(',')}\n`;
  return zipSync({ [`${provider}.csv`]: strToU8(csv), 'unrelated.txt': strToU8('x') });
}

async function prices(catalog: Catalog, provider: string): Promise<number[]> {
  return (await catalog.query({ provider })).map((item) => item.price);
}

describe('Catalog with a URL source (gpuhunt TestLoad)', () => {
  const bucket = new FakeBucket();
  const agent = new Agent({ keepAliveTimeout: 10 });
  beforeAll(() => bucket.start());
  afterAll(async () => {
    await agent.close();
    await bucket.stop();
  });
  beforeEach(() => bucket.reset());

  function urlCatalog(version?: string) {
    const errors: CatalogError[] = [];
    const source = urlSource(bucket.url, {
      dispatcher: agent,
      providers: ['aws', 'gcp'],
      ...(version !== undefined && { version }),
    });
    return {
      catalog: new Catalog({ source, refreshIntervalMs: 0, onError: (error) => errors.push(error) }),
      errors,
    };
  }

  it('loads the latest version of each provider (test_load)', async () => {
    const { catalog } = urlCatalog();
    await catalog.load();
    expect(await prices(catalog, 'aws')).toEqual([1]);
    expect(await prices(catalog, 'gcp')).toEqual([1]);
    expect(catalog.providers()).toMatchObject([
      { name: 'aws', kind: 'offline', version: '1', rows: 1 },
      { name: 'gcp', kind: 'offline', version: '1', rows: 1 },
    ]);
  });

  it('loads a pinned version without reading the version files (test_load_version)', async () => {
    const { catalog } = urlCatalog('2');
    await catalog.load();
    expect(await prices(catalog, 'aws')).toEqual([2]);
    expect(await prices(catalog, 'gcp')).toEqual([2]);
    expect(bucket.versionRequests).toBe(0);
  });

  it('keeps the loaded catalog of a provider that fails (test_keeps_loaded_catalog_if_provider_fails)', async () => {
    const { catalog, errors } = urlCatalog();
    await catalog.load();
    bucket.versions = { aws: '2', gcp: '2' };
    bucket.failingProviders.add('aws');
    await catalog.load();
    expect(await prices(catalog, 'aws')).toEqual([1]);
    expect(await prices(catalog, 'gcp')).toEqual([2]);
    expect(errors.map((error) => error.message)).toEqual([`GET ${bucket.url}/aws/version failed: HTTP 503`]);
    expect(catalog.providers()[0]).toMatchObject({
      name: 'aws',
      version: '1',
      lastError: expect.stringContaining('503'),
    });
  });

  it('throws when every provider fails and nothing is loaded (test_raises_if_all_providers_fail)', async () => {
    const { catalog } = urlCatalog();
    bucket.failingProviders.add('aws').add('gcp');
    await expect(catalog.load()).rejects.toThrow(CatalogError);
    await expect(catalog.query()).rejects.toThrow(/Cannot load any provider/);
    expect(catalog.providers().map((status) => status.rows)).toEqual([undefined, undefined]);
  });

  it('does not throw when every provider fails but data is loaded', async () => {
    const { catalog, errors } = urlCatalog();
    await catalog.load();
    bucket.failingProviders.add('aws').add('gcp');
    await catalog.load();
    expect(errors).toHaveLength(2);
    expect(await prices(catalog, 'aws')).toEqual([1]);
  });

  it('fails a pinned load when a provider fails, replacing nothing (test_raises_if_version_is_not_available)', async () => {
    const { catalog } = urlCatalog();
    await catalog.load();
    bucket.failingProviders.add('aws');
    const pinned = urlSource(bucket.url, { dispatcher: agent, providers: ['aws', 'gcp'], version: '2' });
    const pinnedCatalog = new Catalog({ source: pinned, refreshIntervalMs: 0 });
    await expect(pinnedCatalog.load()).rejects.toThrow(/aws\/2\/catalog\.zip failed: HTTP 503/);
    expect(pinnedCatalog.providers().map((status) => status.rows)).toEqual([undefined, undefined]);
    expect(await prices(catalog, 'gcp')).toEqual([1]);
  });

  it('downloads only providers whose version changed (test_skips_up_to_date_providers)', async () => {
    const { catalog } = urlCatalog();
    await catalog.load();
    bucket.versions.gcp = '2';
    bucket.downloads = [];
    await catalog.load();
    expect(bucket.downloads).toEqual([['gcp', '2']]);
    expect(await prices(catalog, 'gcp')).toEqual([2]);
  });

  it('reports a missing version, a zip without the member and a broken zip', async () => {
    const errors: CatalogError[] = [];
    const catalog = new Catalog({
      source: urlSource(bucket.url, { dispatcher: agent, providers: ['aws', 'azure'] }),
      onError: (error) => errors.push(error),
    });
    await catalog.load();
    expect(errors.map((error) => error.message)).toEqual([
      `GET ${bucket.url}/azure/version failed: HTTP 404`,
    ]);
    const source = urlSource(`${bucket.url}/`, { dispatcher: agent });
    bucket.zipContent = 'no-member';
    await expect(source.load('aws')).rejects.toThrow(`${bucket.url}/aws/1/catalog.zip has no member aws.csv`);
    bucket.zipContent = 'garbage';
    await expect(source.load('aws')).rejects.toThrow(
      `${bucket.url}/aws/1/catalog.zip is not a valid zip archive`,
    );
  });

  it('refreshes stale data on query', async () => {
    const source = urlSource(bucket.url, { dispatcher: agent, providers: ['aws', 'gcp'] });
    const catalog = new Catalog({ source, refreshIntervalMs: 1 });
    expect(await prices(catalog, 'aws')).toEqual([1]);
    bucket.versions.aws = '4';
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await prices(catalog, 'aws')).toEqual([4]);
  });

  describe('with a fallback and a disk cache (the server catalog)', () => {
    let cacheDirectory: string;
    beforeEach(async () => {
      cacheDirectory = await mkdtemp(join(tmpdir(), 'catalog-cache-'));
    });
    afterEach(() => rm(cacheDirectory, { recursive: true, force: true }));

    /** Price 100 in the fallback, so answers from it are told apart from the bucket's (price = version). */
    async function fallbackDirectory(): Promise<string> {
      const directory = await mkdtemp(join(tmpdir(), 'catalog-fallback-'));
      for (const provider of ['aws', 'gcp']) {
        await writeFile(
          join(directory, `${provider}.csv`),
          formatCatalogCsv([
            catalogItem({
              provider,
              price: 100,
              gpuCount: 0,
              gpuName: null,
              gpuMemory: null,
              gpuVendor: null,
            }),
          ]),
        );
      }
      await writeFile(join(directory, 'version'), 'fallback-1\n');
      return directory;
    }

    async function serverCatalog(errors: CatalogError[]) {
      const source = cachingSource(
        urlSource(bucket.url, { dispatcher: agent, providers: ['aws', 'gcp'] }),
        cacheDirectory,
      );
      const fallback = firstAvailableSource([
        cacheDirectorySource(cacheDirectory),
        snapshotSource(await fallbackDirectory()),
      ]);
      return new Catalog({ source, fallback, onError: (error) => errors.push(error) });
    }

    it('answers from the fallback at once, loads the source beside it, and caches what it loads', async () => {
      const errors: CatalogError[] = [];
      const catalog = await serverCatalog(errors);
      expect(await prices(catalog, 'aws')).toEqual([100]);
      await catalog.load();
      expect(await prices(catalog, 'aws')).toEqual([1]);
      expect(catalog.providers()[0]).toMatchObject({ name: 'aws', version: '1', fromFallback: false });
      expect(errors).toEqual([]);

      // A restart without the network answers from the cache, not the snapshot.
      bucket.failingProviders.add('aws').add('gcp');
      const restarted = await serverCatalog(errors);
      expect(await prices(restarted, 'aws')).toEqual([1]);
      expect(restarted.providers()[0]).toMatchObject({
        version: '1',
        location: join(cacheDirectory, 'aws.csv'),
        fromFallback: true,
      });
    });

    it('says once that a provider is unreachable, keeps the fallback, and takes the source when it answers', async () => {
      const errors: CatalogError[] = [];
      const catalog = await serverCatalog(errors);
      bucket.failingProviders.add('aws');
      await catalog.query();
      await catalog.load();
      await catalog.load();
      expect(await prices(catalog, 'aws')).toEqual([100]);
      expect(await prices(catalog, 'gcp')).toEqual([1]);
      expect(errors.map((error) => error.message)).toEqual([
        expect.stringMatching(
          /^GET .*\/aws\/version failed: HTTP 503; answering from .*aws\.csv \(version fallback-1\) until it loads$/,
        ),
      ]);
      bucket.failingProviders.clear();
      await catalog.load();
      expect(await prices(catalog, 'aws')).toEqual([1]);
      bucket.failingProviders.add('aws');
      await catalog.load();
      expect(errors).toHaveLength(2);
    });

    it('keeps what the source loaded when a load() came before the first query', async () => {
      const catalog = new Catalog({
        source: urlSource(bucket.url, { dispatcher: agent, providers: ['aws', 'gcp'] }),
        fallback: snapshotSource(await fallbackDirectory()),
      });
      await catalog.load();
      expect(await prices(catalog, 'aws')).toEqual([1]);
    });

    it('keeps the last catalog of a provider that fails on refresh', async () => {
      const errors: CatalogError[] = [];
      const catalog = await serverCatalog(errors);
      await catalog.load();
      bucket.versions = { aws: '2', gcp: '2' };
      bucket.failingProviders.add('gcp');
      await catalog.load();
      expect(await prices(catalog, 'aws')).toEqual([2]);
      expect(await prices(catalog, 'gcp')).toEqual([1]);
      expect(errors.map((error) => error.message)).toEqual([
        `GET ${bucket.url}/gcp/version failed: HTTP 503`,
      ]);
    });
  });

  it('does not refresh before the interval', async () => {
    const source = urlSource(bucket.url, { dispatcher: agent, providers: ['aws', 'gcp'] });
    const catalog = new Catalog({ source });
    expect(await prices(catalog, 'aws')).toEqual([1]);
    bucket.versions.aws = '4';
    expect(await prices(catalog, 'aws')).toEqual([1]);
    expect(bucket.versionRequests).toBe(2);
  });
});

describe('Catalog with a directory source', () => {
  let directory: string;
  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'catalog-test-'));
  });
  afterEach(() => rm(directory, { recursive: true, force: true }));

  const file = (name: string, items: Partial<CatalogItem>[]) =>
    writeFile(
      join(directory, name),
      formatCatalogCsv(
        items.map((item) =>
          catalogItem({ gpuCount: 0, gpuName: null, gpuMemory: null, gpuVendor: null, ...item }),
        ),
      ),
    );

  it('reads {dir}/{provider}.csv, sorted by price, and picks up changed files', async () => {
    await file('aws.csv', [{ price: 3 }, { price: 1 }]);
    await file('gcp.csv', [{ price: 2 }]);
    await writeFile(join(directory, 'notes.txt'), 'ignored');
    const catalog = new Catalog({ source: directorySource(directory) });
    expect((await catalog.query()).map((item) => [item.provider, item.price])).toEqual([
      ['aws', 1],
      ['gcp', 2],
      ['aws', 3],
    ]);
    expect(catalog.providers().map((status) => status.name)).toEqual(['aws', 'gcp']);
    await file('gcp.csv', [{ price: 0.5 }, { price: 7 }]);
    expect(await prices(catalog, 'gcp')).toEqual([0.5, 7]);
  });

  it('reports a missing file of a requested provider and keeps the others', async () => {
    await file('aws.csv', [{ price: 1 }]);
    const errors: CatalogError[] = [];
    const catalog = new Catalog({
      source: directorySource(directory),
      providers: ['AWS', 'azure'],
      onError: (error) => errors.push(error),
    });
    expect(await prices(catalog, 'aws')).toEqual([1]);
    expect(await prices(catalog, 'azure')).toEqual([]);
    expect(errors[0]?.message).toBe(`Cannot load the 'azure' catalog from directory ${directory}`);
  });

  it("with reportFailures 'query', says a provider's failure only when a query asks for it, once", async () => {
    await file('aws.csv', [{ price: 1 }]);
    const errors: CatalogError[] = [];
    const catalog = new Catalog({
      source: directorySource(directory),
      providers: ['aws', 'azure'],
      onError: (error) => errors.push(error),
      reportFailures: 'query',
    });
    await catalog.load();
    expect(await prices(catalog, 'aws')).toEqual([1]);
    expect(errors).toEqual([]);

    expect(await prices(catalog, 'azure')).toEqual([]);
    expect(await prices(catalog, 'azure')).toEqual([]);
    expect(errors.map((error) => error.message)).toEqual([
      `Cannot load the 'azure' catalog from directory ${directory}`,
    ]);
  });

  it('passes malformed-row warnings on with the file and line', async () => {
    await writeFile(
      join(directory, 'aws.csv'),
      'instance_name,location,price,cpu,memory,gpu_count,spot\na,l,x,1,1,0,False\n',
    );
    const warnings: unknown[] = [];
    const catalog = new Catalog({
      source: directorySource(directory),
      onWarning: (warning) => warnings.push(warning),
    });
    expect(await catalog.query()).toEqual([]);
    expect(warnings).toEqual([
      {
        source: join(directory, 'aws.csv'),
        line: 2,
        message: `column 'price': cannot parse "x" as a number`,
      },
    ]);
  });

  it('reads a snapshot directory once per version', async () => {
    await file('aws.csv', [{ price: 1 }]);
    await writeFile(join(directory, 'version'), '20261121-1\n');
    const source = snapshotSource(directory);
    const catalog = new Catalog({ source, refreshIntervalMs: 1 });
    expect(await prices(catalog, 'aws')).toEqual([1]);
    expect(catalog.providers()).toMatchObject([{ name: 'aws', version: '20261121-1' }]);
    await expect(source.load('aws', { knownVersion: '20261121-1' })).resolves.toBeUndefined();
    await expect(source.load('aws', { knownVersion: 'older' })).resolves.toMatchObject({
      version: '20261121-1',
    });
  });

  it('shares one load between concurrent queries', async () => {
    await file('aws.csv', [{ price: 1 }]);
    const inner = directorySource(directory);
    let loads = 0;
    const source: CatalogSource = {
      ...inner,
      revalidateOnQuery: false,
      load: (provider, options) => {
        loads++;
        return inner.load(provider, options);
      },
    };
    const catalog = new Catalog({ source });
    const results = await Promise.all([catalog.query(), catalog.query(), catalog.query()]);
    expect(results.map((items) => items.length)).toEqual([1, 1, 1]);
    expect(loads).toBe(1);
  });

  it('does not load offline data for a query of online providers only', async () => {
    const catalog = new Catalog({ source: directorySource(join(directory, 'missing')), providers: ['aws'] });
    catalog.addProvider(onlineProvider('vultr', [catalogItem()]));
    expect(await catalog.query({ provider: 'vultr' })).toHaveLength(1);
  });
});

describe('bundledSource', () => {
  it('points at assets/snapshot in the package root', () => {
    expect(BUNDLED_SNAPSHOT_DIRECTORY.replaceAll('\\', '/')).toMatch(
      /packages\/catalog\/assets\/snapshot\/$/,
    );
  });
});

describe('CatalogError', () => {
  it('is recognised by its marker', () => {
    expect(CatalogError.isInstance(new CatalogError('x'))).toBe(true);
    expect(CatalogError.isInstance(new Error('x'))).toBe(false);
    expect(new CatalogError('x').name).toBe('CatalogError');
  });
});
