import { afterEach, describe, expect, it } from 'vitest';
import type { GcpEmulator } from './gcp-emulator.js';
import { compute, startTestEmulator } from './gcp-emulator.test.helpers.js';

let emulator: GcpEmulator | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

interface Sku {
  skuId: string;
  description: string;
  category: { resourceFamily: string; usageType: string };
  serviceRegions: string[];
  pricingInfo: {
    pricingExpression: { usageUnit: string; tieredRates: { unitPrice: { units: string; nanos: number } }[] };
  }[];
}

const priceOf = (sku: Sku | undefined) => {
  const unit = sku?.pricingInfo[0]?.pricingExpression.tieredRates[0]?.unitPrice;
  return Number(unit?.units ?? Number.NaN) + (unit?.nanos ?? 0) / 1e9;
};

describe('the Billing Catalog', () => {
  it('pages the Compute Engine SKUs with pageSize / pageToken until nextPageToken is empty', async () => {
    const started = await startTestEmulator();
    emulator = started.emulator;
    const skus: Sku[] = [];
    let pageToken = '';
    let pages = 0;
    do {
      const answer = await compute(
        emulator,
        started.token,
        'GET',
        `/v1/services/6F81-5844-456A/skus?pageSize=50&currencyCode=USD&pageToken=${pageToken}`,
      );
      expect(answer.status).toBe(200);
      expect(answer.body.skus.length).toBeLessThanOrEqual(50);
      skus.push(...answer.body.skus);
      pageToken = answer.body.nextPageToken;
      pages += 1;
    } while (pageToken !== '' && pages < 100);
    expect(pages).toBeGreaterThan(1);
    expect(skus).toHaveLength(emulator.skus.length);
    expect(new Set(skus.map((sku) => sku.skuId)).size).toBe(skus.length);

    const find = (description: string, region: string) =>
      skus.find((sku) => sku.description === description && sku.serviceRegions[0] === region);
    const t4 = find('Nvidia Tesla T4 GPU running in Americas', 'us-central1');
    expect(t4?.category).toMatchObject({ resourceFamily: 'Compute', usageType: 'OnDemand' });
    expect(priceOf(t4)).toBeCloseTo(0.35, 6);
    expect(
      priceOf(find('Spot Preemptible Nvidia Tesla T4 GPU running in Americas', 'us-central1')),
    ).toBeCloseTo(0.14, 6);

    // Core and RAM prices give back the catalog's VM prices (gpuhunt: cpus·core + GiB·ram).
    const core = priceOf(find('N1 Predefined Instance Core running in Americas', 'us-central1'));
    const ram = priceOf(find('N1 Predefined Instance Ram running in Americas', 'us-central1'));
    const n1 = emulator.data.machineOffering('n1-standard-8', 'us-central1-a');
    expect(8 * core + 30 * ram).toBeCloseTo(n1?.onDemandPrice ?? 0, 3);
    const g2Core = priceOf(find('G2 Instance Core running in EMEA', 'europe-west4'));
    const g2Ram = priceOf(find('G2 Instance Ram running in EMEA', 'europe-west4'));
    const g2 = emulator.data.machineOffering('g2-standard-8', 'europe-west4-a');
    expect(8 * g2Core + 32 * g2Ram).toBeCloseTo(g2?.onDemandPrice ?? 0, 3);

    // a3-megagpu is its own family (A3Plus) and pays for its 6000 GiB of local SSD per GiB-month.
    const megaCore = priceOf(find('A3Plus Instance Core running in Americas', 'us-central1'));
    const megaRam = priceOf(find('A3Plus Instance Ram running in Americas', 'us-central1'));
    const localSsd = find('SSD backed Local Storage', 'us-central1');
    expect(localSsd?.category).toMatchObject({ resourceFamily: 'Storage', usageType: 'OnDemand' });
    expect(localSsd?.pricingInfo[0]?.pricingExpression.usageUnit).toBe('GiBy.mo');
    const mega = emulator.data.machineOffering('a3-megagpu-8g', 'us-central1-a');
    expect(208 * megaCore + 1872 * megaRam + (6000 * priceOf(localSsd)) / 730).toBeCloseTo(
      mega?.onDemandPrice ?? 0,
      2,
    );
  });

  it('an unknown service is 404; a bad page token is 400; no token is 401', async () => {
    const started = await startTestEmulator();
    emulator = started.emulator;
    expect((await compute(emulator, started.token, 'GET', '/v1/services/0000-0000-0000/skus')).status).toBe(
      404,
    );
    expect(
      (await compute(emulator, started.token, 'GET', '/v1/services/6F81-5844-456A/skus?pageToken=zzz'))
        .status,
    ).toBe(400);
    expect((await fetch(`${emulator.url}/v1/services/6F81-5844-456A/skus`)).status).toBe(401);
  });
});
