/**
 * What an account and region offer, as EC2 describes it: instance types and their offerings,
 * regions, availability zones, images and the spot price history (gpuhunt's collector reads these too).
 */

import type { Ec2Action } from './aws-ec2-action.js';
import { applyFilters, filtersOf, listValues, pageOf } from './aws-query-params.js';
import { ec2Response } from './aws-xml.js';
import { Ec2ApiError } from './ec2-api-error.js';

const describeInstanceTypes: Ec2Action = (account, region, params) => {
  const offered = account.data.typesIn(region);
  const wanted = listValues(params, 'InstanceType');
  const unknown = wanted.filter((name) => !offered.some((spec) => spec.name === name));
  if (unknown.length > 0) {
    throw new Ec2ApiError(
      400,
      'InvalidInstanceType',
      `The following supplied instance types do not exist: [${unknown.join(', ')}]`,
    );
  }
  const selected = wanted.length > 0 ? offered.filter((spec) => wanted.includes(spec.name)) : offered;
  const filtered = applyFilters(selected, filtersOf(params), (spec, name) => {
    switch (name) {
      case 'instance-type':
        return [spec.name];
      case 'network-info.efa-supported':
        return [String(spec.maximumEfaInterfaces > 0)];
      case 'current-generation':
        return ['true'];
      case 'processor-info.supported-architecture':
        return [spec.architecture];
      case 'vcpu-info.default-vcpus':
        return [String(spec.vcpus)];
      default:
        return undefined;
    }
  });
  const { page, nextToken } = pageOf(filtered, params, { min: 5, max: 100 });
  const instanceTypeSet = page.map((spec) => ({
    instanceType: spec.name,
    currentGeneration: true,
    burstablePerformanceSupported: spec.burstablePerformance,
    supportedUsageClasses: ['on-demand', 'spot'],
    supportedRootDeviceTypes: ['ebs'],
    processorInfo: { supportedArchitectures: [spec.architecture] },
    vCpuInfo: {
      defaultVCpus: spec.vcpus,
      defaultCores: Math.max(1, spec.vcpus / 2),
      defaultThreadsPerCore: 2,
    },
    memoryInfo: { sizeInMiB: spec.memoryMiB },
    gpuInfo: spec.gpu
      ? {
          gpus: [
            {
              name: spec.gpu.name,
              manufacturer: spec.gpu.manufacturer,
              count: spec.gpu.count,
              memoryInfo: { sizeInMiB: spec.gpu.memoryMiB },
            },
          ],
          totalGpuMemoryInMiB: spec.gpu.count * spec.gpu.memoryMiB,
        }
      : undefined,
    networkInfo: {
      efaSupported: spec.maximumEfaInterfaces > 0,
      efaInfo:
        spec.maximumEfaInterfaces > 0 ? { maximumEfaInterfaces: spec.maximumEfaInterfaces } : undefined,
      maximumNetworkInterfaces: 8,
      ipv4AddressesPerInterface: 30,
    },
  }));
  return ec2Response('DescribeInstanceTypes', { instanceTypeSet, nextToken });
};

const describeInstanceTypeOfferings: Ec2Action = (account, region, params) => {
  const locationType = params.LocationType ?? 'region';
  const offerings = account.data.offerings.filter((offering) => offering.region === region);
  const rows =
    locationType === 'availability-zone'
      ? offerings.map((each) => ({ instanceType: each.instanceType, location: each.zone }))
      : locationType === 'availability-zone-id'
        ? offerings.map((each) => ({ instanceType: each.instanceType, location: each.zoneId }))
        : [...new Set(offerings.map((each) => each.instanceType))].map((instanceType) => ({
            instanceType,
            location: region,
          }));
  const filtered = applyFilters(rows, filtersOf(params), (row, name) =>
    name === 'instance-type' ? [row.instanceType] : name === 'location' ? [row.location] : undefined,
  );
  const { page, nextToken } = pageOf(filtered, params, { min: 5, max: 1000 });
  return ec2Response('DescribeInstanceTypeOfferings', {
    instanceTypeOfferingSet: page.map((row) => ({ ...row, locationType })),
    nextToken,
  });
};

const describeRegions: Ec2Action = (account, _region, params) => {
  const names = listValues(params, 'RegionName');
  const unknown = names.filter((name) => !account.data.regions.includes(name));
  if (unknown.length > 0) {
    throw new Ec2ApiError(400, 'InvalidParameterValue', `Invalid region names: [${unknown.join(', ')}]`);
  }
  const regions = names.length > 0 ? names : [...account.data.regions];
  const filtered = applyFilters(regions, filtersOf(params), (region, name) =>
    name === 'region-name' ? [region] : name === 'opt-in-status' ? ['opt-in-not-required'] : undefined,
  );
  return ec2Response('DescribeRegions', {
    regionInfo: filtered.map((regionName) => ({
      regionName,
      regionEndpoint: `ec2.${regionName}.amazonaws.com`,
      optInStatus: 'opt-in-not-required',
    })),
  });
};

const describeAvailabilityZones: Ec2Action = (account, region, params) => {
  const names = listValues(params, 'ZoneName');
  const zones = account.data
    .zonesOf(region)
    .filter((zone) => names.length === 0 || names.includes(zone.name));
  const filtered = applyFilters(zones, filtersOf(params), (zone, name) => {
    switch (name) {
      case 'region-name':
        return [zone.region];
      case 'zone-name':
        return [zone.name];
      case 'zone-id':
        return [zone.id];
      case 'state':
        return ['available'];
      case 'zone-type':
        return ['availability-zone'];
      default:
        return undefined;
    }
  });
  return ec2Response('DescribeAvailabilityZones', {
    availabilityZoneInfo: filtered.map((zone) => ({
      zoneName: zone.name,
      zoneId: zone.id,
      zoneState: 'available',
      regionName: zone.region,
      groupName: zone.region,
      networkBorderGroup: zone.region,
      optInStatus: 'opt-in-not-required',
      zoneType: 'availability-zone',
      messageSet: [],
    })),
  });
};

const describeImages: Ec2Action = (account, region, params) => {
  const owners = listValues(params, 'Owner');
  const ids = listValues(params, 'ImageId');
  const images = account.images.filter(
    (image) =>
      image.region === region &&
      (ids.length === 0 || ids.includes(image.id)) &&
      (owners.length === 0 ||
        owners.some(
          (owner) => owner === image.ownerId || (owner === 'amazon' && image.ownerAlias === 'amazon'),
        )),
  );
  const filtered = applyFilters(images, filtersOf(params), (image, name) => {
    switch (name) {
      case 'name':
        return [image.name];
      case 'image-id':
        return [image.id];
      case 'owner-id':
        return [image.ownerId];
      case 'owner-alias':
        return image.ownerAlias ? [image.ownerAlias] : [];
      case 'state':
        return [image.state];
      case 'architecture':
        return [image.architecture];
      default:
        return undefined;
    }
  });
  return ec2Response('DescribeImages', {
    imagesSet: filtered.map((image) => ({
      imageId: image.id,
      imageLocation: `${image.ownerAlias ?? image.ownerId}/${image.name}`,
      imageState: image.state,
      imageOwnerId: image.ownerId,
      creationDate: image.creationDate,
      isPublic: true,
      architecture: image.architecture,
      imageType: 'machine',
      imageOwnerAlias: image.ownerAlias,
      name: image.name,
      description: image.description,
      rootDeviceType: 'ebs',
      rootDeviceName: '/dev/sda1',
      blockDeviceMapping: [
        { deviceName: '/dev/sda1', ebs: { volumeSize: 8, volumeType: 'gp3', deleteOnTermination: true } },
      ],
      virtualizationType: 'hvm',
      hypervisor: 'xen',
      enaSupport: true,
    })),
  });
};

const describeSpotPriceHistory: Ec2Action = (account, region, params) => {
  const types = listValues(params, 'InstanceType');
  const productDescriptions = listValues(params, 'ProductDescription');
  const zone = params.AvailabilityZone;
  const timestamp = new Date().toISOString();
  const rows = account.data.offerings.filter(
    (offering) =>
      offering.region === region &&
      offering.spotPrice !== undefined &&
      (types.length === 0 || types.includes(offering.instanceType)) &&
      (zone === undefined || offering.zone === zone),
  );
  const linuxOnly = productDescriptions.length === 0 || productDescriptions.includes('Linux/UNIX');
  const filtered = applyFilters(linuxOnly ? rows : [], filtersOf(params), (offering, name) => {
    switch (name) {
      case 'product-description':
        return ['Linux/UNIX'];
      case 'availability-zone':
        return [offering.zone];
      case 'instance-type':
        return [offering.instanceType];
      case 'spot-price':
        return [(offering.spotPrice ?? 0).toFixed(6)];
      default:
        return undefined;
    }
  });
  const { page, nextToken } = pageOf(filtered, params, { min: 1, max: 1000 });
  return ec2Response('DescribeSpotPriceHistory', {
    spotPriceHistorySet: page.map((offering) => ({
      instanceType: offering.instanceType,
      productDescription: 'Linux/UNIX',
      spotPrice: (offering.spotPrice ?? 0).toFixed(6),
      timestamp,
      availabilityZone: offering.zone,
    })),
    nextToken,
  });
};

export const EC2_OFFERING_ACTIONS: Readonly<Record<string, Ec2Action>> = {
  DescribeInstanceTypes: describeInstanceTypes,
  DescribeInstanceTypeOfferings: describeInstanceTypeOfferings,
  DescribeRegions: describeRegions,
  DescribeAvailabilityZones: describeAvailabilityZones,
  DescribeImages: describeImages,
  DescribeSpotPriceHistory: describeSpotPriceHistory,
};
