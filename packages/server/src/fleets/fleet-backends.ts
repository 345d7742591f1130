/**
 * Where a cloud fleet may launch its instances: the project's backends that create instances
 * (dstack's VM backends), of the fleet's `backends` when it names some. A fleet with none can
 * never get an instance: apply refuses it, and the fleet pipeline stops adding instances to it
 * (a backend removed after the apply) rather than one failing row after another.
 */
import { type FleetConfiguration, hasCapability, ServerClientError } from '@dstack/core';
import type { ProjectBackend } from '../backends/registry.js';

/** The project's backends the fleet's instances may be launched on. */
export function fleetLaunchBackends(
  configuration: Pick<FleetConfiguration, 'backends'>,
  backends: readonly ProjectBackend[],
): ProjectBackend[] {
  const named = configuration.backends;
  return backends.filter(
    (backend) =>
      hasCapability(backend.compute, 'create-instance') && (!named?.length || named.includes(backend.type)),
  );
}

/**
 * Why the fleet can launch its instances nowhere, or null when it can: its named `backends` are
 * not in the project (`the project has no aws backend (configured: local)`) or cannot hold fleet
 * instances, or, naming none, the project has no backend that can.
 */
export function missingFleetBackends(
  configuration: Pick<FleetConfiguration, 'backends'>,
  backends: readonly ProjectBackend[],
): string | null {
  if (fleetLaunchBackends(configuration, backends).length > 0) return null;
  const configured = backends.map((backend) => backend.type);
  const configuredList = `configured: ${configured.join(', ') || 'none'}`;
  const named = configuration.backends ?? [];
  if (named.length === 0)
    return `the project has no backend that can hold fleet instances (${configuredList})`;
  const present = named.filter((type) => configured.includes(type));
  const absent = named.filter((type) => !configured.includes(type));
  const reasons: string[] = [];
  if (absent.length > 0)
    reasons.push(`the project has no ${absent.join(' or ')} backend (${configuredList})`);
  if (present.length > 0) reasons.push(`${present.join(' and ')} cannot hold fleet instances`);
  return reasons.join('; ');
}

/**
 * Throws a 400 naming `backends` when the fleet names backends and none of them can hold its
 * instances. A fleet naming none is left to the pipeline: a project may get its backend later.
 */
export function refuseFleetWithoutBackends(
  configuration: Pick<FleetConfiguration, 'backends'>,
  backends: readonly ProjectBackend[],
): void {
  if (!configuration.backends?.length) return;
  const missing = missingFleetBackends(configuration, backends);
  if (missing === null) return;
  throw new ServerClientError(`backends: ${missing}`, {
    fields: [['plan', 'spec', 'configuration', 'backends']],
  });
}
