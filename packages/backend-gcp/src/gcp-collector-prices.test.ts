import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { GcpMachineType } from './gcp-collector-machine-types.js';
import { GcpPrices, vmFamilyOf } from './gcp-collector-prices.js';

/**
 * Compute Engine SKUs in the Billing Catalog's shape, for us-central1: N1, A2, A3 and A3Plus core
 * and RAM, T4/A100/H100 GPUs, local SSD, and SKUs gpuhunt must not take (Sole Tenancy, Custom,
 * Reserved, a 1-year commitment, network egress).
 */
const SAMPLE = JSON.parse(
  readFileSync(new URL('./__fixtures__/gcp-billing-skus-sample.json', import.meta.url), 'utf8'),
) as { skus: unknown[] };
const prices = GcpPrices.fromSkus(SAMPLE.skus);

function machine(
  instanceName: string,
  cpu: number,
  memory: number,
  gpu?: [acceleratorType: string, count: number],
  zone = 'us-central1-a',
): GcpMachineType {
  return { instanceName, zone, cpu, memory, gpuCount: gpu?.[1] ?? 0, acceleratorType: gpu?.[0] ?? null };
}

/** A SKU with only the fields the collector reads. */
function sku(description: string, usageType: string, usd: number, resourceFamily = 'Compute') {
  const units = Math.floor(usd);
  return {
    description,
    category: { resourceFamily, usageType },
    serviceRegions: ['us-central1'],
    pricingInfo: [
      {
        pricingExpression: {
          tieredRates: [{ unitPrice: { units: String(units), nanos: Math.round((usd - units) * 1e9) } }],
        },
      },
    ],
  };
}

describe('GcpPrices from the Billing Catalog', () => {
  it('prices a machine type as vCPUs·core + GiB·RAM of its family, per capacity', () => {
    const n1 = machine('n1-standard-4', 4, 15);
    expect(prices.instancePrice(n1, 'on-demand')).toBeCloseTo(4 * 0.031611 + 15 * 0.004237, 12);
    expect(prices.instancePrice(n1, 'spot')).toBeCloseTo(4 * 0.00813 + 15 * 0.00109, 12);
    expect(prices.instancePrice(n1, 'dws-calendar-mode')).toBeNull();
  });

  it('never takes Sole Tenancy, Custom, Reserved or commitment prices', () => {
    // The sample's "N1 Sole Tenancy Instance Core" (0.5) and "N1 Custom Instance Core" (0.6) would
    // replace the n1 core price, and "Reserved Nvidia Tesla T4 GPU" (0.01) the T4's, if taken.
    const n1t4 = machine('n1-standard-1', 1, 3.8, ['nvidia-tesla-t4', 1]);
    expect(prices.instancePrice(n1t4, 'on-demand')).toBeCloseTo(0.031611 + 3.8 * 0.004237 + 0.35, 12);
    expect(prices.instancePrice(n1t4, 'spot')).toBeCloseTo(0.00813 + 3.8 * 0.00109 + 0.14, 12);
  });

  it('adds GPUs by their SKU name dashed (Nvidia Tesla A100 80GB → nvidia-a100-80gb) and local SSD per GiB-hour', () => {
    const ultra = machine('a2-ultragpu-1g', 12, 170, ['nvidia-a100-80gb', 1]);
    expect(prices.instancePrice(ultra, 'on-demand')).toBeCloseTo(
      12 * 0.031611 + 170 * 0.004237 + 3.9286 + (375 * 0.08) / 730,
      12,
    );
    // No spot A100 80GB price: no spot offer, though A2 core, RAM and local SSD have one.
    expect(prices.instancePrice(ultra, 'spot')).toBeNull();
  });

  it('prices a3-megagpu from the A3Plus SKUs and the "H100 80GB Plus" GPU', () => {
    expect(vmFamilyOf('a3-megagpu-8g')).toBe('a3-megagpu');
    expect(vmFamilyOf('a3-highgpu-8g')).toBe('a3');
    const mega = machine('a3-megagpu-8g', 208, 1872, ['nvidia-h100-mega-80gb', 8]);
    expect(prices.instancePrice(mega, 'on-demand')).toBeCloseTo(
      208 * 0.026924 + 1872 * 0.002344 + 8 * 10.344276 + (6000 * 0.08) / 730,
      9,
    );
    const high = machine('a3-highgpu-8g', 208, 1872, ['nvidia-h100-80gb', 8]);
    expect(prices.instancePrice(high, 'spot')).toBeCloseTo(
      208 * 0.00591 + 1872 * 0.000515 + 8 * 2.253 + (6000 * 0.048) / 730,
      9,
    );
  });

  it('has no offer where a part is missing: another region, an unpriced family or GPU', () => {
    expect(
      prices.instancePrice(machine('n1-standard-4', 4, 15, undefined, 'europe-west4-a'), 'on-demand'),
    ).toBeNull();
    expect(prices.instancePrice(machine('g2-standard-4', 4, 16, ['nvidia-l4', 1]), 'on-demand')).toBeNull();
    expect(
      prices.instancePrice(machine('n1-standard-4', 4, 15, ['nvidia-tesla-v100', 1]), 'on-demand'),
    ).toBeNull();
    // A multi-region SKU prices every region it lists: the T4 spot SKU names us-east1 too, but
    // us-east1 has no n1 price.
    expect(
      prices.instancePrice(machine('n1-standard-4', 4, 15, ['nvidia-tesla-t4', 1], 'us-east1-b'), 'spot'),
    ).toBeNull();
  });

  it('does not price shared-core and reservation-only families (g1, f1, m2)', () => {
    const shared = GcpPrices.fromSkus([
      sku('G1 Small Instance with 1 VCPU Core running in Americas', 'OnDemand', 0.02),
      sku('G1 Small Instance with 1 VCPU Ram running in Americas', 'OnDemand', 0.002),
    ]);
    expect(shared.instancePrice(machine('g1-small', 1, 1.7), 'on-demand')).toBeNull();
  });

  it('prices A4 B200 by the GPU slice (spot and DWS calendar mode) and maps the named families', () => {
    const a4 = GcpPrices.fromSkus([
      sku('Spot Preemptible A4 Nvidia B200 (1 gpu slice) running in Americas', 'Preemptible', 3.5),
      sku('DWS Calendar Mode A4 Nvidia B200 (1 gpu slice) running in Americas', 'OnDemand', 6.25),
      sku('Memory-optimized Instance Core running in Americas', 'OnDemand', 0.0348),
      sku('Memory-optimized Instance Ram running in Americas', 'OnDemand', 0.0051),
      sku('Compute optimized Core running in Americas', 'OnDemand', 0.0339),
      sku('Compute optimized Ram running in Americas', 'OnDemand', 0.0045),
      sku('Nvidia RTX 6000 96GB running in Americas', 'OnDemand', 2.1),
      sku('G4 Instance Core running in Americas', 'OnDemand', 0.02),
      sku('G4 Instance Ram running in Americas', 'OnDemand', 0.003),
    ]);
    const b200 = machine('a4-highgpu-8g', 224, 3968, ['nvidia-b200', 8]);
    expect(a4.instancePrice(b200, 'spot')).toBeCloseTo(8 * 3.5, 12);
    expect(a4.instancePrice(b200, 'dws-calendar-mode')).toBeCloseTo(8 * 6.25, 12);
    expect(a4.instancePrice(b200, 'on-demand')).toBeNull();
    expect(a4.instancePrice(machine('m1-megamem-96', 96, 1433.6), 'on-demand')).toBeCloseTo(
      96 * 0.0348 + 1433.6 * 0.0051,
      9,
    );
    expect(a4.instancePrice(machine('c2-standard-4', 4, 16), 'on-demand')).toBeCloseTo(
      4 * 0.0339 + 16 * 0.0045,
      12,
    );
    expect(
      a4.instancePrice(machine('g4-standard-48', 48, 180, ['nvidia-rtx-pro-6000', 1]), 'on-demand'),
    ).toBeCloseTo(48 * 0.02 + 180 * 0.003 + 2.1, 12);
  });

  it('names the SKU and field it cannot read', () => {
    expect(() =>
      GcpPrices.fromSkus([SAMPLE.skus[0], { description: 'x', category: {}, pricingInfo: [] }]),
    ).toThrow(/^skus\[1\]\.pricingInfo: /);
  });
});
