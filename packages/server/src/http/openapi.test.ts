/** The OpenAPI document as served by `GET /api/openapi.json`: content types of JSON and streamed answers. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logRoutes } from '../logs/logs-routes.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { serverRoutes } from './server-routes.js';

describe('GET /api/openapi.json', () => {
  let server: TestApp;
  beforeAll(async () => {
    server = await createTestApp({ dialect: 'sqlite', routes: [...serverRoutes, ...logRoutes] });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('documents a streamed answer under its declared type with the schema of one line', async () => {
    const document = await server.request('/api/openapi.json', undefined, null, { method: 'GET' });
    expect(document.status).toBe(200);
    const stream = document.body.paths['/api/project/{project_name}/logs/stream'].post.responses['200'];
    expect(Object.keys(stream.content)).toEqual(['application/x-ndjson']);
    expect(stream.description).toContain('application/x-ndjson');
    // One line: an event, a heartbeat or the end line (with server_stopping among its reasons).
    const lineSchemas = stream.content['application/x-ndjson'].schema.anyOf as Array<{
      properties: Record<string, { enum?: string[]; const?: string }>;
    }>;
    expect(lineSchemas).toHaveLength(3);
    expect(lineSchemas.map((schema) => Object.keys(schema.properties).sort())).toEqual(
      expect.arrayContaining([
        expect.arrayContaining(['message', 'next_token']),
        expect.arrayContaining(['heartbeat', 'next_token']),
        expect.arrayContaining(['end', 'next_token']),
      ]),
    );
    expect(JSON.stringify(lineSchemas)).toContain('server_stopping');
    // The request body and the errors before the first line stay JSON.
    const streamOperation = document.body.paths['/api/project/{project_name}/logs/stream'].post;
    expect(Object.keys(streamOperation.requestBody.content)).toEqual(['application/json']);
    expect(Object.keys(streamOperation.responses['404'].content)).toEqual(['application/json']);

    const poll = document.body.paths['/api/project/{project_name}/logs/poll'].post.responses['200'];
    expect(poll.description).toBe('OK');
    expect(Object.keys(poll.content)).toEqual(['application/json']);
    expect(poll.content['application/json'].schema.properties).toHaveProperty('logs');
  });
});
