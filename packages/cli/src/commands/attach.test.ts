import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { pipeline } from 'node:stream';
import type { Run, RunSpec, RunStatus } from '@dstack/core';
import { type ParsedKey, Server as SshServer, utils } from 'ssh2';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeLogEvent, makeOffer, makeRun, makeRunPlan } from '../__fixtures__/api-objects.js';
import { CLI_TEST_TIMEOUT_MS, CliHarness, waitFor } from '../__fixtures__/cli-harness.js';
import { FakeDstackServer } from '../__fixtures__/fake-dstack-server.js';

let harness: CliHarness;
let server: FakeDstackServer | undefined;
let jobHttpServer: Server;
/** The port of the job's HTTP server: the dev environment's `ports` entry. */
let jobPort: number;

beforeEach(async () => {
  harness = new CliHarness();
  jobHttpServer = createServer((_request, response) => response.end('hello from the job'));
  await new Promise<void>((resolve) => jobHttpServer.listen(0, '127.0.0.1', resolve));
  jobPort = (jobHttpServer.address() as AddressInfo).port;
});

afterEach(async () => {
  harness.cleanUp();
  jobHttpServer.closeAllConnections();
  await new Promise((resolve) => jobHttpServer.close(resolve));
  const problems = server?.problems ?? [];
  await server?.close();
  server = undefined;
  expect(problems).toEqual([]);
});

function parseKey(text: string): ParsedKey {
  const key = utils.parseKey(text);
  if (key instanceof Error) throw key;
  return Array.isArray(key) ? key[0]! : key;
}

/**
 * The job's SSH server, as the runner serves it: only the key in the user's
 * `~/.dstack/ssh/id_rsa.pub` logs in; `direct-tcpip` connects from the job's side, and `exec`
 * answers `ran COMMAND`. Connections come from the fake dstack server's upgrade.
 */
function startJobSshServer() {
  const { privateKey: hostKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'pkcs1', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  const forwards: { destIP: string; destPort: number }[] = [];
  const sshServer = new SshServer({ hostKeys: [hostKey] }, (connection) => {
    connection.on('error', () => {});
    connection.on('authentication', (context) => {
      const allowed = parseKey(readFileSync(join(harness.home, '.dstack', 'ssh', 'id_rsa.pub'), 'utf8'));
      const keyMatches = context.method === 'publickey' && context.key.data.equals(allowed.getPublicSSH());
      // Without a signature the client only asks whether the key would do.
      const signed =
        context.method === 'publickey' &&
        (context.signature === undefined ||
          allowed.verify(context.blob ?? Buffer.alloc(0), context.signature, context.hashAlgo) === true);
      if (keyMatches && signed) context.accept();
      else context.reject(['publickey']);
    });
    connection.on('tcpip', (accept, _reject, info) => {
      forwards.push({ destIP: info.destIP, destPort: info.destPort });
      const channel = accept();
      pipeline(channel, connect(info.destPort, info.destIP), channel, () => {});
    });
    connection.on('session', (accept) => {
      accept().on('exec', (acceptExec, _reject, info) => {
        const stream = acceptExec();
        stream.write(`ran ${info.command}\n`);
        stream.exit(0);
        stream.end();
      });
    });
  });
  return { serve: (socket: Socket) => sshServer.injectSocket(socket), forwards };
}

/** A dev environment forwarding `*:jobPort` (any free local port), in `status`. */
function devEnvironmentRun(
  name: string,
  status: RunStatus,
  type: 'dev-environment' | 'task' = 'dev-environment',
): Run {
  const run = makeRun({ name, status });
  const submission = {
    ...run.latest_job_submission!,
    job_runtime_data: { network_mode: 'host' as const, working_dir: '/workflow' },
  };
  return {
    ...run,
    run_spec: {
      run_name: name,
      configuration:
        type === 'task'
          ? { type, commands: ['serve'], ports: [`*:${jobPort}`] }
          : { type, ide: 'vscode', ports: [`*:${jobPort}`] },
    },
    latest_job_submission: submission,
    jobs: [{ ...run.jobs[0]!, job_submissions: [submission] }],
  };
}

/** The local port the CLI printed for the job's port. */
function forwardedPort(stdout: string): number {
  const match = new RegExp(`localhost:(\\d+) -> ${jobPort}\\n`).exec(stdout);
  if (!match) throw new Error(`no forwarded port in: ${stdout}`);
  return Number(match[1]);
}

async function startServerFor(name: string, statusOf: () => RunStatus) {
  const job = startJobSshServer();
  server = await FakeDstackServer.start({
    handlers: { 'runs/get': () => devEnvironmentRun(name, statusOf()) },
    upgrade: () => job.serve,
  });
  await harness.useProject(server.url, server.token);
  return job;
}

describe('dstack attach (built bin, fake server, ssh2 job server)', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it("configures ssh RUN, forwards the run's ports until the run ends", async () => {
    let status: RunStatus = 'provisioning';
    const job = await startServerFor('dev', () => status);
    const cli = harness.start(['attach', 'dev']);
    await waitFor(() => server!.requestsTo('runs/get').length > 1, 'a poll while provisioning');
    expect(cli.stdout()).not.toContain('Forwarded ports');
    status = 'running';
    await waitFor(() => cli.stdout().includes('Press Ctrl+C'), 'the connect instructions');
    expect(cli.stdout()).toContain('To connect to dev via SSH, use: ssh dev\n');
    expect(cli.stdout()).toContain('  vscode://vscode-remote/ssh-remote+dev/workflow\n');

    const localPort = forwardedPort(cli.stdout());
    expect(localPort).not.toBe(jobPort);
    for (let request = 0; request < 2; request += 1) {
      const response = await fetch(`http://127.0.0.1:${localPort}/`);
      expect(await response.text()).toBe('hello from the job');
    }
    expect(job.forwards[0]).toEqual({ destIP: '127.0.0.1', destPort: jobPort });
    // One SSH connection carries every forwarded connection.
    expect(server!.upgrades).toHaveLength(1);
    expect(server!.upgrades[0]).toMatchObject({ path: '/proxy/ssh/main/dev' });

    const dstackConfig = readFileSync(join(harness.home, '.dstack', 'ssh', 'config'), 'utf8');
    expect(dstackConfig).toMatch(/^Host dev\n/);
    expect(dstackConfig).toContain(`  IdentityFile ${join(harness.home, '.dstack', 'ssh', 'id_rsa')}\n`);
    expect(dstackConfig).toMatch(
      / {2}ProxyCommand \S+ \S+dist\/bin\/dstack\.js ssh-proxy --project main dev\n/,
    );
    expect(readFileSync(join(harness.home, '.ssh', 'config'), 'utf8')).toBe(
      `Include ${join(harness.home, '.dstack', 'ssh', 'config')}\n\n`,
    );

    status = 'done';
    const result = await cli.result;
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Run dev done\n$/);
    expect(result.stderr).toBe('');
  });

  it('lets OpenSSH log in with `ssh RUN` through ssh-proxy, and detaches on SIGINT', async (context) => {
    if (spawnSync('ssh', ['-V']).error) {
      context.skip('ssh is not installed');
      return;
    }
    await startServerFor('dev', () => 'running');
    const cli = harness.start(['attach', 'dev']);
    await waitFor(() => cli.stdout().includes('Press Ctrl+C'), 'the connect instructions');
    // `-F`: OpenSSH reads the real user's ~/.ssh/config, not this test's HOME.
    const ssh = spawn('ssh', ['-F', join(harness.home, '.ssh', 'config'), 'dev', 'echo', 'hi'], {
      env: { ...process.env, HOME: harness.home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    ssh.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    ssh.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    const code = await new Promise((resolve) => ssh.on('close', resolve));
    expect(output).toBe('ran echo hi\n');
    expect(code).toBe(0);

    cli.child.kill('SIGINT');
    const result = await cli.result;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Detached; the run continues. Stop it with dstack stop dev');
    expect(server!.requestsTo('runs/stop')).toEqual([]);
  });

  it('reports a finished run instead of attaching', async () => {
    await startServerFor('dev', () => 'done');
    const result = await harness.run(['attach', 'dev']);
    expect(result).toMatchObject({ code: 1, stderr: 'error: run dev is done\n' });
  });
});

describe('dstack apply of a dev environment or a task with ports', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it.each([
    ['a dev environment', 'dev-environment', 'ide: vscode\ninit:\n  - echo init done'],
    ['a task with ports', 'task', 'commands:\n  - echo init done'],
  ] as const)(
    'streams the logs of %s and, once running, attaches like dstack attach',
    async (_what, type, body) => {
      let status: RunStatus = 'provisioning';
      const initOutput = makeLogEvent('stdout', 'init done\n', 1);
      const job = startJobSshServer();
      server = await FakeDstackServer.start({
        handlers: {
          'runs/get_plan': (body: { run_spec: RunSpec }) => makeRunPlan(body.run_spec, [makeOffer()]),
          'runs/apply': () => devEnvironmentRun('dev', 'submitted', type),
          'runs/get': () => devEnvironmentRun('dev', status, type),
          'logs/poll': (body: { start_time?: string }) => ({
            logs: status !== 'running' || body.start_time ? [] : [initOutput],
            next_token: null,
          }),
        },
        upgrade: () => job.serve,
      });
      await harness.useProject(server.url, server.token);
      const file = join(harness.home, 'dev.dstack.yml');
      writeFileSync(file, `type: ${type}\nname: dev\n${body}\nports:\n  - '*:${jobPort}'\n`);
      const cli = harness.start(['apply', '-f', file, '-y']);
      await waitFor(() => server!.requestsTo('runs/get').length > 0, 'the first poll');
      status = 'running';
      await waitFor(
        () => cli.stdout().includes('init done') && cli.stdout().includes('localhost:'),
        'attaching',
      );
      expect(cli.stdout()).toContain('To connect to dev via SSH, use: ssh dev\n');
      const response = await fetch(`http://127.0.0.1:${forwardedPort(cli.stdout())}/`);
      expect(await response.text()).toBe('hello from the job');
      expect(readFileSync(join(harness.home, '.dstack', 'ssh', 'config'), 'utf8')).toMatch(/^Host dev\n/);

      cli.child.kill('SIGINT');
      const result = await cli.result;
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('Detached; the run continues');
    },
  );
});
