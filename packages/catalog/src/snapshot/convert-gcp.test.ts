import { describe, expect, it } from 'vitest';
import { createCatalogItem } from '../catalog-item.js';
import { createConversionReport } from './conversion-report.js';
import { convertGcpRows, gcpBuiltInGpus } from './convert-gcp.js';

const HEADER =
  'InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice';

function vm(type: string, cpu: number, memory: number, zone: string, price: string, spot: string) {
  return {
    InstanceType: type,
    vCPUs: `${cpu}.0`,
    MemoryGiB: String(memory),
    AcceleratorName: '',
    AcceleratorCount: '',
    GpuInfo: '',
    Region: zone.slice(0, -2),
    AvailabilityZone: zone,
    Price: price,
    SpotPrice: spot,
  };
}
function accelerator(name: string, count: number, zone: string, price: string, spot: string) {
  return {
    InstanceType: '',
    vCPUs: '',
    MemoryGiB: '',
    AcceleratorName: name,
    AcceleratorCount: String(count),
    GpuInfo: name.startsWith('tpu-') ? name : "{'Gpus': [{'MemoryInfo': {'SizeInMiB': 16384}}]}",
    Region: zone.slice(0, -2),
    AvailabilityZone: zone,
    Price: price,
    SpotPrice: spot,
  };
}
const zone = 'us-central1-a';

describe('gcpBuiltInGpus', () => {
  it.each([
    ['a2-highgpu-4g', { accelerator: 'A100', count: 4 }],
    ['a2-megagpu-16g', { accelerator: 'A100', count: 16 }],
    ['a2-ultragpu-8g', { accelerator: 'A100-80GB', count: 8 }],
    ['a3-highgpu-1g', { accelerator: 'H100', count: 1 }],
    ['a3-edgegpu-8g-nolssd', { accelerator: 'H100', count: 8 }],
    ['a3-megagpu-8g', { accelerator: 'H100-MEGA', count: 8 }],
    ['a3-ultragpu-8g', { accelerator: 'H200', count: 8 }],
    ['g2-standard-4', { accelerator: 'L4', count: 1 }],
    ['g2-standard-32', { accelerator: 'L4', count: 1 }],
    ['g2-standard-24', { accelerator: 'L4', count: 2 }],
    ['g2-standard-48', { accelerator: 'L4', count: 4 }],
    ['g2-standard-96', { accelerator: 'L4', count: 8 }],
    ['n1-standard-8', undefined],
  ])('%s', (type, expected) => {
    expect(gcpBuiltInGpus(type)).toEqual(expected);
  });
});

describe('convertGcpRows', () => {
  it('prices built-in GPU machines as VM row + accelerator row of that count (README examples)', () => {
    const items = convertGcpRows([
      vm('a2-highgpu-1g', 12, 85, zone, '0.73948', '0.28'),
      vm('g2-standard-4', 4, 16, zone, '0.14679', '0.05'),
      accelerator('A100', 1, zone, '2.93391', '1.1'),
      accelerator('L4', 1, zone, '0.56004', '0.2'),
    ]);
    const byName = (name: string, spot: boolean) =>
      items.find((i) => i.instanceName === name && i.spot === spot);
    expect(byName('a2-highgpu-1g', false)).toEqual(
      createCatalogItem({
        provider: 'gcp',
        instanceName: 'a2-highgpu-1g',
        location: zone,
        price: 3.67339,
        cpu: 12,
        memory: 85,
        gpuCount: 1,
        gpuName: 'A100',
        gpuMemory: 40,
        gpuVendor: 'nvidia',
        providerData: { is_dws_calendar_mode: false },
      }),
    );
    expect(byName('a2-highgpu-1g', true)?.price).toBe(1.38);
    expect(byName('g2-standard-4', false)).toMatchObject({ price: 0.70683, gpuName: 'L4', gpuMemory: 24 });
  });

  it('attaches n1 GPUs within gpuhunt limits and keeps the CPU-only row', () => {
    const items = convertGcpRows([
      vm('n1-standard-8', 8, 30, zone, '0.38', '0.08'),
      vm('n1-highmem-64', 64, 416, zone, '3.78', '0.8'),
      accelerator('T4', 1, zone, '0.35', '0.14'),
      accelerator('T4', 2, zone, '0.7', '0.28'),
      accelerator('T4', 4, zone, '1.4', '0.56'),
    ]);
    const onDemand = items.filter((i) => !i.spot).map((i) => `${i.instanceName}:${i.gpuCount}:${i.price}`);
    // T4 limits: 1 and 2 GPUs up to 48 vCPU / 312 GiB, 4 GPUs up to 96 vCPU / 624 GiB.
    expect(onDemand).toEqual([
      'n1-standard-8:0:0.38',
      'n1-standard-8:1:0.73',
      'n1-standard-8:2:1.08',
      'n1-standard-8:4:1.78',
      'n1-highmem-64:0:3.78',
      'n1-highmem-64:4:5.18',
    ]);
  });

  it('rounds memory to one decimal as gpuhunt (n1-standard-1 3.75 GiB → 3.8)', () => {
    const [item] = convertGcpRows([vm('n1-standard-1', 1, 3.75, zone, '0.0475', '')]);
    expect(item?.memory).toBe(3.8);
  });

  it('makes no offer when a price part is missing', () => {
    const report = createConversionReport();
    const items = convertGcpRows(
      [
        vm('a3-megagpu-8g', 208, 1872, zone, '10', '4'),
        vm('a2-highgpu-1g', 12, 85, zone, '0.7', '0.3'),
        accelerator('A100', 1, zone, '2.9', ''),
      ],
      report,
    );
    expect(items.map((i) => `${i.instanceName}:${i.spot}`)).toEqual(['a2-highgpu-1g:false']);
    expect(report.counts['gcp: machine without a matching accelerator price (no offer)']).toBe(1);
  });

  it('converts TPU slices of the spec table only, and drops the 700.0 placeholders', () => {
    const report = createConversionReport();
    const items = convertGcpRows(
      [
        accelerator('tpu-v5litepod-8', 1, zone, '9.6', '1.70383'),
        accelerator('tpu-v5p-128', 1, zone, '268.8', '107.52'),
        accelerator('tpu-v3-8', 1, 'us-east1-d', '8.0', ''),
        accelerator('tpu-v6e-1', 1, 'asia-east1-c', '700.0', '700.0'),
      ],
      report,
    );
    expect(items.map((i) => `${i.instanceName}@${i.location}:${i.spot}:${i.price}`)).toEqual([
      'v5litepod-8@us-central1-a:true:1.70383',
      'v3-8@us-east1-d:false:8',
      'v5litepod-8@us-central1-a:false:9.6',
    ]);
    expect(items[0]).toMatchObject({
      gpuName: 'v5litepod-8',
      gpuCount: 1,
      gpuVendor: 'google',
      cpu: 224,
      memory: 384,
      gpuMemory: 128,
      providerData: {},
    });
    expect(report.counts['gcp: placeholder price 700.0 (tpu-v6e in asia-east1-c) dropped']).toBe(1);
  });

  it('reads the real header layout', async () => {
    const { parseCsvRecords } = await import('./csv-records.js');
    const records = parseCsvRecords(`${HEADER}\nn1-standard-2,2.0,7.5,,,,us-east1,us-east1-b,0.095,0.02\n`);
    expect(convertGcpRows(records).map((i) => [i.instanceName, i.cpu, i.memory, i.price])).toEqual([
      ['n1-standard-2', 2, 7.5, 0.02],
      ['n1-standard-2', 2, 7.5, 0.095],
    ]);
  });
});
