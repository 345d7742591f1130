/** `/api/project/{p}/offers/list`: what `dstack offer` shows. */
import {
  GetOffersRequestSchema,
  InstanceOfferWithAvailabilitySchema,
  ListGpusRequestSchema,
} from '@dstack/core';
import { z } from 'zod';
import { getOffers, offerWarnings } from '../backends/offers.js';
import { defineRoute, projectContext, RUN_PLAN_MAX_BODY_BYTES } from '../http/route.js';
import { listGpus } from './gpus.js';
import { buildJobSpecs } from './job-specs.js';
import { offerFiltersOf } from './run-plan.js';
import { normalizeRunSpec } from './stored-run-spec.js';

export const offerRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/offers/list',
    summary: "Offers of the project's backends matching a configuration's requirements",
    tags: ['offers'],
    auth: 'project-member',
    body: GetOffersRequestSchema,
    response: z.object({
      offers: z.array(InstanceOfferWithAvailabilitySchema),
      total_offers: z.number().int(),
      /** Backends whose offers are missing (failed or too slow), one line each. */
      warnings: z.array(z.string()),
    }),
    async handler(ctx) {
      const { project } = projectContext(ctx);
      // Offers depend on requirements only: what makes the jobs (commands, or a provider and
      // its parameters) is replaced by a no-op command so any run configuration is accepted.
      const { provider: _provider, parameters: _parameters, ...requirements } = ctx.body.configuration;
      const runSpec = normalizeRunSpec({ configuration: { ...requirements, commands: [':'] } });
      const [jobSpec] = buildJobSpecs('offers', runSpec);
      const backends = await ctx.app.backends.getProjectBackends(project.id);
      const { offers, failures } = await getOffers(
        backends,
        jobSpec!.requirements,
        offerFiltersOf(runSpec.configuration),
        { deadlineMs: ctx.app.settings.backends.offersDeadlineMs },
      );
      return {
        offers: offers.slice(0, ctx.body.max_offers ?? 50).map((entry) => entry.offer),
        total_offers: offers.length,
        warnings: offerWarnings(failures),
      };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/project/{project_name}/gpus/list',
    summary: "GPUs of the offers a run spec would get, grouped (dstack's `dstack offer --group-by gpu`)",
    tags: ['offers'],
    auth: 'project-member',
    body: ListGpusRequestSchema,
    maxBodyBytes: RUN_PLAN_MAX_BODY_BYTES,
    response: z.object({ gpus: z.array(z.looseObject({ name: z.string() })) }),
    async handler(ctx) {
      const { project, user } = projectContext(ctx);
      return listGpus(ctx.app, project, user, ctx.body.run_spec, ctx.body.group_by ?? []);
    },
  }),
];
