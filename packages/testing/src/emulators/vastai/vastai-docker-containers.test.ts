/**
 * The Vast.ai emulator with real Docker containers: a rental runs the exact entrypoint, command
 * and environment the backend sent, in the locally built busybox test image, its requested port
 * published on 127.0.0.1 and reported in `ports`; the container downloads a file from a server
 * on this machine (at the network's gateway), as a rental downloads the runner. Missing images,
 * missing entrypoints, outbids and destroys act on the real container.
 */
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareDockerForHostTests } from '../hosts/emulated-hosts.test.helpers.js';
import { DockerVastaiContainers, VASTAI_RENTAL_CONTRACT_LABEL } from './vastai-docker-containers.js';
import { startVastaiEmulator, type VastaiEmulator } from './vastai-emulator.js';
import { dstackRentBody, vastai } from './vastai-emulator.test.helpers.js';

const run = promisify(execFile);

/** The shim's offline test image (a static busybox: sh, wget, httpd), built by its script when missing. */
const TEST_IMAGE = 'dstack-test/runner-busybox:v2';
const BUILD_TEST_IMAGE = join(
  dirname(createRequire(import.meta.url).resolve('@dstack/shim/package.json')),
  'test-image/build-test-image.sh',
);

const environment = await prepareDockerForHostTests();
if (!environment.available)
  console.warn(`skipping the Vast.ai emulator container tests: ${environment.reason}`);

/** Polls `read` until `done` says so; bounded (about 30 s). */
async function pollUntil<T>(read: () => Promise<T>, done: (value: T) => boolean, attempts = 120): Promise<T> {
  let value = await read();
  for (let attempt = 0; attempt < attempts && !done(value); attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    value = await read();
  }
  return value;
}

async function docker(args: string[]): Promise<string> {
  return (await run('docker', args, { timeout: 60_000 })).stdout.trim();
}

describe.skipIf(!environment.available)(
  'the Vast.ai emulator with Docker containers',
  { timeout: 120_000 },
  () => {
    const containers = new DockerVastaiContainers({ network: `dstack-vastai-test-${process.pid}` });
    let emulator: VastaiEmulator;
    let runnerServer: Server;
    let runnerUrl: string;

    beforeAll(async () => {
      await run('bash', [BUILD_TEST_IMAGE], { timeout: 300_000 });
      emulator = await startVastaiEmulator({
        containers,
        timeline: { loadingAfterMs: 0, runningAfterMs: 0 },
      });
      // What the rental downloads, served where its container reaches this machine.
      const gateway = await containers.gateway();
      runnerServer = createServer((request, response) => {
        if (request.url === '/runner') response.end('runner-binary-v1');
        else response.writeHead(404).end();
      });
      await new Promise<void>((resolve) => runnerServer.listen(0, gateway, resolve));
      runnerUrl = `http://${gateway}:${(runnerServer.address() as AddressInfo).port}/runner`;
    }, 300_000);

    afterAll(async () => {
      await emulator?.close();
      await containers.close();
      runnerServer?.close();
    });

    async function show(id: number) {
      return (await vastai(emulator, 'GET', `/api/v0/instances/${id}/`)).body.instances;
    }

    it('runs the rental with its entrypoint, args and env; its port answers on 127.0.0.1; destroy removes it', async () => {
      const command = [
        'mkdir -p /www',
        `wget -qO /www/runner ${runnerUrl}`,
        'echo "$GREETING" > /www/greeting',
        'exec httpd -f -p 10022 -h /www',
      ].join(' && ');
      const body = {
        ...dstackRentBody({ image: TEST_IMAGE, label: 'run-docker-0', command }),
        env: { '-p 10022:10022': '1', GREETING: 'hello vast' },
      };

      const rented = await vastai(emulator, 'PUT', '/api/v0/asks/21000103/', body);
      expect(rented.body.success).toBe(true);
      const id = rented.body.new_contract as number;
      const running = await pollUntil(
        () => show(id),
        (instance) => instance.actual_status !== null && instance.actual_status !== 'loading',
      );

      expect(running.actual_status).toBe('running');
      expect(running.public_ipaddr.trim()).toBe('127.0.0.1');
      const hostPort = Number(running.ports['10022/tcp'][0].HostPort);
      const runner = await pollUntil(
        () =>
          fetch(`http://127.0.0.1:${hostPort}/runner`).then(
            (response) => response.text(),
            () => '',
          ),
        (text) => text !== '',
      );
      expect(runner).toBe('runner-binary-v1');
      expect(await (await fetch(`http://127.0.0.1:${hostPort}/greeting`)).text()).toBe('hello vast\n');
      const config = JSON.parse(
        await docker(['inspect', '--format', '{{json .Config}}', containers.containerName(id)]),
      ) as { Entrypoint: string[]; Cmd: string[]; Env: string[]; Labels: Record<string, string> };
      expect(config.Labels[VASTAI_RENTAL_CONTRACT_LABEL]).toBe(String(id));
      expect(config.Entrypoint).toEqual(['/bin/sh']);
      expect(config.Cmd).toEqual(['-c', command]);
      expect(config.Env).toContain('GREETING=hello vast');

      expect((await vastai(emulator, 'DELETE', `/api/v0/instances/${id}/`)).body).toEqual({ success: true });
      expect(
        await docker(['ps', '--all', '--quiet', '--filter', `name=^${containers.containerName(id)}$`]),
      ).toBe('');
    });

    it('a rental of an image that is not here fails as a pull does; a missing entrypoint as OCI runtime create', async () => {
      const missing = await vastai(
        emulator,
        'PUT',
        '/api/v0/asks/21000101/',
        dstackRentBody({ image: 'dstack-test/not-built-anywhere:1', label: 'missing', command: 'true' }),
      );
      const broken = await vastai(emulator, 'PUT', '/api/v0/asks/21000105/', {
        ...dstackRentBody({ image: TEST_IMAGE, label: 'broken', command: 'true' }),
        onstart: '/usr/bin/no-such-program',
      });

      const pull = await pollUntil(
        () => show(missing.body.new_contract),
        (instance) => String(instance.status_msg).includes('pull access denied'),
      );
      const oci = await pollUntil(
        () => show(broken.body.new_contract),
        (instance) => instance.actual_status === 'created',
      );

      expect(pull.actual_status).toBe('loading');
      expect(pull.status_msg).toContain('pull access denied for dstack-test/not-built-anywhere');
      expect(oci.status_msg).toContain('OCI runtime create failed');
      expect(oci.status_msg).toContain('/usr/bin/no-such-program');
    });

    it('an outbid interruptible rental has its container stopped', async () => {
      const rented = await vastai(emulator, 'PUT', '/api/v0/asks/21000104/', {
        ...dstackRentBody({ image: TEST_IMAGE, label: 'spot', command: 'exec sleep 600', bid: 0.5 }),
      });
      const id = rented.body.new_contract as number;
      await pollUntil(
        () => show(id),
        (instance) => instance.actual_status === 'running',
      );

      emulator.outbid(id);
      await emulator.settle();

      const outbid = await show(id);
      expect(outbid).toMatchObject({
        actual_status: 'exited',
        cur_state: 'stopped',
        intended_status: 'stopped',
      });
      const state = await docker([
        'ps',
        '--all',
        '--filter',
        `name=^${containers.containerName(id)}$`,
        '--format',
        '{{.State}}',
      ]);
      expect(state).toBe('exited');
    });

    it('a rental destroyed while its container starts leaves no container behind', async () => {
      const rented = await vastai(emulator, 'PUT', '/api/v0/asks/21000102/', {
        ...dstackRentBody({ image: TEST_IMAGE, label: 'short-lived', command: 'exec sleep 600' }),
      });
      const id = rented.body.new_contract as number;

      expect((await vastai(emulator, 'DELETE', `/api/v0/instances/${id}/`)).body).toEqual({ success: true });
      await emulator.settle();

      expect(
        await docker(['ps', '--all', '--quiet', '--filter', `name=^${containers.containerName(id)}$`]),
      ).toBe('');
      expect(await show(id)).toBeNull();
    });
  },
);
