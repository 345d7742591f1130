/**
 * The CoreV1 client's TLS and authentication against a real HTTPS server that checks them as an
 * API server does (its CA, a client certificate it verifies, or a bearer token), answering
 * Kubernetes' `Status` objects on refusals. The cluster tests cover the API itself.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServerAccess } from './kubeconfig.js';
import { KubernetesApi } from './kubernetes-api.js';

const run = promisify(execFile);
const directory = mkdtempSync(join(tmpdir(), 'dstack-k8s-api-'));
const file = (name: string) => join(directory, name);
const pem = (name: string) => readFileSync(file(name), 'utf8');

/** A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA. */
async function makeCertificates(): Promise<void> {
  const openssl = (...args: string[]) => run('openssl', args, { cwd: directory });
  await openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=test-ca',
  );
  for (const [name, subject] of [
    ['server', '/CN=kube-apiserver'],
    ['client', '/O=system:masters/CN=alice'],
  ] as const) {
    await openssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      subject,
    );
    writeFileSync(file(`${name}.ext`), 'subjectAltName=IP:127.0.0.1\n');
    await openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.crt`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    );
  }
}

const status = (code: number, reason: string, message: string) =>
  JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason, code });

let server: Server;
let url: string;
const seen: Array<{ user: string | null; authorization?: string; method?: string; path?: string }> = [];

beforeAll(async () => {
  await makeCertificates();
  server = createServer(
    {
      key: pem('server.key'),
      cert: pem('server.crt'),
      ca: pem('ca.crt'),
      requestCert: true,
      rejectUnauthorized: false,
    },
    (request, response) => {
      const socket = request.socket as TLSSocket;
      // A resumed TLS session has no peer certificate to show, but was verified when it began.
      const user = socket.authorized ? String(socket.getPeerCertificate()?.subject?.CN ?? 'verified') : null;
      seen.push({
        user,
        authorization: request.headers.authorization,
        method: request.method,
        path: request.url,
      });
      response.setHeader('content-type', 'application/json');
      if (user === null && request.headers.authorization !== 'Bearer good-token') {
        response.writeHead(401).end(status(401, 'Unauthorized', 'Unauthorized'));
      } else if (request.url === '/api/v1/nodes?limit=1') {
        response.end(JSON.stringify({ kind: 'NodeList', items: [{ metadata: { name: 'node-1' } }] }));
      } else if (request.method === 'POST') {
        response.writeHead(409).end(status(409, 'AlreadyExists', 'pods "p" already exists'));
      } else {
        response.writeHead(404).end(status(404, 'NotFound', 'pods "p" not found'));
      }
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 60_000);

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  rmSync(directory, { recursive: true, force: true });
});

function client(access: Partial<ApiServerAccess>): KubernetesApi {
  return new KubernetesApi({ access: { server: url, certificateAuthority: pem('ca.crt'), ...access } });
}

describe('KubernetesApi', () => {
  it("verifies the server with the kubeconfig's CA and presents its client certificate", async () => {
    const api = client({ clientCertificate: pem('client.crt'), clientKey: pem('client.key') });

    const nodes = await api.listNodes(undefined, 1);
    await api.close();

    expect(nodes.map((node) => node.metadata?.name)).toEqual(['node-1']);
    expect(seen.at(-1)).toMatchObject({
      user: 'alice',
      authorization: undefined,
      path: '/api/v1/nodes?limit=1',
    });
  });

  it('sends a bearer token', async () => {
    const api = client({ token: 'good-token' });

    await expect(api.listNodes(undefined, 1)).resolves.toHaveLength(1);
    await api.close();
    expect(seen.at(-1)).toMatchObject({ user: null, authorization: 'Bearer good-token' });
  });

  it("throws the API server's refusal with its status and Status message", async () => {
    const api = client({});

    await expect(api.listNodes()).rejects.toMatchObject({
      name: 'BackendApiCallError',
      statusCode: 401,
      message: 'Kubernetes API GET /api/v1/nodes answered 401: Unauthorized',
    });
    await api.close();
  });

  it('refuses a server its CA did not sign', async () => {
    const api = client({ certificateAuthority: pem('client.crt'), token: 'good-token' });

    await expect(api.listNodes()).rejects.toMatchObject({
      name: 'BackendApiCallError',
      statusCode: undefined,
    });
    await api.close();
  });

  it('reads a missing object as null and a create of an existing one as null', async () => {
    const api = client({ token: 'good-token' });

    await expect(api.read('default', 'pods', 'p')).resolves.toBeNull();
    await expect(api.create('default', 'pods', { metadata: { name: 'p' } })).resolves.toBeNull();
    await expect(api.delete('default', 'pods', 'p')).resolves.toBe(false);
    await api.close();
  });
});
