/**
 * Which fields of a fleet configuration this server honours, and the check that refuses the
 * others when a fleet is applied. See `field-decisions.ts`.
 */
import type { FleetConfiguration } from '@dstack/core';
import type { ProjectBackend } from '../backends/registry.js';
import { type FieldDecisions, refusedFields, refuseFields, reservationRefusal } from '../field-decisions.js';

export const FLEET_FIELD_DECISIONS: FieldDecisions = {
  type: { honoured: 'fleets/apply takes fleet configurations' },
  name: { honoured: 'the fleet name (fleets.ts)' },
  placement: {
    honoured:
      "'cluster': multinode backends only, every instance at the first one's backend, region and zone and in its placement group (fleet-provisioning.ts, placement-groups.ts); multi-node runs land only on such fleets",
  },
  blocks: { honoured: 'instances are split into blocks (instance-blocks.ts, ssh-fleets.ts)' },
  nodes: { honoured: 'min, target and max: fleets.ts, fleet-pipeline.ts', subtree: true },
  reservation: {
    honoured:
      "Requirements.reservation: only backends with the 'reservations' capability are offered (backends/offers.ts; aws: the Capacity Reservation's or Capacity Block's type in its zone, launched into it; gcp: the machine of a READY specific reservation, consumed through reservationAffinity); a plan without offers says why (explainNoOffers); refused when no eligible backend has it (fleets/unsupported-fields.ts)",
  },
  resources: { honoured: 'fleet requirements → offers (fleet-provisioning.ts)' },
  'resources.cpu': { honoured: 'offers', subtree: true },
  'resources.memory': { honoured: 'offers', subtree: true },
  'resources.disk': { honoured: 'offers', subtree: true },
  'resources.gpu': { honoured: 'offers', subtree: true },
  'resources.shm_size': {
    refused: "a container's setting: set it in the run",
    example: { resources: { shm_size: '1GB' } },
  },
  backends: { honoured: 'offer filters (fleet-provisioning.ts, job-submitted.ts)' },
  regions: { honoured: 'offer filters' },
  instance_types: { honoured: 'offer filters' },
  spot_policy: { honoured: 'Requirements.spot' },
  max_price: { honoured: 'Requirements.max_price' },
  idle_duration: { honoured: 'instance termination idle time (fleet-provisioning.ts)' },
  tags: { honoured: 'createInstance InstanceConfiguration.tags (instance-launch.ts)' },
  backend_options: { honoured: 'Requirements.backend_options, for the backend', subtree: true },
  ssh_config: { honoured: 'SSH fleets: ssh-fleets.ts deploys a shim to every host' },
  'ssh_config.user': { honoured: 'ssh-fleets.ts login' },
  'ssh_config.port': { honoured: 'ssh-fleets.ts login' },
  'ssh_config.identity_file': { honoured: 'the CLI sends its content as ssh_key' },
  'ssh_config.ssh_key': { honoured: 'ssh-fleets.ts login', subtree: true },
  'ssh_config.proxy_jump': { honoured: 'agents/remote-connection.ts (ssh -J)', subtree: true },
  'ssh_config.hosts': { honoured: 'one instance per host (ssh-fleets.ts)' },
  'ssh_config.hosts[].hostname': { honoured: 'ssh-fleets.ts' },
  'ssh_config.hosts[].port': { honoured: 'ssh-fleets.ts' },
  'ssh_config.hosts[].user': { honoured: 'ssh-fleets.ts' },
  'ssh_config.hosts[].identity_file': { honoured: 'the CLI sends its content as ssh_key' },
  'ssh_config.hosts[].ssh_key': { honoured: 'ssh-fleets.ts', subtree: true },
  'ssh_config.hosts[].proxy_jump': { honoured: 'agents/remote-connection.ts', subtree: true },
  'ssh_config.hosts[].blocks': { honoured: 'ssh-fleets.ts' },
  'ssh_config.hosts[].internal_ip': {
    honoured:
      "the host's address for the other nodes of a cluster (ssh-fleets.ts → provisioning data internal_ip → cluster_info)",
  },
  'ssh_config.network': {
    refused: "the host's address in the network is not looked up yet: set each host's internal_ip",
    example: {
      nodes: undefined,
      ssh_config: { user: 'ubuntu', hosts: ['192.0.2.1'], network: '10.0.0.0/24' },
    },
  },
  env: { refused: 'the shims of SSH hosts get no environment', example: { env: { A: '1' } } },
  availability_zones: {
    honoured:
      "the fleet's offers outside the zones are skipped (fleet-provisioning.ts fleetOffers), and a run's new instance in the fleet too (job-submitted.ts); offers without zones (local) pass",
  },
  retry: { refused: 'fleet provisioning is not retried by policy', subtree: true, example: { retry: true } },
};

/** Throws a 400 naming every field of the fleet's configuration this server does not honour. */
export function refuseUnsupportedFleetFields(
  configuration: FleetConfiguration,
  backends: readonly ProjectBackend[],
): void {
  const refusals = refusedFields(FLEET_FIELD_DECISIONS, configuration);
  const reservation = reservationRefusal(configuration.reservation, configuration.backends, backends);
  refuseFields(reservation ? [...refusals, reservation] : refusals, ['plan', 'spec', 'configuration']);
}
