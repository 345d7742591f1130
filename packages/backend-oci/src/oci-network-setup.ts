/**
 * What dstack's OCI configurator makes once per backend (`_create_resources`): the compartment
 * `dstack-{project}` under the tenancy (unless `compartment_id` is given), and in every region a
 * VCN `dstack-{project}-default-vcn` (10.0.0.0/16) with an internet gateway routed from its
 * default route table and a subnet `dstack-{project}-default-subnet`. Each is looked up by name
 * first, so a repeated call makes nothing twice. SSH reaches instances through the VCN's default
 * security list (OCI's: TCP 22 from anywhere).
 */
import { BackendError } from '@dstack/core';
import { listAll, type OciRegionClients } from './oci-clients.js';

/** dstack's `VCN_CIDR`: the VCN's and its one subnet's block. */
export const OCI_VCN_CIDR = '10.0.0.0/16';

export async function getOrCreateCompartment(
  clients: OciRegionClients,
  name: string,
  parentId: string,
): Promise<string> {
  const found = await listAll((page) =>
    clients.identity.listCompartments({ compartmentId: parentId, name, page }),
  );
  const existing = found.find((each) => each.lifecycleState !== 'DELETED');
  if (existing) return existing.id;
  const created = await clients.identity.createCompartment({
    createCompartmentDetails: {
      compartmentId: parentId,
      name,
      description: 'Resources created and managed by dstack',
    },
  });
  return created.compartment.id;
}

/** Waits until the compartment is ACTIVE in the region (a new one takes a while to reach every region). */
export async function waitUntilCompartmentActive(
  clients: OciRegionClients,
  compartmentId: string,
  options: { attempts?: number; delayMs?: number } = {},
): Promise<void> {
  const attempts = options.attempts ?? 36;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const state = await clients.identity
      .getCompartment({ compartmentId })
      .then((response) => response.compartment.lifecycleState as string)
      .catch((error: { statusCode?: number }) => {
        if (error.statusCode === 404) return undefined;
        throw error;
      });
    if (state === 'ACTIVE') return;
    if (state !== 'CREATING' && state !== undefined)
      throw new BackendError(`Unexpected state ${state} for compartment ${compartmentId}`);
    await new Promise((resolve) => setTimeout(resolve, options.delayMs ?? 5_000));
  }
  throw new BackendError(
    `Compartment ${compartmentId} did not become active. This can mean that it takes longer to activate, does not exist, or the user does not have permission to access it`,
  );
}

/** The region's VCN, internet gateway, route and subnet; returns the subnet's OCID. */
export async function setUpNetworkResources(
  clients: OciRegionClients,
  compartmentId: string,
  projectName: string,
): Promise<string> {
  const network = clients.network;
  const vcnName = `dstack-${projectName}-default-vcn`;
  const vcns = await listAll((page) => network.listVcns({ compartmentId, displayName: vcnName, page }));
  const vcn =
    vcns[0] ??
    (
      await network.createVcn({
        createVcnDetails: { cidrBlocks: [OCI_VCN_CIDR], compartmentId, displayName: vcnName },
      })
    ).vcn;
  const gatewayName = `dstack-${projectName}-default-internet-gateway`;
  const gateways = await listAll((page) =>
    network.listInternetGateways({
      compartmentId,
      vcnId: vcn.id,
      displayName: gatewayName,
      page,
    }),
  );
  const gateway =
    gateways[0] ??
    (
      await network.createInternetGateway({
        createInternetGatewayDetails: {
          compartmentId,
          displayName: gatewayName,
          vcnId: vcn.id,
          isEnabled: true,
        },
      })
    ).internetGateway;
  if (!vcn.defaultRouteTableId) throw new BackendError(`VCN ${vcn.id} has no default route table`);
  await network.updateRouteTable({
    rtId: vcn.defaultRouteTableId,
    updateRouteTableDetails: { routeRules: [{ destination: '0.0.0.0/0', networkEntityId: gateway.id }] },
  });
  const subnetName = `dstack-${projectName}-default-subnet`;
  const subnets = await listAll((page) =>
    network.listSubnets({ compartmentId, displayName: subnetName, page }),
  );
  const subnet =
    subnets[0] ??
    (
      await network.createSubnet({
        createSubnetDetails: {
          cidrBlock: OCI_VCN_CIDR,
          compartmentId,
          displayName: subnetName,
          vcnId: vcn.id,
        },
      })
    ).subnet;
  return subnet.id;
}
