/**
 * Run plans (`runs/get_plan`): the job specs a run gets and each job's offers (fleet instances
 * first, then the backends' by price, where its volumes are), with the server's image settings
 * and the offer filters that the job-submitted pass uses too.
 */

import type { JobPlan, JobSpec, RunConfiguration, RunPlan, RunSpec } from '@dstack/core';
import { explainNoOffers, getOffers, type OfferFilters, offerWarnings } from '../backends/offers.js';
import type { ProjectBackend } from '../backends/registry.js';
import type { AppContext } from '../context.js';
import type { StoredRunSpec } from '../db/json-columns.js';
import type { ProjectsTable, UsersTable } from '../db/schema.js';
import { hasSshClusterFleet } from '../fleets/cluster-fleets.js';
import { fleetInstanceOffers } from '../fleets/fleet-instance-offers.js';
import { checkSecretReferences } from '../secrets/secret-references.js';
import { projectSecretNames } from '../secrets/secrets.js';
import { serviceGatewayOf } from '../services/service-gateway.js';
import { serviceConfigurationOf } from '../services/service-spec.js';
import { checkUtilizationWindow, refuseUtilizationPolicyWithoutGpus } from './gpu-utilization.js';
import { planJobSpecs } from './job-specs.js';
import { ACTIVE_RUN_STATUSES, findRunRow, loadRun } from './run-reads.js';
import { planJobVolumes } from './run-volumes.js';
import { isServiceRun, normalizeRunSpec, withRunSshKey } from './stored-run-spec.js';
import { refuseUnsupportedRunFields } from './unsupported-fields.js';

const DEFAULT_MAX_OFFERS = 50;

/**
 * dstack's image name for "no image, never pull" (`dstack offer` sends it with `for_offers_only`,
 * and no commands): such a plan only lists offers, so the job spec takes the server's default
 * image instead, which every backend and runtime can plan with, and dstack's `:` for a command.
 */
const PLACEHOLDER_IMAGE = 'scratch';

function withoutPlaceholderImage(runSpec: StoredRunSpec): StoredRunSpec {
  if (runSpec.configuration.image !== PLACEHOLDER_IMAGE) return runSpec;
  const { image: _image, ...configuration } = runSpec.configuration;
  if ('commands' in configuration && configuration.commands.length === 0) configuration.commands = [':'];
  return { ...runSpec, configuration: configuration as RunConfiguration };
}

export function offerFiltersOf(configuration: RunConfiguration): OfferFilters {
  return {
    backends: configuration.backends,
    regions: configuration.regions,
    instanceTypes: configuration.instance_types,
    // The profile's zones, cut to its volumes' zones by the job-submitted pass (job-volumes.ts).
    availabilityZones: configuration.availability_zones,
  };
}

export async function getRunPlan(
  app: AppContext,
  project: ProjectsTable,
  user: UsersTable,
  requestedSpec: RunSpec,
  maxOffers: number | null | undefined,
  options: { forOffersOnly?: boolean } = {},
): Promise<RunPlan> {
  const normalized = await withRunSshKey(app, user, normalizeRunSpec(requestedSpec));
  const runSpec = options.forOffersOnly ? withoutPlaceholderImage(normalized) : normalized;
  const backends = await app.backends.getProjectBackends(project.id);
  refuseUnsupportedRunFields(runSpec.configuration, backends, {
    sshClusterFleet: await hasSshClusterFleet(app, project.id),
  });
  checkUtilizationWindow(runSpec.configuration, app);
  const jobSpecs = planJobSpecs(runSpec.run_name ?? 'plan', runSpec, app.settings.images);
  checkSecretReferences(jobSpecs, await projectSecretNames(app, project.id));
  const plannedService = serviceConfigurationOf(runSpec);
  // The gateway's refusals come with the plan, before anything is confirmed.
  if (plannedService) await serviceGatewayOf(app, project, runSpec.run_name ?? 'plan', plannedService);
  // Each job runs only where its volumes are: that narrows its offers.
  const volumePlacements = await planJobVolumes(app, project.id, runSpec.configuration, jobSpecs, backends);
  const jobOffers = await offersOfJobs(
    app,
    project,
    runSpec.configuration,
    jobSpecs,
    backends,
    volumePlacements,
  );
  refuseUtilizationPolicyWithoutGpus(
    runSpec.configuration,
    jobOffers.map((found) => found.offers),
  );
  const jobPlans: JobPlan[] = await Promise.all(
    jobSpecs.map(async (jobSpec, index) => {
      const { offers, failures, filters, mayCreate } = jobOffers[index]!;
      const exclusions =
        offers.length === 0 && mayCreate
          ? await explainNoOffers(backends, jobSpec.requirements, filters, {
              deadlineMs: app.settings.backends.offersDeadlineMs,
            })
          : [];
      return {
        job_spec: jobSpec,
        offers: offers.slice(0, maxOffers ?? DEFAULT_MAX_OFFERS),
        total_offers: offers.length,
        max_price: offers.reduce((max, offer) => Math.max(max, offer.price), 0) || null,
        exclusions,
        warnings: offerWarnings(failures),
      };
    }),
  );
  const current = runSpec.run_name ? await findRunRow(app, project.id, runSpec.run_name) : null;
  return {
    project_name: project.name,
    user: user.name,
    run_spec: runSpec,
    job_plans: jobPlans,
    current_resource: current ? await loadRun(app, current, project) : null,
    // An active service applied again is updated in place (a rolling deployment), as in dstack.
    action:
      current &&
      ACTIVE_RUN_STATUSES.includes(current.status) &&
      current.status !== 'terminating' &&
      serviceConfigurationOf(runSpec) &&
      isServiceRun(current.run_spec)
        ? 'update'
        : 'create',
  };
}

/**
 * Each job's offers, all of them: the project's fleet instances it fits first, as dstack lists
 * them (the run takes one of them before launching), then the backends' offers by price, in the
 * places its volumes allow.
 */
export async function offersOfJobs(
  app: AppContext,
  project: ProjectsTable,
  configuration: RunConfiguration,
  jobSpecs: readonly JobSpec[],
  backends: readonly ProjectBackend[],
  volumePlacements: Awaited<ReturnType<typeof planJobVolumes>>,
) {
  // With `creation_policy: reuse` the run only takes fleet instances, so backends offer nothing.
  const mayCreate = configuration.creation_policy !== 'reuse';
  return Promise.all(
    jobSpecs.map(async (jobSpec, index) => {
      const placement = volumePlacements[index]?.configuration ?? configuration;
      const filters = offerFiltersOf(placement);
      const instanceOffers = await fleetInstanceOffers(app, project.id, placement, jobSpec.requirements);
      const found = mayCreate
        ? await getOffers(backends, jobSpec.requirements, filters, {
            deadlineMs: app.settings.backends.offersDeadlineMs,
          })
        : { offers: [], failures: [] };
      const offers = [...instanceOffers, ...found.offers.map((entry) => entry.offer)];
      return { offers, failures: found.failures, filters, mayCreate };
    }),
  );
}
