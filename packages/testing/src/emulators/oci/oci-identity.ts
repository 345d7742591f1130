/**
 * OCI's Identity API (`identity.{region}.oci.oraclecloud.com/20160918`) as the backend calls it:
 * the tenancy and its region subscriptions, the regions, a region's availability domains, and
 * compartments (listed by parent and name, created, read).
 */
import type { EmulatorRequest } from '../../emulator/emulator-server.js';
import type { OciEmulatorData } from './oci-emulator-data.js';
import {
  answer,
  invalidParameter,
  matchesQuery,
  notFound,
  now,
  OciApiError,
  type OciResources,
  object,
  page,
  requiredString,
} from './oci-resources.js';
import type { OciServiceRoute } from './oci-service-route.js';

export const COMPARTMENT = 'compartment';

export interface OciTenancy {
  readonly id: string;
  readonly name: string;
  readonly homeRegion: string;
}

export function identityRoutes(
  tenancy: OciTenancy,
  data: OciEmulatorData,
  resources: OciResources,
): OciServiceRoute[] {
  const homeKey = data.region(tenancy.homeRegion)?.key ?? '';
  /** The tenancy is the root compartment. */
  const compartmentExists = (id: string | undefined) =>
    id === tenancy.id || resources.get(id, COMPARTMENT) !== undefined;
  const requireTenancy = (request: EmulatorRequest) => {
    if (request.params.tenancyId !== tenancy.id) throw notFound('tenancy', request.params.tenancyId ?? '');
  };
  return [
    {
      method: 'GET',
      path: '/tenancies/:tenancyId',
      handle: (request) => {
        requireTenancy(request);
        return answer({
          id: tenancy.id,
          name: tenancy.name,
          description: tenancy.name,
          homeRegionKey: homeKey,
        });
      },
    },
    {
      method: 'GET',
      path: '/tenancies/:tenancyId/regionSubscriptions',
      handle: (request) => {
        requireTenancy(request);
        return answer(
          data.regions.map((region) => ({
            regionKey: region.key,
            regionName: region.name,
            status: 'READY',
            isHomeRegion: region.name === tenancy.homeRegion,
          })),
        );
      },
    },
    {
      method: 'GET',
      path: '/regions',
      handle: () => answer(data.regions.map((region) => ({ key: region.key, name: region.name }))),
    },
    {
      method: 'GET',
      path: '/availabilityDomains',
      handle: (request, context) => {
        if (!compartmentExists(request.query.compartmentId))
          throw notFound('compartment', request.query.compartmentId ?? '');
        return answer(
          context.region.availabilityDomains.map((name) => ({
            name,
            id: `ocid1.availabilitydomain.oc1..${name}`,
            compartmentId: tenancy.id,
          })),
        );
      },
    },
    {
      method: 'GET',
      path: '/compartments',
      handle: (request) => {
        const parent = request.query.compartmentId;
        if (!compartmentExists(parent)) throw notFound('compartment', parent ?? '');
        const found = resources
          .list(COMPARTMENT, (document) =>
            matchesQuery(document, request.query, ['compartmentId', 'name', 'lifecycleState']),
          )
          .map((each) => each.document);
        return page(request, found);
      },
    },
    {
      method: 'POST',
      path: '/compartments',
      handle: (request) => {
        const body = object(request.body);
        const parent = requiredString(body, 'compartmentId');
        const name = requiredString(body, 'name');
        if (!compartmentExists(parent)) throw notFound('compartment', parent);
        if (
          resources.list(
            COMPARTMENT,
            (document) => document.compartmentId === parent && document.name === name,
          ).length > 0
        ) {
          throw new OciApiError(409, 'CompartmentAlreadyExists', `Compartment '${name}' already exists`);
        }
        const id = resources.ocid(COMPARTMENT, null);
        const compartment = resources.put({
          id,
          type: COMPARTMENT,
          region: null,
          document: {
            id,
            compartmentId: parent,
            name,
            description: typeof body.description === 'string' ? body.description : '',
            lifecycleState: 'ACTIVE',
            timeCreated: now(),
            freeformTags: {},
            definedTags: {},
          },
        });
        return answer(compartment.document);
      },
    },
    {
      method: 'GET',
      path: '/compartments/:compartmentId',
      handle: (request) => {
        const id = request.params.compartmentId;
        if (id === tenancy.id)
          return answer({ id, name: tenancy.name, compartmentId: null, lifecycleState: 'ACTIVE' });
        const compartment = resources.get(id, COMPARTMENT);
        if (!compartment) throw notFound('compartment', id ?? '');
        return answer(compartment.document);
      },
    },
  ];
}

/** The compartment of a request body or query, or OCI's 404 naming it. */
export function requireCompartment(
  resources: OciResources,
  tenancyId: string,
  id: string | undefined,
): string {
  if (!id) throw invalidParameter('compartmentId is required');
  if (id !== tenancyId && !resources.get(id, COMPARTMENT)) throw notFound('compartment', id);
  return id;
}
