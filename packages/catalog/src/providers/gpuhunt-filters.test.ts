import { describe, expect, it } from 'vitest';
import { type CatalogItem, createCatalogItem } from '../catalog-item.js';
import { filterAwsOffers, filterGcpOffers } from './gpuhunt-filters.js';

function item(instanceName: string, overrides: Partial<CatalogItem> = {}): CatalogItem {
  return createCatalogItem({
    provider: 'x',
    instanceName,
    location: 'l',
    price: 1,
    cpu: 1,
    memory: 1,
    ...overrides,
  });
}
const gpu = (name: string, count = 1): Partial<CatalogItem> => ({
  gpuCount: count,
  gpuName: name,
  gpuMemory: 16,
  gpuVendor: 'nvidia',
});

describe('filterAwsOffers', () => {
  it('keeps only gpuhunt published prefixes', () => {
    const names = [
      'g5.xlarge',
      'g5g.xlarge',
      'g6e.xlarge',
      'p3.2xlarge',
      'p4de.24xlarge',
      'r5.xlarge',
      't3.medium',
      't3a.medium',
      't2.small',
      't2.micro',
      'inf2.xlarge',
      'c7i.2xlarge',
    ];
    expect(filterAwsOffers(names.map((n) => item(n))).map((i) => i.instanceName)).toEqual([
      'g5.xlarge',
      'g6e.xlarge',
      'p4de.24xlarge',
      't3.medium',
      't2.small',
      'c7i.2xlarge',
    ]);
  });
});

describe('filterGcpOffers', () => {
  it('keeps published CPU prefixes and any GPU but K80/P4', () => {
    const items = [
      item('n1-standard-8'),
      item('e2-medium'),
      item('n1-standard-8', gpu('T4')),
      item('n1-standard-8', gpu('P4')),
      item('n1-standard-8', gpu('K80')),
      item('v5litepod-8', { ...gpu('v5litepod-8'), gpuVendor: 'google' }),
      item('g2-standard-4', gpu('L4')),
    ];
    expect(filterGcpOffers(items).map((i) => `${i.instanceName}:${i.gpuName}`)).toEqual([
      'e2-medium:null',
      'n1-standard-8:T4',
      'v5litepod-8:v5litepod-8',
      'g2-standard-4:L4',
    ]);
  });

  it('drops on-demand rows GCP sells only as spot or DWS (a3-highgpu < 8 GPUs, a3-ultragpu)', () => {
    const items = [
      item('a3-highgpu-1g', gpu('H100', 1)),
      item('a3-highgpu-1g', { ...gpu('H100', 1), spot: true }),
      item('a3-highgpu-8g', gpu('H100', 8)),
      item('a3-ultragpu-8g', gpu('H200', 8)),
      item('a3-ultragpu-8g', { ...gpu('H200', 8), spot: true }),
      item('a3-ultragpu-8g', { ...gpu('H200', 8), providerData: { is_dws_calendar_mode: true } }),
    ];
    expect(
      filterGcpOffers(items).map(
        (i) => `${i.instanceName}:${i.spot}:${i.providerData.is_dws_calendar_mode ?? '-'}`,
      ),
    ).toEqual([
      'a3-highgpu-1g:true:-',
      'a3-highgpu-8g:false:-',
      'a3-ultragpu-8g:true:-',
      'a3-ultragpu-8g:false:true',
    ]);
  });
});
