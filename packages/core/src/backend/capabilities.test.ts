import { describe, expect, it } from 'vitest';
import { UnsupportedCapabilityError } from '../errors.js';
import type { InstanceOfferWithAvailability } from '../models/instances.js';
import type { Requirements } from '../models/requirements.js';
import type { Volume } from '../models/volumes.js';
import { SampleCompute, sampleConfigModels, stubCompute } from './__fixtures__/sample-backend.js';
import { hasCapability, requireCapability } from './capabilities.js';
import { restrictOfferToVolumeZone } from './run-job-with-create-instance.js';

const compute = new SampleCompute(
  sampleConfigModels.config.parse({ type: 'sample', project_slug: 'p', creds: { type: 'default' } }),
);

const offer: InstanceOfferWithAvailability = {
  backend: 'sample',
  instance: {
    name: 'vm.small',
    resources: { cpus: 2, memory_mib: 8192, gpus: [], spot: false, disk: { size_mib: 102400 } },
  },
  region: 'r1',
  price: 0.1,
  backend_data: {},
  availability: 'available',
  availability_zones: ['r1-a', 'r1-b'],
  instance_runtime: 'shim',
  blocks: 1,
  total_blocks: 1,
};

describe('capability guards', () => {
  it('are true for declared and implemented capabilities', () => {
    expect(hasCapability(compute, 'create-instance')).toBe(true);
    expect(hasCapability(compute, 'privileged')).toBe(true);
    expect(hasCapability(compute, 'instance-volumes')).toBe(true);
  });

  it('are false for undeclared capabilities', () => {
    expect(hasCapability(compute, 'multinode')).toBe(false);
    expect(hasCapability(compute, 'volumes')).toBe(false);
    expect(hasCapability(compute, 'gateways')).toBe(false);
    expect(hasCapability(compute, 'placement-groups')).toBe(false);
    expect(hasCapability(compute, 'reservations')).toBe(false);
  });

  it('are false when methods exist but the capability is not declared', () => {
    const undeclared = stubCompute([], ['createInstance', 'registerVolume', 'createVolume', 'deleteVolume']);
    expect(hasCapability(undeclared, 'create-instance')).toBe(false);
    expect(hasCapability(undeclared, 'volumes')).toBe(false);
  });

  it('are false when the capability is declared but methods are missing', () => {
    const partial = stubCompute(['volumes', 'gateways'], ['registerVolume', 'createVolume']);
    expect(hasCapability(partial, 'volumes')).toBe(false);
    expect(hasCapability(partial, 'gateways')).toBe(false);
    const complete = stubCompute(
      ['volumes', 'multinode'],
      ['registerVolume', 'createVolume', 'deleteVolume'],
    );
    expect(hasCapability(complete, 'volumes')).toBe(true);
    expect(hasCapability(complete, 'multinode')).toBe(true);
  });
});

describe('requireCapability', () => {
  it('returns the typed compute', async () => {
    const withCreate = requireCapability(compute, 'create-instance');
    const jpd = await withCreate.createInstance(
      offer,
      {
        project_name: 'p',
        instance_name: 'i',
        instance_id: 'instance-1',
        agent_token: 'agent-token-1',
        user: 'u',
        ssh_keys: [],
      },
      null,
    );
    expect(jpd.instance_id).toBe('i-r1-a');
  });

  it('throws UnsupportedCapabilityError naming backend and capability', () => {
    const call = () => requireCapability(compute, 'gateways');
    expect(call).toThrow(UnsupportedCapabilityError);
    expect(call).toThrow('Backend "sample" does not support the "gateways" capability');
    const partial = stubCompute(['volumes'], ['registerVolume']);
    expect(() => requireCapability(partial, 'volumes')).toThrow(
      'Backend "stub" declares the "volumes" capability but does not implement registerVolume(), createVolume(), deleteVolume()',
    );
  });
});

describe('runJobWithCreateInstance', () => {
  const volume = {
    provisioning_data: {
      volume_id: 'v',
      size_gb: 10,
      availability_zone: 'r1-b',
      attachable: true,
      detachable: true,
    },
  } as Volume;

  it('builds the instance configuration and restricts zones to the volume zone', async () => {
    const calls: unknown[][] = [];
    const spy = Object.assign(Object.create(compute), {
      createInstance: (...args: unknown[]) => {
        calls.push(args);
        return compute.createInstance(args[0] as InstanceOfferWithAvailability);
      },
    }) as SampleCompute;
    const jpd = await spy.runJob({
      instanceId: 'instance-1',
      agentToken: 'agent-token-1',
      run: {
        project_name: 'main',
        user: 'admin',
        run_spec: { configuration: { reservation: 'cr-1' }, merged_profile: { tags: { team: 'ml' } } },
      },
      job: {
        job_spec: {
          job_name: 'train-0-0',
          job_num: 0,
          image_name: 'img',
          // The job's reservation (a replica group's own), not the run's.
          requirements: { reservation: 'cr-2' } as Requirements,
        },
      },
      offer,
      projectSshPublicKey: 'ssh-ed25519 AAAA project\n',
      projectSshPrivateKey: 'private',
      volumes: [volume],
      placementGroup: null,
      requirements: {} as Requirements,
    });
    expect(jpd.availability_zone).toBe('r1-b');
    expect(calls[0]?.[1]).toEqual({
      project_name: 'main',
      instance_name: 'train-0-0',
      instance_id: 'instance-1',
      agent_token: 'agent-token-1',
      agent_download_url: null,
      agent_download_sha256: null,
      agent_download_size: null,
      user: 'admin',
      ssh_keys: [{ public: 'ssh-ed25519 AAAA project', private: 'private' }],
      volumes: [volume],
      reservation: 'cr-2',
      tags: { team: 'ml' },
    });
  });

  it('leaves zones alone without volumes and empties them when the zone is not offered', () => {
    expect(restrictOfferToVolumeZone(offer, []).availability_zones).toEqual(['r1-a', 'r1-b']);
    const elsewhere = {
      provisioning_data: { ...volume.provisioning_data, availability_zone: 'r9-z' },
    } as Volume;
    expect(restrictOfferToVolumeZone(offer, [elsewhere]).availability_zones).toEqual([]);
    expect(
      restrictOfferToVolumeZone({ ...offer, availability_zones: null }, [volume]).availability_zones,
    ).toEqual(['r1-b']);
  });
});
