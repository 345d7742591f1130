import { describe, expect, it } from 'vitest';
import {
  BackendTypeSchema,
  GpuSchema,
  InstanceOfferWithAvailabilitySchema,
  isAvailable,
  JobProvisioningDataSchema,
  JobRuntimeDataSchema,
  RequirementsSchema,
  ResourcesSchema,
  VolumeProvisioningDataSchema,
  withAvailability,
} from './index.js';

const jpdWire = {
  backend: 'aws',
  base_backend: null,
  instance_type: {
    name: 'g5.xlarge',
    resources: {
      cpus: 4,
      memory_mib: 16384,
      gpus: [{ name: 'A10G', memory_mib: 24576, vendor: 'nvidia' }],
      spot: false,
      disk: { size_mib: 102400 },
      cpu_arch: 'x86',
      description: '4xCPU, 16GB, 1xA10G (24GB), 100.0GB (disk)',
    },
  },
  instance_id: 'i-0123456789abcdef0',
  hostname: null,
  internal_ip: null,
  public_ip_enabled: true,
  instance_network: null,
  region: 'us-east-1',
  availability_zone: 'us-east-1a',
  reservation: null,
  price: 1.006,
  username: 'ubuntu',
  ssh_port: null,
  dockerized: true,
  ssh_proxy: null,
  backend_data: null,
  gpu_driver: null,
};

describe('models', () => {
  it('round-trips JobProvisioningData in the dstack wire form', () => {
    const parsed = JobProvisioningDataSchema.parse(jpdWire);
    expect(JSON.parse(JSON.stringify(parsed))).toEqual(jpdWire);
    expect(JobProvisioningDataSchema.parse(JSON.parse(JSON.stringify(parsed)))).toEqual(parsed);
  });

  it('fills dstack defaults for absent optional fields', () => {
    const { hostname, public_ip_enabled, ...minimal } = jpdWire;
    const parsed = JobProvisioningDataSchema.parse({
      ...minimal,
      instance_type: { name: 'x', resources: { cpus: 1, memory_mib: 1024, gpus: [], spot: true } },
    });
    expect(parsed.public_ip_enabled).toBe(true);
    expect(parsed.hostname).toBeUndefined();
    expect(parsed.instance_type.resources.disk).toEqual({ size_mib: 102400 });
  });

  it('parses ssh_proxy and rejects a bad port', () => {
    const parsed = JobProvisioningDataSchema.parse({
      ...jpdWire,
      ssh_proxy: { hostname: 'bastion', username: 'ubuntu', port: 22 },
    });
    expect(parsed.ssh_proxy?.port).toBe(22);
    expect(JobProvisioningDataSchema.safeParse({ ...jpdWire, ssh_port: 'x' }).success).toBe(false);
  });

  it('defaults GPU vendor to nvidia and maps tpu- names to google', () => {
    expect(GpuSchema.parse({ name: 'A100', memory_mib: 81920 })).toEqual({
      name: 'A100',
      memory_mib: 81920,
      vendor: 'nvidia',
    });
    expect(GpuSchema.parse({ name: 'tpu-v5litepod-8', memory_mib: 0 })).toEqual({
      name: 'v5litepod-8',
      memory_mib: 0,
      vendor: 'google',
    });
    expect(GpuSchema.parse({ name: 'MI300X', memory_mib: 196608, vendor: 'AMD' }).vendor).toBe('amd');
  });

  it('round-trips offers with availability and applies defaults', () => {
    const wire = {
      backend: 'vastai',
      instance: {
        name: '1234567',
        resources: ResourcesSchema.parse({ cpus: 8, memory_mib: 32768, gpus: [], spot: false }),
      },
      region: 'us-ca',
      price: 0.5,
      backend_data: { min_bid: 0.2 },
      availability: 'available',
      availability_zones: null,
      instance_runtime: 'runner',
      blocks: 1,
      total_blocks: 1,
    };
    expect(InstanceOfferWithAvailabilitySchema.parse(wire)).toEqual(wire);
    const { instance_runtime, blocks, total_blocks, backend_data, ...minimal } = wire;
    const parsed = InstanceOfferWithAvailabilitySchema.parse(minimal);
    expect(parsed).toMatchObject({ instance_runtime: 'shim', blocks: 1, total_blocks: 1, backend_data: {} });
    expect(withAvailability(parsed, 'no_quota', { availability_zones: ['a'] })).toMatchObject({
      availability: 'no_quota',
      availability_zones: ['a'],
      instance_runtime: 'shim',
    });
  });

  it('isAvailable is true only for unknown, available and idle', () => {
    expect(['unknown', 'available', 'idle'].every((a) => isAvailable(a as never))).toBe(true);
    expect(['not_available', 'no_quota', 'no_balance', 'busy'].some((a) => isAvailable(a as never))).toBe(
      false,
    );
  });

  it('accepts any lowercase backend type and rejects others', () => {
    expect(BackendTypeSchema.parse('my-cloud')).toBe('my-cloud');
    expect(BackendTypeSchema.safeParse('AWS').success).toBe(false);
    expect(BackendTypeSchema.safeParse('').success).toBe(false);
  });

  it('parses requirements in the ResourcesSpec wire form', () => {
    const wire = {
      resources: {
        cpu: { arch: null, count: { min: 2, max: null } },
        memory: { min: 8, max: null },
        shm_size: null,
        gpu: {
          vendor: 'nvidia',
          name: ['A100'],
          count: { min: 1, max: 2 },
          memory: { min: 80, max: 80 },
          total_memory: null,
          compute_capability: '8.0',
        },
        disk: { size: { min: 100, max: null } },
      },
      max_price: null,
      spot: null,
      reservation: null,
      multinode: null,
      backend_options: [{ type: 'vastai', offer_order: 'price' }],
    };
    const parsed = RequirementsSchema.parse(wire);
    expect(parsed.resources.gpu?.compute_capability).toEqual([8, 0]);
    expect(parsed.backend_options?.[0]).toEqual({ type: 'vastai', offer_order: 'price' });
    expect(RequirementsSchema.parse(JSON.parse(JSON.stringify(parsed)))).toEqual(parsed);
    // Pre-0.19 clients send `cpu` as a bare count range.
    const legacy = RequirementsSchema.parse({ resources: { cpu: { min: 4 }, memory: { min: 8 } } });
    expect(legacy.resources.cpu.count).toEqual({ min: 4 });
    // `tpu` is an alias of the google vendor.
    const tpu = RequirementsSchema.parse({
      resources: { cpu: { count: {} }, memory: {}, gpu: { vendor: 'tpu', count: { min: 1 } } },
    });
    expect(tpu.resources.gpu?.vendor).toBe('google');
  });

  it('round-trips runtime data and volume provisioning data', () => {
    const runtime = {
      network_mode: 'bridge',
      gpu: 1,
      cpu: 4,
      memory: 16,
      ports: { '8000': 32768 },
      volume_names: [],
    };
    expect(JobRuntimeDataSchema.parse(runtime)).toEqual(runtime);
    expect(VolumeProvisioningDataSchema.parse({ volume_id: 'vol-1', size_gb: 100 })).toEqual({
      volume_id: 'vol-1',
      size_gb: 100,
      attachable: true,
      detachable: true,
    });
  });
});
