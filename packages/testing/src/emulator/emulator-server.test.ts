import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { EmulatorHttpError, json, text, xml } from './emulator-responses.js';
import { type EmulatorServer, startEmulatorServer } from './emulator-server.js';

const servers: EmulatorServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function start(...args: Parameters<typeof startEmulatorServer>): Promise<EmulatorServer> {
  const server = await startEmulatorServer(...args);
  servers.push(server);
  return server;
}

/** A small provider: instances by id (JSON) and an EC2-style Query API (form in, XML out). */
function cloudRoutes() {
  const instances = new Map<string, { id: string; type: string }>([['i-1', { id: 'i-1', type: 'small' }]]);
  return [
    {
      name: 'getInstance',
      method: 'GET',
      path: '/v1/instances/:id',
      handle: (req: {
        params: Readonly<Record<string, string>>;
        query: Readonly<Record<string, string>>;
      }) => {
        const instance = instances.get(req.params.id ?? '');
        if (!instance) throw new EmulatorHttpError(json({ error: 'not found' }, 404));
        return json({ ...instance, verbose: req.query.verbose === 'true' });
      },
    },
    {
      name: 'createInstance',
      method: 'POST',
      path: '/v1/instances',
      handle: (req: { body: unknown }) => {
        const { type } = req.body as { type: string };
        const id = `i-${instances.size + 1}`;
        instances.set(id, { id, type });
        return json({ id }, 201);
      },
    },
    {
      name: 'RunInstances',
      method: 'POST',
      path: '/',
      when: (req: { body: unknown }) => (req.body as Record<string, string>)?.Action === 'RunInstances',
      handle: (req: { body: unknown }) =>
        xml(
          `<RunInstancesResponse><instanceType>${(req.body as Record<string, string>).InstanceType}</instanceType></RunInstancesResponse>`,
        ),
    },
    {
      name: 'files',
      method: 'GET',
      path: '/files/*',
      handle: (req: { params: Readonly<Record<string, string>> }) => text(req.params['*'] ?? ''),
    },
  ];
}

describe('startEmulatorServer routes', () => {
  it('routes by method and path pattern, with path parameters and the parsed query', async () => {
    const server = await start({ routes: cloudRoutes() });

    const response = await request(`${server.url}/v1/instances/i-1?verbose=true`);

    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/json');
    expect(await response.body.json()).toEqual({ id: 'i-1', type: 'small', verbose: true });
  });

  it('parses JSON bodies and answers with the status the handler chose', async () => {
    const server = await start({ routes: cloudRoutes() });

    const created = await request(`${server.url}/v1/instances`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'large' }),
    });
    expect(created.statusCode).toBe(201);
    const { id } = (await created.body.json()) as { id: string };
    const fetched = await request(`${server.url}/v1/instances/${id}`);

    expect(await fetched.body.json()).toMatchObject({ id, type: 'large' });
  });

  it('parses form bodies and selects a route by a body field, answering XML', async () => {
    const server = await start({ routes: cloudRoutes() });

    const response = await request(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'Action=RunInstances&InstanceType=g5.xlarge&Version=2016-11-15',
    });

    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toContain('text/xml');
    expect(await response.body.text()).toContain('<instanceType>g5.xlarge</instanceType>');
    expect(server.requestsTo('RunInstances')[0]?.body).toMatchObject({
      Action: 'RunInstances',
      Version: '2016-11-15',
    });
  });

  it('gives the rest of the path to a trailing wildcard', async () => {
    const server = await start({ routes: cloudRoutes() });

    expect(await (await request(`${server.url}/files/a/b%20c.txt`)).body.text()).toBe('a/b c.txt');
  });

  it('answers an error document thrown by a handler', async () => {
    const server = await start({ routes: cloudRoutes() });

    const response = await request(`${server.url}/v1/instances/i-404`);

    expect(response.statusCode).toBe(404);
    expect(await response.body.json()).toEqual({ error: 'not found' });
  });

  it('answers 404 naming the request when no route matches, and records it under null', async () => {
    const server = await start({ routes: cloudRoutes() });

    const response = await request(`${server.url}/v2/nothing`, { method: 'DELETE' });

    expect(response.statusCode).toBe(404);
    expect(await response.body.text()).toContain('DELETE /v2/nothing');
    expect(server.requestsTo(null)).toMatchObject([{ method: 'DELETE', path: '/v2/nothing', status: 404 }]);
  });

  it('rejects two routes with the same name', async () => {
    await expect(
      startEmulatorServer({
        routes: [
          { method: 'GET', path: '/a', handle: () => text('1') },
          { method: 'GET', path: '/a', handle: () => text('2') },
        ],
      }),
    ).rejects.toThrow('"GET /a" is used twice');
  });
});

describe('startEmulatorServer recording', () => {
  it('records every request with its route, query, body and status, and clears them', async () => {
    const server = await start({ routes: cloudRoutes() });
    await (await request(`${server.url}/v1/instances/i-1?verbose=false`)).body.text();
    await (
      await request(`${server.url}/v1/instances`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"type":"gpu"}',
      })
    ).body.text();

    expect(server.requests.map((each) => [each.route, each.status])).toEqual([
      ['getInstance', 200],
      ['createInstance', 201],
    ]);
    expect(server.requestsTo('getInstance')[0]?.query).toEqual({ verbose: 'false' });
    expect(server.requestsTo('createInstance')[0]?.body).toEqual({ type: 'gpu' });

    server.clearRequests();
    expect(server.requests).toEqual([]);
  });
});

describe('startEmulatorServer faults', () => {
  it('answers the next N requests of a route with the injected response, then the handler again', async () => {
    const server = await start({ routes: cloudRoutes() });
    server.failNext('createInstance', json({ code: 'InsufficientCapacity' }, 409), 2);
    const post = () =>
      request(`${server.url}/v1/instances`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"type":"x"}',
      });

    const statuses = [];
    for (let i = 0; i < 3; i++) {
      const response = await post();
      await response.body.text();
      statuses.push(response.statusCode);
    }

    expect(statuses).toEqual([409, 409, 201]);
    expect(server.requestsTo('createInstance').map((each) => each.fault)).toEqual([
      'respond',
      'respond',
      undefined,
    ]);
    expect(server.pendingFaults('createInstance')).toBe(0);
  });

  it('throttles with 429 RequestLimitExceeded and Retry-After by default', async () => {
    const server = await start({ routes: cloudRoutes() });
    server.throttleNext('getInstance');

    const response = await request(`${server.url}/v1/instances/i-1`);

    expect(response.statusCode).toBe(429);
    expect(response.headers['retry-after']).toBe('1');
    expect(await response.body.json()).toMatchObject({ code: 'RequestLimitExceeded' });
    expect((await request(`${server.url}/v1/instances/i-1`)).statusCode).toBe(200);
  });

  it("throttles in the provider's own format when given a response", async () => {
    const server = await start({ routes: cloudRoutes() });
    server.throttleNext('RunInstances', {
      response: xml(
        '<Response><Errors><Error><Code>RequestLimitExceeded</Code></Error></Errors></Response>',
        503,
      ),
    });

    const response = await request(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'Action=RunInstances&InstanceType=t3.micro',
    });

    expect(response.statusCode).toBe(503);
    expect(await response.body.text()).toContain('<Code>RequestLimitExceeded</Code>');
  });

  it('delays a request, then answers it normally', async () => {
    const server = await start({ routes: cloudRoutes() });
    server.delayNext('getInstance', 50);

    const response = await request(`${server.url}/v1/instances/i-1`);

    expect(response.statusCode).toBe(200);
    expect(await response.body.json()).toMatchObject({ id: 'i-1' });
    expect(server.requestsTo('getInstance')[0]).toMatchObject({ fault: 'delay', status: 200 });
  });

  it('resets the connection of a request without answering', async () => {
    const server = await start({ routes: cloudRoutes() });
    server.resetNext('getInstance');

    await expect(request(`${server.url}/v1/instances/i-1`)).rejects.toThrow(/socket|reset|closed/i);
    expect(server.requestsTo('getInstance')[0]).toMatchObject({ status: 'reset', fault: 'reset' });
    expect((await request(`${server.url}/v1/instances/i-1`)).statusCode).toBe(200);
  });

  it('applies a fault for "*" to any route, after the route\'s own faults', async () => {
    const server = await start({ routes: cloudRoutes() });
    server.failNext('*', json({ error: 'down' }, 500));
    server.failNext('getInstance', json({ error: 'own' }, 418));

    const first = await request(`${server.url}/v1/instances/i-1`);
    const second = await request(`${server.url}/files/x`);

    expect(first.statusCode).toBe(418);
    expect(second.statusCode).toBe(500);
  });
});
