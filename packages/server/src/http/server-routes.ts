/** Server-level routes: version info and the OpenAPI document. */
import { createRequire } from 'node:module';
import { ServerInfoSchema } from '@dstack/core';
import { z } from 'zod';
import { buildOpenApiDocument } from './openapi.js';
import { defineRoute, type RouteDefinition } from './route.js';

/** This package's version (read from its package.json, which sits two levels above src/http and dist/http). */
export const SERVER_VERSION: string = (
  createRequire(import.meta.url)('../../package.json') as { version: string }
).version;

const documents = new WeakMap<readonly RouteDefinition[], Record<string, unknown>>();

export const serverRoutes: readonly RouteDefinition[] = [
  defineRoute({
    method: 'POST',
    path: '/api/server/get_info',
    summary: 'The server version',
    tags: ['server'],
    auth: 'none',
    response: ServerInfoSchema,
    handler: async () => ({ server_version: SERVER_VERSION }),
  }),
  defineRoute({
    method: 'GET',
    path: '/api/openapi.json',
    summary: 'The OpenAPI document of this API',
    tags: ['server'],
    auth: 'none',
    response: z.record(z.string(), z.unknown()),
    handler: async ({ routes }) => {
      let document = documents.get(routes);
      if (!document) {
        document = buildOpenApiDocument(routes, { version: SERVER_VERSION });
        documents.set(routes, document);
      }
      return document;
    },
  }),
];
