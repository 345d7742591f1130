import { describe, expect, it } from 'vitest';
import { parseConfiguration, type ResourcesSpec } from '../configuration/index.js';
import { type RequirementsResources, RequirementsSchema, requirementsToQueryFilter } from './index.js';

describe('Requirements and the configuration ResourcesSpec', () => {
  it('accepts a parsed ResourcesSpec as requirements resources, by type and at run time', () => {
    const configuration = parseConfiguration(
      'type: task\ncommands: [train]\nresources:\n  cpu: arm:8..\n  gpu: nvidia:A100,H100:80GB:2..8\n  disk: 200GB..\n',
    );
    if (configuration.type !== 'task') throw new Error('expected a task');
    const spec: ResourcesSpec = configuration.resources;
    // Compile-time check: the configuration's ResourcesSpec fits the structural schema.
    const resources: RequirementsResources = spec;
    const requirements = RequirementsSchema.parse({ resources, spot: null, max_price: 3 });
    expect(requirementsToQueryFilter(requirements)).toMatchObject({
      cpuArch: 'arm',
      minCpu: 8,
      gpuVendor: 'nvidia',
      gpuName: ['A100', 'H100'],
      minGpuMemory: 80,
      maxGpuMemory: 80,
      minGpuCount: 2,
      maxGpuCount: 8,
      minDiskSize: 200,
      minMemory: 8,
      maxPrice: 3,
    });
  });
});
