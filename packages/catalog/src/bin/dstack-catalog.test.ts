import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CATALOG_CSV_COLUMNS, parseCatalogCsv } from '../csv/catalog-csv.js';

// These tests run the BUILT bin as a child process: run `pnpm build` first.
// Each test starts the built CLI a few times as child processes, about a second each: on a
// loaded machine (the whole suite, two files at a time) that passes vitest's 5 s default.
vi.setConfig({ testTimeout: 60_000 });

const packageDirectory = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bin = path.join(packageDirectory, 'dist/bin/dstack-catalog.js');
const sourceFixtures = path.join(packageDirectory, 'src/bin/__fixtures__');
const builtFixtures = path.join(packageDirectory, 'dist/bin/__fixtures__');

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

function run(...args: string[]): Promise<Result> {
  return runIn(packageDirectory, ...args);
}

function runIn(cwd: string, ...args: string[]): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { cwd, env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: undefined } },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

async function json(...args: string[]): Promise<Array<Record<string, unknown>>> {
  const result = await run('query', '--format', 'json', ...args);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout) as Array<Record<string, unknown>>;
}

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`pnpm build\` first`);
});

describe('dstack-catalog query (bundled snapshot)', () => {
  it('prints real AWS and GCP H100 rows sorted by price', async () => {
    const result = await run('query', '--gpu-name', 'H100');
    expect(result.code).toBe(0);
    const [header, ...rows] = result.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^PROVIDER\s+INSTANCE\s+LOCATION\s+CPU\s+MEMORY\s+GPU\s+SPOT\s+PRICE \(\$\/h\)$/);
    expect(rows.some((row) => /^aws\s+p5\.48xlarge\s+\S+\s+192\s+2048GB\s+8xH100 \(80GB\)/.test(row))).toBe(
      true,
    );
    expect(
      rows.some((row) => /^gcp\s+a3-highgpu-8g\s+us-central1-\w\s+208\s+1872GB\s+8xH100 \(80GB\)/.test(row)),
    ).toBe(true);
    const prices = rows.map((row) => Number(row.trim().split(/\s+/).at(-1)));
    expect(prices.every((price, i) => i === 0 || (prices[i - 1] as number) <= price)).toBe(true);
    expect(result.stdout).not.toContain('\u001b[');
  });

  it('--format json: CSV column keys plus provider, typed values, in result order', async () => {
    const items = await json('--gpu-name', 'H100', '--limit', '5');
    expect(items).toHaveLength(5);
    for (const item of items) {
      expect(Object.keys(item)).toEqual(['provider', ...CATALOG_CSV_COLUMNS]);
      expect(item).toMatchObject({ gpu_name: 'H100', gpu_memory: 80, gpu_vendor: 'nvidia', disk_size: null });
      expect(typeof item.price).toBe('number');
      expect(typeof item.spot).toBe('boolean');
      expect(Array.isArray(item.flags)).toBe(true);
      expect(typeof item.provider_data).toBe('object');
    }
    const prices = items.map((item) => item.price as number);
    expect([...prices].sort((a, b) => a - b)).toEqual(prices);
  });

  it('honours provider, spot, price, GPU memory and count filters', async () => {
    const a100 = await json(
      '--gpu-name',
      'a100',
      '--min-gpu-memory',
      '80',
      '--spot',
      '--max-price',
      '20',
      '--provider',
      'gcp',
    );
    expect(a100.length).toBeGreaterThan(0);
    expect(
      a100.every(
        (i) =>
          i.provider === 'gcp' &&
          i.gpu_name === 'A100' &&
          i.gpu_memory === 80 &&
          i.spot === true &&
          (i.price as number) <= 20,
      ),
    ).toBe(true);

    const onDemand = await json(
      '--gpu-name',
      'L4',
      '--no-spot',
      '--min-gpu-count',
      '4',
      '--max-gpu-count',
      '4',
    );
    expect(onDemand.length).toBeGreaterThan(0);
    expect(onDemand.every((i) => i.spot === false && i.gpu_count === 4)).toBe(true);

    const cpuOnly = await json('--max-gpu-count', '0', '--min-cpu', '8', '--provider', 'aws,gcp');
    expect(cpuOnly.length).toBeGreaterThan(0);
    expect(cpuOnly.every((i) => i.gpu_count === 0 && (i.cpu as number) >= 8)).toBe(true);
    // Both clouds have CPU-only machines (GCP's n1-standard stand in for the families the data lacks).
    expect(new Set(cpuOnly.map((i) => i.provider))).toEqual(new Set(['aws', 'gcp']));

    const tpus = await json('--gpu-vendor', 'google', '--max-price', '2');
    expect(tpus.length).toBeGreaterThan(0);
    expect(tpus.every((i) => i.gpu_vendor === 'google' && String(i.gpu_name).startsWith('v'))).toBe(true);

    const ampere = await json(
      '--min-compute-capability',
      '8.0',
      '--max-compute-capability',
      '8.0',
      '--limit',
      '50',
    );
    expect(new Set(ampere.map((i) => i.gpu_name))).toEqual(new Set(['A100']));
  });

  it('rejects a bad number naming the flag, with exit code 2', async () => {
    const result = await run('query', '--min-cpu', 'lots');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--min-cpu');
    expect(result.stderr).toContain('lots');
    expect(result.stdout).toBe('');
  });

  it('rejects unknown flags, bad choices and bad compute capabilities with exit code 2', async () => {
    for (const args of [
      ['query', '--gpus', '1'],
      ['query', '--gpu-vendor', 'acme'],
      ['query', '--min-compute-capability', 'eight'],
      ['query', '--limit', '1.5'],
    ]) {
      const result = await run(...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toMatch(/error/i);
    }
  });

  it('prints help for the program and each command', async () => {
    const main = await run('--help');
    expect(main.code).toBe(0);
    expect(main.stdout).toMatch(/query/);
    expect(main.stdout).toMatch(/collect/);
    const query = await run('query', '--help');
    expect(query.code).toBe(0);
    for (const flag of [
      '--provider',
      '--min-total-gpu-memory',
      '--max-compute-capability',
      '--no-spot',
      '--catalog-dir',
      '--format',
    ])
      expect(query.stdout).toContain(flag);
    const collect = await run('collect', '--help');
    expect(collect.code).toBe(0);
    expect(collect.stdout).toContain('--module');
  });
});

describe('dstack-catalog query --catalog-dir', () => {
  const catalogDir = path.join(sourceFixtures, 'catalog-dir');

  it('reads {provider}.csv from the directory', async () => {
    const items = await json('--catalog-dir', catalogDir);
    expect(items.map((i) => `${i.provider}:${i.instance_name}`)).toEqual([
      'aws:fixture.cpu',
      'aws:fixture.h100-spot',
      'aws:fixture.h100',
      'aws:fixture.a100-flagged',
      'gcp:fixture-h100-8g',
    ]);
    expect(items[3]).toMatchObject({ flags: ['fixture-preview'], provider_data: { note: 'flagged' } });
  });

  it('hides flagged offers unless allowed', async () => {
    const none = await json('--catalog-dir', catalogDir, '--allowed-flags', '');
    expect(none.map((i) => i.instance_name)).not.toContain('fixture.a100-flagged');
    const allowed = await json('--catalog-dir', catalogDir, '--allowed-flags', 'fixture-preview');
    expect(allowed.map((i) => i.instance_name)).toContain('fixture.a100-flagged');
  });

  it('filters rows of the directory catalog', async () => {
    const items = await json(
      '--catalog-dir',
      catalogDir,
      '--gpu-name',
      'H100',
      '--no-spot',
      '--provider',
      'aws',
    );
    expect(items.map((i) => i.instance_name)).toEqual(['fixture.h100']);
  });

  it('refuses --catalog-dir together with --catalog-url', async () => {
    const result = await run('query', '--catalog-dir', catalogDir, '--catalog-url', 'http://127.0.0.1:9');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--catalog-url');
  });
});

describe('dstack-catalog publish', () => {
  let root: string;
  let server: Server;
  let url: string;
  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'dstack-catalog-publish-'));
    // A static file server over the published directory, as a team would host it.
    server = createServer((request, response) => {
      readFile(path.join(root, decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname))).then(
        (body) => response.end(body),
        () => response.writeHead(404).end(),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await rm(root, { recursive: true, force: true });
  });

  it("writes gpuhunt's v3 layout, which query --catalog-url reads back", async () => {
    const published = await run(
      'publish',
      path.join(sourceFixtures, 'catalog-dir', 'aws.csv'),
      '--output',
      root,
      '--catalog-version',
      '20261127-1',
    );
    expect(published.stderr).toBe('');
    expect(published.code).toBe(0);
    expect(published.stdout).toBe(`aws 20261127-1 ${path.join(root, 'aws', '20261127-1', 'catalog.zip')}\n`);
    expect(await readFile(path.join(root, 'aws', 'version'), 'utf8')).toBe('20261127-1\n');
    expect(existsSync(path.join(root, 'aws', 'latest', 'catalog.zip'))).toBe(true);

    const items = await json('--catalog-url', url, '--provider', 'aws');
    expect(items.map((i) => i.instance_name)).toEqual([
      'fixture.cpu',
      'fixture.h100-spot',
      'fixture.h100',
      'fixture.a100-flagged',
    ]);
  });

  it('refuses a file not named {provider}.csv', async () => {
    const result = await run('publish', path.join(sourceFixtures, 'fake-backend.ts'), '--output', root);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('expected a {provider}.csv file');
  });
});

describe('dstack-catalog collect', () => {
  let outputDirectory = '';
  beforeAll(async () => {
    outputDirectory = await mkdtemp(path.join(tmpdir(), 'dstack-catalog-collect-'));
  });
  afterAll(async () => {
    await rm(outputDirectory, { recursive: true, force: true });
  });

  it("writes a module's default-export provider as a gpuhunt CSV", async () => {
    const output = path.join(outputDirectory, 'fake.csv');
    const result = await run(
      'collect',
      'fake',
      '--output',
      output,
      '--module',
      path.join(builtFixtures, 'fake-backend.js'),
    );
    expect(result.stderr).toContain('wrote 2 offers');
    expect(result.code).toBe(0);
    const text = await readFile(output, 'utf8');
    expect(text.split('\r\n')[0]).toBe(CATALOG_CSV_COLUMNS.join(','));
    expect(text).toContain(
      'fake.cpu-4,moon-1,0.1,4,16.0,0,,,True,100.0,,fake-preview,arm,"{""zone"": ""moon-1a""}"\r\n',
    );
    const items = parseCatalogCsv(text, { provider: 'fake' });
    expect(items.map((i) => [i.instanceName, i.gpuCount, i.gpuName])).toEqual([
      ['fake.cpu-4', 0, null],
      ['fake.gpu-2', 2, 'L4'],
    ]);
  });

  it('passes --no-filter and reports progress', async () => {
    const output = path.join(outputDirectory, 'unfiltered.csv');
    const result = await run(
      'collect',
      'fake',
      '-o',
      output,
      '--no-filter',
      '--module',
      path.join(builtFixtures, 'fake-backend.js'),
    );
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('fake: collecting');
    expect(result.stderr).toContain('wrote 3 offers');
    expect(await readFile(output, 'utf8')).toContain('fake.legacy,');
  });

  it('accepts a named catalogProvider export and a relative --module path', async () => {
    const output = path.join(outputDirectory, 'named.csv');
    const relative = path.relative(packageDirectory, path.join(builtFixtures, 'named-export-backend.js'));
    const result = await run('collect', 'named', '-o', output, '--module', `./${relative}`);
    expect(result.code).toBe(0);
    expect(await readFile(output, 'utf8')).toContain('n.small,r1,0.01,1,0.5,0');
  });

  it('finds the backend package installed in the project it runs in', async () => {
    const project = path.join(outputDirectory, 'project');
    const installed = path.join(project, 'node_modules', '@dstack', 'backend-aws');
    await mkdir(path.join(installed, 'dist'), { recursive: true });
    await writeFile(path.join(project, 'package.json'), '{"name": "my-project", "private": true}');
    await writeFile(
      path.join(installed, 'package.json'),
      JSON.stringify({
        name: '@dstack/backend-aws',
        type: 'module',
        exports: { '.': { types: './dist/index.d.ts', import: './dist/index.js' } },
      }),
    );
    const fixture = pathToFileURL(path.join(builtFixtures, 'fake-backend.js')).href;
    await writeFile(path.join(installed, 'dist', 'index.js'), `export { default } from '${fixture}';\n`);
    const output = path.join(outputDirectory, 'installed.csv');
    const result = await runIn(project, 'collect', 'aws', '-o', output);
    expect(result.stderr).toContain('wrote 2 offers');
    expect(result.code).toBe(0);
    expect(await readFile(output, 'utf8')).toContain('fake.gpu-2,');
  });

  it('says which package to install when the backend is missing', async () => {
    // No workspace package is @dstack/backend-cloudrift (a known type not built yet); an installed one is found (above).
    const result = await run('collect', 'cloudrift', '--output', path.join(outputDirectory, 'cloudrift.csv'));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('install @dstack/backend-cloudrift to collect cloudrift');
  });

  it('rejects unknown providers, modules without a provider and a missing --output', async () => {
    const unknown = await run('collect', 'acme', '--output', path.join(outputDirectory, 'x.csv'));
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown provider "acme"');
    expect(unknown.stderr).toContain('known: aws, gcp, azure, lambdalabs,');

    const online = await run('collect', 'vastai', '--output', path.join(outputDirectory, 'x.csv'));
    expect(online.code).toBe(2);
    expect(online.stderr).toContain(
      'provider "vastai" is online: @dstack/backend-vastai asks its offers live, there is nothing to collect',
    );

    const notBackend = await run(
      'collect',
      'x',
      '-o',
      path.join(outputDirectory, 'x.csv'),
      '--module',
      path.join(builtFixtures, 'not-a-backend.js'),
    );
    expect(notBackend.code).toBe(1);
    expect(notBackend.stderr).toContain('no offline catalog provider');

    const missingFile = await run(
      'collect',
      'x',
      '-o',
      path.join(outputDirectory, 'x.csv'),
      '--module',
      './nowhere/backend.js',
    );
    expect(missingFile.code).toBe(1);
    expect(missingFile.stderr).toContain('module ./nowhere/backend.js not found');

    const noOutput = await run('collect', 'aws');
    expect(noOutput.code).toBe(2);
    expect(noOutput.stderr).toContain('--output');
  });
});
