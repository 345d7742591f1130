/**
 * One project with AWS, GCP, Vast.ai, RunPod, Lambda, Verda and Nebius configured, each backend
 * pointed at its emulator (the real AWS SDK, google-auth-library + Compute REST, the Vast.ai, Lambda
 * and Verda REST APIs, RunPod's GraphQL, Nebius's gRPC API against them; the catalog is the RunPod emulator's gpuhunt bucket,
 * whose other providers' catalogs are the bundled snapshot's): the plan sorts
 * the clouds' offers by price, and the run is launched on the cheapest, in its cloud, while the
 * others launch nothing. The emulators make up the instances' addresses (no hosts), so the run is
 * stopped once it has its machine.
 */

import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  createCatalogItem,
  defaultCatalog,
  formatCatalogCsv,
  publishCatalog,
  setDefaultCatalog,
} from '@dstack/catalog';
import type { InstanceOfferWithAvailability, Run } from '@dstack/core';
import {
  type AwsEmulator,
  awsEmulatorBackend,
  type GcpEmulator,
  gcpEmulatorBackend,
  type LambdaEmulator,
  lambdaEmulatorBackend,
  type NebiusEmulator,
  nebiusEmulatorBackend,
  type RunpodEmulator,
  runpodEmulatorBackend,
  startAwsEmulator,
  startGcpEmulator,
  startLambdaEmulator,
  startNebiusEmulator,
  startRunpodEmulator,
  startVastaiEmulator,
  startVerdaEmulator,
  type VastaiEmulator,
  type VerdaEmulator,
  vastaiEmulatorBackend,
  verdaEmulatorBackend,
} from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { applyTask, type HarnessServer, makeTempDir, startHarnessServer, waitFor } from './server-harness.js';

describe('a project with AWS, GCP, Vast.ai, RunPod, Lambda, Verda and Nebius', () => {
  let aws: AwsEmulator;
  let gcp: GcpEmulator;
  let vastai: VastaiEmulator;
  let runpod: RunpodEmulator;
  let lambda: LambdaEmulator;
  let verda: VerdaEmulator;
  let nebius: NebiusEmulator;
  let harness: HarnessServer;
  const temp = makeTempDir();

  beforeAll(async () => {
    aws = await startAwsEmulator({ regions: ['us-east-1'] });
    gcp = await startGcpEmulator({ regions: ['us-central1'] });
    vastai = await startVastaiEmulator();
    runpod = await startRunpodEmulator();
    lambda = await startLambdaEmulator();
    verda = await startVerdaEmulator();
    nebius = await startNebiusEmulator();
    const backends = [
      awsEmulatorBackend(aws),
      gcpEmulatorBackend(gcp),
      vastaiEmulatorBackend(vastai),
      runpodEmulatorBackend(runpod),
      lambdaEmulatorBackend(lambda),
      verdaEmulatorBackend(verda),
      nebiusEmulatorBackend(nebius),
    ];
    harness = await startHarnessServer({
      dir: temp.dir,
      config: { projects: [{ name: 'main', backends }], catalog: { url: runpod.catalogUrl } },
    });
  }, 120_000);

  afterAll(async () => {
    await harness?.terminateFleetsAndClose();
    await aws?.close();
    await gcp?.close();
    await vastai?.close();
    await runpod?.close();
    await lambda?.close();
    await verda?.close();
    await nebius?.close();
    temp.remove();
  }, 120_000);

  it('plans the six clouds as one list sorted by price', async () => {
    const configuration = {
      type: 'task',
      name: 'six-clouds',
      commands: ['true'],
      resources: { gpu: 'A100' },
    };
    const plan = await harness.call<{ job_plans: Array<{ offers: InstanceOfferWithAvailability[] }> }>(
      '/api/project/main/runs/get_plan',
      { run_spec: { configuration } },
    );
    expect(plan.status).toBe(200);
    const offers = plan.body.job_plans[0]?.offers ?? [];
    expect(new Set(offers.map((offer) => offer.backend))).toEqual(
      new Set(['aws', 'gcp', 'vastai', 'runpod', 'lambda', 'verda']),
    );
    // One list sorted by price, though Vast.ai answers in its marketplace's score order (gpuhunt's
    // `heapq.merge` would leave its cheap offers behind every dearer offer of the catalog clouds).
    const prices = offers.map((offer) => offer.price);
    expect(prices).toEqual([...prices].sort((a, b) => a - b));
    expect(vastai.launchedMachineCount()).toBe(0);
    expect(runpod.launchedMachineCount() + lambda.launchedMachineCount() + verda.launchedMachineCount()).toBe(
      0,
    );
  }, 120_000);

  it("plans Nebius's H100s among the other clouds' by price, launching nothing", async () => {
    const configuration = { type: 'task', name: 'h100', commands: ['true'], resources: { gpu: 'H100' } };
    const plan = await harness.call<{ job_plans: Array<{ offers: InstanceOfferWithAvailability[] }> }>(
      '/api/project/main/runs/get_plan',
      { run_spec: { configuration } },
    );
    expect(plan.status).toBe(200);
    const offers = plan.body.job_plans[0]?.offers ?? [];
    const backends = new Set(offers.map((offer) => offer.backend));
    expect(backends.has('nebius')).toBe(true);
    expect(backends.size).toBeGreaterThan(1);
    const prices = offers.map((offer) => offer.price);
    expect(prices).toEqual([...prices].sort((a, b) => a - b));
    expect(nebius.launchedMachineCount()).toBe(0);
  }, 120_000);

  it('plans both VM clouds merged by price and launches on the cheaper one', async () => {
    const configuration = { type: 'task', name: 'two-clouds', commands: ['true'], resources: { gpu: 'T4' } };
    const plan = await harness.call<{ job_plans: Array<{ offers: InstanceOfferWithAvailability[] }> }>(
      '/api/project/main/runs/get_plan',
      { run_spec: { configuration } },
    );
    expect(plan.status).toBe(200);
    const offers = plan.body.job_plans[0]?.offers ?? [];
    expect(new Set(offers.map((offer) => offer.backend))).toEqual(new Set(['aws', 'gcp']));
    const prices = offers.map((offer) => offer.price);
    expect(prices).toEqual([...prices].sort((a, b) => a - b));
    const [cheapest] = offers;
    if (!cheapest) throw new Error('no offers');

    await applyTask(harness, configuration);
    const launched = await waitFor(
      'the job to get its machine',
      async () => {
        const run = (await harness.call<Run>('/api/project/main/runs/get', { run_name: 'two-clouds' })).body;
        return run.latest_job_submission?.job_provisioning_data ?? null;
      },
      120_000,
    );
    expect({ backend: launched.backend, type: launched.instance_type.name, region: launched.region }).toEqual(
      {
        backend: cheapest.backend,
        type: cheapest.instance.name,
        region: cheapest.region,
      },
    );
    const machines = { aws: aws.state().instances.length, gcp: gcp.launchedMachineCount() };
    expect(machines).toEqual(cheapest.backend === 'aws' ? { aws: 1, gcp: 0 } : { aws: 0, gcp: 1 });

    await harness.call('/api/project/main/runs/stop', { runs_names: ['two-clouds'], abort: true });
  }, 180_000);
  describe('the catalog AWS and GCP plan from', () => {
    const published = makeTempDir('dstack-published-catalog-');
    let catalogHost: Server;
    let catalogUrl: string;
    const cpuRow = (provider: string, instanceName: string, location: string, cpu: number, price: number) =>
      createCatalogItem({ provider, instanceName, location, price, cpu, memory: cpu * 4 });
    const cpuPlan = async (server: HarnessServer, backends: string[]) => {
      const configuration = { type: 'task', name: 'cpu-only', commands: ['true'], backends };
      const plan = await server.call<{ job_plans: Array<{ offers: InstanceOfferWithAvailability[] }> }>(
        '/api/project/main/runs/get_plan',
        { run_spec: { configuration } },
      );
      expect(plan.status).toBe(200);
      return plan.body.job_plans[0]?.offers ?? [];
    };
    const describeOffer = (offer: InstanceOfferWithAvailability | undefined) =>
      offer &&
      `${offer.backend}:${offer.instance.name}:${offer.price}:${offer.instance.resources.gpus.length}`;
    const serverWithCatalog = (dir: string, url: string) =>
      startHarnessServer({
        dir,
        config: {
          catalog: { url },
          projects: [{ name: 'main', backends: [awsEmulatorBackend(aws), gcpEmulatorBackend(gcp)] }],
        },
      });

    beforeAll(async () => {
      // A team's own catalog: rows the bundled snapshot does not have (no e2 on GCP in it, no
      // AWS CPU type over 8 vCPUs), published in gpuhunt's layout and served over HTTP.
      await publishCatalog({
        directory: published.dir,
        provider: 'aws',
        csv: formatCatalogCsv([cpuRow('aws', 'c7i.48xlarge', 'us-east-1', 192, 0.0123)]),
      });
      await publishCatalog({
        directory: published.dir,
        provider: 'gcp',
        csv: formatCatalogCsv([cpuRow('gcp', 'e2-standard-2', 'us-central1-a', 2, 0.0111)]),
      });
      catalogHost = createServer((request, response) => {
        const path = join(
          published.dir,
          decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname),
        );
        readFile(path).then(
          (body) => response.end(body),
          () => response.writeHead(404).end(),
        );
      });
      await new Promise<void>((resolve) => catalogHost.listen(0, '127.0.0.1', resolve));
      catalogUrl = `http://127.0.0.1:${(catalogHost.address() as AddressInfo).port}`;
    });

    afterAll(async () => {
      await new Promise((resolve) => catalogHost?.close(resolve));
      published.remove();
      // The catalog is the process's: the next server of this worker plans from the snapshot again.
      setDefaultCatalog(undefined);
    });

    it("plans from a catalog served in gpuhunt's layout, and caches it", async () => {
      const temp = makeTempDir();
      const server = await serverWithCatalog(temp.dir, catalogUrl);
      try {
        // The first plan answers from the snapshot and starts the download beside it.
        const offers = await waitFor('offers from the served catalog', async () => {
          const each = await cpuPlan(server, ['aws', 'gcp']);
          return each.some((offer) => offer.instance.name === 'e2-standard-2') ? each : null;
        });
        expect(offers.map(describeOffer)).toEqual([
          'gcp:e2-standard-2:0.0111:0',
          'aws:c7i.48xlarge:0.0123:0',
        ]);
        expect(readFileSync(join(temp.dir, 'data', 'catalog', 'gcp.csv'), 'utf8')).toContain('e2-standard-2');
      } finally {
        await server.close();
        temp.remove();
      }
    }, 120_000);

    it('answers the very first plan of a server started with GPUHUNT_CATALOG_URL with that catalog', async () => {
      const temp = makeTempDir();
      // No catalog in config.yml and no cached copy: the catalog comes from the variable alone.
      const server = await startHarnessServer({
        dir: temp.dir,
        env: { GPUHUNT_CATALOG_URL: catalogUrl },
        config: {
          catalog: { offline: false },
          projects: [{ name: 'main', backends: [awsEmulatorBackend(aws), gcpEmulatorBackend(gcp)] }],
        },
      });
      try {
        expect((await cpuPlan(server, ['aws', 'gcp'])).map(describeOffer)).toEqual([
          'gcp:e2-standard-2:0.0111:0',
          'aws:c7i.48xlarge:0.0123:0',
        ]);
      } finally {
        await server.close();
        temp.remove();
      }
    }, 120_000);

    it('plans from the bundled snapshot when the catalog is unreachable, saying so once per provider a plan asks for', async () => {
      const temp = makeTempDir();
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const unreachable = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/v3`;
      await new Promise((resolve) => closed.close(resolve));
      const warn = vi.spyOn(console, 'warn');
      const server = await serverWithCatalog(temp.dir, unreachable);
      const said = () =>
        warn.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('catalog:'));
      try {
        // A CPU-only task on GCP gets a CPU machine of the snapshot; the refresh that plan started
        // fails, and says so for GCP, the provider asked for.
        const [cheapest] = await cpuPlan(server, ['gcp']);
        expect(describeOffer(cheapest)).toMatch(/^gcp:n1-standard-\d+:[\d.]+:0$/);
        await waitFor("the failure of GCP's catalog to be said", async () =>
          said().length > 0 ? true : null,
        );
        // Refreshes that fail again are not said again.
        await defaultCatalog().load();
        await defaultCatalog().load();
        expect(said()).toEqual([
          expect.stringMatching(
            /catalog: GET .*\/gcp\/version failed: .*; answering from .*snapshot.gcp\.csv/,
          ),
        ]);
        // Installed backends no plan asked for (AWS, Lambda, RunPod…) say nothing until one does.
        await cpuPlan(server, ['aws']);
        const providers = said().map((line) => /\/([a-z]+)\/version failed/.exec(line)?.[1]);
        expect(providers).toEqual(['gcp', 'aws']);
        expect(said()[1]).toMatch(
          /catalog: GET .*\/aws\/version failed: .*; answering from .*snapshot.aws\.csv/,
        );
        expect((await cpuPlan(server, ['gcp'])).map(describeOffer)).not.toContain(
          'gcp:e2-standard-2:0.0111:0',
        );
      } finally {
        warn.mockRestore();
        await server.close();
        temp.remove();
      }
    }, 120_000);
  });
});
