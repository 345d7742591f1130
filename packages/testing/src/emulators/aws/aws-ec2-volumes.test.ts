import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import {
  AttachVolumeCommand,
  CreatePlacementGroupCommand,
  CreateVolumeCommand,
  DeletePlacementGroupCommand,
  DeleteVolumeCommand,
  DescribeImagesCommand,
  DescribeInstancesCommand,
  DescribePlacementGroupsCommand,
  DescribeVolumesCommand,
  DetachVolumeCommand,
  type EC2Client,
  RunInstancesCommand,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import { afterEach, describe, expect, it } from 'vitest';
import type { HostBlockDevice } from '../emulated-hosts.js';
import { loopDevicesUsable } from '../hosts/loop-block-devices.js';
import type { AwsEmulator } from './aws-emulator.js';
import {
  type ManualClock,
  RecordingHosts,
  sdkClients,
  settle,
  startTestEmulator,
} from './aws-emulator.test.helpers.js';

let imageId = '';

let emulator: AwsEmulator | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as { name: string }).name;
  }
  throw new Error('expected an EC2 error');
}

async function launch(
  ec2: EC2Client,
  zone: string,
  extra: { GroupName?: string; InstanceType?: string } = {},
) {
  const answer = await ec2.send(
    new RunInstancesCommand({
      ImageId: imageId,
      InstanceType: (extra.InstanceType ?? 'c5.xlarge') as 'c5.xlarge',
      MinCount: 1,
      MaxCount: 1,
      Placement: { AvailabilityZone: zone, ...(extra.GroupName ? { GroupName: extra.GroupName } : {}) },
    }),
  );
  return answer.Instances?.[0]?.InstanceId as string;
}

/** Records the devices given to hosts. */
class DeviceRecordingHosts extends RecordingHosts {
  readonly devices = new Map<string, HostBlockDevice>();
  async attachBlockDevice(instanceId: string, device: HostBlockDevice): Promise<void> {
    this.devices.set(`${instanceId} ${device.path}`, device);
  }
  async detachBlockDevice(instanceId: string, device: HostBlockDevice): Promise<void> {
    this.devices.delete(`${instanceId} ${device.path}`);
  }
}

async function startWithImage(options: Parameters<typeof startTestEmulator>[0] = {}) {
  const started = await startTestEmulator(options);
  emulator = started.emulator;
  const ec2 = sdkClients(started.emulator).ec2;
  const images = await ec2.send(new DescribeImagesCommand({ Owners: ['898082745236'] }));
  imageId = images.Images?.[0]?.ImageId as string;
  return { ...started, ec2 };
}

async function running(clock: ManualClock): Promise<void> {
  await settle();
  clock.advance(10_000);
}

describe('placement groups', () => {
  it('keeps a cluster group in one zone, refuses what EC2 refuses, and is deleted once empty', async () => {
    const { ec2, clock, emulator: aws } = await startWithImage();
    await ec2.send(new CreatePlacementGroupCommand({ GroupName: 'fleet-pg', Strategy: 'cluster' }));
    expect(
      await codeOf(ec2.send(new CreatePlacementGroupCommand({ GroupName: 'fleet-pg', Strategy: 'cluster' }))),
    ).toBe('InvalidPlacementGroup.Duplicate');
    const described = await ec2.send(new DescribePlacementGroupsCommand({ GroupNames: ['fleet-pg'] }));
    expect(described.PlacementGroups?.map((group) => [group.GroupName, group.Strategy, group.State])).toEqual(
      [['fleet-pg', 'cluster', 'available']],
    );
    expect(await codeOf(launch(ec2, 'us-east-1a', { GroupName: 'nope' }))).toBe(
      'InvalidPlacementGroup.Unknown',
    );
    const first = await launch(ec2, 'us-east-1a', { GroupName: 'fleet-pg' });
    expect(await codeOf(launch(ec2, 'us-east-1b', { GroupName: 'fleet-pg' }))).toBe(
      'InvalidParameterCombination',
    );
    aws.addFault({ code: 'InsufficientInstanceCapacity', placementGroup: 'fleet-pg', launches: 1 });
    expect(await codeOf(launch(ec2, 'us-east-1a', { GroupName: 'fleet-pg' }))).toBe(
      'InsufficientInstanceCapacity',
    );
    const second = await launch(ec2, 'us-east-1a', { GroupName: 'fleet-pg' });
    clock.advance(2_000);
    const instances = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [first, second] }));
    expect(
      instances.Reservations?.flatMap((each) => each.Instances ?? []).map(
        (each) => each.Placement?.GroupName,
      ),
    ).toEqual(['fleet-pg', 'fleet-pg']);
    expect(aws.state().placementGroups).toEqual([
      { name: 'fleet-pg', region: 'us-east-1', strategy: 'cluster', instances: [first, second] },
    ]);

    expect(await codeOf(ec2.send(new DeletePlacementGroupCommand({ GroupName: 'fleet-pg' })))).toBe(
      'InvalidPlacementGroup.InUse',
    );
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [first, second] }));
    clock.advance(5_000);
    await ec2.send(new DeletePlacementGroupCommand({ GroupName: 'fleet-pg' }));
    expect(await codeOf(ec2.send(new DeletePlacementGroupCommand({ GroupName: 'fleet-pg' })))).toBe(
      'InvalidPlacementGroup.Unknown',
    );
    expect(aws.state().placementGroups).toEqual([]);
  });
});

describe('EBS volumes', () => {
  it('creates, attaches and detaches with EC2 states and errors, and deletes only a detached volume', async () => {
    const hosts = new DeviceRecordingHosts();
    const { ec2, clock, emulator: aws } = await startWithImage({ hosts, blockDevices: false });
    const created = await ec2.send(
      new CreateVolumeCommand({
        Size: 10,
        AvailabilityZone: 'us-east-1a',
        VolumeType: 'gp3',
        ClientToken: 'volume-token',
        TagSpecifications: [{ ResourceType: 'volume', Tags: [{ Key: 'dstack_name', Value: 'data' }] }],
      }),
    );
    expect(created).toMatchObject({
      Size: 10,
      AvailabilityZone: 'us-east-1a',
      State: 'creating',
      VolumeType: 'gp3',
      Iops: 3000,
    });
    const volumeId = created.VolumeId as string;
    const again = await ec2.send(
      new CreateVolumeCommand({
        Size: 10,
        AvailabilityZone: 'us-east-1a',
        VolumeType: 'gp3',
        ClientToken: 'volume-token',
      }),
    );
    expect(again.VolumeId).toBe(volumeId);
    const tagged = await ec2.send(
      new DescribeVolumesCommand({ Filters: [{ Name: 'tag:dstack_name', Values: ['data'] }] }),
    );
    expect(tagged.Volumes?.map((volume) => volume.VolumeId)).toEqual([volumeId]);
    expect(await codeOf(ec2.send(new DescribeVolumesCommand({ VolumeIds: ['vol-0123456789abcdef0'] })))).toBe(
      'InvalidVolume.NotFound',
    );
    // An id that cannot be a volume's (dstack's docs register `vol1235`): malformed, not missing.
    await expect(ec2.send(new DescribeVolumesCommand({ VolumeIds: ['vol1235'] }))).rejects.toMatchObject({
      name: 'InvalidVolumeID.Malformed',
      message: 'Invalid id: "vol1235" (expecting "vol-...")',
    });
    expect(await codeOf(ec2.send(new DescribeVolumesCommand({ VolumeIds: ['vol-nothex12'] })))).toBe(
      'InvalidVolumeID.Malformed',
    );

    const inA = await launch(ec2, 'us-east-1a');
    const inB = await launch(ec2, 'us-east-1b');
    await running(clock);
    expect(
      await codeOf(
        ec2.send(new AttachVolumeCommand({ VolumeId: volumeId, InstanceId: inB, Device: '/dev/sdf' })),
      ),
    ).toBe('InvalidVolume.ZoneMismatch');
    expect(
      await codeOf(
        ec2.send(new AttachVolumeCommand({ VolumeId: volumeId, InstanceId: inA, Device: '/dev/sda1' })),
      ),
    ).toBe('InvalidParameterValue');
    const attached = await ec2.send(
      new AttachVolumeCommand({ VolumeId: volumeId, InstanceId: inA, Device: '/dev/sdf' }),
    );
    expect(attached).toMatchObject({ State: 'attaching', Device: '/dev/sdf', InstanceId: inA });
    clock.advance(1_000);
    const inUse = await ec2.send(new DescribeVolumesCommand({ VolumeIds: [volumeId] }));
    expect(inUse.Volumes?.[0]).toMatchObject({
      State: 'in-use',
      Attachments: [{ InstanceId: inA, Device: '/dev/sdf', State: 'attached' }],
    });
    const instance = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [inA] }));
    expect(
      instance.Reservations?.[0]?.Instances?.[0]?.BlockDeviceMappings?.map((each) => each.DeviceName),
    ).toEqual(['/dev/sda1', '/dev/sdf']);
    expect(
      await codeOf(
        ec2.send(new AttachVolumeCommand({ VolumeId: volumeId, InstanceId: inA, Device: '/dev/sdg' })),
      ),
    ).toBe('VolumeInUse');
    expect(await codeOf(ec2.send(new DeleteVolumeCommand({ VolumeId: volumeId })))).toBe('VolumeInUse');

    const detaching = await ec2.send(
      new DetachVolumeCommand({ VolumeId: volumeId, InstanceId: inA, Device: '/dev/sdf' }),
    );
    expect(detaching.State).toBe('detaching');
    await settle();
    clock.advance(1_000);
    expect(
      (await ec2.send(new DescribeVolumesCommand({ VolumeIds: [volumeId] }))).Volumes?.[0],
    ).toMatchObject({
      State: 'available',
      Attachments: [],
    });
    expect(await codeOf(ec2.send(new DetachVolumeCommand({ VolumeId: volumeId })))).toBe('IncorrectState');
    await ec2.send(new DeleteVolumeCommand({ VolumeId: volumeId }));
    expect(await codeOf(ec2.send(new DeleteVolumeCommand({ VolumeId: volumeId })))).toBe(
      'InvalidVolume.NotFound',
    );
    expect(aws.state().volumes).toEqual([]);
  });

  it.skipIf(process.getuid?.() !== 0)(
    'an attached volume is a loop device in the host, with its data kept across detach and attach',
    async () => {
      if (!(await loopDevicesUsable())) return;
      const hosts = new DeviceRecordingHosts();
      const { ec2, clock, emulator: aws } = await startWithImage({ hosts });
      const volumeId = (await ec2.send(new CreateVolumeCommand({ Size: 1, AvailabilityZone: 'us-east-1a' })))
        .VolumeId as string;
      const instanceId = await launch(ec2, 'us-east-1a');
      await running(clock);

      const attachAndWait = async () => {
        await ec2.send(
          new AttachVolumeCommand({ VolumeId: volumeId, InstanceId: instanceId, Device: '/dev/sdf' }),
        );
        for (
          let tries = 0;
          aws.state().volumes[0]?.attachment?.status !== 'attached' && tries < 100;
          tries++
        ) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          clock.advance(100);
        }
        const loop = aws.state().loopDevices[0]?.path as string;
        expect(existsSync(loop)).toBe(true);
        return loop;
      };
      const detachAndWait = async () => {
        await ec2.send(new DetachVolumeCommand({ VolumeId: volumeId }));
        for (let tries = 0; aws.state().volumes[0]?.status !== 'available' && tries < 100; tries++) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          clock.advance(100);
        }
        expect(aws.state().loopDevices).toEqual([]);
      };

      const loop = await attachAndWait();
      // The host got the device as a Nitro instance names it, with udev's by-id link.
      const device = [...hosts.devices.values()][0];
      expect(device?.path).toBe('/dev/nvme1n1');
      expect(device?.links).toEqual([
        `/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_${volumeId.replace('-', '')}`,
      ]);
      expect(aws.state().volumes[0]?.attachment).toMatchObject({
        status: 'attached',
        hostDevice: '/dev/nvme1n1',
      });
      execFileSync('mkfs.ext4', ['-q', '-F', loop]);
      execFileSync('debugfs', ['-w', '-R', 'mkdir kept', loop], { stdio: 'ignore' });
      await detachAndWait();
      expect(hosts.devices.size).toBe(0);

      const again = await attachAndWait();
      const listing = execFileSync('debugfs', ['-R', 'ls /', again], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      expect(listing).toContain('kept');
      // Closing with the volume attached frees the loop device all the same.
      await aws.close();
      emulator = undefined;
      expect(
        execFileSync('losetup', ['--list', '--noheadings', '--output', 'NAME'], { encoding: 'utf8' }),
      ).not.toContain(`${again}\n`);
    },
    30_000,
  );
});
