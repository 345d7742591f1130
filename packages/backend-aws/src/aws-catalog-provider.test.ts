import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AWS_GPUHUNT_EXPECTATIONS,
  AWS_PUBLISHED_PREFIXES,
  type CatalogItem,
  checkCatalogIntegrity,
  formatCatalogCsv,
  type IntegrityExpectations,
  parseCatalogCsv,
} from '@dstack/catalog';
import { type AwsEmulator, BULK_PRICE_LIST_PATH, startAwsEmulator } from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitCsvLine } from './aws-bulk-price-list.js';
import { AwsCatalogProvider } from './aws-catalog-provider.js';

const packageDirectory = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/**
 * A price list in the real file's shape (five disclaimer lines, every field quoted, the
 * reserved-term columns) with one row per rule gpuhunt's collector applies: kept rows first,
 * then a Windows, RHEL, Dedicated, unused- and allocated-reservation, SQL Web, two Reserved
 * term, Capacity Block, retired-family (c4, p3) and fractional-GPU (g6f) row.
 */
const SAMPLE_PRICE_LIST = path.join(packageDirectory, 'src/__fixtures__/aws-bulk-price-list-sample.csv');

const key = (item: Pick<CatalogItem, 'instanceName' | 'location'>) => `${item.instanceName} ${item.location}`;

let aws: AwsEmulator;
let workDirectory: string;

function providerFor(emulator: AwsEmulator, extra: { cachePath?: string } = {}): AwsCatalogProvider {
  return new AwsCatalogProvider({
    priceListUrl: emulator.url,
    endpoint: emulator.url,
    credentials: {
      accessKeyId: emulator.credentials.accessKeyId,
      secretAccessKey: emulator.credentials.secretAccessKey,
    },
    ...extra,
  });
}

beforeAll(async () => {
  aws = await startAwsEmulator();
  workDirectory = await mkdtemp(path.join(tmpdir(), 'aws-collect-'));
});

afterAll(async () => {
  await aws?.close();
  if (workDirectory) await rm(workDirectory, { recursive: true, force: true });
});

describe('AwsCatalogProvider.collect against the emulator', () => {
  let unfiltered: CatalogItem[];
  let published: CatalogItem[];

  beforeAll(async () => {
    const provider = providerFor(aws);
    unfiltered = await provider.collect({ applyFilter: false });
    published = await provider.collect();
  });

  it("keeps exactly the price list's Linux/Shared/Used on-demand rows, at their price", async () => {
    const priceList = await (await fetch(new URL(BULK_PRICE_LIST_PATH, aws.url))).text();
    const [header, ...lines] = priceList.trimEnd().split('\n').slice(5);
    const columns = splitCsvLine(header as string);
    const records = lines.map((line) => {
      const fields = splitCsvLine(line);
      return Object.fromEntries(columns.map((name, index) => [name, fields[index] ?? '']));
    });
    // The emulator's list carries the rows a collector must drop.
    for (const [column, value] of [
      ['Operating System', 'Windows'],
      ['Tenancy', 'Dedicated'],
      ['CapacityStatus', 'UnusedCapacityReservation'],
    ]) {
      expect(records.filter((record) => record[column as string] === value).length).toBeGreaterThan(0);
    }
    const kept = records.filter(
      (record) =>
        record['Operating System'] === 'Linux' &&
        record.Tenancy === 'Shared' &&
        record.CapacityStatus === 'Used' &&
        !(record['Instance Type'] as string).startsWith('p3.'),
    );
    const onDemand = unfiltered.filter((item) => !item.spot);
    expect(onDemand).toHaveLength(kept.length);
    const expectedPrices = new Map(
      kept.map((record) => [
        `${record['Instance Type']} ${record['Region Code']}`,
        Number(record.PricePerUnit),
      ]),
    );
    for (const item of onDemand) expect(item.price).toBe(expectedPrices.get(key(item)));
    // p3 is a retired family gpuhunt drops although the list prices it.
    expect(records.some((record) => (record['Instance Type'] as string).startsWith('p3.'))).toBe(true);
    expect(unfiltered.some((item) => item.instanceName.startsWith('p3.'))).toBe(false);
  });

  it('adds a spot copy of each offer at the cheapest zone price of its region', () => {
    const cheapestSpot = new Map<string, number>();
    for (const offering of aws.data.offerings) {
      if (offering.spotPrice === undefined) continue;
      const at = `${offering.instanceType} ${offering.region}`;
      cheapestSpot.set(at, Math.min(cheapestSpot.get(at) ?? offering.spotPrice, offering.spotPrice));
    }
    const onDemand = new Map(unfiltered.filter((item) => !item.spot).map((item) => [key(item), item]));
    const spot = unfiltered.filter((item) => item.spot);
    const expectedSpotKeys = [...onDemand.keys()].filter((at) => cheapestSpot.has(at));
    expect(spot.map(key).sort()).toEqual(expectedSpotKeys.sort());
    for (const item of spot) {
      expect(item.price).toBe(cheapestSpot.get(key(item)));
      // Everything but the market and the price is the on-demand offer's.
      expect({ ...item, spot: false, price: 0 }).toEqual({ ...onDemand.get(key(item)), price: 0 });
    }
    // g5.xlarge in us-east-1: five zones, 0.4177 0.397 0.413 0.4028 0.4005.
    expect(spot.find((item) => key(item) === 'g5.xlarge us-east-1')?.price).toBe(0.397);
  });

  it('fills the GPU columns from DescribeInstanceTypes', () => {
    const first = (name: string) => unfiltered.find((item) => item.instanceName === name);
    expect(first('g5.xlarge')).toMatchObject({ gpuCount: 1, gpuName: 'A10G', gpuMemory: 22888 / 1024 });
    expect(first('g5.xlarge')?.gpuVendor).toBe('nvidia');
    // L4 is pinned to 24 GiB; p4de is gpuhunt's hardcoded A100 80 GB.
    expect(first('g6.12xlarge')).toMatchObject({ gpuCount: 4, gpuName: 'L4', gpuMemory: 24 });
    expect(first('p4de.24xlarge')).toMatchObject({ gpuCount: 8, gpuName: 'A100', gpuMemory: 80 });
    expect(first('p5.48xlarge')).toMatchObject({ gpuCount: 8, gpuName: 'H100', gpuMemory: 80 });
    expect(first('g4ad.xlarge')).toMatchObject({
      gpuName: 'Radeon Pro V520',
      gpuVendor: 'amd',
      gpuMemory: 8,
    });
    expect(first('m5.xlarge')).toMatchObject({
      gpuCount: 0,
      gpuName: null,
      gpuMemory: null,
      gpuVendor: null,
    });
    // Inferentia and Trainium have no GpuInfo and no GPU column.
    expect(first('inf2.xlarge')).toMatchObject({ gpuCount: 0, gpuName: null });
  });

  it("publishes gpuhunt's families only, in the unfiltered order", () => {
    const isPublished = (item: CatalogItem) =>
      AWS_PUBLISHED_PREFIXES.some((prefix) => item.instanceName.startsWith(prefix));
    expect(published.length).toBeGreaterThan(0);
    expect(published.length).toBeLessThan(unfiltered.length);
    expect(published.every(isPublished)).toBe(true);
    expect(published).toEqual(unfiltered.filter(isPublished));
  });

  it("writes a CSV the catalog's reader reads back unchanged", () => {
    const warnings: unknown[] = [];
    const csv = formatCatalogCsv(published);
    const parsed = parseCatalogCsv(csv, { provider: 'aws', onWarning: (warning) => warnings.push(warning) });
    expect(warnings).toEqual([]);
    expect(parsed).toEqual(published);
    expect(csv.split('\r\n')[1]).toMatch(/^[a-z0-9.-]+,[a-z0-9-]+,[0-9.e-]+,\d+,[0-9.]+,\d,/);
  });

  it("passes gpuhunt's AWS integrity checks, scaled to the emulator's data", () => {
    // The emulated account sells three regions and no m5.large, g7 or g7e: those parts of
    // gpuhunt's expectations are checked against what the emulator has instead.
    const emulated: IntegrityExpectations = {
      ...AWS_GPUHUNT_EXPECTATIONS,
      gpuNames: (AWS_GPUHUNT_EXPECTATIONS.gpuNames ?? []).filter((name) => !name.startsWith('RTXPRO')),
      instancesInLocations: { 'm5.xlarge': [...aws.regions], 'g6.xlarge': ['us-east-1', 'us-west-2'] },
    };
    expect(checkCatalogIntegrity(published, emulated)).toEqual([]);
    // The real expectations are live: what the emulator lacks is reported.
    const problems = checkCatalogIntegrity(published, AWS_GPUHUNT_EXPECTATIONS).map((each) => each.check);
    expect(problems.sort()).toEqual(['gpu-names', 'instance-locations']);
  });
});

describe('AwsCatalogProvider.collect with a recorded price list (AWS_CACHE_PATH)', () => {
  it('drops every row gpuhunt drops and keeps the rest, Local Zones and unenabled regions without spot', async () => {
    const items = await providerFor(aws, { cachePath: SAMPLE_PRICE_LIST }).collect({ applyFilter: false });
    const rows = items.map((item) => [item.instanceName, item.location, item.spot, item.price]);
    expect(rows).toEqual([
      ['m5.xlarge', 'us-east-1', true, 0.0597],
      ['m5.xlarge', 'us-west-2', true, 0.0614],
      ['g4ad.xlarge', 'us-east-1', true, 0.1097],
      ['m5.large', 'us-west-2-lax-1', false, 0.114],
      ['m5.xlarge', 'us-east-1', false, 0.192],
      ['m5.xlarge', 'us-west-2', false, 0.192],
      ['m5.xlarge', 'af-south-1', false, 0.254],
      ['g4ad.xlarge', 'us-east-1', false, 0.37853],
      ['g5.xlarge', 'us-east-1', true, 0.397],
      ['g5.xlarge', 'us-east-1', false, 1.006],
      ['p4de.24xlarge', 'us-east-1', true, 5.8394],
      ['p4de.24xlarge', 'us-east-1', false, 40.96575],
    ]);
    expect(items.find((item) => item.instanceName === 'm5.large')).toMatchObject({ cpu: 2, memory: 8 });
  });

  it('filters before asking spot prices: g4ad is not published', async () => {
    const items = await providerFor(aws, { cachePath: SAMPLE_PRICE_LIST }).collect();
    expect(items.some((item) => item.instanceName.startsWith('g4ad.'))).toBe(false);
    expect(items).toHaveLength(10);
  });

  it('fails naming the region when EC2 refuses a region an account cannot opt out of', async () => {
    const priceList = path.join(workDirectory, 'with-eu-west-3.csv');
    await copyFile(SAMPLE_PRICE_LIST, priceList);
    const original = await readFile(SAMPLE_PRICE_LIST, 'utf8');
    const m5Row = original
      .split('\n')
      .find((line) => line.includes('"m5.xlarge"') && line.includes('"us-west-2"'));
    await appendFile(priceList, `${(m5Row as string).replaceAll('us-west-2', 'eu-west-3')}\n`);
    await expect(providerFor(aws, { cachePath: priceList }).collect()).rejects.toThrow(
      /failed AWS spot price fetch in region eu-west-3: .*AWS was not able to validate/,
    );
  });

  it('names the file, line and column of a row it cannot read', async () => {
    const priceList = path.join(workDirectory, 'bad-memory.csv');
    await copyFile(SAMPLE_PRICE_LIST, priceList);
    const original = await readFile(SAMPLE_PRICE_LIST, 'utf8');
    const m5Row = original.split('\n').find((line) => line.includes('"m5.xlarge"'));
    await appendFile(priceList, `${(m5Row as string).replace('"16 GiB"', '"16 GB"')}\n`);
    const lineNumber = original.trimEnd().split('\n').length + 1;
    await expect(providerFor(aws, { cachePath: priceList }).collect()).rejects.toThrow(
      `${priceList}:${lineNumber}: column "Memory": cannot parse memory "16 GB"`,
    );
  });
});

describe('dstack-catalog collect aws (the built command, as a child process)', () => {
  // Runs the BUILT bin and this package's built entry: run `pnpm build` first.
  const bin = path.join(packageDirectory, 'node_modules/@dstack/catalog/dist/bin/dstack-catalog.js');
  const entry = path.join(packageDirectory, 'dist/index.js');

  it('writes the same aws.csv as collect(), reaching the emulator through the SDK settings in env', async () => {
    for (const file of [bin, entry]) {
      if (!existsSync(file)) throw new Error(`${file} is missing: run \`pnpm build\` first`);
    }
    const output = path.join(workDirectory, 'aws.csv');
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: workDirectory,
      AWS_ACCESS_KEY_ID: aws.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: aws.credentials.secretAccessKey,
      AWS_ENDPOINT_URL_EC2: aws.url,
      DSTACK_AWS_PRICE_LIST_URL: aws.url,
      NO_COLOR: '1',
    };
    const result = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [bin, 'collect', 'aws', '--module', entry, '--output', output],
        { cwd: packageDirectory, env },
        (error, _stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stderr }),
      );
    });
    expect(result.stderr).toMatch(/wrote \d+ offers to /);
    expect(result.code).toBe(0);
    const written = await readFile(output, 'utf8');
    const expected = await providerFor(aws).collect();
    expect(written).toBe(formatCatalogCsv(expected));
    const parsed = parseCatalogCsv(written, { provider: 'aws' });
    expect(checkCatalogIntegrity(parsed, { gpuNames: ['H100', 'A100', 'A10G', 'T4', 'L40S', 'L4'] })).toEqual(
      [],
    );
    // A child process that loads the AWS SDK, then a second collection: seconds on a busy machine.
  }, 60_000);
});
