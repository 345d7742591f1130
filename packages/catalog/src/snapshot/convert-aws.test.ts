import { describe, expect, it } from 'vitest';
import { createConversionReport } from './conversion-report.js';
import { awsGpuFromGpuInfo, convertAwsRows } from './convert-aws.js';

const gpuInfo = (name: string, manufacturer: string, mib: number) =>
  `{'Gpus': [{'Name': '${name}', 'Manufacturer': '${manufacturer}', 'Count': 1, 'MemoryInfo': {'SizeInMiB': ${mib}}}], 'TotalGpuMemoryInMiB': ${mib}}`;

function row(fields: Partial<Record<string, string>>): Record<string, string> {
  return {
    InstanceType: 'g5.xlarge',
    AcceleratorName: 'A10G',
    AcceleratorCount: '1.0',
    vCPUs: '4.0',
    MemoryGiB: '16.0',
    GpuInfo: gpuInfo('A10G', 'NVIDIA', 22888),
    Price: '1.006',
    SpotPrice: '',
    Region: 'us-east-1',
    AvailabilityZone: 'use1-az1',
    ...fields,
  } as Record<string, string>;
}

describe('awsGpuFromGpuInfo', () => {
  it.each([
    ['g5.xlarge', 'A10G', 'NVIDIA', 22888, { name: 'A10G', memory: 24, vendor: 'nvidia' }],
    ['g6.xlarge', 'L4', 'NVIDIA', 22888, { name: 'L4', memory: 24, vendor: 'nvidia' }],
    ['g6e.xlarge', 'L40S', 'NVIDIA', 45776, { name: 'L40S', memory: 48, vendor: 'nvidia' }],
    ['p3dn.24xlarge', 'V100', 'NVIDIA', 32768, { name: 'V100', memory: 32, vendor: 'nvidia' }],
    ['p4d.24xlarge', 'A100', 'NVIDIA', 40960, { name: 'A100', memory: 40, vendor: 'nvidia' }],
    ['p4de.24xlarge', 'A100', 'NVIDIA', 40960, { name: 'A100', memory: 80, vendor: 'nvidia' }],
    ['p4de.24xlarge', 'A100-80GB', 'NVIDIA', 81920, { name: 'A100', memory: 80, vendor: 'nvidia' }],
    ['p5en.48xlarge', 'H200', 'NVIDIA', 144384, { name: 'H200', memory: 141, vendor: 'nvidia' }],
    ['dl1.24xlarge', 'Gaudi HL-205', 'Habana', 32768, { name: 'Gaudi', memory: 32, vendor: 'intel' }],
    ['g4ad.xlarge', 'Radeon Pro V520', 'AMD', 8192, { name: 'Radeon Pro V520', memory: 8, vendor: 'amd' }],
  ])('%s %s → %o', (instance, name, manufacturer, mib, expected) => {
    expect(awsGpuFromGpuInfo(instance, gpuInfo(name, manufacturer, mib))).toEqual(expected);
  });

  it('returns null without GPU info (Inferentia, Trainium, FPGAs, CPU-only)', () => {
    expect(awsGpuFromGpuInfo('inf2.xlarge', '')).toBeNull();
  });
});

describe('convertAwsRows', () => {
  it('yields one on-demand row per (type, region) and a spot row at the minimum AZ spot price', () => {
    const items = convertAwsRows([
      row({ AvailabilityZone: 'use1-az1', SpotPrice: '0.45' }),
      row({ AvailabilityZone: 'use1-az2', SpotPrice: '0.41' }),
      row({ AvailabilityZone: 'use1-az3', SpotPrice: '' }),
      row({ Region: 'eu-west-1', AvailabilityZone: 'euw1-az1', Price: '1.123', SpotPrice: '' }),
    ]);
    expect(items.map((i) => [i.location, i.spot, i.price])).toEqual([
      ['us-east-1', true, 0.41],
      ['us-east-1', false, 1.006],
      ['eu-west-1', false, 1.123],
    ]);
    expect(items[0]).toEqual({
      provider: 'aws',
      instanceName: 'g5.xlarge',
      location: 'us-east-1',
      price: 0.41,
      cpu: 4,
      memory: 16,
      gpuCount: 1,
      gpuName: 'A10G',
      gpuMemory: 24,
      spot: true,
      diskSize: null,
      gpuVendor: 'nvidia',
      flags: [],
      cpuArch: 'x86',
      providerData: {},
    });
  });

  it('skips rows with an empty price and types without any on-demand price', () => {
    const report = createConversionReport();
    const items = convertAwsRows(
      [
        row({ InstanceType: 'p5e.48xlarge', Price: '', SpotPrice: '12.0' }),
        row({ AvailabilityZone: 'use1-az1', Price: '' }),
        row({ AvailabilityZone: 'use1-az2', Price: '1.006' }),
      ],
      report,
    );
    expect(items.map((i) => i.instanceName)).toEqual(['g5.xlarge']);
    expect(report.counts['aws: (type, region) without on-demand price (no offer)']).toBe(1);
  });

  it('publishes accelerators without GPU info with gpu_count 0, as gpuhunt does', () => {
    const [item] = convertAwsRows([
      row({ InstanceType: 'inf2.xlarge', AcceleratorName: 'Inferentia2', GpuInfo: '', Price: '0.7582' }),
    ]);
    expect(item).toMatchObject({ gpuCount: 0, gpuName: null, gpuMemory: null, gpuVendor: null });
  });

  it('marks Graviton families as ARM', () => {
    const [item] = convertAwsRows([
      row({ InstanceType: 'g5g.xlarge', GpuInfo: gpuInfo('T4g', 'NVIDIA', 16384) }),
    ]);
    expect(item).toMatchObject({ cpuArch: 'arm', gpuName: 'T4g', gpuVendor: 'nvidia', gpuMemory: 16 });
  });

  it('sorts by price, keeping source order on ties', () => {
    const items = convertAwsRows([
      row({ InstanceType: 'b.x', Price: '2' }),
      row({ InstanceType: 'a.x', Price: '1' }),
      row({ InstanceType: 'c.x', Price: '2' }),
    ]);
    expect(items.map((i) => i.instanceName)).toEqual(['a.x', 'b.x', 'c.x']);
  });
});
