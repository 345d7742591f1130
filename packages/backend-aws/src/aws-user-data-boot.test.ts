/**
 * The user data the backend sends boots for real: the EC2 emulator launches each instance as a
 * Docker host that runs it as cloud-init would, the agent runtime (`pnpm pack` of
 * @dstack/runner-runtime-linux-x64) is served from this machine's address on the hosts' bridge,
 * and the test logs in as `ubuntu` with the project key to see the shim answer on its port and
 * require the instance's token. The host has no node, as the images users boot have none.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import {
  AGENT_BOOTSTRAP_FAILURE_MARKER,
  generateEd25519KeyPair,
  RequirementsSchema,
  VM_AGENT_RUNTIME_DIRECTORY,
  VM_SHIM_LOG,
} from '@dstack/core';
import { DSTACK_SHIM_HTTP_PORT } from '@dstack/core/agent-protocol';
import {
  type AgentRuntimeServer,
  DockerEmulatedHosts,
  EMULATED_HOST_KINDS,
  emulatedHostImage,
  ensureEmulatedHostImage,
  serveAgentRuntime,
} from '@dstack/testing/emulators';
import { Client } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AwsCompute, createAwsBackend } from './aws-compute.js';
import { type AwsTestEmulator, emulatorConfig, startAwsTestEmulator } from './aws-emulator.test.helpers.js';

let hosts: DockerEmulatedHosts;
let emulator: AwsTestEmulator;
let compute: AwsCompute;
let tarball: AgentRuntimeServer;

function execOverSsh(
  host: string,
  privateKey: string,
  command: string,
): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const client = new Client();
    client
      .once('ready', () => {
        client.exec(command, (error, stream) => {
          if (error) {
            client.end();
            reject(error);
            return;
          }
          let stdout = '';
          stream.on('data', (chunk: Buffer) => {
            stdout += chunk.toString('utf8');
          });
          stream.stderr.on('data', () => {});
          stream.once('close', (code: number | null) => {
            client.end();
            resolve({ code, stdout });
          });
        });
      })
      .once('error', (error) => {
        client.end();
        reject(error);
      })
      .connect({ host, port: 22, username: 'ubuntu', privateKey, readyTimeout: 10_000 });
  });
}

beforeAll(async () => {
  hosts = new DockerEmulatedHosts({ emulator: 'aws' });
  tarball = await serveAgentRuntime(hosts);
  emulator = await startAwsTestEmulator({ hosts });
  compute = createAwsBackend({ config: { ...emulatorConfig(emulator.aws), regions: ['us-west-2'] } });
}, 300_000);

afterAll(async () => {
  compute?.close();
  await emulator?.close();
  await hosts?.close();
  await tarball?.close();
}, 120_000);

describe('the VM bootstrap on an emulated EC2 host', () => {
  it.each(EMULATED_HOST_KINDS)(
    'boots %s hosts without node, as the images users boot are',
    async (kind) => {
      // What every emulated host is before its bootstrap runs: the image, with nothing started.
      await ensureEmulatedHostImage(kind);
      const check = promisify(execFile)('docker', [
        'run',
        '--rm',
        '--network',
        'none',
        '--entrypoint',
        '/bin/sh',
        emulatedHostImage(kind),
        '-c',
        'command -v node || ls /usr/local/bin /usr/bin | grep -x node',
      ]);
      await expect(check).rejects.toMatchObject({ code: 1, stdout: '' });
    },
    600_000,
  );

  it('authorizes the project key for ubuntu and starts the shim, which requires the token', async () => {
    const token = `token-${randomUUID()}`;
    const { ready, keys, terminate } = await launchHost(token);

    // Inside the host: the shim's healthcheck, then /api/tasks without and with the token, asked
    // with the node of the agent runtime the bootstrap installed (the host has none of its own).
    const probe = `
      const base = 'http://127.0.0.1:${DSTACK_SHIM_HTTP_PORT}';
      const deadline = 600;
      for (let i = 0; ; i++) {
        try {
          const health = await (await fetch(base + '/api/healthcheck')).json();
          const without = (await fetch(base + '/api/tasks')).status;
          const withToken = (await fetch(base + '/api/tasks', { headers: { authorization: 'Bearer ' + process.argv[2] } })).status;
          console.log(JSON.stringify({ service: health.service, without, withToken }));
          break;
        } catch (error) {
          if (i >= deadline) { console.log(JSON.stringify({ error: String(error) })); process.exit(1); }
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      }`;
    const runtime = `${VM_AGENT_RUNTIME_DIRECTORY}/package/dist/dstack-runtime`;
    const runtimeNode = `${runtime}/lib/ld-linux-x86-64.so.2 --library-path ${runtime}/lib --inhibit-cache ${runtime}/bin/node`;
    const result = await execOverSsh(
      ready.hostname as string,
      keys.privateKey,
      [
        'id -un',
        'if command -v node; then exit 3; fi',
        `i=0; until [ -f ${VM_AGENT_RUNTIME_DIRECTORY}/installed ]; do i=$((i+1)); [ $i -gt 600 ] && exit 4; sleep 0.2; done`,
        `echo ${Buffer.from(probe).toString('base64')} | base64 -d > /tmp/probe.mjs && ${runtimeNode} /tmp/probe.mjs ${token}`,
      ].join('\n'),
    );
    const [user, answer] = result.stdout.trim().split('\n');
    expect(result.code, result.stdout).toBe(0);
    expect(user).toBe('ubuntu');
    expect(JSON.parse(answer ?? '{}')).toEqual({ service: 'dstack-shim', without: 401, withToken: 200 });

    await terminate();
  }, 240_000);

  it('gives up with the failure marker in the bootstrap log when the shim keeps exiting at its start', async () => {
    // A token the shim refuses makes it exit at once, every time: the bootstrap stops restarting it.
    const { ready, keys, terminate } = await launchHost('two words');
    const result = await execOverSsh(
      ready.hostname as string,
      keys.privateKey,
      `i=0; until grep -q '^${AGENT_BOOTSTRAP_FAILURE_MARKER}' ${VM_SHIM_LOG} 2>/dev/null; do i=$((i+1)); [ $i -gt 600 ] && exit 4; sleep 0.2; done; cat ${VM_SHIM_LOG}`,
    );
    expect(result.code, result.stdout).toBe(0);
    expect(result.stdout).toContain('the agent token must not contain whitespace');
    expect(result.stdout.trim().split('\n').at(-1)).toBe(
      `${AGENT_BOOTSTRAP_FAILURE_MARKER} the shim exited 5 times in a row within 10 s of its start`,
    );
    await terminate();
  }, 240_000);
});

/** Launches an instance with `token` as its agent token and waits for its address. */
async function launchHost(token: string) {
  // The project key pair, in OpenSSH format (what ssh2, the server's SSH client, reads).
  const keys = generateEd25519KeyPair();
  const offers = await compute.getOffers(
    RequirementsSchema.parse({
      resources: { cpu: { count: { min: 2 } }, memory: { min: null } },
      spot: false,
    }),
  );
  const offer = offers.find((each) => each.availability === 'available');
  if (!offer) throw new Error('no available offer');
  const started = await compute.createInstance(
    offer,
    {
      project_name: 'main',
      instance_name: `boot-${randomUUID().slice(0, 8)}`,
      instance_id: randomUUID(),
      agent_token: token,
      agent_download_url: tarball.url,
      user: 'admin',
      ssh_keys: [{ public: keys.publicKey }],
    },
    null,
  );
  let ready = started;
  for (let attempt = 0; attempt < 600 && ready.hostname == null; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    ready = await compute.updateProvisioningData(ready, keys);
  }
  expect(ready.hostname).toBeTruthy();
  expect(ready.username).toBe('ubuntu');
  async function terminate(): Promise<void> {
    await compute.terminateInstance(started.instance_id, started.region);
    // The emulator removes the host once the instance is terminated; let it, before closing the hosts.
    for (let attempt = 0; attempt < 100; attempt++) {
      const state = emulator.aws.state().instances.find((each) => each.id === started.instance_id)?.state;
      if (state === 'terminated') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return { ready, keys, terminate };
}
