/**
 * Names from the server for the argument under the cursor, as dstack's completers
 * (`cli/services/completion.py`): runs for `logs` (all), `attach`, `metrics`, `stop` (active);
 * fleets, volumes, gateways and secrets for their commands; projects of the CLI's config. A
 * failure (no project, server down) completes nothing, as in dstack.
 */
import type { DstackApiClient } from '../api/client.js';
import { cliConfigPath, loadCliConfig } from '../config/cli-config.js';

type NameSource = (client: DstackApiClient) => Promise<string[]>;

const activeRuns: NameSource = async (client) =>
  (await client.listRuns({ only_active: true })).map((run) => run.run_spec.run_name ?? '');
const allRuns: NameSource = async (client) =>
  (await client.listRuns({ only_active: false })).map((run) => run.run_spec.run_name ?? '');
const fleets: NameSource = async (client) => (await client.listFleets()).map((fleet) => fleet.name);
const volumes: NameSource = async (client) => (await client.listVolumes()).map((volume) => volume.name);
const gateways: NameSource = async (client) => (await client.listGateways()).map((gateway) => gateway.name);
const secrets: NameSource = async (client) => (await client.listSecrets()).map((secret) => secret.name);

/** By the command path (`fleet delete`) of a command whose first argument is a name. */
const SOURCES: Readonly<Record<string, NameSource>> = {
  logs: allRuns,
  attach: activeRuns,
  metrics: activeRuns,
  stop: activeRuns,
  'ssh-proxy': activeRuns,
  'fleet delete': fleets,
  'volume delete': volumes,
  'gateway delete': gateways,
  'gateway update': gateways,
  'secret get': secrets,
  'secret set': secrets,
  'secret delete': secrets,
};

const PROJECT_COMMANDS = new Set(['project set-default', 'project delete']);

async function configuredProjects(): Promise<string[]> {
  return (await loadCliConfig(cliConfigPath())).projects.map((project) => project.name);
}

/** Names for the first argument of `commandPath`, or for `--project`; [] when there are none. */
export async function completeNames(
  commandPath: string,
  target: 'argument' | 'project-option',
  project: string | undefined,
): Promise<string[]> {
  try {
    if (target === 'project-option' || PROJECT_COMMANDS.has(commandPath)) return await configuredProjects();
    const source = SOURCES[commandPath];
    if (!source) return [];
    const { connect } = await import('../commands/connect.js');
    return (await source(await connect(project === undefined ? {} : { project }))).filter(Boolean);
  } catch {
    return [];
  }
}
