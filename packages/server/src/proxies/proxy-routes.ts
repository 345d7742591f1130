/**
 * Raw routes (see http/raw-route.ts): path prefixes answered outside the JSON API, mounted
 * by app.ts through `createHttpHandler(app, allRoutes, { rawRoutes })`.
 */
import type { RawRouteDefinition } from '../http/raw-route.js';
import { modelProxyRoute } from './model-proxy.js';
import { serviceProxyRoute } from './service-proxy.js';
import { sshProxyRoute } from './ssh-proxy.js';

export const rawRoutes: readonly RawRouteDefinition[] = [serviceProxyRoute, modelProxyRoute, sshProxyRoute];
