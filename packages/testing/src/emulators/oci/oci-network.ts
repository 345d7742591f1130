/**
 * OCI's Virtual Network API (`iaas.{region}.oraclecloud.com/20160918`) as the backend calls it:
 * VCNs (each made with its default route table and its default security list, which lets SSH in
 * from anywhere, as OCI's does), internet gateways, route tables, subnets, network security
 * groups with their rules, and VNICs.
 */
import { randomUUID } from 'node:crypto';
import { requireCompartment } from './oci-identity.js';
import {
  answer,
  invalidParameter,
  type Json,
  matchesQuery,
  now,
  type OciResource,
  type OciResources,
  object,
  page,
  requiredString,
  string,
} from './oci-resources.js';
import type { OciRequestContext, OciServiceRoute } from './oci-service-route.js';

export const VCN = 'vcn';
export const SUBNET = 'subnet';
export const INTERNET_GATEWAY = 'internetgateway';
export const ROUTE_TABLE = 'routetable';
export const SECURITY_LIST = 'securitylist';
export const NSG = 'networksecuritygroup';
export const VNIC = 'vnic';

/** OCI's default security list: SSH and ICMP in, everything out. */
function defaultSecurityRules(cidr: string): Json {
  return {
    ingressSecurityRules: [
      {
        protocol: '6',
        source: '0.0.0.0/0',
        sourceType: 'CIDR_BLOCK',
        isStateless: false,
        tcpOptions: { destinationPortRange: { min: 22, max: 22 } },
      },
      {
        protocol: '1',
        source: '0.0.0.0/0',
        sourceType: 'CIDR_BLOCK',
        isStateless: false,
        icmpOptions: { type: 3, code: 4 },
      },
      { protocol: '1', source: cidr, sourceType: 'CIDR_BLOCK', isStateless: false, icmpOptions: { type: 3 } },
    ],
    egressSecurityRules: [
      { protocol: 'all', destination: '0.0.0.0/0', destinationType: 'CIDR_BLOCK', isStateless: false },
    ],
  };
}

export function networkRoutes(tenancyId: string, resources: OciResources): OciServiceRoute[] {
  const create = (type: string, context: OciRequestContext, fields: Json): OciResource => {
    const id = resources.ocid(type, context.region.key);
    return resources.put({
      id,
      type,
      region: context.region.name,
      document: {
        id,
        lifecycleState: 'AVAILABLE',
        timeCreated: now(),
        freeformTags: {},
        definedTags: {},
        ...fields,
      },
    });
  };
  const inRegion = (context: OciRequestContext) => (_document: Json, resource: OciResource) =>
    resource.region === context.region.name;
  const list = (type: string, fields: readonly string[]): OciServiceRoute => ({
    method: 'GET',
    path: `/${collection(type)}`,
    handle: (request, context) => {
      requireCompartment(resources, tenancyId, request.query.compartmentId);
      const found = resources
        .list(
          type,
          (document, resource) =>
            inRegion(context)(document, resource) && matchesQuery(document, request.query, fields),
        )
        .map((each) => each.document);
      return page(request, found);
    },
  });
  const get = (type: string, parameter: string): OciServiceRoute => ({
    method: 'GET',
    path: `/${collection(type)}/:${parameter}`,
    handle: (request) => answer(resources.require(request.params[parameter], type).document),
  });
  const requireVcn = (body: Json) => resources.require(requiredString(body, 'vcnId'), VCN);

  return [
    list(VCN, ['compartmentId', 'displayName']),
    get(VCN, 'vcnId'),
    {
      method: 'POST',
      path: '/vcns',
      handle: (request, context) => {
        const body = object(request.body);
        const compartmentId = requireCompartment(resources, tenancyId, string(body.compartmentId));
        const cidrBlocks = Array.isArray(body.cidrBlocks)
          ? body.cidrBlocks.map(String)
          : [string(body.cidrBlock)].filter(Boolean);
        if (cidrBlocks.length === 0) throw invalidParameter('cidrBlocks is required');
        const routeTable = create(ROUTE_TABLE, context, {
          compartmentId,
          displayName: 'Default Route Table',
          routeRules: [],
        });
        const securityList = create(SECURITY_LIST, context, {
          compartmentId,
          displayName: 'Default Security List',
          ...defaultSecurityRules(String(cidrBlocks[0])),
        });
        const vcn = create(VCN, context, {
          compartmentId,
          displayName: string(body.displayName) ?? `vcn${Date.now()}`,
          cidrBlocks,
          cidrBlock: cidrBlocks[0],
          defaultRouteTableId: routeTable.id,
          defaultSecurityListId: securityList.id,
        });
        routeTable.document.vcnId = vcn.id;
        securityList.document.vcnId = vcn.id;
        return answer(vcn.document);
      },
    },
    list(INTERNET_GATEWAY, ['compartmentId', 'vcnId', 'displayName']),
    {
      method: 'POST',
      path: '/internetGateways',
      handle: (request, context) => {
        const body = object(request.body);
        const compartmentId = requireCompartment(resources, tenancyId, string(body.compartmentId));
        const vcn = requireVcn(body);
        return answer(
          create(INTERNET_GATEWAY, context, {
            compartmentId,
            vcnId: vcn.id,
            displayName: string(body.displayName) ?? 'Internet Gateway',
            isEnabled: body.isEnabled !== false,
          }).document,
        );
      },
    },
    get(ROUTE_TABLE, 'rtId'),
    {
      method: 'PUT',
      path: '/routeTables/:rtId',
      handle: (request) => {
        const table = resources.require(request.params.rtId, ROUTE_TABLE);
        const rules = object(request.body).routeRules;
        if (rules !== undefined) {
          if (!Array.isArray(rules)) throw invalidParameter('routeRules must be a list');
          for (const rule of rules.map(object)) {
            const target = string(rule.networkEntityId);
            if (!target || !resources.get(target, INTERNET_GATEWAY))
              throw invalidParameter(`networkEntityId ${target} is not an internet gateway of this VCN`);
          }
          table.document.routeRules = rules;
        }
        return answer(table.document);
      },
    },
    get(SECURITY_LIST, 'securityListId'),
    list(SUBNET, ['compartmentId', 'vcnId', 'displayName']),
    get(SUBNET, 'subnetId'),
    {
      method: 'POST',
      path: '/subnets',
      handle: (request, context) => {
        const body = object(request.body);
        const compartmentId = requireCompartment(resources, tenancyId, string(body.compartmentId));
        const vcn = requireVcn(body);
        return answer(
          create(SUBNET, context, {
            compartmentId,
            vcnId: vcn.id,
            cidrBlock: requiredString(body, 'cidrBlock'),
            displayName: string(body.displayName) ?? 'subnet',
            routeTableId: string(body.routeTableId) ?? vcn.document.defaultRouteTableId,
            securityListIds: Array.isArray(body.securityListIds)
              ? body.securityListIds
              : [vcn.document.defaultSecurityListId],
            prohibitPublicIpOnVnic: body.prohibitPublicIpOnVnic === true,
            availabilityDomain: string(body.availabilityDomain) ?? null,
          }).document,
        );
      },
    },
    list(NSG, ['compartmentId', 'vcnId', 'displayName']),
    {
      method: 'POST',
      path: '/networkSecurityGroups',
      handle: (request, context) => {
        const body = object(request.body);
        const compartmentId = requireCompartment(resources, tenancyId, string(body.compartmentId));
        const vcn = requireVcn(body);
        const group = create(NSG, context, {
          compartmentId,
          vcnId: vcn.id,
          displayName: string(body.displayName) ?? 'nsg',
        });
        return answer(group.document);
      },
    },
    {
      method: 'GET',
      path: '/networkSecurityGroups/:nsgId/securityRules',
      handle: (request) => page(request, rulesOf(resources.require(request.params.nsgId, NSG))),
    },
    {
      method: 'POST',
      path: '/networkSecurityGroups/:nsgId/actions/addSecurityRules',
      handle: (request) => {
        const group = resources.require(request.params.nsgId, NSG);
        const added = (
          Array.isArray(object(request.body).securityRules)
            ? (object(request.body).securityRules as unknown[])
            : []
        ).map((rule) => {
          const fields = object(rule);
          if (fields.direction !== 'INGRESS' && fields.direction !== 'EGRESS')
            throw invalidParameter('direction must be INGRESS or EGRESS');
          if (!string(fields.protocol)) throw invalidParameter('protocol is required');
          return {
            ...fields,
            id: randomUUID().replaceAll('-', '').slice(0, 6).toUpperCase(),
            isValid: true,
            timeCreated: now(),
          };
        });
        group.document.securityRules = [...rulesOf(group), ...added];
        return answer({ securityRules: added });
      },
    },
    {
      method: 'POST',
      path: '/networkSecurityGroups/:nsgId/actions/removeSecurityRules',
      handle: (request) => {
        const group = resources.require(request.params.nsgId, NSG);
        const ids = new Set(
          (object(request.body).securityRuleIds as unknown[] | undefined)?.map(String) ?? [],
        );
        group.document.securityRules = rulesOf(group).filter((rule) => !ids.has(String(rule.id)));
        return answer({}, 200);
      },
    },
    get(VNIC, 'vnicId'),
  ];
}

function rulesOf(group: OciResource): Json[] {
  return Array.isArray(group.document.securityRules) ? (group.document.securityRules as Json[]) : [];
}

/** The API's collection name of a resource type. */
function collection(type: string): string {
  switch (type) {
    case VCN:
      return 'vcns';
    case SUBNET:
      return 'subnets';
    case INTERNET_GATEWAY:
      return 'internetGateways';
    case ROUTE_TABLE:
      return 'routeTables';
    case SECURITY_LIST:
      return 'securityLists';
    case NSG:
      return 'networkSecurityGroups';
    case VNIC:
      return 'vnics';
    default:
      throw new Error(`no collection for ${type}`);
  }
}
