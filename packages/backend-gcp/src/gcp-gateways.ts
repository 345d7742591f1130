/**
 * Gateway instances on Compute Engine (dstack's GCP `create_gateway`): Ubuntu 22.04 from
 * `ubuntu-os-cloud` (the gateway needs no Docker), `e2-medium` unless the configuration names a
 * type, tagged `dstack-gateway-instance` with dstack's firewall rule opening 22, 80 and 443 to it,
 * and a rule of this project's letting gateways reach dstack's instances on the VPC's internal
 * addresses (where the replicas' services listen). The instance is named from `instance_name`: a
 * repeated launch finds the first. The launch returns once it runs with its address.
 */
import {
  BackendError,
  buildGatewayUserData,
  type GatewayReplicaConfiguration,
  type GatewayReplicaProvisioningData,
  ProvisioningError,
} from '@dstack/core';
import type { GcpComputeApi } from './gcp-api.js';
import type { GcpConfig } from './gcp-config.js';
import { GCP_IMAGE_USER, GCP_INSTANCE_NETWORK_TAG, networkName, sanitize } from './gcp-instance-body.js';
import { GcpApiCallError, isNotFound } from './gcp-rest.js';

/** dstack's default gateway machine type on GCP. */
export const DEFAULT_GCP_GATEWAY_MACHINE_TYPE = 'e2-medium';
export const GCP_GATEWAY_IMAGE = 'projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts';
export const GCP_GATEWAY_NETWORK_TAG = 'dstack-gateway-instance';
const RUNNING_TIMEOUT_MS = 5 * 60_000;

interface GatewayInstance {
  name: string;
  status: string;
  networkInterfaces?: { networkIP?: string; accessConfigs?: { natIP?: string }[] }[];
}

export interface GcpGatewaySettings {
  api: GcpComputeApi;
  config: GcpConfig;
  zonesOf(region: string): Promise<string[]>;
  pollIntervalMs: number;
}

/** Names are lowercase letters, digits and dashes, starting with a letter, at most 63. */
function gatewayInstanceName(instanceName: string): string {
  return `dstack-gw-${sanitize(instanceName).replace(/_/g, '-')}`.slice(0, 63).replace(/-+$/, '');
}

async function ensureFirewallRule(api: GcpComputeApi, rule: Record<string, unknown>): Promise<void> {
  try {
    await api.post('global/firewalls', rule);
  } catch (error) {
    if (!(error instanceof GcpApiCallError && error.statusCode === 409)) throw error;
  }
}

async function ensureGatewayFirewall(api: GcpComputeApi, config: GcpConfig): Promise<void> {
  const network = networkName(config);
  await Promise.all([
    ensureFirewallRule(api, {
      name: `dstack-gateway-in-all-${network}`.slice(0, 63).replace(/-+$/, ''),
      network: `global/networks/${network}`,
      direction: 'INGRESS',
      allowed: [{ IPProtocol: 'tcp', ports: ['22', '80', '443'] }],
      sourceRanges: ['0.0.0.0/0'],
      targetTags: [GCP_GATEWAY_NETWORK_TAG],
      description: 'Allowing TCP traffic on all ports from Internet.',
    }),
    ensureFirewallRule(api, {
      name: `dstack-gateway-to-instances-${network}`.slice(0, 63).replace(/-+$/, ''),
      network: `global/networks/${network}`,
      direction: 'INGRESS',
      allowed: [{ IPProtocol: 'tcp' }],
      sourceTags: [GCP_GATEWAY_NETWORK_TAG],
      targetTags: [GCP_INSTANCE_NETWORK_TAG],
      description: "Lets dstack's gateways reach the services of dstack's instances",
    }),
  ]);
}

async function findInstance(
  api: GcpComputeApi,
  zones: readonly string[],
  name: string,
): Promise<{ zone: string; instance: GatewayInstance } | undefined> {
  for (const zone of zones) {
    try {
      return { zone, instance: await api.get<GatewayInstance>(`zones/${zone}/instances/${name}`) };
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  return undefined;
}

function addressOf(instance: GatewayInstance, publicIp: boolean): string | undefined {
  const nic = instance.networkInterfaces?.[0];
  return publicIp ? nic?.accessConfigs?.[0]?.natIP : nic?.networkIP;
}

export async function createGcpGatewayInstance(
  settings: GcpGatewaySettings,
  configuration: GatewayReplicaConfiguration,
): Promise<GatewayReplicaProvisioningData> {
  const { api, config } = settings;
  const name = gatewayInstanceName(configuration.instance_name);
  const zones = await settings.zonesOf(configuration.region);
  if (zones.length === 0) throw new BackendError(`No zones in ${configuration.region} for a gateway`);
  let zone = (await findInstance(api, zones, name))?.zone;
  if (!zone) {
    await ensureGatewayFirewall(api, config);
    zone = zones[0] as string;
    const machineType = configuration.instance_type ?? DEFAULT_GCP_GATEWAY_MACHINE_TYPE;
    const body = {
      name,
      machineType: `zones/${zone}/machineTypes/${machineType}`,
      disks: [
        {
          boot: true,
          autoDelete: true,
          initializeParams: { sourceImage: GCP_GATEWAY_IMAGE, diskSizeGb: '10' },
        },
      ],
      networkInterfaces: [
        {
          network: `projects/${config.project_id}/global/networks/${networkName(config)}`,
          accessConfigs: configuration.public_ip
            ? [{ type: 'ONE_TO_ONE_NAT', name: 'External NAT', networkTier: 'PREMIUM' }]
            : [],
        },
      ],
      metadata: {
        items: [
          { key: 'user-data', value: buildGatewayUserData(configuration) },
          { key: 'ssh-keys', value: `${GCP_IMAGE_USER}:${configuration.ssh_key_pub.trim()}` },
        ],
      },
      labels: { owner: 'dstack', dstack_project: sanitize(configuration.project_name) },
      tags: { items: [GCP_GATEWAY_NETWORK_TAG] },
    };
    try {
      await api.post(`zones/${zone}/instances`, body);
    } catch (error) {
      if (!(error instanceof GcpApiCallError && error.statusCode === 409)) throw error;
    }
  }
  const deadline = Date.now() + RUNNING_TIMEOUT_MS;
  for (;;) {
    const found = await findInstance(api, [zone], name);
    const instance = found?.instance;
    if (
      instance &&
      instance.status !== 'PROVISIONING' &&
      instance.status !== 'STAGING' &&
      instance.status !== 'RUNNING'
    ) {
      throw new ProvisioningError(`Gateway instance ${name} is ${instance.status}`);
    }
    const address = instance ? addressOf(instance, configuration.public_ip) : undefined;
    if (instance?.status === 'RUNNING' && address) {
      return {
        instance_id: name,
        ip_address: address,
        region: configuration.region,
        availability_zone: zone,
        backend_data: JSON.stringify({ zone }),
      };
    }
    if (Date.now() > deadline)
      throw new ProvisioningError(`Gateway instance ${name} did not run with an address in time`);
    await new Promise((resolve) => setTimeout(resolve, settings.pollIntervalMs));
  }
}
