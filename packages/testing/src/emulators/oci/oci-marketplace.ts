/**
 * OCI Marketplace (`marketplace.{region}.oci.oraclecloud.com/20181001`) as dstack's backend reads
 * it: dstack publishes its VM images as community listings (`dstack-<version>`,
 * `dstack-cuda-<version>`); a listing's package names the image in the caller's region. Community
 * listings carry no agreements to accept.
 */
import type { EmulatorRequest } from '../../emulator/emulator-server.js';
import type { OciEmulatorData } from './oci-emulator-data.js';
import { answer, notFound, page } from './oci-resources.js';
import type { OciServiceRoute } from './oci-service-route.js';

/** dstack's community listings in the emulated marketplace (its VM image versions 0.14 and, for pre-Turing GPUs, 0.10). */
export const DSTACK_MARKETPLACE_LISTINGS: readonly string[] = [
  'dstack-0.14',
  'dstack-cuda-0.14',
  'dstack-cuda-0.10',
];

export interface OciMarketplaceListing {
  readonly id: string;
  readonly name: string;
  readonly version: string;
  /** The listing's image in each region. */
  readonly imageIds: Readonly<Record<string, string>>;
}

/** The listings, each with an image OCID per region. */
export function marketplaceListings(data: OciEmulatorData): OciMarketplaceListing[] {
  return DSTACK_MARKETPLACE_LISTINGS.map((name, index) => ({
    id: String(100_000_000 + index),
    name,
    version: name.replace(/^.*-/, ''),
    imageIds: Object.fromEntries(
      data.regions.map((region) => [
        region.name,
        `ocid1.image.oc1.${region.key.toLowerCase()}.dstack${index}${name.replace(/[^a-z0-9]/g, '')}`,
      ]),
    ),
  }));
}

export function marketplaceRoutes(listings: readonly OciMarketplaceListing[]): OciServiceRoute[] {
  const listing = (request: EmulatorRequest) => {
    const found = listings.find((each) => each.id === request.params.listingId);
    if (!found) throw notFound('listing', request.params.listingId ?? '');
    return found;
  };
  return [
    {
      method: 'GET',
      path: '/listings',
      handle: (request) => {
        const types = request.searchParams.getAll('listingTypes');
        // Marketplace's name filter matches inexactly (dstack filters the names itself).
        const name = request.query.name?.toLowerCase() ?? '';
        const found = listings
          .filter((each) => each.name.toLowerCase().includes(name))
          .filter(() => types.length === 0 || types.includes('COMMUNITY'))
          .map((each) => ({
            id: each.id,
            name: each.name,
            listingType: 'COMMUNITY',
            packageType: 'IMAGE',
            pricingTypes: ['FREE'],
          }));
        return page(request, found);
      },
    },
    {
      method: 'GET',
      path: '/listings/:listingId',
      handle: (request) => {
        const found = listing(request);
        return answer({
          id: found.id,
          name: found.name,
          listingType: 'COMMUNITY',
          packageType: 'IMAGE',
          defaultPackageVersion: found.version,
        });
      },
    },
    {
      method: 'GET',
      path: '/listings/:listingId/packages/:packageVersion',
      handle: (request, context) => {
        const found = listing(request);
        if (request.params.packageVersion !== found.version)
          throw notFound('package', request.params.packageVersion ?? '');
        const imageId = found.imageIds[context.region.name];
        if (!imageId) throw notFound('image of listing in region', context.region.name);
        return answer({
          packageType: 'IMAGE',
          listingId: found.id,
          version: found.version,
          imageId,
          appCatalogListingId: `ocid1.appcataloglisting.oc1..${found.id}`,
          regions: [{ code: context.region.key, name: context.region.name }],
        });
      },
    },
    {
      method: 'GET',
      path: '/listings/:listingId/packages/:packageVersion/agreements',
      handle: (request) => page(request, []),
    },
    { method: 'GET', path: '/acceptedAgreements', handle: (request) => page(request, []) },
  ];
}
