/**
 * A gateway on the emulated AWS, end to end: `type: gateway` with a certificate of a test CA for
 * `*.example.test` is launched as an emulated host (stock Ubuntu, no node: it downloads the agent
 * runtime and starts the gateway agent from it), a service on another host is published on it,
 * and an HTTPS request to `https://{run}.example.test`, resolved to the gateway's address and
 * trusting only the test CA, reaches the service (with a project member's token; refused
 * without), and a request whose target names another host (the gateway's own management API on
 * its loopback, as `//127.0.0.1:8000/…` or absolute-form) is answered 400 (the gateway runs only
 * once the server reached that API with the gateway's token). With the server stopped the gateway keeps serving from its stored state. A service
 * with `replicas: 0..2` and RPS scaling scales from zero on a request the gateway holds, up under
 * load sent through the gateway (its requests counted there), and back to zero when idle; its
 * `rate_limits` answer 429 at the gateway. Deleting the gateway leaves no instance. A gateway with
 * dstack's default certificate (`lets-encrypt`) gets each service's certificate from a real ACME
 * server (pebble, resolving the service's name to the gateway): while the name does not resolve
 * the gateway's status says why; once it does, the service answers over HTTPS with a certificate
 * chained to pebble's root, and plain HTTP redirects.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect as connectTls } from 'node:tls';
import type { Run } from '@dstack/core';
import { type PebbleServer, pebbleMissing, startPebble } from '@dstack/testing/acme';
import {
  type AgentRuntimeServer,
  type AwsEmulator,
  awsEmulatorBackend,
  bridgeGateway,
  DockerEmulatedHosts,
  ensureRunnerTestImages,
  type LocalDockerRegistry,
  RUNNER_BUSYBOX_TEST_IMAGE,
  serveAgentRuntime,
  startAwsEmulator,
  startLocalDockerRegistry,
} from '@dstack/testing/emulators';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { requireBuiltDstack, runDstack } from './dstack-cli.js';
import { dockerMissing } from './emulated-hosts-harness.js';
import {
  ADMIN_TOKEN,
  applyTask,
  type HarnessServer,
  HOST_RESOURCES,
  makeTempDir,
  startHarnessServer,
  waitFor,
} from './server-harness.js';

const EMULATOR_NAME = `aws-gateway-e2e-${process.pid}`;
const DOMAIN = 'example.test';
const RUN_NAME = 'gw-hello';
const ACME_DOMAIN = 'acme.test';
const ACME_RUN_NAME = 'gw-acme-hello';
/** Where the services' image keeps each service's pages. */
const PAGES = { hello: '/srv/hello', scaling: '/srv/scaling', acme: '/srv/acme' };

/** A test CA and a certificate it signed for `*.{domain}`, made with openssl. */
function makeCertificates(dir: string): { ca: string; certificate: string; privateKey: string } {
  const path = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=dstack test CA',
    '-keyout',
    path('ca.key'),
    '-out',
    path('ca.pem'),
  );
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    `/CN=*.${DOMAIN}`,
    '-keyout',
    path('gateway.key'),
    '-out',
    path('gateway.csr'),
  );
  writeFileSync(path('san.ext'), `subjectAltName=DNS:*.${DOMAIN}\n`);
  openssl(
    'x509',
    '-req',
    '-in',
    path('gateway.csr'),
    '-CA',
    path('ca.pem'),
    '-CAkey',
    path('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    path('san.ext'),
    '-out',
    path('gateway.pem'),
  );
  return {
    ca: readFileSync(path('ca.pem'), 'utf8'),
    certificate: readFileSync(path('gateway.pem'), 'utf8'),
    privateKey: readFileSync(path('gateway.key'), 'utf8'),
  };
}

/** An HTTP(S) client that resolves every name to `address` and trusts only `ca`. */
function clientFor(address: string, ca: string): Agent {
  return new Agent({
    connect: {
      ca,
      lookup: (_hostname, options, callback) =>
        options.all ? callback(null, [{ address, family: 4 }]) : callback(null, address, 4),
    },
  });
}

/**
 * A request written as it is (its target untouched by any client library) over TLS to the gateway
 * at `address` for `servername`; the answer's status, once the gateway closes the connection.
 */
function rawHttpsStatus(address: string, servername: string, ca: string, head: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connectTls({ host: address, port: 443, servername, ca }, () =>
      socket.write(`${head}\r\nhost: ${servername}\r\nconnection: close\r\n\r\n`),
    );
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)));
  });
}

interface GatewayAnswer {
  name: string;
  status: string;
  status_message: string | null;
  default: boolean;
  wildcard_domain: string | null;
  ip_address: string | null;
  instance_id: string | null;
  configuration: { certificate: { type: string; private_key?: string } | null };
}

/** The replica numbers of the run's jobs whose latest submission is running. */
async function runningReplicas(harness: HarnessServer, runName: string): Promise<number[]> {
  const run = (await harness.call<Run>('/api/project/main/runs/get', { run_name: runName })).body;
  return run.jobs.flatMap((job) =>
    job.job_submissions.at(-1)?.status === 'running' ? [job.job_spec.replica_num] : [],
  );
}

describe.skipIf(dockerMissing || pebbleMissing)('a gateway on the emulated AWS', () => {
  let hosts: DockerEmulatedHosts;
  let runtime: AgentRuntimeServer;
  /** Where the hosts pull the services' image from. */
  let registry: LocalDockerRegistry;
  /**
   * The services' image: busybox with their pages (PAGES), run by its httpd as the `entrypoint:`,
   * which forks a process per connection, as the gateway's concurrent requests want (dstack's base
   * image has no httpd; Python's http.server listens with a backlog of 5).
   */
  let busyboxImage: string;
  let emulator: AwsEmulator;
  let pebble: PebbleServer;
  let harness: HarnessServer;
  const temp = makeTempDir();
  // Of the gateway the second test makes, for the tests after it.
  let gateway: GatewayAnswer;
  let client: Agent;
  const cli = { DSTACK_CLI_CONFIG_DIR: join(temp.dir, 'cli') };
  const pebbleCaFile = join(temp.dir, 'pebble-tls-ca.pem');
  const startServer = () =>
    startHarnessServer({
      dir: temp.dir,
      config: { projects: [{ name: 'main', backends: [awsEmulatorBackend(emulator)] }] },
      env: {
        DSTACK_SHIM_DOWNLOAD_URL: runtime.url,
        DSTACK_ACME_SERVER: pebble.directoryUrl,
        DSTACK_ACME_SERVER_CA_FILE: pebbleCaFile,
      },
    });

  beforeAll(async () => {
    requireBuiltDstack();
    hosts = new DockerEmulatedHosts({ emulator: EMULATOR_NAME });
    runtime = await serveAgentRuntime(hosts);
    await ensureRunnerTestImages();
    registry = await startLocalDockerRegistry({ anonymous: true, hosts });
    await registry.push(RUNNER_BUSYBOX_TEST_IMAGE, 'library/busybox:test', {
      [`${PAGES.hello}/index.html`]: `hello from ${RUN_NAME}\n`,
      [`${PAGES.scaling}/index.html`]: 'ok\n',
      [`${PAGES.scaling}/limited`]: 'limited\n',
      [`${PAGES.acme}/index.html`]: 'hello over ACME\n',
    });
    busyboxImage = `${registry.hostsAddress}/library/busybox:test`;
    emulator = await startAwsEmulator({ hosts, regions: ['us-east-1'] });
    // Where the emulated hosts reach this machine; pebble validates http-01 on the gateway's port 80.
    pebble = await startPebble({
      dir: join(temp.dir, 'pebble'),
      host: await bridgeGateway(hosts.network),
      httpChallengePort: 80,
    });
    writeFileSync(pebbleCaFile, pebble.tlsCa);
    harness = await startServer();
    // dstack's default certificate: lets-encrypt. Launched now, so that it boots alongside the other.
    const created = await harness.call('/api/project/main/gateways/create', {
      configuration: {
        type: 'gateway',
        name: 'gw-acme',
        backend: 'aws',
        region: 'us-east-1',
        instance_type: 't3.medium',
        domain: ACME_DOMAIN,
        default: false,
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
  }, 300_000);

  afterAll(async () => {
    await harness?.terminateFleetsAndClose();
    await emulator?.close();
    await hosts?.close();
    await runtime?.close();
    await registry?.stop();
    await pebble?.close();
    temp.remove();
  }, 300_000);

  it('refuses acm and a certificate that does not cover the domain, naming the field', async () => {
    const acm = await harness.call<{ detail: Array<{ msg: string }> }>('/api/project/main/gateways/create', {
      configuration: {
        type: 'gateway',
        backend: 'aws',
        region: 'us-east-1',
        domain: DOMAIN,
        certificate: { type: 'acm', arn: 'arn:aws:acm:us-east-1:000000000000:certificate/x' },
      },
    });
    expect(acm.status).toBe(400);
    expect(acm.body.detail[0]?.msg).toContain('certificate: acm needs an AWS load balancer');
    const { certificate, privateKey } = makeCertificates(temp.dir);
    const other = await harness.call<{ detail: Array<{ msg: string }> }>(
      '/api/project/main/gateways/create',
      {
        configuration: {
          type: 'gateway',
          backend: 'aws',
          region: 'us-east-1',
          domain: 'other.test',
          certificate: { type: 'custom', certificate, private_key: privateKey },
        },
      },
    );
    expect(other.status).toBe(400);
    expect(other.body.detail[0]?.msg).toContain('certificate.certificate: does not cover *.other.test');
  });
  it('publishes a service at https://{run}.{domain} with the given certificate and serves without the server', async () => {
    const { ca } = makeCertificates(temp.dir);
    mkdirSync(cli.DSTACK_CLI_CONFIG_DIR, { recursive: true });
    writeFileSync(
      join(cli.DSTACK_CLI_CONFIG_DIR, 'config.yml'),
      stringify({ projects: [{ name: 'main', url: harness.server.url, token: ADMIN_TOKEN, default: true }] }),
    );
    // The certificate files are named relative to the configuration, as a user keeps them beside it.
    const file = join(temp.dir, 'gateway.dstack.yml');
    writeFileSync(
      file,
      stringify({
        type: 'gateway',
        name: 'gw',
        backend: 'aws',
        region: 'us-east-1',
        instance_type: 't3.medium',
        domain: DOMAIN,
        certificate: { type: 'custom', certificate: 'gateway.pem', private_key: 'gateway.key' },
      }),
    );
    const applied = await runDstack(['apply', '-f', file, '-y'], { env: cli });
    expect(applied.code, applied.stderr + applied.stdout).toBe(0);
    expect(applied.stdout).toMatch(/gw\s+aws \(us-east-1\)\s+[\d.]+\s+example\.test\s+✓\s+running/);

    gateway = (await harness.call<GatewayAnswer>('/api/project/main/gateways/get', { name: 'gw' })).body;
    expect(gateway.status).toBe('running');
    expect(gateway.default).toBe(true);
    expect(JSON.stringify(gateway.configuration)).not.toContain('PRIVATE KEY');
    const address = gateway.ip_address as string;

    // No `gateway:`: the project's default gateway publishes it.
    const run = await applyTask(harness, {
      type: 'service',
      name: RUN_NAME,
      port: 8000,
      resources: HOST_RESOURCES,
      image: busyboxImage,
      entrypoint: `httpd -f -p 8000 -h ${PAGES.hello}`,
    });
    expect(run.service?.url).toBe(`https://${RUN_NAME}.${DOMAIN}/`);

    client = clientFor(address, ca);
    const url = `https://${RUN_NAME}.${DOMAIN}/index.html`;
    const get = async (token?: string) => {
      const answer = await request(url, {
        dispatcher: client,
        headers: token ? { authorization: `Bearer ${token}` } : {},
      });
      return { status: answer.statusCode, body: await answer.body.text() };
    };
    const served = await waitFor(
      'the service to answer through the gateway',
      async () => {
        const answer = await get(ADMIN_TOKEN);
        return answer.status === 200 ? answer : null;
      },
      180_000,
    );
    expect(served.body).toBe(`hello from ${RUN_NAME}\n`);
    expect((await get()).status).toBe(403);
    const stranger = await harness.createUser('stranger');
    expect((await get(stranger)).status).toBe(403);
    // A target naming the gateway's own management API (or any other host) reaches nothing but a 400.
    for (const target of ['//127.0.0.1:8000/api/healthcheck', 'http://127.0.0.1:8000/api/healthcheck']) {
      const status = await rawHttpsStatus(
        address,
        `${RUN_NAME}.${DOMAIN}`,
        ca,
        `GET ${target} HTTP/1.1\r\nauthorization: Bearer ${ADMIN_TOKEN}`,
      );
      expect(status, target).toBe(400);
    }

    // The gateway serves from its own state while the server is away.
    await harness.close();
    expect(await get(ADMIN_TOKEN)).toEqual(served);
    harness = await startServer();
    await harness.call('/api/project/main/runs/stop', { runs_names: [RUN_NAME], abort: true });
  }, 420_000);

  it('scales a service from zero on the requests the gateway holds and counts, serves them all, scales back to zero, and limits rates', async () => {
    const name = 'gw-scaled';
    const run = await applyTask(harness, {
      type: 'service',
      name,
      port: 8000,
      resources: HOST_RESOURCES,
      image: busyboxImage,
      auth: false,
      replicas: '0..2',
      scaling: { metric: 'rps', target: 2, window: '5s', scale_up_delay: 0, scale_down_delay: '5s' },
      rate_limits: [{ prefix: '/limited', rps: 0.1, key: { type: 'header', header: 'x-client' } }],
      // A new replica gets requests once it answers, not as soon as its job runs (its httpd may not
      // listen yet on a loaded machine), as a user serving under load would set it.
      probes: [{ type: 'http', url: '/index.html', interval: 1, timeout: 1 }],
      entrypoint: `httpd -f -p 8000 -h ${PAGES.scaling}`,
    });
    expect(run.jobs).toEqual([]);
    const get = async (path: string, headers: Record<string, string> = {}) => {
      const answer = await request(`https://${name}.${DOMAIN}${path}`, {
        dispatcher: client,
        headers,
        headersTimeout: 300_000,
      });
      return { status: answer.statusCode, headers: answer.headers, body: await answer.body.text() };
    };

    // No replica: the gateway holds the first request, the server sees it waiting and starts one
    // (404 only until the gateway's state names the service, which the apply sends at once).
    const first = await waitFor('the gateway to publish the service', async () => {
      const answer = await get('/index.html');
      return answer.status === 404 ? null : answer;
    });
    expect(first).toMatchObject({ status: 200, body: 'ok\n' });
    expect(await runningReplicas(harness, name)).toHaveLength(1);

    // A bounded load through the gateway (4 clients, a request each 100 ms) until two replicas run.
    let scaledUp = false;
    const statuses = new Map<number | string, number>();
    const watcher = (async () => {
      const until = Date.now() + 300_000;
      while (!scaledUp && Date.now() < until) {
        scaledUp = (await runningReplicas(harness, name)).length === 2;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      scaledUp = true;
    })();
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (!scaledUp) {
          let status: number | string;
          try {
            const answer = await get('/index.html');
            status = answer.body === 'ok\n' ? answer.status : `${answer.status} ${answer.body}`;
          } catch (error) {
            status = String((error as Error).cause ?? error);
          }
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }),
    );
    await watcher;
    expect(await runningReplicas(harness, name)).toHaveLength(2);
    expect([...statuses.keys()]).toEqual([200]);

    // Per x-client on /limited: one request, then 429 with Retry-After from the gateway.
    expect((await get('/limited', { 'x-client': 'a' })).status).toBe(200);
    const refused = await get('/limited', { 'x-client': 'a' });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect((await get('/limited', { 'x-client': 'b' })).status).toBe(200);

    await waitFor(
      'the idle service to scale to zero',
      async () => ((await runningReplicas(harness, name)).length === 0 ? true : null),
      120_000,
    );
    await harness.call('/api/project/main/runs/stop', { runs_names: [name], abort: true });
  }, 600_000);

  it('leaves no instance when the gateway is deleted', async () => {
    writeFileSync(
      join(cli.DSTACK_CLI_CONFIG_DIR, 'config.yml'),
      stringify({ projects: [{ name: 'main', url: harness.server.url, token: ADMIN_TOKEN, default: true }] }),
    );
    const listed = await runDstack(['gateway', 'list'], { env: cli });
    expect(listed.stdout).toMatch(/gw\s+aws \(us-east-1\)/);
    const deleted = await runDstack(['gateway', 'delete', 'gw', '-y'], { env: cli });
    expect(deleted.code, deleted.stderr).toBe(0);
    await waitFor(
      'the gateway instance to be terminated',
      () =>
        emulator.state().instances.find((instance) => instance.id === gateway.instance_id)?.state ===
        'terminated'
          ? true
          : null,
      120_000,
    );
    const left = (await harness.call<GatewayAnswer[]>('/api/project/main/gateways/list')).body;
    expect(left.map((entry) => entry.name)).toEqual(['gw-acme']);
    await client.close();
  }, 420_000);

  it("obtains a service's certificate from the ACME server for a gateway with dstack's default certificate, and says why while it cannot", async () => {
    let last: GatewayAnswer | null = null;
    const gateway = await waitFor(
      'gw-acme to run',
      async () => {
        last = (await harness.call<GatewayAnswer>('/api/project/main/gateways/get', { name: 'gw-acme' }))
          .body;
        if (last.status === 'failed') throw new Error(`gw-acme failed: ${last.status_message}`);
        return last.status === 'running' ? last : null;
      },
      240_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; last seen: ${JSON.stringify(last)}`);
    });
    expect(gateway.configuration.certificate).toEqual({ type: 'lets-encrypt' });
    const address = gateway.ip_address as string;
    const hostname = `${ACME_RUN_NAME}.${ACME_DOMAIN}`;
    const run = await applyTask(harness, {
      type: 'service',
      name: ACME_RUN_NAME,
      port: 8000,
      gateway: 'gw-acme',
      auth: false,
      resources: HOST_RESOURCES,
      image: busyboxImage,
      entrypoint: `httpd -f -p 8000 -h ${PAGES.acme}`,
    });
    expect(run.service?.url).toBe(`https://${hostname}/`);

    // The name does not resolve yet (its DNS is not set up): the gateway's status says so, while
    // the service's host boots.
    const failing = await waitFor(
      "the certificate's failure in the gateway's status",
      async () => {
        const answer = (
          await harness.call<GatewayAnswer>('/api/project/main/gateways/get', { name: 'gw-acme' })
        ).body;
        return answer.status_message?.includes(`could not obtain a certificate for ${hostname}`)
          ? answer
          : null;
      },
      60_000,
    );
    expect(failing.status_message).toContain(`make sure ${hostname} resolves to this gateway`);

    await pebble.resolve(hostname, address);
    const client = clientFor(address, await pebble.issuingRoot());
    const served = await waitFor(
      'the service to answer over HTTPS with a certificate of pebble',
      async () => {
        try {
          const answer = await request(`https://${hostname}/index.html`, { dispatcher: client });
          const body = await answer.body.text();
          return answer.statusCode === 200 ? body : null;
        } catch {
          return null;
        }
      },
      240_000,
    );
    expect(served).toBe('hello over ACME\n');
    const plain = await request(`http://${hostname}/index.html?x=1`, { dispatcher: client });
    await plain.body.dump();
    expect(plain.statusCode).toBe(301);
    expect(plain.headers.location).toBe(`https://${hostname}/index.html?x=1`);
    await waitFor(
      "the gateway's status to clear",
      async () =>
        (await harness.call<GatewayAnswer>('/api/project/main/gateways/get', { name: 'gw-acme' })).body
          .status_message === null
          ? true
          : null,
      30_000,
    );
    await client.close();
  }, 180_000);
});
