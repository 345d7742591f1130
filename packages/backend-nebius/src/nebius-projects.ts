/**
 * dstack's `get_region_to_project_id_map`: the tenancy's one tenant, its projects, and the project
 * the backend uses in each region: the configured `projects` (at most one per region), else each
 * region's only project or the one whose name starts with `default`. Bad settings are
 * `InvalidCredentialsError`s naming `regions` or `projects`, as dstack raises them.
 */
import { InvalidCredentialsError } from '@dstack/core';
import type { NebiusApi, NebiusContainer } from './nebius-api.js';
import { NEBIUS_DEFAULT_PROJECT_NAME_PREFIX } from './nebius-config.js';

const regionOf = (project: NebiusContainer) => project.status?.region || project.spec?.region || '';

export async function listTenantProjects(api: NebiusApi): Promise<NebiusContainer[]> {
  const tenants = await api.listTenants();
  if (tenants.length !== 1) {
    throw new InvalidCredentialsError([['creds']], {
      message: `Expected to find 1 tenant, found ${tenants.length}`,
    });
  }
  return api.listProjects(tenants[0]?.metadata.id ?? '');
}

export async function regionToProjectId(
  api: NebiusApi,
  settings: { regions?: readonly string[] | null; projects?: readonly string[] | null },
): Promise<Map<string, string>> {
  const projects = await listTenantProjects(api);
  const available = new Set(projects.map(regionOf));
  const configured = settings.regions ?? null;
  const missing = (configured ?? []).filter((region) => !available.has(region));
  if (missing.length > 0) {
    throw new InvalidCredentialsError([['regions']], {
      message: `Configured regions ${missing.join(', ')} do not exist in this Nebius tenancy. Omit \`regions\` to use all regions or select some of the available regions: ${[...available].sort().join(', ')}`,
    });
  }
  const result = new Map<string, string>();
  if (settings.projects != null) {
    const byId = new Map(projects.map((project) => [project.metadata.id, project]));
    for (const id of settings.projects) {
      const project = byId.get(id);
      if (!project) {
        throw new InvalidCredentialsError([['projects']], {
          message: `Configured project ID ${JSON.stringify(id)} not found in this Nebius tenancy`,
        });
      }
      const duplicate = result.get(regionOf(project));
      if (duplicate) {
        throw new InvalidCredentialsError([['projects']], {
          message: `Configured projects ${id} and ${duplicate} both belong to the same region ${regionOf(project)}. Only one project per region is allowed`,
        });
      }
      result.set(regionOf(project), id);
    }
    if (configured)
      for (const region of [...result.keys()]) if (!configured.includes(region)) result.delete(region);
    return result;
  }
  const byRegion = new Map<string, NebiusContainer[]>();
  for (const project of projects)
    byRegion.set(regionOf(project), [...(byRegion.get(regionOf(project)) ?? []), project]);
  for (const [region, candidates] of byRegion) {
    if (configured && !configured.includes(region)) continue;
    const chosen =
      candidates.length === 1
        ? candidates
        : candidates.filter((project) =>
            project.metadata.name.startsWith(NEBIUS_DEFAULT_PROJECT_NAME_PREFIX),
          );
    if (chosen.length !== 1) {
      throw new InvalidCredentialsError([['regions']], {
        message: `Could not find the default project in region ${region}. Consider setting the \`projects\` property in backend settings`,
      });
    }
    result.set(region, chosen[0]?.metadata.id ?? '');
  }
  return result;
}
