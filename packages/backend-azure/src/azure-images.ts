/**
 * The image a VM boots: dstack's VM images from dstack's public community gallery (Ubuntu with
 * Docker; `dstack-cuda-*` with NVIDIA's driver for GPU sizes, `dstack-grid-*` for the A10 v5 sizes
 * that need the GRID driver), as dstack's Azure backend picks them.
 */
import type { ComputeManagementClient } from '@azure/arm-compute';
import type { InstanceType } from '@dstack/core';

/** dstack's Gen2 community gallery. */
export const DSTACK_COMMUNITY_GALLERY = 'dstack-ebac134d-04b9-4c2b-8b6c-ad3e73904aa7';
/** The version of dstack's VM images, as dstack's Azure backend boots them. */
export const AZURE_DSTACK_IMAGE_VERSION = '0.19.40';

/** The gallery image for an instance type. */
export function dstackImageName(instance: InstanceType): string {
  if (instance.name.includes('_A10_v5')) return `dstack-grid-${AZURE_DSTACK_IMAGE_VERSION}`;
  if (instance.resources.gpus.length > 0) return `dstack-cuda-${AZURE_DSTACK_IMAGE_VERSION}`;
  return `dstack-${AZURE_DSTACK_IMAGE_VERSION}`;
}

/** The `imageReference` of the gallery image in `location`. */
export async function imageReference(
  compute: ComputeManagementClient,
  location: string,
  instance: InstanceType,
): Promise<{ communityGalleryImageId: string }> {
  const image = await compute.communityGalleryImages.get(
    location,
    DSTACK_COMMUNITY_GALLERY,
    dstackImageName(instance),
  );
  if (!image.uniqueId)
    throw new Error(`Community gallery image ${dstackImageName(instance)} has no uniqueId`);
  return { communityGalleryImageId: image.uniqueId };
}
