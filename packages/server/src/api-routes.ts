/** Every route of the API, in the order the OpenAPI document lists them. */

import { projectRoutes } from './accounts/projects-routes.js';
import { userRoutes } from './accounts/users-routes.js';
import { backendRoutes } from './backends/backends-routes.js';
import { eventRoutes } from './events/events-routes.js';
import { fleetRoutes } from './fleets/fleets-routes.js';
import { gatewayRoutes } from './gateways/gateways-routes.js';
import type { RouteDefinition } from './http/route.js';
import { serverRoutes } from './http/server-routes.js';
import { logRoutes } from './logs/logs-routes.js';
import { metricsRoutes } from './metrics/metrics-routes.js';
import { repoRoutes } from './repos/repos-routes.js';
import { offerRoutes } from './runs/offers-routes.js';
import { runRoutes } from './runs/runs-routes.js';
import { secretRoutes } from './secrets/secrets-routes.js';
import { volumeRoutes } from './volumes/volumes-routes.js';

export const allRoutes: readonly RouteDefinition[] = [
  ...serverRoutes,
  ...userRoutes,
  ...projectRoutes,
  ...backendRoutes,
  ...runRoutes,
  ...fleetRoutes,
  ...volumeRoutes,
  ...gatewayRoutes,
  ...offerRoutes,
  ...logRoutes,
  ...metricsRoutes,
  ...secretRoutes,
  ...repoRoutes,
  ...eventRoutes,
];
