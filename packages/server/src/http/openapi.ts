/**
 * The OpenAPI 3.1 document, generated from the same route definitions the
 * router serves (zod 4 JSON Schema: request bodies as input, responses as output).
 */
import { ApiErrorSchema } from '@dstack/core';
import { z } from 'zod';
import { JSON_CONTENT_TYPE, type RouteDefinition } from './route.js';

export interface OpenApiInfo {
  /** Default "dstack server API". */
  title?: string;
  /** Default "0.0.0". */
  version?: string;
}

type JsonSchema = Record<string, unknown>;

function toJsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  // Transforms and custom checks have no JSON Schema; they are described as "any" rather than failing the document.
  const { $schema: _ignored, ...jsonSchema } = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
  }) as JsonSchema;
  return jsonSchema;
}

function pathParameters(path: string): string[] {
  return [...path.matchAll(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((match) => match[1]!);
}

function operationId(route: RouteDefinition): string {
  return `${route.method.toLowerCase()}_${route.path
    .replace(/[{}]/g, '')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_|_$/g, '')}`;
}

const ERROR_RESPONSES = (errorSchema: JsonSchema) => {
  const content = { 'application/json': { schema: errorSchema } };
  return {
    '400': { description: 'Invalid request, or (code resource_not_exists) no such resource', content },
    '403': { description: 'Missing or invalid token (code not_authenticated), or access denied', content },
    '404': { description: 'No such route', content },
  };
};

/** The OpenAPI document of `routes`. */
export function buildOpenApiDocument(routes: readonly RouteDefinition[], info: OpenApiInfo = {}): JsonSchema {
  const errorSchema = toJsonSchema(ApiErrorSchema, 'output');
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const operation: Record<string, unknown> = {
      operationId: operationId(route),
      summary: route.summary,
      ...(route.tags && route.tags.length > 0 ? { tags: [...route.tags] } : {}),
      security: route.auth === 'none' ? [] : [{ bearerAuth: [] }],
      'x-dstack-auth': route.auth,
    };
    const parameters = pathParameters(route.path).map((name) => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    if (parameters.length > 0) operation.parameters = parameters;
    if (route.upload) {
      operation.requestBody = {
        required: true,
        content: {
          'multipart/form-data': {
            schema: {
              type: 'object',
              required: ['file'],
              properties: { file: { type: 'string', format: 'binary', description: 'named by its sha256' } },
            },
          },
        },
      };
    } else if (route.body) {
      operation.requestBody = {
        required: true,
        content: { 'application/json': { schema: toJsonSchema(route.body, 'input') } },
      };
    }
    const contentType = route.responseContentType ?? JSON_CONTENT_TYPE;
    const streamed = contentType !== JSON_CONTENT_TYPE;
    operation.responses = {
      '200': route.response
        ? {
            // OpenAPI 3.1 has no item schema for streams: a streamed answer's schema is that of one line.
            description: streamed ? `A stream (${contentType}) of lines, each matching the schema` : 'OK',
            content: { [contentType]: { schema: toJsonSchema(route.response, 'output') } },
          }
        : { description: 'OK', ...(streamed ? { content: { [contentType]: {} } } : {}) },
      ...(route.auth === 'none' ? {} : ERROR_RESPONSES(errorSchema)),
    };
    paths[route.path] = { ...paths[route.path], [route.method.toLowerCase()]: operation };
  }
  return {
    openapi: '3.1.0',
    info: { title: info.title ?? 'dstack server API', version: info.version ?? '0.0.0' },
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } },
      schemas: { ApiError: errorSchema },
    },
  };
}
