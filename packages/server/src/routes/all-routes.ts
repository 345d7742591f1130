/** Every route of the API, in the order the OpenAPI document lists them. */
import type { RouteDefinition } from '../http/route.js';
import { backendRoutes } from './backends-routes.js';
import { fleetRoutes } from './fleets-routes.js';
import { logRoutes } from './logs-routes.js';
import { offerRoutes } from './offers-routes.js';
import { projectRoutes } from './projects-routes.js';
import { runRoutes } from './runs-routes.js';
import { serverRoutes } from './server-routes.js';
import { userRoutes } from './users-routes.js';

export const allRoutes = [
  ...serverRoutes,
  ...userRoutes,
  ...projectRoutes,
  ...backendRoutes,
  ...runRoutes,
  ...fleetRoutes,
  ...offerRoutes,
  ...logRoutes,
] as unknown as readonly RouteDefinition[];
