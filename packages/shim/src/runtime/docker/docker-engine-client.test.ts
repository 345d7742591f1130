import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  compareApiVersions,
  DEFAULT_DOCKER_SOCKET_PATH,
  DockerEngineClient,
  DockerEngineError,
  resolveDockerSocketPath,
} from './docker-engine-client.js';
import { ensureImage, ImagePullError } from './docker-images.js';

interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
}

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/** A stand-in daemon on a unix socket: answers /version with `apiVersion`, the rest with `handler`. */
async function startFakeDaemon(apiVersion: string, handler: Handler) {
  const directory = await mkdtemp(join(tmpdir(), 'dstack-fake-docker-'));
  const socketPath = join(directory, 'docker.sock');
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((request, response) => {
    requests.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers });
    if (request.url === '/version') {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ ApiVersion: apiVersion }));
      return;
    }
    handler(request, response);
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    socketPath,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(directory, { recursive: true, force: true });
    },
  };
}

function answerJson(response: ServerResponse, status: number, body: unknown): void {
  response.statusCode = status;
  response.setHeader('content-type', 'application/json');
  response.end(JSON.stringify(body));
}

describe('DockerEngineClient', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function clientFor(apiVersion: string, handler: Handler) {
    const daemon = await startFakeDaemon(apiVersion, handler);
    cleanups.push(daemon.close);
    const client = new DockerEngineClient({ socketPath: daemon.socketPath });
    cleanups.push(() => client.close());
    return { client, requests: daemon.requests };
  }

  it("uses the daemon's API version when it is older than the newest known", async () => {
    const { client, requests } = await clientFor('1.41', (_request, response) =>
      answerJson(response, 200, []),
    );
    await client.request({ method: 'GET', path: '/containers/json', query: { all: 1, skipped: undefined } });
    await client.request({ method: 'GET', path: '/containers/json' });
    expect(requests.map((request) => request.url)).toEqual([
      '/version',
      '/v1.41/containers/json?all=1',
      '/v1.41/containers/json',
    ]);
  });

  it('caps a newer daemon at the newest API version it knows', async () => {
    const { client } = await clientFor('1.99', (_request, response) => answerJson(response, 200, {}));
    expect(await client.apiVersion()).toBe('1.47');
  });

  it('refuses a daemon older than API 1.40', async () => {
    const { client } = await clientFor('1.39', (_request, response) => answerJson(response, 200, {}));
    await expect(client.apiVersion()).rejects.toThrow(/speaks API 1.39; at least 1.40/);
  });

  it("carries the status and Docker's message on errors", async () => {
    const { client } = await clientFor('1.41', (_request, response) =>
      answerJson(response, 404, { message: 'No such container: abc' }),
    );
    const error = await client.request({ method: 'GET', path: '/containers/abc/json' }).catch((e) => e);
    expect(error).toBeInstanceOf(DockerEngineError);
    expect(error).toMatchObject({ statusCode: 404, dockerMessage: 'No such container: abc' });
    expect(DockerEngineError.isNotFound(error)).toBe(true);
  });

  it('pulls a missing image with the registry credentials and reports a failed pull', async () => {
    const { client, requests } = await clientFor('1.41', (request, response) => {
      if (request.url?.startsWith('/v1.41/images/create')) {
        response.end('{"status":"Pulling"}\n{"error":"unauthorized: bad credentials"}\n');
      } else {
        answerJson(response, 404, { message: 'No such image' });
      }
    });
    const error = await ensureImage(client, {
      imageName: 'ghcr.io/org/private:v2',
      registryUsername: 'robot',
      registryPassword: 'secret',
    }).catch((e) => e);
    expect(error).toBeInstanceOf(ImagePullError);
    expect(error.message).toBe(
      'cannot pull image ghcr.io/org/private:v2: the registry refused the credentials (registry_auth) (unauthorized: bad credentials)',
    );
    const pull = requests.find((request) => request.method === 'POST');
    expect(pull?.url).toBe('/v1.41/images/create?fromImage=ghcr.io%2Forg%2Fprivate&tag=v2');
    const auth = JSON.parse(Buffer.from(String(pull?.headers['x-registry-auth']), 'base64url').toString());
    expect(auth).toEqual({ username: 'robot', password: 'secret', serveraddress: 'ghcr.io' });
  });

  it('does not pull an image that is present', async () => {
    const { client, requests } = await clientFor('1.41', (_request, response) =>
      answerJson(response, 200, { Id: 'sha256:1' }),
    );
    await ensureImage(client, { imageName: 'ubuntu:22.04', onPull: () => expect.unreachable() });
    expect(requests.map((request) => `${request.method} ${request.url}`)).toEqual([
      'GET /version',
      'GET /v1.41/images/ubuntu%3A22.04/json',
    ]);
  });
});

describe('resolveDockerSocketPath', () => {
  it('prefers the explicit path, then DOCKER_HOST, then the default socket', () => {
    expect(resolveDockerSocketPath('/run/x.sock', { DOCKER_HOST: 'unix:///run/y.sock' })).toBe('/run/x.sock');
    expect(resolveDockerSocketPath(undefined, { DOCKER_HOST: 'unix:///run/y.sock' })).toBe('/run/y.sock');
    expect(resolveDockerSocketPath(undefined, {})).toBe(DEFAULT_DOCKER_SOCKET_PATH);
  });

  it('rejects a TCP DOCKER_HOST', () => {
    expect(() => resolveDockerSocketPath(undefined, { DOCKER_HOST: 'tcp://10.0.0.1:2375' })).toThrow(
      /only unix:\/\/ sockets/,
    );
  });
});

describe('compareApiVersions', () => {
  it('compares numerically, not as text', () => {
    expect(compareApiVersions('1.9', '1.41')).toBe(-1);
    expect(compareApiVersions('1.47', '1.41')).toBe(1);
    expect(compareApiVersions('1.41', '1.41')).toBe(0);
  });
});
