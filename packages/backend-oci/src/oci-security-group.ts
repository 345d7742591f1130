/**
 * The project's network security group in a VCN, as dstack's `get_or_create_security_group` and
 * `update_security_group_rules_for_runner_instances`: `dstack-{project}-default-security-group`,
 * whose one rule lets the group's instances reach each other on every protocol (SSH from outside
 * comes through the subnet's default security list).
 */
import { listAll, type OciRegionClients } from './oci-clients.js';

export async function prepareSecurityGroup(
  clients: OciRegionClients,
  name: string,
  vcnId: string,
  compartmentId: string,
): Promise<string> {
  const network = clients.network;
  const groups = await listAll((page) =>
    network.listNetworkSecurityGroups({
      compartmentId,
      vcnId,
      displayName: name,
      page,
    }),
  );
  const group =
    groups[0] ??
    (
      await network.createNetworkSecurityGroup({
        createNetworkSecurityGroupDetails: { compartmentId, vcnId, displayName: name },
      })
    ).networkSecurityGroup;
  const rules = await listAll((page) =>
    network.listNetworkSecurityGroupSecurityRules({
      networkSecurityGroupId: group.id,
      page,
    }),
  );
  const wanted = {
    direction: 'INGRESS',
    protocol: 'all',
    source: group.id,
    sourceType: 'NETWORK_SECURITY_GROUP',
  };
  const matches =
    rules.length === 1 &&
    rules.every(
      (rule) =>
        rule.direction === wanted.direction &&
        rule.protocol === wanted.protocol &&
        rule.source === wanted.source,
    );
  if (matches) return group.id;
  await network.addNetworkSecurityGroupSecurityRules({
    networkSecurityGroupId: group.id,
    addNetworkSecurityGroupSecurityRulesDetails: {
      securityRules: [
        {
          ...wanted,
          description: 'Allow all traffic within this security group',
          isStateless: false,
        } as never,
      ],
    },
  });
  if (rules.length > 0) {
    await network.removeNetworkSecurityGroupSecurityRules({
      networkSecurityGroupId: group.id,
      removeNetworkSecurityGroupSecurityRulesDetails: {
        securityRuleIds: rules.map((rule) => rule.id as string),
      },
    });
  }
  return group.id;
}
