import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  Catalog,
  type CatalogItem,
  checkCatalogIntegrity,
  directorySource,
  filterGcpOffers,
  formatCatalogCsv,
  GCP_GPUHUNT_EXPECTATIONS,
  type IntegrityExpectations,
  parseCatalogCsv,
  pythonRound,
} from '@dstack/catalog';
import { type BillingSku, type GcpEmulator, startGcpEmulator } from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GcpCatalogProvider } from './gcp-catalog-provider.js';

const packageDirectory = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Compute Engine SKUs in the Billing Catalog's shape for us-central1 (see gcp-collector-prices.test.ts). */
const SAMPLE_SKUS = path.join(packageDirectory, 'src/__fixtures__/gcp-billing-skus-sample.json');

const key = (item: Pick<CatalogItem, 'instanceName' | 'location' | 'gpuCount' | 'gpuName'>) =>
  `${item.instanceName} ${item.location} ${item.gpuCount} ${item.gpuName}`;
/** The n1 + attached GPU variants (n1 types have no built-in GPUs). */
const isN1Variant = (item: CatalogItem) => item.instanceName.startsWith('n1-') && item.gpuCount > 0;

function providerFor(emulator: GcpEmulator): GcpCatalogProvider {
  return new GcpCatalogProvider({
    computeUrl: emulator.computeUrl,
    billingUrl: emulator.url,
    credentials: emulator.serviceAccountJson(),
  });
}

let gcp: GcpEmulator;
let workDirectory: string;

beforeAll(async () => {
  gcp = await startGcpEmulator();
  workDirectory = await mkdtemp(path.join(tmpdir(), 'gcp-collect-'));
});

afterAll(async () => {
  await gcp?.close();
  if (workDirectory) await rm(workDirectory, { recursive: true, force: true });
});

describe('GcpCatalogProvider.collect against the emulator', () => {
  let unfiltered: CatalogItem[];
  let published: CatalogItem[];
  const progress: string[] = [];

  beforeAll(async () => {
    const provider = providerFor(gcp);
    unfiltered = await provider.collect({ applyFilter: false, onProgress: (line) => progress.push(line) });
    published = await provider.collect();
  });

  it("offers each zone's machine types with their vCPUs and GiB, per zone, on-demand and spot", () => {
    // gpuhunt has no accelerator details for H200 (a3-ultragpu): it skips those types, warning.
    const known = gcp.data.machineOfferings.filter((each) => !each.machineType.startsWith('a3-ultragpu'));
    expect(known.length).toBeLessThan(gcp.data.machineOfferings.length);
    expect(progress).toContain(
      'gcp: warning: unknown accelerator type nvidia-h200-141gb of a3-ultragpu-8g in us-central1-b; skipped',
    );
    const machines = unfiltered.filter((item) => !isN1Variant(item));
    for (const spot of [false, true]) {
      // Where the emulator's data has no price (its machine's or its GPUs'), the SKUs have none either.
      const priced = known.filter((each) => {
        const builtIn = gcp.data.machineTypes.get(each.machineType)?.accelerators;
        const gpus = gcp.data.acceleratorOfferings.find(
          (offering) =>
            offering.acceleratorType === builtIn?.type &&
            offering.count === builtIn.count &&
            offering.zone === each.zone,
        );
        const priceOf = (offering: { onDemandPrice?: number; spotPrice?: number } | undefined) =>
          spot ? offering?.spotPrice : offering?.onDemandPrice;
        return priceOf(each) !== undefined && (!builtIn || priceOf(gpus) !== undefined);
      });
      expect(priced.length).toBeGreaterThan(known.length * 0.9);
      expect(
        machines
          .filter((item) => item.spot === spot)
          .map((item) => `${item.instanceName} ${item.location}`)
          .sort(),
      ).toEqual(priced.map((each) => `${each.machineType} ${each.zone}`).sort());
    }
    for (const item of machines) {
      const spec = gcp.data.machineTypes.get(item.instanceName);
      expect(item.cpu).toBe(spec?.vcpus);
      expect(item.memory).toBe(pythonRound((spec?.memoryMb ?? 0) / 1024, 1));
      expect(item.gpuCount).toBe(spec?.accelerators?.count ?? 0);
      expect(item.providerData).toEqual({ is_dws_calendar_mode: false });
    }
    // n1-standard-1's 3840 MB is 3.75 GiB; gpuhunt rounds it to 3.8.
    expect(machines.find((item) => item.instanceName === 'n1-standard-1')?.memory).toBe(3.8);
    expect(machines.find((item) => item.instanceName === 'a2-ultragpu-1g')).toMatchObject({
      gpuName: 'A100',
      gpuMemory: 80,
      gpuVendor: 'nvidia',
    });
    expect(machines.find((item) => item.instanceName === 'a3-megagpu-8g')).toMatchObject({
      gpuName: 'H100',
      gpuCount: 8,
    });
  });

  it('prices each offer from the SKUs: cores·core + GiB·RAM + GPUs·gpu (+ local SSD) of its region', () => {
    const price = (description: string, region: string) => {
      const found = gcp.skus.find(
        (sku) => sku.description === description && sku.serviceRegions.includes(region),
      );
      const unit = (
        found?.pricingInfo[0] as {
          pricingExpression: { tieredRates: { unitPrice: { units: string; nanos: number } }[] };
        }
      )?.pricingExpression.tieredRates[0]?.unitPrice;
      if (!unit) throw new Error(`no SKU "${description}" in ${region}`);
      return Number(unit.units) + unit.nanos / 1e9;
    };
    const offer = (name: string, zone: string, gpus: number, spot: boolean) =>
      unfiltered.find(
        (item) =>
          item.instanceName === name &&
          item.location === zone &&
          item.gpuCount === gpus &&
          item.spot === spot,
      )?.price;
    const n1Core = price('N1 Predefined Instance Core running in Americas', 'us-central1');
    const n1Ram = price('N1 Predefined Instance Ram running in Americas', 'us-central1');
    const t4 = price('Nvidia Tesla T4 GPU running in Americas', 'us-central1');
    expect(offer('n1-standard-4', 'us-central1-a', 0, false)).toBe(pythonRound(4 * n1Core + 15 * n1Ram, 6));
    expect(offer('n1-standard-4', 'us-central1-a', 2, false)).toBe(
      pythonRound(4 * n1Core + 15 * n1Ram + 2 * t4, 6),
    );
    const spotCore = price('Spot Preemptible A3Plus Instance Core running in EMEA', 'europe-west4');
    const spotRam = price('Spot Preemptible A3Plus Instance Ram running in EMEA', 'europe-west4');
    const spotGpu = price('Spot Preemptible Nvidia H100 80GB Plus GPU running in EMEA', 'europe-west4');
    const spotSsd = price('SSD backed Local Storage attached to Spot Preemptible VMs', 'europe-west4') / 730;
    expect(offer('a3-megagpu-8g', 'europe-west4-b', 8, true)).toBe(
      pythonRound(208 * spotCore + 1872 * spotRam + 8 * spotGpu + 6000 * spotSsd, 6),
    );
  });

  it("gives back the emulator's own prices (its SKUs are fitted to them) within 5 %", () => {
    let compared = 0;
    for (const item of unfiltered.filter((each) => !isN1Variant(each))) {
      const machine = gcp.data.machineOffering(item.instanceName, item.location);
      const builtIn = gcp.data.machineTypes.get(item.instanceName)?.accelerators;
      const gpus = builtIn
        ? gcp.data.acceleratorOfferings.find(
            (each) =>
              each.acceleratorType === builtIn.type &&
              each.count === builtIn.count &&
              each.zone === item.location,
          )
        : undefined;
      const expected =
        ((item.spot ? machine?.spotPrice : machine?.onDemandPrice) ?? Number.NaN) +
        (builtIn ? ((item.spot ? gpus?.spotPrice : gpus?.onDemandPrice) ?? Number.NaN) : 0);
      expect(
        Math.abs(item.price - expected) / expected,
        `${item.instanceName} ${item.location}`,
      ).toBeLessThan(0.05);
      compared += 1;
    }
    expect(compared).toBeGreaterThan(800);
  });

  it("adds n1 + GPU variants for the GPUs each zone lists, within gpuhunt's per-count limits", () => {
    const variants = (zone: string, gpuName: string) =>
      unfiltered.filter(
        (item) => isN1Variant(item) && item.location === zone && item.gpuName === gpuName && !item.spot,
      );
    const countsOf = (zone: string, gpuName: string, type: string) =>
      variants(zone, gpuName)
        .filter((item) => item.instanceName === type)
        .map((item) => item.gpuCount)
        .sort((a, b) => a - b);
    const zoneHas = (zone: string, type: string) =>
      gcp.data.acceleratorTypesIn(zone).some(({ spec }) => spec.type === type);
    expect(zoneHas('us-central1-a', 'nvidia-tesla-t4') && zoneHas('us-central1-a', 'nvidia-tesla-v100')).toBe(
      true,
    );
    // T4: 1 and 2 GPUs up to 48 vCPUs / 312 GiB, 4 GPUs up to 96 / 624.
    expect(countsOf('us-central1-a', 'T4', 'n1-standard-4')).toEqual([1, 2, 4]);
    expect(countsOf('us-central1-a', 'T4', 'n1-standard-64')).toEqual([4]);
    // V100: 1 GPU up to 12 vCPUs, 2 up to 24, 4 up to 48, 8 up to 96.
    expect(countsOf('us-central1-a', 'V100', 'n1-standard-16')).toEqual([2, 4, 8]);
    expect(countsOf('us-central1-a', 'V100', 'n1-highmem-96')).toEqual([8]);
    expect(variants('us-central1-a', 'T4')[0]).toMatchObject({ gpuMemory: 16, gpuVendor: 'nvidia' });
    // A zone without an accelerator type has no variants of it.
    for (const zone of gcp.data.zones.map((each) => each.name)) {
      for (const [type, name] of [
        ['nvidia-tesla-t4', 'T4'],
        ['nvidia-tesla-v100', 'V100'],
        ['nvidia-tesla-p100', 'P100'],
        ['nvidia-tesla-p4', 'P4'],
      ] as const) {
        expect(variants(zone, name).length > 0, `${name} in ${zone}`).toBe(
          zoneHas(zone, type) &&
            unfiltered.some((item) => item.location === zone && item.instanceName.startsWith('n1-')),
        );
      }
    }
  });

  it('has a spot twin of each on-demand offer, the same but for market and price', () => {
    const onDemand = new Map(unfiltered.filter((item) => !item.spot).map((item) => [key(item), item]));
    const spot = unfiltered.filter((item) => item.spot);
    expect(spot.length).toBe(onDemand.size);
    for (const item of spot) {
      expect({ ...item, spot: false, price: 0 }).toEqual({ ...onDemand.get(key(item)), price: 0 });
      expect(item.price).toBeLessThan(onDemand.get(key(item))?.price ?? 0);
    }
  });

  it("publishes what gpuhunt's filter keeps, in the unfiltered order", () => {
    expect(published).toEqual(filterGcpOffers(unfiltered));
    expect(published.length).toBeLessThan(unfiltered.length);
    // n1 without GPUs, P4 and on-demand a3-highgpu below 8 GPUs are collected but not published.
    for (const dropped of [
      (item: CatalogItem) => item.instanceName.startsWith('n1-') && item.gpuCount === 0,
      (item: CatalogItem) => item.gpuName === 'P4',
      (item: CatalogItem) => item.instanceName === 'a3-highgpu-1g' && !item.spot,
    ]) {
      expect(unfiltered.some(dropped)).toBe(true);
      expect(published.some(dropped)).toBe(false);
    }
    expect(published.some((item) => item.instanceName === 'a3-highgpu-1g' && item.spot)).toBe(true);
    const prices = published.map((item) => item.price);
    expect(prices).toEqual([...prices].sort((a, b) => a - b));
  });

  it("writes a CSV the catalog's reader reads back unchanged", () => {
    const warnings: unknown[] = [];
    const csv = formatCatalogCsv(published);
    expect(parseCatalogCsv(csv, { provider: 'gcp', onWarning: (warning) => warnings.push(warning) })).toEqual(
      published,
    );
    expect(warnings).toEqual([]);
    // The shape of the real rows: zone locations, one-decimal GiB, gpuhunt's provider data.
    const row = csv
      .split('\r\n')
      .find((line) => line.startsWith('a2-highgpu-1g,us-central1-a,') && line.includes(',False,'));
    expect(row).toMatch(
      /^a2-highgpu-1g,us-central1-a,[0-9.]+,12,85\.0,1,A100,40\.0,False,,nvidia,,x86,"{""is_dws_calendar_mode"": false}"$/,
    );
  });

  it("passes gpuhunt's GCP integrity checks, scaled to the emulator's data", () => {
    // The emulated project has five regions, no e2, a4 (B200), g4 (RTX PRO 6000) or TPUs: those
    // parts of gpuhunt's expectations are checked against what the emulator has instead.
    const zonesOf = (type: string) =>
      gcp.data.machineOfferings.filter((each) => each.machineType === type).map((each) => each.zone);
    const emulated: IntegrityExpectations = {
      ...GCP_GPUHUNT_EXPECTATIONS,
      gpuNames: (GCP_GPUHUNT_EXPECTATIONS.gpuNames ?? []).filter(
        (name) => !['B200', 'RTXPRO6000'].includes(name),
      ),
      gpuNamePrefixes: [],
      instancesInLocations: {
        'g2-standard-4': zonesOf('g2-standard-4'),
        'a2-highgpu-1g': zonesOf('a2-highgpu-1g'),
      },
    };
    expect(checkCatalogIntegrity(published, emulated)).toEqual([]);
    // The real expectations are live: what the emulator lacks is reported.
    const problems = checkCatalogIntegrity(published, GCP_GPUHUNT_EXPECTATIONS);
    expect(problems.map((each) => each.check).sort()).toEqual([
      'gpu-name-prefix',
      'gpu-name-prefix',
      'gpu-name-prefix',
      'gpu-name-prefix',
      'gpu-names',
      'instance-locations',
    ]);
    const messages = problems.map((each) => each.message);
    expect(messages).toContain(
      `e2-highcpu-2 missing in ${GCP_GPUHUNT_EXPECTATIONS.instancesInLocations?.['e2-highcpu-2']?.join(', ')}`,
    );
    expect(messages).toContain('missing nvidia GPUs: B200, RTXPRO6000');
  });
});

describe('GcpCatalogProvider.collect with recorded SKUs', () => {
  let recorded: GcpEmulator;
  let items: CatalogItem[];

  beforeAll(async () => {
    const { skus } = JSON.parse(await readFile(SAMPLE_SKUS, 'utf8')) as { skus: BillingSku[] };
    recorded = await startGcpEmulator({ regions: ['us-central1', 'europe-west4'], billingSkus: skus });
    items = await providerFor(recorded).collect({ applyFilter: false });
  });

  afterAll(async () => {
    await recorded?.close();
  });

  it('offers only what the SKUs price: us-central1, N1/A2/A3/A3Plus, not G2 or europe-west4', () => {
    expect(new Set(items.map((item) => item.location.slice(0, -2)))).toEqual(new Set(['us-central1']));
    expect(new Set(items.map((item) => item.instanceName.split('-')[0]))).toEqual(
      new Set(['n1', 'a2', 'a3']),
    );
  });

  it('prices the rows from the recorded SKUs, skipping Sole Tenancy, Custom, Reserved and commitments', () => {
    const rows = (name: string, gpus = -1) =>
      items
        .filter(
          (item) =>
            item.instanceName === name &&
            item.location === 'us-central1-a' &&
            (gpus < 0 || item.gpuCount === gpus),
        )
        .map((item) => [item.spot, item.gpuName, item.gpuCount, item.price]);
    expect(rows('n1-standard-4', 0)).toEqual([
      [true, null, 0, pythonRound(4 * 0.00813 + 15 * 0.00109, 6)],
      [false, null, 0, pythonRound(4 * 0.031611 + 15 * 0.004237, 6)],
    ]);
    expect(rows('n1-standard-4', 1)).toEqual([
      [true, 'T4', 1, pythonRound(4 * 0.00813 + 15 * 0.00109 + 0.14, 6)],
      [false, 'T4', 1, pythonRound(4 * 0.031611 + 15 * 0.004237 + 0.35, 6)],
    ]);
    // No V100 SKU: no V100 variants.
    expect(items.some((item) => item.gpuName === 'V100')).toBe(false);
    // A100 40 GB has no spot SKU: a2-highgpu is on-demand only.
    expect(rows('a2-highgpu-1g')).toEqual([
      [false, 'A100', 1, pythonRound(12 * 0.031611 + 85 * 0.004237 + 2.933908, 6)],
    ]);
    expect(rows('a2-ultragpu-1g')).toEqual([
      [false, 'A100', 1, pythonRound(12 * 0.031611 + 170 * 0.004237 + 3.9286 + (375 * 0.08) / 730, 6)],
    ]);
    expect(rows('a3-megagpu-8g')).toEqual([
      [
        false,
        'H100',
        8,
        pythonRound(208 * 0.026924 + 1872 * 0.002344 + 8 * 10.344276 + (6000 * 0.08) / 730, 6),
      ],
    ]);
  });
});

describe('GcpCatalogProvider.collect when Google throttles', () => {
  it('retries 429 answers with backoff and collects the same offers', async () => {
    const expected = await providerFor(gcp).collect();
    const fault = gcp.addFault({ code: 'RATE_LIMIT_EXCEEDED', everyNth: 3 });
    try {
      const provider = new GcpCatalogProvider({
        computeUrl: gcp.computeUrl,
        billingUrl: gcp.url,
        credentials: gcp.serviceAccountJson(),
        retryBaseDelayMs: 5,
      });
      expect(await provider.collect()).toEqual(expected);
      expect(gcp.faults().find((each) => each.id === fault.id)?.fired).toBeGreaterThan(5);
    } finally {
      gcp.removeFault(fault.id);
    }
  });

  it("gives up after 4 retries with Google's message", async () => {
    const fault = gcp.addFault({ code: 'RATE_LIMIT_EXCEEDED' });
    try {
      const provider = new GcpCatalogProvider({
        computeUrl: gcp.computeUrl,
        billingUrl: gcp.url,
        credentials: gcp.serviceAccountJson(),
        retryBaseDelayMs: 1,
      });
      await expect(provider.collect()).rejects.toThrow(
        /regions answered 429: Quota exceeded for quota metric 'Queries'/,
      );
      expect(gcp.faults().find((each) => each.id === fault.id)?.fired).toBe(5);
    } finally {
      gcp.removeFault(fault.id);
    }
  });
});

describe('GcpCatalogProvider.collect errors', () => {
  it('names the variable to set when there is no service account', async () => {
    const saved = process.env.GOOGLE_APPLICATION_CREDENTIALS;
    delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
    try {
      await expect(new GcpCatalogProvider({ computeUrl: gcp.computeUrl }).collect()).rejects.toThrow(
        'gcp: no service account: set GOOGLE_APPLICATION_CREDENTIALS to the path of a service-account key file',
      );
    } finally {
      if (saved !== undefined) process.env.GOOGLE_APPLICATION_CREDENTIALS = saved;
    }
  });

  it('names the variable to set when neither the options nor the key give a project', async () => {
    const saved = process.env.GCP_PROJECT_ID;
    delete process.env.GCP_PROJECT_ID;
    const { project_id: _unused, ...withoutProject } = gcp.serviceAccountJson();
    try {
      await expect(
        new GcpCatalogProvider({ computeUrl: gcp.computeUrl, credentials: withoutProject }).collect(),
      ).rejects.toThrow(
        'gcp: no project: set GCP_PROJECT_ID, or use a service-account key file with a project_id',
      );
    } finally {
      if (saved !== undefined) process.env.GCP_PROJECT_ID = saved;
    }
  });

  it("reports Compute's answer for a project the account cannot see", async () => {
    const provider = new GcpCatalogProvider({
      computeUrl: gcp.computeUrl,
      billingUrl: gcp.url,
      credentials: gcp.serviceAccountJson(),
      project: 'someone-elses-project',
    });
    await expect(provider.collect()).rejects.toThrow(
      /GET http:\/\/127\.0\.0\.1:\d+\/compute\/v1\/projects\/someone-elses-project\/regions answered 40[34]: /,
    );
  });
});

describe('dstack-catalog collect gcp (the built command, as a child process)', () => {
  // Runs the BUILT bin and this package's built entry: run `pnpm build` first.
  const bin = path.join(packageDirectory, 'node_modules/@dstack/catalog/dist/bin/dstack-catalog.js');
  const entry = path.join(packageDirectory, 'dist/index.js');

  it('finds the installed package, writes the gcp.csv collect() gives (the emulator reached through the environment); the catalog loads it', async () => {
    for (const file of [bin, entry]) {
      if (!existsSync(file)) throw new Error(`${file} is missing: run \`pnpm build\` first`);
    }
    const keyFile = path.join(workDirectory, 'service-account.json');
    await writeFile(keyFile, JSON.stringify(gcp.serviceAccountJson()), { mode: 0o600 });
    const catalogDirectory = path.join(workDirectory, 'catalog');
    await mkdir(catalogDirectory);
    // A project that installed @dstack/backend-gcp: `collect gcp` finds it from the working directory.
    const project = path.join(workDirectory, 'project');
    await mkdir(path.join(project, 'node_modules/@dstack'), { recursive: true });
    await symlink(packageDirectory, path.join(project, 'node_modules/@dstack/backend-gcp'), 'dir');
    const output = path.join(catalogDirectory, 'gcp.csv');
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: workDirectory,
      GOOGLE_APPLICATION_CREDENTIALS: keyFile,
      DSTACK_GCP_COMPUTE_URL: gcp.computeUrl,
      DSTACK_GCP_BILLING_URL: gcp.url,
      NO_COLOR: '1',
    };
    const result = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [bin, 'collect', 'gcp', '--output', output],
        { cwd: project, env },
        (error, _stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stderr }),
      );
    });
    expect(result.stderr).toMatch(/wrote \d+ offers to /);
    expect(result.code).toBe(0);
    const written = await readFile(output, 'utf8');
    expect(written).toBe(formatCatalogCsv(await providerFor(gcp).collect()));

    const catalog = new Catalog({ source: directorySource(catalogDirectory), providers: ['gcp'] });
    const offers = await catalog.query({ provider: ['gcp'] });
    expect(offers).toHaveLength(parseCatalogCsv(written, { provider: 'gcp' }).length);
    const t4 = await catalog.query({ provider: ['gcp'], gpuName: ['T4'], spot: true });
    expect(t4.length).toBeGreaterThan(0);
    expect(t4.every((item) => item.instanceName.startsWith('n1-') && item.spot)).toBe(true);
  });
});
