/**
 * The image an instance boots: dstack's VM image published as an OCI Marketplace community
 * listing (Ubuntu with Docker and dstack's images; `dstack-cuda-*` with NVIDIA's driver for GPU
 * shapes, version 0.10 for the GPUs that need NVIDIA's proprietary kernel modules), as dstack's
 * `get_marketplace_listing_and_package` picks it; the listing's agreements are accepted for the
 * compartment first, as dstack does.
 */
import { BackendError, type InstanceType } from '@dstack/core';
import type { MarketplaceClient } from 'oci-marketplace';
import { listAll } from './oci-clients.js';

/** dstack's `vm_base_image` version. */
export const OCI_DSTACK_IMAGE_VERSION = '0.14';
/** dstack's `DSTACK_OS_IMAGE_WITH_PROPRIETARY_NVIDIA_KERNEL_MODULES`. */
const PROPRIETARY_MODULES_IMAGE_VERSION = '0.10';
/** Pre-Turing GPUs need NVIDIA's proprietary kernel modules (dstack's list). */
const NEEDS_PROPRIETARY_MODULES = new Set(['v100', 'p100', 'p40', 'p4', 'k80', 'm60']);

export function dstackListingName(instance: InstanceType): string {
  const gpu = instance.resources.gpus[0]?.name;
  if (gpu === undefined) return `dstack-${OCI_DSTACK_IMAGE_VERSION}`;
  if (NEEDS_PROPRIETARY_MODULES.has(gpu.toLowerCase()))
    return `dstack-cuda-${PROPRIETARY_MODULES_IMAGE_VERSION}`;
  return `dstack-cuda-${OCI_DSTACK_IMAGE_VERSION}`;
}

/** The image OCID of dstack's listing in the client's region, its agreements accepted in the compartment. */
export async function dstackImageId(
  client: MarketplaceClient,
  instance: InstanceType,
  compartmentId: string,
): Promise<string> {
  const name = dstackListingName(instance);
  const summaries = (
    await listAll((page) =>
      client.listListings({
        name: [name],
        listingTypes: ['COMMUNITY' as never],
        page,
      }),
    )
  ).filter((each) => each.name === name); // listListings matches names inexactly
  if (summaries.length !== 1 || !summaries[0]?.id) {
    throw new BackendError(`Expected to find 1 listing by name ${name}, found ${summaries.length}`);
  }
  const { listing } = await client.getListing({ listingId: summaries[0].id });
  const version = listing.defaultPackageVersion;
  if (!listing.id || !version) throw new BackendError(`Listing ${name} has no default package version`);
  const accepted = new Set(
    (
      await listAll((page) =>
        client.listAcceptedAgreements({
          compartmentId,
          listingId: listing.id,
          packageVersion: version,
          page,
        }),
      )
    ).map((each) => each.agreementId),
  );
  const agreements = await listAll((page) =>
    client.listAgreements({
      listingId: listing.id as string,
      packageVersion: version,
      page,
    }),
  );
  for (const summary of agreements) {
    if (!summary.id || accepted.has(summary.id)) continue;
    const { agreement } = await client.getAgreement({
      listingId: listing.id,
      packageVersion: version,
      agreementId: summary.id,
    });
    await client.createAcceptedAgreement({
      createAcceptedAgreementDetails: {
        compartmentId,
        listingId: listing.id,
        packageVersion: version,
        agreementId: agreement.id,
        signature: agreement.signature,
      },
    });
  }
  const { listingPackage } = await client.getPackage({ listingId: listing.id, packageVersion: version });
  const imageId = (listingPackage as { imageId?: string }).imageId;
  if (!imageId) throw new BackendError(`Listing ${name} ${version} has no image`);
  return imageId;
}
